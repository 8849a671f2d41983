//! The Claude Code skill: the `rlm-batch` skill file and its slash command, embedded in the
//! binary with this build's version, and `rlm skill install` / `rlm skill show`.
//!
//! The text lives in `skill/` at the repository root. Each installed file ends with a
//! checksum footer ([`footer`]), so a reinstall can tell a file an older rlm wrote (replace
//! it) from one the user edited (refuse without `--force`).

mod footer;
mod installer;

pub use footer::FooterCheck;
pub use installer::{install, show, write_outcomes, InstallAction, InstallOutcome, SkillError};

use std::path::PathBuf;

/// The skill's name (`name:` in its front matter and its directory).
pub const SKILL_NAME: &str = "rlm-batch";

const SKILL_TEMPLATE: &str = include_str!("../../skill/SKILL.md");
const COMMAND_TEMPLATE: &str = include_str!("../../skill/rlm-batch-command.md");

/// One file the skill installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// Relative to the directory that holds `.claude/` (the project, or the home directory).
    pub relative_path: PathBuf,
    /// The full text, footer included.
    pub contents: String,
}

/// Where the skill goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// `.claude/` in this directory (the project Claude Code runs in).
    Project(PathBuf),
    /// `~/.claude/`: the user's home directory, for every project.
    User(PathBuf),
}

impl Scope {
    /// The directory that holds `.claude/`.
    pub fn root(&self) -> &std::path::Path {
        match self {
            Scope::Project(dir) | Scope::User(dir) => dir,
        }
    }
}

/// The skill file and the slash command, rendered for this build of rlm.
pub fn skill_files() -> Vec<SkillFile> {
    skill_files_for(env!("CARGO_PKG_VERSION"))
}

/// The files as rlm `version` would write them.
fn skill_files_for(version: &str) -> Vec<SkillFile> {
    let render = |template: &str| {
        let body = format!("{}\n\n", template.replace("{{version}}", version).trim_end());
        footer::with_footer(&body, version)
    };
    vec![
        SkillFile {
            relative_path: [".claude", "skills", SKILL_NAME, "SKILL.md"].iter().collect(),
            contents: render(SKILL_TEMPLATE),
        },
        SkillFile {
            relative_path: [".claude", "commands", &format!("{SKILL_NAME}.md")].iter().collect(),
            contents: render(COMMAND_TEMPLATE),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `key: value` lines of the front matter between the leading `---` lines.
    fn front_matter(text: &str) -> Vec<(String, String)> {
        let rest = text.strip_prefix("---\n").expect("front matter opens the file");
        let end = rest.find("\n---\n").expect("front matter closes");
        rest[..end]
            .lines()
            .map(|l| {
                let (k, v) = l.split_once(": ").unwrap_or_else(|| panic!("not `key: value`: {l}"));
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    fn get<'a>(fm: &'a [(String, String)], key: &str) -> &'a str {
        fm.iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no `{key}`"))
    }

    #[test]
    fn the_skill_front_matter_follows_claude_codes_rules() {
        let files = skill_files();
        let fm = front_matter(&files[0].contents);
        let name = get(&fm, "name");
        assert_eq!(name, SKILL_NAME);
        assert!(name.len() <= 64 && name.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
        let description = get(&fm, "description");
        assert!(
            !description.is_empty() && description.len() <= 1024,
            "{}",
            description.len()
        );
        assert!(!description.contains('<') && !description.contains('>'), "no XML tags");
        // A plain YAML scalar: no `: ` or ` #` that would end or comment it.
        assert!(!description.contains(": ") && !description.contains(" #"));
        for trigger in [
            "batch process",
            "on every file",
            "parallel process",
            "fan out",
            "rlm batch",
        ] {
            assert!(description.contains(trigger), "trigger `{trigger}` missing");
        }
        assert_eq!(get(&fm, "allowed-tools"), "Bash(rlm:*), Read");
        assert_eq!(fm.len(), 3);
    }

    #[test]
    fn the_skill_body_covers_what_claude_must_know() {
        let text = &skill_files()[0].contents;
        for needle in [
            "--dry-run --json",
            "--aggregate",
            "report.json",
            "aggregate_path",
            "| 0 |",
            "| 1 |",
            "| 2 |",
            "| 3 |",
            "| 130 |",
            "nothing was sent",
            "again is free",
            "\"src/**/*.ts\"",
            "--model haiku --aggregate merge",
        ] {
            assert!(text.contains(needle), "SKILL.md lacks `{needle}`");
        }
    }

    #[test]
    fn the_command_passes_arguments_through() {
        let text = &skill_files()[1].contents;
        let fm = front_matter(text);
        assert_eq!(get(&fm, "allowed-tools"), "Bash(rlm:*), Read");
        assert!(
            get(&fm, "argument-hint").starts_with('\''),
            "quoted so YAML reads one string"
        );
        assert!(text.contains("rlm batch $ARGUMENTS"));
    }

    #[test]
    fn files_carry_this_version_and_an_intact_footer() {
        let version = env!("CARGO_PKG_VERSION");
        for file in skill_files() {
            assert!(!file.contents.contains("{{version}}"), "{:?}", file.relative_path);
            assert!(
                file.contents.contains(&format!("rlm {version}")),
                "{:?}",
                file.relative_path
            );
            assert_eq!(
                footer::check(&file.contents),
                FooterCheck::Intact {
                    version: version.into()
                }
            );
        }
        assert_eq!(
            skill_files()[0].relative_path,
            PathBuf::from(".claude/skills/rlm-batch/SKILL.md")
        );
        assert_eq!(
            skill_files()[1].relative_path,
            PathBuf::from(".claude/commands/rlm-batch.md")
        );
    }
}
