//! `rlm skill install` and `rlm skill show`: write the skill files, never over a file the
//! user changed unless forced, and say what happened to each.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::footer::{self, FooterCheck};
use super::{skill_files, Scope, SkillFile};
use crate::fs_atomic::write_atomic;

/// Why the skill was not installed.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("{} changed since rlm installed it; not overwriting it (keep your copy, or run `rlm skill install{} --force` to replace it)", list(.paths), if *.user { " --user" } else { "" })]
    Changed { paths: Vec<PathBuf>, user: bool },
    /// A file could not be read or written (the `fs_err` message names it).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(
        "HOME is not set, so there is no ~/.claude for --user; set HOME or install into the project (without --user)"
    )]
    NoHome,
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" and ")
}

/// What install did with one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallAction {
    /// It did not exist.
    Created,
    /// It was already exactly this version's text.
    UpToDate,
    /// An unchanged file from rlm `from` was replaced.
    Updated { from: String },
    /// A file the user changed was replaced because of `--force`.
    Overwritten,
}

/// One file and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallOutcome {
    pub path: PathBuf,
    pub action: InstallAction,
}

/// Writes the skill files into `scope`. Every file is checked before any is written, so a
/// refusal leaves everything as it was.
pub fn install(scope: &Scope, force: bool) -> Result<Vec<InstallOutcome>, SkillError> {
    let planned: Vec<(SkillFile, PathBuf, Option<InstallAction>)> = skill_files()
        .into_iter()
        .map(|file| {
            let path = scope.root().join(&file.relative_path);
            let action = plan(&path, &file.contents, force)?;
            Ok((file, path, action))
        })
        .collect::<Result<_, SkillError>>()?;
    let changed: Vec<PathBuf> = planned
        .iter()
        .filter(|(_, _, action)| action.is_none())
        .map(|(_, path, _)| path.clone())
        .collect();
    if !changed.is_empty() {
        return Err(SkillError::Changed {
            paths: changed,
            user: matches!(scope, Scope::User(_)),
        });
    }
    let mut outcomes = Vec::new();
    for (file, path, action) in planned {
        let action = action.unwrap_or(InstallAction::Overwritten);
        if action != InstallAction::UpToDate {
            if let Some(parent) = path.parent() {
                fs_err::create_dir_all(parent)?;
            }
            // The error names the path already.
            write_atomic(&path, file.contents.as_bytes(), crate::fs_atomic::Durability::Buffered)?;
        }
        outcomes.push(InstallOutcome { path, action });
    }
    Ok(outcomes)
}

/// What to do with the file at `path`; `None` means the user changed it and `force` is off.
fn plan(path: &Path, wanted: &str, force: bool) -> Result<Option<InstallAction>, SkillError> {
    let existing = match fs_err::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Some(InstallAction::Created)),
        Err(e) => return Err(e.into()),
    };
    // A file that is not UTF-8 is not one rlm wrote: it counts as changed.
    let text = String::from_utf8_lossy(&existing);
    if text == wanted {
        return Ok(Some(InstallAction::UpToDate));
    }
    Ok(match footer::check(&text) {
        FooterCheck::Intact { version } if !text.contains('\u{FFFD}') => Some(InstallAction::Updated { from: version }),
        _ if force => Some(InstallAction::Overwritten),
        _ => None,
    })
}

/// One line per file: what install did.
pub fn write_outcomes(out: &mut dyn Write, outcomes: &[InstallOutcome]) -> std::io::Result<()> {
    for o in outcomes {
        let path = o.path.display();
        match &o.action {
            InstallAction::Created => writeln!(out, "created {path}")?,
            InstallAction::UpToDate => writeln!(out, "up to date: {path}")?,
            InstallAction::Updated { from } => writeln!(out, "updated {path} (was rlm {from}'s)")?,
            InstallAction::Overwritten => writeln!(out, "replaced {path} (--force: your changes are gone)")?,
        }
    }
    Ok(())
}

