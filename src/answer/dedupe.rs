//! One finding reported twice is reported once — across the answers of a run.
//!
//! Two cases. The same finding in the same words (the same path, line, level and message,
//! ignoring case and spacing) is kept once wherever it comes from. And two overlapping
//! windows of a file (a log's 200-line windows share 20 lines) both see the lines they
//! share: a finding a later window reports at a line that an earlier window also held,
//! where that window already reported a finding at the same line of the same file, is the
//! same event told again — however it is worded — and is dropped; the finding kept takes
//! the higher of the two levels, so `--fail-on` decides as it would have on either.

use std::collections::{HashMap, HashSet};

use super::Answer;
use crate::findings::Finding;

/// Removes the duplicates from `answers` (in run order; see the module doc). Each answer's
/// findings — and the items its [`Answer::value`] shows — lose the ones dropped.
pub fn dedupe(answers: &mut [&mut Answer]) {
    let mut worded: HashSet<(String, Option<u64>, crate::findings::Level, String)> = HashSet::new();
    // (path, line) → the findings a window reported there: (answer, finding).
    let mut at_line: HashMap<(String, u64), Vec<(usize, usize)>> = HashMap::new();
    for a in 0..answers.len() {
        let window = answers[a].window.clone();
        let findings = answers[a].findings.clone();
        let mut keep = vec![true; findings.len()];
        let mut kept_count = 0;
        for (f, finding) in findings.iter().enumerate() {
            if !worded.insert(wording(finding)) {
                keep[f] = false;
                continue;
            }
            let in_window = match (&window, finding.region) {
                (Some(w), Some(region)) if w.holds(&finding.path, region.start_line) => Some(region.start_line),
                _ => None,
            };
            if let Some(line) = in_window {
                let key = (finding.path.clone(), line);
                let earlier = at_line.get(&key).and_then(|seen| {
                    seen.iter().copied().find(|(b, _)| {
                        *b != a
                            && answers[*b]
                                .window
                                .as_ref()
                                .is_some_and(|w| w.holds(&finding.path, line))
                    })
                });
                if let Some((b, g)) = earlier {
                    let kept = &mut answers[b].findings[g];
                    kept.level = kept.level.max(finding.level);
                    keep[f] = false;
                    continue;
                }
                at_line.entry(key).or_default().push((a, kept_count));
            }
            kept_count += 1;
        }
        answers[a].retain_findings(|i, _| keep[i]);
    }
}

/// What makes two findings the same words: path, line, level and message (case and
/// spacing aside).
fn wording(f: &Finding) -> (String, Option<u64>, crate::findings::Level, String) {
    let message: String = f
        .message
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    (f.path.clone(), f.region.map(|r| r.start_line), f.level, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::{read, Scope};
    use crate::findings::{Level, Region};

    fn window(text: &str, start: u64, end: u64) -> Answer {
        read(
            text.to_string(),
            &Scope {
                path: "app.log",
                chunk: None,
                span: Some((start, end)),
                expects_findings: true,
            },
        )
    }

    fn messages(a: &Answer) -> Vec<(u64, String, Level)> {
        a.findings
            .iter()
            .map(|f| (f.region.map_or(0, |r| r.start_line), f.message.clone(), f.level))
            .collect()
    }

    #[test]
    fn exact_duplicates_are_kept_once_wherever_they_come_from() {
        let mut a = window(r#"{"findings": [{"line": 190, "message": "Timeout"}]}"#, 1, 200);
        let mut b = window(
            r#"{"findings": [{"line": 190, "message": "timeout "}, {"line": 191, "message": "Timeout"}]}"#,
            300,
            400,
        );
        dedupe(&mut [&mut a, &mut b]);
        assert_eq!(messages(&a).len(), 1);
        assert_eq!(messages(&b), [(191, "Timeout".to_string(), Level::Warning)]);
    }

    #[test]
    fn one_event_told_by_two_overlapping_windows_in_other_words_is_reported_once() {
        let mut first = window(
            r#"{"findings": [{"line": 190, "message": "Timeout talking to db", "severity": "medium"}]}"#,
            1,
            200,
        );
        let mut second = window(
            r#"{"findings": [{"line": 190, "message": "Database call timed out", "severity": "high"},
                              {"line": 190, "message": "Retry storm follows"},
                              {"line": 250, "message": "Disk full"}]}"#,
            181,
            380,
        );
        dedupe(&mut [&mut first, &mut second]);
        assert_eq!(
            messages(&first),
            [(190, "Timeout talking to db".to_string(), Level::Error)],
            "kept once, at the higher level"
        );
        // Both later findings at line 190 repeat what the first window saw there.
        assert_eq!(messages(&second), [(250, "Disk full".to_string(), Level::Warning)]);
        // The aggregate's view loses the dropped items and shows the raised level.
        let value = second.value().unwrap();
        assert_eq!(value["findings"].as_array().unwrap().len(), 1, "{value}");
        assert_eq!(first.value().unwrap()["findings"][0]["severity"], "error");
    }

    #[test]
    fn two_findings_at_one_line_of_one_window_both_stay() {
        let mut only = window(
            r#"{"findings": [{"line": 190, "message": "a"}, {"line": 190, "message": "b"}]}"#,
            181,
            380,
        );
        let mut before = window(r#"{"findings": [{"line": 10, "message": "x"}]}"#, 1, 200);
        dedupe(&mut [&mut before, &mut only]);
        assert_eq!(only.findings.len(), 2, "line 190 had no finding in the earlier window");
        assert_eq!(only.findings[0].region, Region::new(190, None));
    }
}
