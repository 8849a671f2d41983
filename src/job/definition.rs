//! A job definition: where the items come from, how they are identified, and the phases
//! that process them — read from TOML (or JSON with the same keys) and checked whole
//! before anything runs, so a mistake is one line naming the file, the phase and the key.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{InputFailure, RlmError};

/// Items per worker call when a phase does not say.
pub const DEFAULT_BATCH_SIZE: usize = 50;
/// Items per review call when the phase does not say (reviews carry diffs).
pub const DEFAULT_REVIEW_BATCH_SIZE: usize = 5;
/// Invalid answers asked for again before a batch fails.
pub const DEFAULT_RETRIES: u32 = 2;
/// Largest cluster the reduce refinement sends to the model; larger ones keep the
/// programmatic ranking (they would not fit one call, and they are suspect anyway).
pub const DEFAULT_MAX_CLUSTER_SIZE: usize = 50;

/// A whole job, as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobDefinition {
    pub name: String,
    /// A JSON array or JSONL file of objects, relative to the definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<PathBuf>,
    /// Or a command whose stdout is that (argv, never a shell string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The field that identifies an item.
    #[serde(default = "default_id")]
    pub id: String,
    /// A document every worker sees (the vision document of a PR review).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<PathBuf>,
    /// `OWNER/REPO`: `{repo}` in a `fetch` command, and where GitHub comments go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// The name of the ingested data: `data/{items}.json`.
    #[serde(default = "default_items")]
    pub items: String,
    /// `pr-review`: the items are gh's pull requests (`gh pr list --json …`), normalized
    /// into the seed's record as `rlm job pr-review` does, and the report takes the seed's
    /// PR-review layout. Absent for any other job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(rename = "phase", alias = "phases", default)]
    pub phases: Vec<PhaseDefinition>,
}

/// The `kind` of a job whose items are gh's pull requests.
pub const PR_REVIEW: &str = "pr-review";

fn default_id() -> String {
    "id".to_string()
}

fn default_items() -> String {
    "items".to_string()
}

/// What a phase does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PhaseKind {
    /// Every item, in batches, one answer object per item.
    Map,
    /// Programmatic clusters, refined by the model.
    Reduce,
    /// Selected items, enriched by a command, in small batches.
    Review,
    /// One call over the compressed results, beside a report built from the data.
    Report,
}

impl PhaseKind {
    pub fn name(self) -> &'static str {
        match self {
            PhaseKind::Map => "map",
            PhaseKind::Reduce => "reduce",
            PhaseKind::Review => "review",
            PhaseKind::Report => "report",
        }
    }
}

/// One phase, as written; every key but `name` and `kind` is optional somewhere.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseDefinition {
    pub name: String,
    pub kind: PhaseKind,
    /// How the phase is shown (`Scan & classify`); its name when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The worker's instructions (a Markdown file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<PathBuf>,
    /// The JSON Schema of ONE output object (map, review; reduce has a built-in one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `anthropic` or `openai`: this phase's calls go there (its key and base URL from the
    /// environment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<usize>,
    /// Seconds per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Invalid answers asked for again before the batch fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    // Reduce.
    /// Items whose value of this field is equal (ignoring case) are one cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_by: Option<String>,
    /// Items this similar are one cluster (complete linkage: similar to every member).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "similarity_rules"
    )]
    pub similar_by: Vec<Similarity>,
    /// How members are ranked before the model looks: fields, `-field` for descending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_by: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cluster_size: Option<usize>,
    // Review.
    /// Which items: `best_candidate`, `clustered`, or a filter such as
    /// `quick_verdict == "review"` (`and`, `or`, `not`, `==`, `!=`, `<`, `<=`, `>`, `>=`,
    /// `contains`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<String>,
    /// A command run per selected item (`{id}`, `{repo}` replaced); its output is added to
    /// the item, cut to the context budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch: Option<Vec<String>>,
    /// The field the fetched text goes in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_as: Option<String>,
}

/// One similarity rule of a reduce phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Similarity {
    /// A list field (Jaccard over its values) or a text field (Jaccard over its words).
    pub field: String,
    /// Above this similarity (0 < t ≤ 1), two items may share a cluster.
    pub threshold: f64,
}

