//! Through the binary: `rlm skill install|show` (fresh install, reinstall, refusal on a file
//! the user changed, `--force`, `--user`), `rlm completions`, `rlm man` and `rlm --version`.

use std::path::PathBuf;

use crate::support::*;

const SKILL: &str = ".claude/skills/rlm-batch/SKILL.md";
const COMMAND: &str = ".claude/commands/rlm-batch.md";

/// The harness's HOME for a project: `home/` beside `project/`.
fn home_of(p: &Project) -> PathBuf {
    p.path().parent().expect("the project has a parent").join("home")
}

#[test]
fn install_writes_the_skill_and_the_command_then_is_up_to_date() {
    let p = Project::new();
    let out = p.rlm(&["skill", "install"]).run();
    out.assert_exit(0);
    assert!(out.stdout.is_empty(), "status lines go to stderr: {}", out.stdout);
    assert!(
        out.stderr
            .contains(&format!("created {}", p.path().join(SKILL).display())),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains(&format!("created {}", p.path().join(COMMAND).display())),
        "{}",
        out.stderr
    );

    let skill = p.read(SKILL);
    assert!(skill.starts_with("---\nname: rlm-batch\ndescription: "), "{skill}");
    assert!(skill.contains("allowed-tools: Bash(rlm:*), Read\n"));
    assert!(skill.contains(&format!("rlm {}", env!("CARGO_PKG_VERSION"))));
    assert!(skill.trim_end().ends_with(" -->"));
    assert!(skill.contains(&format!("<!-- rlm-skill {} sha256:", env!("CARGO_PKG_VERSION"))));
    assert!(p.read(COMMAND).contains("rlm batch $ARGUMENTS"));

    let again = p.rlm(&["skill", "install"]).run();
    again.assert_exit(0);
    assert_eq!(again.stderr.matches("up to date: ").count(), 2, "{}", again.stderr);
    assert_eq!(p.read(SKILL), skill);
}

#[test]
fn a_file_the_user_changed_is_refused_until_forced() {
    let p = Project::new();
    p.rlm(&["skill", "install"]).run().assert_exit(0);
    let edited = p
        .read(SKILL)
        .replace("## When to fan out", "## When to fan out (our team's rules)");
    p.write(SKILL, &edited);

    let refused = p.rlm(&["skill", "install"]).run();
    refused.assert_exit(2);
    let message = refused.stderr.trim_end();
    assert!(message.starts_with("rlm: error: "), "{message}");
    assert!(
        message.contains(&p.path().join(SKILL).display().to_string()),
        "names the file: {message}"
    );
    assert!(message.contains("--force"), "{message}");
    assert_eq!(message.lines().count(), 1, "one line: {message}");
    assert_eq!(p.read(SKILL), edited, "the user's file is untouched");

    let forced = p.rlm(&["skill", "install", "--force"]).run();
    forced.assert_exit(0);
    assert!(forced.stderr.contains("replaced "), "{}", forced.stderr);
    assert!(
        forced.stderr.contains("up to date: "),
        "the untouched command: {}",
        forced.stderr
    );
    assert!(!p.read(SKILL).contains("our team's rules"));
    p.rlm(&["skill", "install"]).run().assert_exit(0);
}

#[test]
fn a_file_an_older_rlm_wrote_is_updated_without_force() {
    let p = Project::new();
    // What rlm 0.0.1 would have written: any body with a matching checksum footer.
    let body = "---\nname: rlm-batch\ndescription: old\n---\n\nold text\n\n";
    let sum = rlm::hash::sha256_hex(body.as_bytes());
    p.write(SKILL, &format!("{body}<!-- rlm-skill 0.0.1 sha256:{sum} -->\n"));
    let updated = p.rlm(&["skill", "install"]).run();
    updated.assert_exit(0);
    assert!(updated.stderr.contains("(was rlm 0.0.1's)"), "{}", updated.stderr);
    assert!(!p.read(SKILL).contains("old text"));
}

#[test]
fn user_scope_installs_under_home() {
    let p = Project::new();
    let out = p.rlm(&["skill", "install", "--user"]).run();
    out.assert_exit(0);
    let home = home_of(&p);
    assert!(home.join(SKILL).is_file(), "{}", out.stderr);
    assert!(home.join(COMMAND).is_file());
    assert!(!p.exists(".claude"), "nothing in the project");

    let no_home = p.rlm(&["skill", "install", "--user"]).env_remove("HOME").run();
    no_home.assert_exit(2);
    assert!(no_home.stderr.contains("HOME is not set"), "{}", no_home.stderr);
}

#[test]
fn show_prints_both_files_with_their_paths_and_writes_nothing() {
    let p = Project::new();
    let out = p.rlm(&["skill", "show"]).run();
    out.assert_exit(0);
    let skill_header = format!("==> {} <==\n---\nname: rlm-batch\n", p.path().join(SKILL).display());
    let command_header = format!("==> {} <==\n---\n", p.path().join(COMMAND).display());
    assert!(out.stdout.starts_with(&skill_header), "{}", out.stdout);
    assert!(out.stdout.contains(&command_header), "{}", out.stdout);
    assert!(!p.exists(".claude"));

    let user = p.rlm(&["skill", "show", "--user"]).run();
    user.assert_exit(0);
    assert!(user
        .stdout
        .starts_with(&format!("==> {} <==", home_of(&p).join(SKILL).display())));

    // What show prints is what install writes.
    p.rlm(&["skill", "install"]).run().assert_exit(0);
    assert!(out.stdout.contains(&p.read(SKILL)));
    assert!(out.stdout.contains(&p.read(COMMAND)));
}

#[test]
fn completions_for_every_shell_mention_batch() {
    let p = Project::new();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = p.rlm(&["completions", shell]).run();
        out.assert_exit(0);
        assert!(out.stdout.contains("batch"), "{shell}: {}", out.stdout);
        assert!(out.stdout.contains("dry-run"), "{shell}");
    }
    p.rlm(&["completions", "tcsh"]).run().assert_exit(2);
}

#[test]
fn the_man_page_is_roff_and_mentions_batch() {
    let p = Project::new();
    let out = p.rlm(&["man"]).run();
    out.assert_exit(0);
    assert!(out.stdout.contains(".TH rlm 1"), "{}", out.stdout);
    assert!(out.stdout.contains("rlm\\-batch"), "{}", out.stdout);
    let batch = p.rlm(&["man", "batch"]).run();
    batch.assert_exit(0);
    assert!(batch.stdout.contains(".TH rlm-batch 1"), "{}", batch.stdout);
    assert!(batch.stdout.contains("aggregate"));
}

#[test]
fn version_carries_the_commit() {
    let p = Project::new();
    let out = p.rlm(&["--version"]).run();
    out.assert_exit(0);
    let commit = env!("RLM_GIT_COMMIT");
    assert_eq!(
        out.stdout,
        format!("rlm {} (commit {commit})\n", env!("CARGO_PKG_VERSION"))
    );
    assert!(
        commit == "unknown" || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{commit}"
    );
    // Built from a git checkout, it is that checkout's HEAD.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|h| h.status.success());
    if let Some(head) = head {
        if std::env::var_os("RLM_GIT_COMMIT").is_none() {
            assert_eq!(String::from_utf8_lossy(&head.stdout).trim(), commit);
        }
    }
}