/// Prints every file install would write into `scope`, each under a `==> path <==` line.
pub fn show(scope: &Scope, out: &mut dyn Write) -> std::io::Result<()> {
    for (i, file) in skill_files().iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "==> {} <==", scope.root().join(&file.relative_path).display())?;
        out.write_all(file.contents.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(scope: &Scope) -> Vec<(PathBuf, String)> {
        skill_files()
            .into_iter()
            .map(|f| {
                let p = scope.root().join(&f.relative_path);
                let text = fs_err::read_to_string(&p).unwrap_or_default();
                (p, text)
            })
            .collect()
    }

    fn actions(outcomes: &[InstallOutcome]) -> Vec<InstallAction> {
        outcomes.iter().map(|o| o.action.clone()).collect()
    }

    #[test]
    fn install_then_reinstall_is_up_to_date() {
        let dir = tempfile::tempdir().unwrap();
        let scope = Scope::Project(dir.path().to_path_buf());
        let first = install(&scope, false).unwrap();
        assert_eq!(actions(&first), [InstallAction::Created, InstallAction::Created]);
        for ((path, text), file) in installed(&scope).iter().zip(skill_files()) {
            assert_eq!(text, &file.contents, "{}", path.display());
        }
        let again = install(&scope, false).unwrap();
        assert_eq!(actions(&again), [InstallAction::UpToDate, InstallAction::UpToDate]);
    }

    #[test]
    fn a_file_an_older_rlm_wrote_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let scope = Scope::User(dir.path().to_path_buf());
        let old = super::super::skill_files_for("0.0.9");
        for f in &old {
            let p = dir.path().join(&f.relative_path);
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(p, &f.contents).unwrap();
        }
        let outcomes = install(&scope, false).unwrap();
        let from = InstallAction::Updated { from: "0.0.9".into() };
        assert_eq!(actions(&outcomes), [from.clone(), from]);
        assert_eq!(installed(&scope)[0].1, skill_files()[0].contents);
    }

    #[test]
    fn an_edited_file_is_refused_without_force_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let scope = Scope::Project(dir.path().to_path_buf());
        install(&scope, false).unwrap();
        let [(skill, _), (command, _)] = <[_; 2]>::try_from(installed(&scope)).unwrap();
        let edited = fs_err::read_to_string(&skill)
            .unwrap()
            .replace("# rlm batch", "# my batch");
        fs_err::write(&skill, &edited).unwrap();
        fs_err::remove_file(&command).unwrap();

        let err = install(&scope, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} changed since rlm installed it; not overwriting it (keep your copy, or run `rlm skill install --force` to replace it)",
                skill.display()
            )
        );
        assert_eq!(fs_err::read_to_string(&skill).unwrap(), edited);
        assert!(!command.exists(), "a refusal writes nothing");

        let forced = install(&scope, true).unwrap();
        assert_eq!(actions(&forced), [InstallAction::Overwritten, InstallAction::Created]);
        assert_eq!(fs_err::read_to_string(&skill).unwrap(), skill_files()[0].contents);
    }

    #[test]
    fn a_file_without_our_footer_counts_as_the_users() {
        let dir = tempfile::tempdir().unwrap();
        let scope = Scope::User(dir.path().to_path_buf());
        let p = dir.path().join(".claude/commands/rlm-batch.md");
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(&p, "my own command\n").unwrap();
        let err = install(&scope, false).unwrap_err();
        assert!(
            matches!(&err, SkillError::Changed { paths, user: true } if paths == std::slice::from_ref(&p)),
            "{err:?}"
        );
        assert!(err.to_string().contains("`rlm skill install --user --force`"), "{err}");
    }

    #[test]
    fn outcomes_and_show_are_one_line_per_file() {
        let root = PathBuf::from("/proj");
        let outcomes = vec![
            InstallOutcome {
                path: root.join("a.md"),
                action: InstallAction::Created,
            },
            InstallOutcome {
                path: root.join("b.md"),
                action: InstallAction::UpToDate,
            },
            InstallOutcome {
                path: root.join("c.md"),
                action: InstallAction::Updated { from: "0.0.9".into() },
            },
            InstallOutcome {
                path: root.join("d.md"),
                action: InstallAction::Overwritten,
            },
        ];
        let mut out = Vec::new();
        write_outcomes(&mut out, &outcomes).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "created /proj/a.md\nup to date: /proj/b.md\nupdated /proj/c.md (was rlm 0.0.9's)\n\
             replaced /proj/d.md (--force: your changes are gone)\n"
        );

        let mut shown = Vec::new();
        show(&Scope::Project(root.clone()), &mut shown).unwrap();
        let shown = String::from_utf8(shown).unwrap();
        let files = skill_files();
        assert_eq!(
            shown,
            format!(
                "==> /proj/.claude/skills/rlm-batch/SKILL.md <==\n{}\n==> /proj/.claude/commands/rlm-batch.md <==\n{}",
                files[0].contents, files[1].contents
            )
        );
    }
}