/// `similar_by`: a list of rules (or one), each a table with a field and a threshold; any
/// other shape is said with an example, not as serde's type names.
fn similarity_rules<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Similarity>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Rules {
        Many(Vec<Similarity>),
        One(Similarity),
    }
    match Rules::deserialize(d) {
        Ok(Rules::Many(rules)) => Ok(rules),
        Ok(Rules::One(rule)) => Ok(vec![rule]),
        Err(_) => Err(serde::de::Error::custom(
            "`similar_by` is a list of rules, each with a `field` and a `threshold` (0 < t <= 1), as in \
             similar_by = [{ field = \"title\", threshold = 0.5 }]",
        )),
    }
}

impl PhaseDefinition {
    /// Items per call.
    pub fn batch_size(&self) -> usize {
        self.batch_size.unwrap_or(match self.kind {
            PhaseKind::Review => DEFAULT_REVIEW_BATCH_SIZE,
            PhaseKind::Reduce => 20,
            _ => DEFAULT_BATCH_SIZE,
        })
    }

    pub fn retries(&self) -> u32 {
        self.retries.unwrap_or(DEFAULT_RETRIES)
    }

    pub fn max_cluster_size(&self) -> usize {
        self.max_cluster_size.unwrap_or(DEFAULT_MAX_CLUSTER_SIZE)
    }

    pub fn fetch_as(&self) -> &str {
        self.fetch_as.as_deref().unwrap_or("fetched")
    }
}

impl JobDefinition {
    /// Whether its items are gh's pull requests, reported in the seed's layout.
    pub fn is_pr_review(&self) -> bool {
        self.kind.as_deref() == Some(PR_REVIEW)
    }

    /// Reads and checks a definition file (`.json` as JSON, anything else as TOML).
    pub fn load(path: &Path) -> Result<Self, RlmError> {
        let shown = path.display();
        let text = fs_err::read_to_string(path).map_err(InputFailure::unreadable("the job file"))?;
        let is_json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let definition: JobDefinition = if is_json {
            serde_json::from_str(&text)
                .map_err(|e| RlmError::Input(format!("{shown}: line {}, column {}: {e}", e.line(), e.column())))?
        } else {
            toml::from_str(&text).map_err(|e| {
                let at = e
                    .span()
                    .map(|s| {
                        let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                        format!("line {line}: ")
                    })
                    .unwrap_or_default();
                RlmError::Input(format!("{shown}: {at}{}", one_line(e.message())))
            })?
        };
        definition.check(&shown.to_string())?;
        Ok(definition)
    }

