//! The reduce phase's first pass, without a model: items grouped by an exact field
//! (`group_by`) and by similarity (`similar_by`: Jaccard over a list field's values, or
//! over a text field's words), then ranked (`rank_by`).
//!
//! Chaining is the danger: "shares a file with" is not transitive, and a lock file or a
//! changelog touched by a third of all pull requests would join them into one giant
//! cluster; "fix issue 11" and "fix issue 12" share every word but the one that matters.
//! Four rules prevent it:
//! - lock files and changelogs ([`is_noise_path`]) never count: touching one says nothing
//!   about what a change is;
//! - values (and words) that occur in many items — more than [`common_cutoff`] of them, a
//!   share that holds for a 40-item job as for a 3,000-item one — are ignored too;
//! - a text's numbers and identifiers (`11`, `v2`, `fix-issue-11`) are kept as words, so
//!   the part that tells two texts apart is compared, and generic words are not;
//! - two texts are similar only when they share two words, unless one of them has a
//!   single one (one shared generic word never makes two items alike); and clusters grow
//!   by complete linkage: two clusters merge only when every member of one is similar to
//!   every member of the other, never beyond `max_size` members.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;
use serde_json::{json, Value};

use super::definition::Similarity;
use super::records::Records;

/// Words too common to say what a text is about: grammar, and the verbs and nouns every
/// change is described with.
const STOPWORDS: &[&str] = &[
    "a", "an", "as", "at", "be", "by", "do", "if", "in", "is", "it", "no", "of", "on", "or", "so", "to", "up", "we",
    "the", "and", "for", "with", "from", "into", "that", "this", "when", "not", "are", "was", "all", "more", "less",
    "new", "use", "add", "adds", "added", "fix", "fixes", "fixed", "update", "updates", "updated", "support", "issue",
    "issues", "bug", "bugs", "feature", "features", "work", "change", "changes", "pr",
];

/// A value is common when it is in more than this share of the items …
const COMMON_SHARE: f64 = 0.05;
/// … and in more than this many (a small job's real duplicates stay comparable).
const COMMON_FLOOR: usize = 4;

/// What the first pass needs.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    pub id_field: String,
    pub group_by: Option<String>,
    pub similar_by: Vec<Similarity>,
    pub rank_by: Vec<String>,
    pub max_size: usize,
}

/// A cluster of two or more items.
#[derive(Debug, Clone, Serialize)]
pub struct PreCluster {
    pub id: String,
    /// The members' ids (as the items carry them), best first.
    pub members: Vec<Value>,
    pub theme: String,
    /// What joined them: `fingerprint`, `files`…
    pub basis: Vec<String>,
    pub best_candidate: Value,
    /// Members joined by the exact field: their grouping is sure.
    pub exact: bool,
}

impl PreCluster {
    /// The first pass's proposal, in the shape the refinement answers: the best candidate
    /// canonical, the others its duplicates.
    pub fn proposal(&self) -> Value {
        let confidence = if self.exact { 0.9 } else { 0.6 };
        json!({
            "cluster_id": self.id,
            "theme": self.theme,
            "duplicate_groups": [{
                "canonical": self.best_candidate,
                "duplicates": self.members[1..],
                "confidence": confidence,
                "reasoning": format!("grouped by {} without a model", self.basis.join(" and ")),
            }],
            "best_candidate": self.best_candidate,
            "ranking": self.members,
            "ranking_rationale": "ranked by the job's rank_by fields, without a model",
        })
    }
}

/// Values in more items than this are ignored by similarity: 5 % of the items, and never
/// fewer than [`COMMON_FLOOR`].
pub fn common_cutoff(items: usize) -> usize {
    ((items as f64 * COMMON_SHARE).ceil() as usize).max(COMMON_FLOOR)
}

/// A lock file or a changelog (by its file name, in any directory): a value that looks
/// like a path and never makes two items alike.
pub fn is_noise_path(value: &str) -> bool {
    if !value.contains('.') && !value.contains('/') {
        return false;
    }
    let name = value.rsplit('/').next().unwrap_or(value).to_lowercase();
    let lock = name.ends_with(".lock")
        || name.ends_with(".lockb")
        || name.ends_with(".lockfile")
        || name.ends_with("-lock.json")
        || name.ends_with("-lock.yaml")
        || name.ends_with("-lock.yml")
        || matches!(
            name.as_str(),
            "go.sum" | "npm-shrinkwrap.json" | "packages.lock.json" | "package.resolved" | "gradle.lockfile"
        );
    let stem = name.split('.').next().unwrap_or("");
    let changelog = matches!(
        stem,
        "changelog" | "changes" | "history" | "news" | "release-notes" | "release_notes" | "releasenotes"
    );
    lock || changelog
}

