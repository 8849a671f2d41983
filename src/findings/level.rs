//! Severity levels of findings, the `--fail-on` threshold, and counts per level.
//!
//! Models write severity in many words; every word maps to one of the three levels that
//! SARIF and GitHub know (`error`, `warning`, `note`), so the threshold, the SARIF `level`
//! and the annotation command all agree.

use std::fmt;
use std::str::FromStr;

use super::Finding;

/// How serious a finding is, ordered `Note < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Note,
    Warning,
    Error,
}

impl Level {
    /// Every level, most serious first (the order reports list them in).
    pub const ALL: [Level; 3] = [Level::Error, Level::Warning, Level::Note];

    /// Maps a model's severity word to a level; `None` for a word we do not know.
    ///
    /// critical/high/error → error; medium/warning → warning; low/info/note → note, plus the
    /// usual synonyms (blocker → error, major → warning, minor and hint → note, …). Case and surrounding space are ignored.
    pub fn from_severity(word: &str) -> Option<Level> {
        let word = word.trim().to_ascii_lowercase();
        let level = match word.as_str() {
            "critical" | "high" | "error" | "fatal" | "blocker" | "severe" => Level::Error,
            // SonarQube's scale (blocker > critical > major > minor > info) puts major mid-way.
            "medium" | "moderate" | "major" | "warning" | "warn" => Level::Warning,
            "low" | "info" | "information" | "informational" | "note" | "minor" | "hint" | "notice" | "suggestion"
            | "style" | "trivial" => Level::Note,
            _ => return None,
        };
        Some(level)
    }

    /// The SARIF `level` value and the word used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--fail-on` value that is not a level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown --fail-on level `{0}`: use error, warning or note")]
pub struct UnknownLevel(pub String);

/// `--fail-on error|warning|note`: the run fails when a finding at or above this level
/// exists. Without the flag, findings never change the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    Error,
    Warning,
    Note,
}

impl FailOn {
    /// The lowest level that fails the run.
    pub fn threshold(self) -> Level {
        match self {
            FailOn::Error => Level::Error,
            FailOn::Warning => Level::Warning,
            FailOn::Note => Level::Note,
        }
    }

    /// True when some finding is at or above the threshold.
    pub fn exceeded(&self, findings: &[Finding]) -> bool {
        findings.iter().any(|f| f.level >= self.threshold())
    }
}

impl FromStr for FailOn {
    type Err = UnknownLevel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "error" => Ok(FailOn::Error),
            "warning" => Ok(FailOn::Warning),
            "note" => Ok(FailOn::Note),
            _ => Err(UnknownLevel(s.to_string())),
        }
    }
}

/// How many findings there are at each level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelCounts {
    pub error: usize,
    pub warning: usize,
    pub note: usize,
}

impl LevelCounts {
    /// Counts `findings` by level.
    pub fn of(findings: &[Finding]) -> LevelCounts {
        let mut counts = LevelCounts::default();
        for f in findings {
            *counts.get_mut(f.level) += 1;
        }
        counts
    }

    /// The count at one level.
    pub fn get(&self, level: Level) -> usize {
        match level {
            Level::Error => self.error,
            Level::Warning => self.warning,
            Level::Note => self.note,
        }
    }

    fn get_mut(&mut self, level: Level) -> &mut usize {
        match level {
            Level::Error => &mut self.error,
            Level::Warning => &mut self.warning,
            Level::Note => &mut self.note,
        }
    }

    pub fn total(&self) -> usize {
        self.error + self.warning + self.note
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(level: Level) -> Finding {
        Finding {
            path: "src/a.ts".into(),
            region: None,
            level,
            message: "m".into(),
            rule: None,
            scope: None,
            evidence: None,
        }
    }

    #[test]
    fn severity_words_map_to_the_three_levels() {
        for (word, level) in [
            ("critical", Level::Error),
            ("HIGH", Level::Error),
            (" error ", Level::Error),
            ("Medium", Level::Warning),
            ("warning", Level::Warning),
            ("low", Level::Note),
            ("info", Level::Note),
            ("note", Level::Note),
        ] {
            assert_eq!(Level::from_severity(word), Some(level), "{word}");
        }
        assert_eq!(Level::from_severity("purple"), None);
        assert_eq!(Level::from_severity(""), None);
    }

    #[test]
    fn fail_on_is_at_or_above_the_threshold() {
        let notes = [at(Level::Note)];
        let warnings = [at(Level::Note), at(Level::Warning)];
        let errors = [at(Level::Error)];
        assert!(!FailOn::Error.exceeded(&warnings));
        assert!(FailOn::Error.exceeded(&errors));
        assert!(!FailOn::Warning.exceeded(&notes));
        assert!(FailOn::Warning.exceeded(&warnings));
        assert!(FailOn::Warning.exceeded(&errors));
        assert!(FailOn::Note.exceeded(&notes));
        assert!(FailOn::Note.exceeded(&errors));
        assert!(!FailOn::Note.exceeded(&[]));
    }

    #[test]
    fn fail_on_parses_the_three_levels_only() {
        assert_eq!("error".parse::<FailOn>(), Ok(FailOn::Error));
        assert_eq!("Warning".parse::<FailOn>(), Ok(FailOn::Warning));
        assert_eq!("note".parse::<FailOn>(), Ok(FailOn::Note));
        let err = "high".parse::<FailOn>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown --fail-on level `high`: use error, warning or note"
        );
    }

    #[test]
    fn counts_per_level() {
        let c = LevelCounts::of(&[at(Level::Error), at(Level::Note), at(Level::Note)]);
        assert_eq!((c.error, c.warning, c.note, c.total()), (1, 0, 2, 3));
        assert_eq!(c.get(Level::Note), 2);
    }
}