    /// Every rule a definition must follow; `shown` names it in messages.
    pub fn check(&self, shown: &str) -> Result<(), RlmError> {
        let bad = |what: String| Err(RlmError::Input(format!("{shown}: {what}")));
        if self.name.trim().is_empty() {
            return bad("`name` is empty: give the job a name".into());
        }
        if self.id.trim().is_empty() {
            return bad("`id` is empty: name the field that identifies an item (e.g. id = \"number\")".into());
        }
        if !is_file_name(&self.items) {
            return bad(format!(
                "`items = \"{}\"` must be a plain name (letters, digits, - and _): it names data/{{items}}.json",
                self.items
            ));
        }
        match self.kind.as_deref() {
            None => {}
            Some(PR_REVIEW) if self.id == "number" => {}
            Some(PR_REVIEW) => {
                return bad("`kind = \"pr-review\"` identifies pull requests by number: set id = \"number\"".into())
            }
            Some(other) => {
                return bad(format!(
                    "`kind = \"{other}\"` is not a kind of job: use kind = \"pr-review\" (gh's pull requests), or \
                     leave it out"
                ))
            }
        }
        match (&self.input, &self.command) {
            (Some(_), Some(_)) => return bad("give `input` or `command`, not both".into()),
            (None, Some(c)) if c.is_empty() => {
                return bad("`command` is empty: give the program and its arguments".into())
            }
            _ => {}
        }
        if self.phases.is_empty() {
            return bad("no phases: add at least one [[phase]] with a name and a kind".into());
        }
        let mut names = std::collections::HashSet::new();
        let mut seen_reduce = false;
        for (i, phase) in self.phases.iter().enumerate() {
            let at = format!("phase {} ({})", i + 1, phase.name);
            let bad = |what: String| Err(RlmError::Input(format!("{shown}: {at}: {what}")));
            if !is_file_name(&phase.name) {
                return bad("a phase name must be letters, digits, - and _ (it names data/{phase}.json)".into());
            }
            if phase.name == self.items || phase.name == "preclusters" || !names.insert(phase.name.clone()) {
                return bad("the name is taken (by another phase, the items, or preclusters)".into());
            }
            if phase.batch_size.is_some_and(|n| !(1..=1000).contains(&n)) {
                return bad("`batch_size` must be between 1 and 1000".into());
            }
            if phase.concurrency.is_some_and(|n| !(1..=1000).contains(&n)) {
                return bad("`concurrency` must be between 1 and 1000".into());
            }
            if phase.timeout.is_some_and(|t| !(t > 0.0 && t <= 86_400.0)) {
                return bad("`timeout` must be more than 0 and at most 86400 seconds".into());
            }
            if phase.retries.is_some_and(|r| r > 10) {
                return bad("`retries` must be between 0 and 10".into());
            }
            if phase.max_tokens.is_some_and(|t| !(1..=1_000_000).contains(&t)) {
                return bad("`max_tokens` must be between 1 and 1000000".into());
            }
            if let Some(p) = &phase.provider {
                if !matches!(p.as_str(), "anthropic" | "openai") {
                    return bad(format!("`provider = \"{p}\"`: use anthropic or openai"));
                }
            }
            let needs = |key: &str, present: bool| -> Result<(), RlmError> {
                if present {
                    Ok(())
                } else {
                    Err(RlmError::Input(format!(
                        "{shown}: {at}: a {} phase needs `{key}`",
                        phase.kind.name()
                    )))
                }
            };
            match phase.kind {
                PhaseKind::Map => {
                    needs("prompt", phase.prompt.is_some())?;
                    needs("output_schema", phase.output_schema.is_some())?;
                }
                PhaseKind::Review => {
                    needs("prompt", phase.prompt.is_some())?;
                    needs("output_schema", phase.output_schema.is_some())?;
                    needs("select", phase.select.is_some())?;
                    if let Some(select) = &phase.select {
                        let filter = super::select::Filter::parse(select)
                            .map_err(|e| RlmError::Input(format!("{shown}: {at}: select: {e}")))?;
                        if filter.uses_clusters() && !seen_reduce {
                            return bad(
                                "`select` names best_candidate or clustered: it needs a reduce phase before it".into(),
                            );
                        }
                    }
                    if phase.fetch.as_ref().is_some_and(Vec::is_empty) {
                        return bad("`fetch` is empty: give the program and its arguments".into());
                    }
                    if phase
                        .fetch
                        .as_ref()
                        .is_some_and(|f| f.iter().any(|a| a.contains("{repo}")))
                        && self.repo.is_none()
                    {
                        return bad("`fetch` uses {repo}: set `repo = \"OWNER/REPO\"` in the job".into());
                    }
                }
                PhaseKind::Reduce => {
                    if seen_reduce {
                        return bad(
                            "a job has at most one reduce phase (its clusters are data/preclusters.json)".into(),
                        );
                    }
                    seen_reduce = true;
                    if phase.group_by.is_none() && phase.similar_by.is_empty() {
                        return bad("a reduce phase needs `group_by` or `similar_by`".into());
                    }
                    for s in &phase.similar_by {
                        if !(s.threshold > 0.0 && s.threshold <= 1.0) {
                            return bad(format!(
                                "similar_by {}: `threshold` must be above 0 and at most 1",
                                s.field
                            ));
                        }
                    }
                    if phase.max_cluster_size.is_some_and(|n| !(2..=100_000).contains(&n)) {
                        return bad("`max_cluster_size` must be between 2 and 100000".into());
                    }
                }
                PhaseKind::Report => {
                    if i + 1 != self.phases.len() {
                        return bad("a report phase must be the last phase".into());
                    }
                }
            }
        }
        Ok(())
    }

    /// The phase named by `query`: its number from 1, or its name.
    pub fn phase_index(&self, query: &str) -> Result<usize, RlmError> {
        let query = query.trim();
        if let Ok(n) = query.parse::<usize>() {
            if (1..=self.phases.len()).contains(&n) {
                return Ok(n - 1);
            }
        }
        self.phases.iter().position(|p| p.name == query).ok_or_else(|| {
            let names: Vec<String> = self
                .phases
                .iter()
                .enumerate()
                .map(|(i, p)| format!("{} {}", i + 1, p.name))
                .collect();
            RlmError::Usage(format!(
                "no phase '{query}' in job {}: name one of {}",
                self.name,
                names.join(", ")
            ))
        })
    }
}