/// Clusters the records; every cluster has two members or more.
pub fn precluster(records: &Records, config: &ClusterConfig) -> Vec<PreCluster> {
    let keys: Vec<&str> = records.iter().map(|(k, _)| k).collect();
    let values: Vec<&Value> = records.iter().map(|(_, v)| v).collect();
    let n = keys.len();
    let cap = config.max_size.max(2);

    // Exact groups seed the clusters.
    let mut cluster_of: Vec<usize> = (0..n).collect();
    let mut members: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    let mut basis: Vec<BTreeSet<String>> = vec![BTreeSet::new(); n];
    let mut exact: Vec<bool> = vec![false; n];
    if let Some(field) = &config.group_by {
        let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, v) in values.iter().enumerate() {
            if let Some(key) = lookup(v, field).and_then(group_key) {
                groups.entry(key).or_default().push(i);
            }
        }
        for group in groups.into_values().filter(|g| g.len() > 1) {
            let head = group[0];
            for &i in &group[1..] {
                cluster_of[i] = head;
            }
            members[head] = group.clone();
            for &i in &group[1..] {
                members[i].clear();
            }
            basis[head].insert(field.clone());
            exact[head] = true;
        }
    }

    // Similar pairs, strongest first.
    let mut linked: HashSet<(usize, usize)> = HashSet::new();
    let mut pairs: Vec<(f64, usize, usize, String)> = Vec::new();
    for rule in &config.similar_by {
        let sets: Vec<HashSet<String>> = values.iter().map(|v| features(lookup(v, &rule.field))).collect();
        let text = values
            .iter()
            .any(|v| matches!(lookup(v, &rule.field), Some(Value::String(_))));
        for (score, i, j) in similar_pairs(&sets, rule.threshold, text) {
            linked.insert((i, j));
            pairs.push((score, i, j, rule.field.clone()));
        }
    }
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let is_linked = |a: usize, b: usize| linked.contains(&(a.min(b), a.max(b)));
    for (_, i, j, field) in pairs {
        let (ci, cj) = (cluster_of[i], cluster_of[j]);
        if ci == cj {
            basis[ci].insert(field);
            continue;
        }
        if members[ci].len() + members[cj].len() > cap {
            continue;
        }
        let complete = members[ci]
            .iter()
            .all(|&a| members[cj].iter().all(|&b| is_linked(a, b)));
        if !complete {
            continue;
        }
        let (keep, gone) = if ci < cj { (ci, cj) } else { (cj, ci) };
        let moved = std::mem::take(&mut members[gone]);
        for &m in &moved {
            cluster_of[m] = keep;
        }
        members[keep].extend(moved);
        let gone_basis = std::mem::take(&mut basis[gone]);
        basis[keep].extend(gone_basis);
        basis[keep].insert(field);
        exact[keep] = exact[keep] && exact[gone];
    }

    let mut clusters: Vec<(usize, Vec<usize>)> = members.into_iter().enumerate().filter(|(_, m)| m.len() > 1).collect();
    clusters.sort_by_key(|(_, m)| m.iter().min().copied().unwrap_or(usize::MAX));
    clusters
        .into_iter()
        .enumerate()
        .map(|(number, (head, mut m))| {
            m.sort_unstable();
            rank(&mut m, &values, &config.rank_by);
            let ids: Vec<Value> = m
                .iter()
                .map(|&i| {
                    values[i]
                        .get(&config.id_field)
                        .cloned()
                        .unwrap_or_else(|| json!(keys[i]))
                })
                .collect();
            PreCluster {
                id: format!("cluster-{}", number + 1),
                theme: theme(&m, &values, config),
                best_candidate: ids[0].clone(),
                members: ids,
                basis: basis[head].iter().cloned().collect(),
                exact: exact[head],
            }
        })
        .collect()
}

/// Orders members by the `rank_by` fields (`-field` for descending), ties by ingest order.
pub fn rank(members: &mut [usize], values: &[&Value], rank_by: &[String]) {
    members.sort_by(|&a, &b| {
        for spec in rank_by {
            let (field, descending) = match spec.strip_prefix('-') {
                Some(f) => (f, true),
                None => (spec.as_str(), false),
            };
            let ordering = compare(lookup(values[a], field), lookup(values[b], field), descending);
            if ordering.is_ne() {
                return ordering;
            }
        }
        a.cmp(&b)
    });
}

/// Missing values last, whatever the direction.
fn compare(a: Option<&Value>, b: Option<&Value>, descending: bool) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let rankable = |v: Option<&Value>| -> Option<Value> {
        match v? {
            Value::Null => None,
            Value::Bool(b) => Some(json!(u8::from(*b))),
            other => Some(other.clone()),
        }
    };
    match (rankable(a), rankable(b)) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => {
            let o = match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                _ => x.to_string().cmp(&y.to_string()),
            };
            if descending {
                o.reverse()
            } else {
                o
            }
        }
    }
}

/// What a cluster is about: its most frequent group value, else the words its members share.
fn theme(members: &[usize], values: &[&Value], config: &ClusterConfig) -> String {
    if let Some(field) = &config.group_by {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for &m in members {
            if let Some(Value::String(s)) = lookup(values[m], field) {
                *counts.entry(s.clone()).or_default() += 1;
            }
        }
        if let Some((value, _)) = counts.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0))) {
            return value;
        }
    }
    for rule in &config.similar_by {
        let mut shared: Option<BTreeSet<String>> = None;
        for &m in members {
            let f: BTreeSet<String> = features(lookup(values[m], &rule.field)).into_iter().collect();
            shared = Some(match shared {
                None => f,
                Some(s) => s.intersection(&f).cloned().collect(),
            });
        }
        if let Some(s) = shared.filter(|s| !s.is_empty()) {
            return s.into_iter().take(5).collect::<Vec<_>>().join(" ");
        }
    }
    "related items".to_string()
}

/// `a.b` in a record.
fn lookup<'a>(record: &'a Value, field: &str) -> Option<&'a Value> {
    field.split('.').try_fold(record, |v, key| v.get(key))
}

/// An exact-group key: a non-empty string (case and surrounding space ignored) or a number.
fn group_key(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_lowercase()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// What similarity compares: a list's values (lock files and changelogs left out), or a
/// text's words ([`words`]).
fn features(v: Option<&Value>) -> HashSet<String> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| match i {
                Value::String(s) if is_noise_path(s.trim()) => None,
                Value::String(s) => Some(s.trim().to_lowercase()),
                Value::Null => None,
                other => Some(other.to_string()),
            })
            .filter(|s| !s.is_empty())
            .collect(),
        Some(Value::String(text)) => words(text),
        _ => HashSet::new(),
    }
}

/// A text's words, lower-cased: every word of two letters or more that is not a stopword,
/// every number, and every identifier joined by `-`, `_`, `.` or `/` that holds a digit
/// (`fix-issue-11` is a word of its own beside `issue` and `11`).
fn words(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for chunk in text.split(|c: char| c.is_whitespace() || ",;:()[]{}\"'`!?".contains(c)) {
        let chunk = chunk.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        if chunk.is_empty() {
            continue;
        }
        let joined = chunk.contains(['-', '_', '.', '/']);
        if joined && chunk.chars().any(|c| c.is_ascii_digit()) {
            out.insert(chunk.clone());
        }
        for w in chunk.split(|c: char| !c.is_alphanumeric()) {
            let numeric = w.chars().any(|c| c.is_ascii_digit());
            if !w.is_empty() && (numeric || (w.chars().count() >= 2 && !STOPWORDS.contains(&w))) {
                out.insert(w.to_string());
            }
        }
    }
    out
}