/// Letters, digits, `-` and `_`: safe in a file name on every system.
fn is_file_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<JobDefinition, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.toml");
        fs_err::write(&path, text).unwrap();
        JobDefinition::load(&path).map_err(|e| e.to_string())
    }

    #[test]
    fn a_map_and_report_job_parses_with_defaults() {
        let d = parse(
            "name = \"t\"\ninput = \"e.jsonl\"\nid = \"number\"\n[[phase]]\nname = \"classify\"\nkind = \"map\"\n\
             prompt = \"c.md\"\noutput_schema = \"s.json\"\nbatch_size = 25\n[[phase]]\nname = \"report\"\nkind = \"report\"\n",
        )
        .unwrap();
        assert_eq!(d.id, "number");
        assert_eq!(d.items, "items");
        assert_eq!(d.phases[0].batch_size(), 25);
        assert_eq!(d.phases[0].retries(), 2);
        assert_eq!(d.phase_index("2").unwrap(), 1);
        assert_eq!(d.phase_index("classify").unwrap(), 0);
        assert!(d
            .phase_index("9")
            .unwrap_err()
            .to_string()
            .contains("1 classify, 2 report"));
    }

    #[test]
    fn mistakes_are_one_line_naming_the_phase_and_key() {
        for (text, needle) in [
            ("name = \"t\"\n", "no phases"),
            ("name = \"t\"\n[[phase]]\nname = \"a\"\nkind = \"map\"\n", "phase 1 (a): a map phase needs `prompt`"),
            ("name = \"t\"\n[[phase]]\nname = \"a\"\nkind = \"fold\"\n", "line"),
            ("name = \"t\"\nbogus = 1\n[[phase]]\nname = \"a\"\nkind = \"report\"\n", "bogus"),
            (
                "name = \"t\"\n[[phase]]\nname = \"r\"\nkind = \"review\"\nprompt = \"p\"\noutput_schema = \"s\"\nselect = \"best_candidate\"\n",
                "needs a reduce phase",
            ),
            ("name = \"t\"\n[[phase]]\nname = \"a/b\"\nkind = \"report\"\n", "phase name"),
            ("name = \"t\"\n[[phase]]\nname = \"a\"\nkind = \"reduce\"\n", "group_by"),
            (
                "name = \"t\"\n[[phase]]\nname = \"a\"\nkind = \"reduce\"\nsimilar_by = \"text\"\n",
                "similar_by = [{ field = \"title\", threshold = 0.5 }]",
            ),
            (
                "name = \"t\"\n[[phase]]\nname = \"a\"\nkind = \"reduce\"\nsimilar_by = [{ field = \"t\", treshold = 1 }]\n",
                "each with a `field` and a `threshold`",
            ),
            (
                "name = \"t\"\nkind = \"issues\"\n[[phase]]\nname = \"a\"\nkind = \"report\"\n",
                "not a kind of job",
            ),
            (
                "name = \"t\"\nkind = \"pr-review\"\n[[phase]]\nname = \"a\"\nkind = \"report\"\n",
                "set id = \"number\"",
            ),
            (
                "name = \"t\"\n[[phase]]\nname = \"a\"\nkind = \"reduce\"\ngroup_by = \"k\"\nmax_cluster_size = 1\n",
                "`max_cluster_size` must be between 2 and 100000",
            ),
            (
                "name = \"t\"\n[[phase]]\nname = \"a\"\nkind = \"reduce\"\ngroup_by = \"k\"\nmax_cluster_size = 99999999999999\n",
                "`max_cluster_size` must be between 2 and 100000",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn similar_by_is_a_list_of_rules_or_one_rule() {
        let head = "name = \"t\"\n[[phase]]\nname = \"a\"\nkind = \"reduce\"\nprompt = \"p\"\noutput_schema = \"s\"\n";
        for rules in [
            "similar_by = [{ field = \"title\", threshold = 0.5 }]",
            "similar_by = { field = \"title\", threshold = 0.5 }",
        ] {
            let d = parse(&format!("{head}{rules}\n")).unwrap();
            assert_eq!(d.phases[0].similar_by.len(), 1, "{rules}");
            assert_eq!(d.phases[0].similar_by[0].field, "title");
        }
    }

    #[test]
    fn json_with_the_same_keys_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.json");
        fs_err::write(
            &path,
            r#"{"name":"t","input":"x.json","phase":[{"name":"report","kind":"report"}]}"#,
        )
        .unwrap();
        assert_eq!(JobDefinition::load(&path).unwrap().phases[0].kind, PhaseKind::Report);
    }
}