/// Pairs `(score, i, j)` with `i < j` whose Jaccard similarity over their uncommon features
/// reaches `threshold` — for `text`, sharing two words, unless one of them has a single
/// one. Candidates come from an inverted index, so items that share nothing are never
/// compared.
fn similar_pairs(sets: &[HashSet<String>], threshold: f64, text: bool) -> Vec<(f64, usize, usize)> {
    let cutoff = common_cutoff(sets.len());
    let mut postings: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, set) in sets.iter().enumerate() {
        for f in set {
            postings.entry(f.as_str()).or_default().push(i);
        }
    }
    let common: HashSet<&str> = postings
        .iter()
        .filter(|(_, p)| p.len() > cutoff)
        .map(|(f, _)| *f)
        .collect();
    let kept: Vec<HashSet<&str>> = sets
        .iter()
        .map(|s| s.iter().map(String::as_str).filter(|f| !common.contains(f)).collect())
        .collect();
    let mut candidates: BTreeSet<(usize, usize)> = BTreeSet::new();
    for (f, p) in &postings {
        if common.contains(f) {
            continue;
        }
        for (x, &i) in p.iter().enumerate() {
            for &j in &p[x + 1..] {
                candidates.insert((i.min(j), i.max(j)));
            }
        }
    }
    candidates
        .into_iter()
        .filter_map(|(i, j)| {
            let inter = kept[i].intersection(&kept[j]).count();
            let union = kept[i].union(&kept[j]).count();
            // One shared word is weak evidence; one shared (uncommon) file is not.
            let enough = !text || inter >= 2.min(kept[i].len()).min(kept[j].len());
            let score = if union == 0 { 0.0 } else { inter as f64 / union as f64 };
            (enough && score >= threshold).then_some((score, i, j))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(group_by: Option<&str>, similar: &[(&str, f64)]) -> ClusterConfig {
        ClusterConfig {
            id_field: "n".into(),
            group_by: group_by.map(str::to_string),
            similar_by: similar
                .iter()
                .map(|(f, t)| Similarity {
                    field: f.to_string(),
                    threshold: *t,
                })
                .collect(),
            rank_by: vec!["-score".into()],
            max_size: 50,
        }
    }

    #[test]
    fn exact_groups_are_clusters_ranked_by_rank_by() {
        let items = vec![
            json!({"n": 1, "fp": "Dark-Mode", "score": 3}),
            json!({"n": 2, "fp": "other"}),
            json!({"n": 3, "fp": "dark-mode ", "score": 9}),
        ];
        let c = precluster(&Records::new(&items, "n"), &config(Some("fp"), &[]));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].members, vec![json!(3), json!(1)]);
        assert_eq!(c[0].best_candidate, json!(3));
        assert!(c[0].exact);
        assert_eq!(c[0].proposal()["duplicate_groups"][0]["duplicates"], json!([1]));
    }

    #[test]
    fn a_common_lock_file_does_not_chain_unrelated_items() {
        // 40 items, each touching the lock file and its own files; pairs 0-1, 2-3 share a
        // real file too. Sharing only the lock file must not join anything.
        let mut items = Vec::new();
        for i in 0..40 {
            let own = format!("src/{}.rs", i / 2);
            let files = if i < 4 {
                json!(["Cargo.lock", own, format!("tests/{i}.rs")])
            } else {
                json!(["Cargo.lock", format!("src/only{i}.rs")])
            };
            items.push(json!({"n": i, "files": files}));
        }
        let c = precluster(&Records::new(&items, "n"), &config(None, &[("files", 0.3)]));
        let sizes: Vec<usize> = c.iter().map(|c| c.members.len()).collect();
        assert_eq!(sizes, vec![2, 2], "{c:?}");
    }

    #[test]
    fn lock_files_and_changelogs_never_join_items_in_a_small_job() {
        // 40 items, each with its own file; eight also touch the lock file and the changelog.
        let items: Vec<Value> = (0..40)
            .map(|i| {
                let mut files = vec![json!(format!("src/own{i}.rs"))];
                if i < 8 {
                    files.push(json!("Cargo.lock"));
                    files.push(json!("docs/CHANGELOG.md"));
                }
                json!({"n": i, "files": files})
            })
            .collect();
        let c = precluster(&Records::new(&items, "n"), &config(None, &[("files", 0.5)]));
        assert!(c.is_empty(), "{c:?}");
        assert!(is_noise_path("web/package-lock.json") && is_noise_path("CHANGES.rst") && is_noise_path("go.sum"));
        assert!(!is_noise_path("src/lock.rs") && !is_noise_path("changelog"));
        assert_eq!(common_cutoff(40), 4);
        assert_eq!(common_cutoff(3000), 150);
    }

    #[test]
    fn numbered_intents_stay_apart_and_equal_ones_join() {
        let mut items: Vec<Value> = (11..=30)
            .map(|i| json!({"n": i, "t": format!("fix-issue-{i}")}))
            .collect();
        items.push(json!({"n": 100, "t": "dark-mode toggle v2"}));
        items.push(json!({"n": 101, "t": "toggle dark-mode, v2"}));
        items.push(json!({"n": 102, "t": "fix"}));
        items.push(json!({"n": 103, "t": "fix"}));
        let c = precluster(&Records::new(&items, "n"), &config(None, &[("t", 0.6)]));
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].members, vec![json!(100), json!(101)]);
        let w = words("Fix issue #11 in src/io_v2.rs");
        for expected in ["11", "src/io_v2.rs", "io", "v2", "src", "rs"] {
            assert!(w.contains(expected), "{expected}: {w:?}");
        }
        assert!(!w.contains("fix") && !w.contains("in"), "{w:?}");
    }

    #[test]
    fn one_shared_word_does_not_make_two_texts_alike() {
        let items = vec![
            json!({"n": 1, "t": "login page"}),
            json!({"n": 2, "t": "login"}),
            json!({"n": 3, "t": "login timeout"}),
        ];
        // 1 and 3 share one word of two: Jaccard 1/3, and one word is not enough anyway.
        let c = precluster(&Records::new(&items, "n"), &config(None, &[("t", 0.3)]));
        assert!(
            c.iter()
                .all(|c| !(c.members.contains(&json!(1)) && c.members.contains(&json!(3)))),
            "{c:?}"
        );
    }

    #[test]
    fn complete_linkage_refuses_a_chain() {
        // a~b and b~c but not a~c: b joins one of them, never both.
        let items = vec![
            json!({"n": 1, "t": "alpha beta gamma"}),
            json!({"n": 2, "t": "beta gamma delta"}),
            json!({"n": 3, "t": "gamma delta epsilon"}),
        ];
        let c = precluster(&Records::new(&items, "n"), &config(None, &[("t", 0.5)]));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].members.len(), 2);
    }
}
