//! Inputs and secrets (issue 17): names that cannot be read fail the run, names that are not
//! UTF-8 stay distinct, `--files-from` holds outside paths to the link policy, logs never
//! show a credential, and a command agent gets no secret of rlm's.

use std::path::Path;

use crate::support::mock_llm::*;
use crate::support::*;

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
fn symlink(target: &str, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// A FIFO, a dangling link and a link loop among the matches: each a failure of the run
/// (exit 1, PARTIAL), named on stderr even under `-q`; the FIFO is never opened (a read
/// would block and the run would hit the test's timeout).
#[cfg(unix)]
#[test]
fn a_fifo_a_dangling_link_and_a_link_loop_fail_the_run_even_quietly() {
    let mock = MockLlm::start();
    let p = Project::new().file("src/a.txt", "alpha\n");
    let src = p.path().join("src");
    mkfifo(&src.join("pipe.txt"));
    symlink("gone.txt", &src.join("dangling.txt"));
    symlink("loop2.txt", &src.join("loop1.txt"));
    symlink("loop1.txt", &src.join("loop2.txt"));
    let url = mock.url();
    let out = p.rlm(&batch("src/*.txt", &url, &["-q"])).run();
    out.assert_exit(1);
    assert_eq!(mock.requests(), 1, "only a.txt is sent");
    for (name, why) in [
        ("src/pipe.txt", "FIFO"),
        ("src/dangling.txt", "dangling symbolic link"),
        ("src/loop1.txt", "symbolic link loop"),
        ("src/loop2.txt", "symbolic link loop"),
    ] {
        assert!(
            out.stderr.lines().any(|l| l.contains(name) && l.contains(why)),
            "{name} ({why}) not on stderr:\n{}",
            out.stderr
        );
    }
    let report = p.report();
    assert_eq!(report["status"], "PARTIAL");
    let failed: Vec<&str> = report["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        failed,
        ["src/dangling.txt", "src/loop1.txt", "src/loop2.txt", "src/pipe.txt"]
    );
}

/// Nothing but unreadable names: exit 2, and the message names each with its reason.
#[cfg(unix)]
#[test]
fn when_every_match_is_unreadable_the_message_names_them() {
    let mock = MockLlm::start();
    let p = Project::new();
    std::fs::create_dir_all(p.path().join("src")).unwrap();
    let src = p.path().join("src");
    mkfifo(&src.join("pipe.txt"));
    symlink("gone.txt", &src.join("dangling.txt"));
    symlink("loop.txt", &src.join("loop.txt"));
    let url = mock.url();
    let out = p.rlm(&batch("src/*.txt", &url, &["-q"])).run();
    out.assert_exit(2);
    assert_eq!(mock.requests(), 0);
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("rlm: error:"))
        .unwrap_or_default();
    for name in [
        "src/pipe.txt: not a regular file (FIFO)",
        "src/dangling.txt: dangling symbolic link (to gone.txt)",
        "src/loop.txt: symbolic link loop",
    ] {
        assert!(line.contains(name), "{name} not in: {}", out.stderr);
    }
}

/// The same through `--files-from`: a listed FIFO or dangling link fails the run; a listed
/// file that no longer exists (deleted in the diff) is only skipped.
#[cfg(unix)]
#[test]
fn listed_fifos_and_dangling_links_fail_deleted_files_are_skipped() {
    let mock = MockLlm::start();
    let p = Project::new().file("a.txt", "alpha\n");
    mkfifo(&p.path().join("pipe.txt"));
    symlink("gone.txt", &p.path().join("dangling.txt"));
    let url = mock.url();
    let out = p
        .rlm(&["batch", "List {file}", "--files-from", "-", "--base-url", &url, "-q"])
        .stdin(b"a.txt\npipe.txt\ndangling.txt\ndeleted.txt\n")
        .run();
    out.assert_exit(1);
    let report = p.report();
    let failed: Vec<&str> = report["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["dangling.txt", "pipe.txt"], "{report:#}");
    let skipped = report["skipped"].to_string();
    assert!(skipped.contains("deleted.txt"), "{skipped}");
}

/// Names that differ only in bytes that are not UTF-8 stay distinct inputs: each is sent,
/// each has its own result file, unit and cache key, and each is shown escaped.
#[cfg(target_os = "linux")]
#[test]
fn names_that_differ_only_in_invalid_bytes_stay_distinct() {
    use std::os::unix::ffi::OsStrExt;
    let mock = MockLlm::start();
    let p = Project::new();
    let src = p.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    for (name, content) in [
        (&b"x\xff.txt"[..], "first\n"),
        (&b"x\xfe.txt"[..], "second\n"),
        (&b"\xff\xfe.txt"[..], "third\n"),
    ] {
        std::fs::write(src.join(std::ffi::OsStr::from_bytes(name)), content).unwrap();
    }
    let url = mock.url();
    let out = p.rlm(&batch("src/*.txt", &url, &["--json"])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 3, "every file is sent");
    let report = out.json();
    assert_eq!(report["files_matched"], 3);
    let paths: Vec<String> = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap_or_default().to_string())
        .collect();
    for shown in ["src/x\\xFF.txt", "src/x\\xFE.txt", "src/\\xFF\\xFE.txt"] {
        assert!(paths.iter().any(|p| p == shown), "{shown} not in {paths:?}");
    }
    // Each answer reached its own result file.
    let results: Vec<String> = file_names(&p.out_dir())
        .into_iter()
        .filter(|n| n.ends_with(".result.md"))
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    // The prompts named the files escaped, never with a replacement character.
    let prompts: Vec<String> = mock.recorded().iter().map(|r| r.user_text()).collect();
    assert!(prompts.iter().all(|t| !t.contains('\u{fffd}')), "{prompts:?}");
    assert!(prompts.iter().any(|t| t.contains("src/x\\xFF.txt")), "{prompts:?}");
    // A rerun hits the cache for every one of them: three keys, not one.
    let again = p.rlm(&batch("src/*.txt", &url, &["--json"])).run();
    again.assert_exit(0);
    assert_eq!(again.json()["cache_hits"], 3);
    assert_eq!(mock.requests(), 3);
}

/// A file or directory whose name is not UTF-8 can be named on the command line (`rlm
/// batch`, directory mode, `rlm query`), and is shown escaped; so is an output directory's.
/// A glob that is not UTF-8 is refused by name (a glob must be text).
#[cfg(unix)]
#[test]
fn names_that_are_not_utf8_can_be_given_on_the_command_line() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let mock = MockLlm::start();
    let p = Project::new().file("src/ok.txt", "fine\n");
    std::fs::write(p.path().join(OsStr::from_bytes(b"src/x\xff.txt")), "first\n").unwrap();
    let dir = p.path().join(OsStr::from_bytes(b"d\xff"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(dir.join("b.txt"), "beta beta\n").unwrap();
    let url = mock.url();
    let units = |report: &serde_json::Value| -> Vec<String> {
        report["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["path"].as_str().unwrap().to_string())
            .collect()
    };

    // One file, named literally.
    let out = p
        .rlm(&["batch"])
        .arg(OsStr::from_bytes(b"src/x\xff.txt"))
        .arg("List {file}")
        .arg("--base-url")
        .arg(&url)
        .arg("--json")
        .run();
    out.assert_exit(0);
    let report = out.json();
    assert_eq!(report["pattern"], "src/x\\xFF.txt");
    assert_eq!(units(&report), ["src/x\\xFF.txt"]);
    assert_eq!(mock.requests(), 1);

    // A directory: directory mode.
    let out = p
        .rlm(&["batch"])
        .arg(OsStr::from_bytes(b"d\xff/"))
        .arg("List {file}")
        .arg("--base-url")
        .arg(&url)
        .arg("--no-batch-small")
        .arg("--aggregate")
        .arg("concat")
        .arg("--json")
        .run();
    out.assert_exit(0);
    let report = out.json();
    assert!(
        report["pattern"].as_str().unwrap().starts_with("d\\xFF/ (directory"),
        "{}",
        report["pattern"]
    );
    let mut got = units(&report);
    got.sort();
    assert_eq!(got, ["d\\xFF/a.txt", "d\\xFF/b.txt"]);
    assert_eq!(mock.requests(), 3);

    // rlm query of such a file.
    let out = p
        .rlm(&["query"])
        .arg(OsStr::from_bytes(b"src/x\xff.txt"))
        .arg("What is in it?")
        .arg("--base-url")
        .arg(&url)
        .arg("--no-cache")
        .run();
    out.assert_exit(0);
    assert!(!out.stdout.trim().is_empty(), "the answer is printed");
    assert_eq!(mock.requests(), 4, "the file was read");

    // An output directory that is not UTF-8 is shown escaped, never lossily.
    let out = p
        .rlm(&["batch", "src/ok.txt", "List {file}", "--base-url", &url, "-q", "-o"])
        .arg(OsStr::from_bytes(b"out\xff"))
        .run();
    out.assert_exit(0);
    assert_eq!(out.stdout.trim(), "out\\xFF/aggregate.md");
    assert!(!out.stdout.contains('\u{fffd}'), "{}", out.stdout);

    // A glob that is not UTF-8 cannot be matched: refused, naming it escaped.
    let out = p
        .rlm(&["batch"])
        .arg(OsStr::from_bytes(b"src/*\xff.txt"))
        .arg("List {file}")
        .arg("--base-url")
        .arg(&url)
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("the pattern 'src/*\\xFF.txt' is not valid UTF-8 and holds glob characters"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 5);
}

/// A run named by a directory that is not UTF-8 records it as the bytes it is, so `rlm
/// resume` goes on with the same inputs.
#[cfg(unix)]
#[test]
fn a_run_with_names_that_are_not_utf8_resumes_where_it_was() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::time::Duration;
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new();
    let dir = p.path().join(OsStr::from_bytes(b"d\xff"));
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..6 {
        std::fs::write(dir.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    let out_dir = p.path().join("out");
    let url = mock.url();
    let running = p
        .rlm(&["batch"])
        .arg(OsStr::from_bytes(b"d\xff"))
        .arg("List {file}")
        .args(&[
            "--base-url",
            &url,
            "-j",
            "1",
            "--no-batch-small",
            "--aggregate",
            "concat",
            "-o",
            "out",
        ])
        .spawn();
    assert!(wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(out_dir.join("events.jsonl")).is_ok_and(|log| log.contains("\"task:completed\""))
    }));
    running.signal("INT");
    running.wait().assert_exit(130);
    assert!(mock.requests() < 6, "the interrupt stopped the run");
    mock.set_latency(Duration::ZERO);
    let out = p.rlm(&["resume", "--yes", "--json"]).run();
    out.assert_exit(0);
    let report = out.json();
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    assert_eq!(report["files_succeeded"], 6, "{report:#}");
    assert_eq!(report["output_dir"], "out");
    let mut units: Vec<&str> = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    units.sort();
    assert_eq!(units, (0..6).map(|i| format!("d\\xFF/f{i}.txt")).collect::<Vec<_>>());
    assert_eq!(mock.requests(), 6, "each file paid once across the two attempts");
}

/// `--files-from` naming `/etc/passwd`-like files outside the working directory, by an
/// absolute path or by `../`, is held to the link policy: skipped and listed, never sent,
/// unless `--follow-links`.
#[test]
fn files_from_outside_the_working_directory_is_skipped_unless_allowed() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("secrets/passwd", "root:x:0:0\n")
        .file("work/a.txt", "alpha\n");
    let outside = p.path().join("secrets/passwd");
    let list = format!("a.txt\n{}\n../secrets/passwd\n", outside.display());
    let url = mock.url();
    let out = p
        .rlm(&["batch", "List {file}", "--files-from", "-", "--base-url", &url, "-q"])
        .cwd("work")
        .stdin(list.as_bytes())
        .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 1, "only a.txt is sent");
    // Named on stderr, even under -q, not only in the report.
    assert!(
        out.stderr.contains(&format!(
            "rlm: warning: 2 paths outside the directory searched were not sent: ../secrets/passwd, {} (pass \
             --follow-links to include them)",
            outside.display()
        )),
        "{}",
        out.stderr
    );
    assert!(
        mock.recorded().iter().all(|r| !r.user_text().contains("root:x")),
        "the outside file was sent"
    );
    let report = crate::support::read_json(&newest_run(&p.path().join("work")).join("report.json"));
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .all(|s| s["reason"].as_str().unwrap().contains("outside the working directory")),
        "{skipped:?}"
    );
    // The same list with --follow-links sends them (a.txt comes from the cache).
    mock.reset_counts();
    let out = p
        .rlm(&[
            "batch",
            "List {file}",
            "--files-from",
            "-",
            "--base-url",
            &url,
            "--follow-links",
        ])
        .cwd("work")
        .stdin(list.as_bytes())
        .run();
    out.assert_exit(0);
    // The two spellings of the one outside file are one unit, paid once.
    assert_eq!(mock.requests(), 1);
}

/// One file named twice in a list — relative, absolute, through a link inside — is one
/// unit, paid once, under the name listed first; the other names are listed as skipped.
#[cfg(unix)]
#[test]
fn files_from_sends_one_file_once_however_it_is_spelled() {
    let mock = MockLlm::start();
    let p = Project::new().file("a.txt", "alpha\n").file("b.txt", "beta\n");
    symlink("a.txt", &p.path().join("alias.txt"));
    let list = format!(
        "a.txt\n{}\nalias.txt\nb.txt\n./a.txt\n",
        p.path().join("a.txt").display()
    );
    let url = mock.url();
    let out = p
        .rlm(&[
            "batch",
            "List {file}",
            "--files-from",
            "-",
            "--base-url",
            &url,
            "--json",
            "--no-batch-small",
        ])
        .stdin(list.as_bytes())
        .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 2, "a.txt and b.txt, each once");
    let report = out.json();
    let units: Vec<&str> = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    assert_eq!(units, ["a.txt", "b.txt"]);
    let skipped: Vec<(&str, &str)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["path"].as_str().unwrap(), s["reason"].as_str().unwrap()))
        .collect();
    let absolute = p.path().join("a.txt").display().to_string();
    let mut want = vec![
        (absolute.as_str(), "the same file as a.txt, listed too: sent once"),
        ("alias.txt", "the same file as a.txt, listed too: sent once"),
    ];
    want.sort();
    assert_eq!(skipped, want);
}

/// A pattern that names a symbolic link leading out of the project (`g/pw.txt ->
/// …/passwd`), or a directory through one, is held to the policy of `g/*.txt` and
/// `--files-from`: skipped and named, never sent, unless `--follow-links`. A name written
/// outside on purpose (`../lib/x.txt`) is read.
#[cfg(unix)]
#[test]
fn a_named_link_that_leads_out_of_the_project_is_skipped_unless_allowed() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("secrets/passwd", "root:x:0:0\n")
        .file("secrets/keys/id.txt", "PRIVATE\n")
        .file("lib/x.txt", "shared\n")
        .file("work/g/ok.txt", "fine\n");
    let work = p.path().join("work");
    symlink("../../secrets/passwd", &work.join("g/pw.txt"));
    symlink("../secrets/keys", &work.join("keys"));
    let url = mock.url();
    for pattern in ["g/pw.txt", "g/*.txt", "keys/id.txt", "keys"] {
        let out = p
            .rlm(&["batch", pattern, "List {file}", "--base-url", &url])
            .cwd("work")
            .run();
        let (named, code) = match pattern {
            "g/*.txt" => ("g/pw.txt", 0),
            "g/pw.txt" => ("g/pw.txt", 2),
            _ => ("keys", 2),
        };
        out.assert_exit(code);
        assert!(
            out.stderr.contains(named) && out.stderr.contains("--follow-links"),
            "{pattern}: {}",
            out.stderr
        );
    }
    assert_eq!(mock.requests(), 1, "only g/ok.txt was sent");
    assert!(
        mock.recorded()
            .iter()
            .all(|r| !r.user_text().contains("root:x") && !r.user_text().contains("PRIVATE")),
        "an outside file was sent"
    );
    let out = p
        .rlm(&["batch", "g/pw.txt", "List {file}", "--base-url", &url, "--follow-links"])
        .cwd("work")
        .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 2, "--follow-links sends it");
    let out = p
        .rlm(&["batch", "../lib/x.txt", "List {file}", "--base-url", &url])
        .cwd("work")
        .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 3, "a name written outside is read");
}

/// The newest `.aiwg/rlm/batch-*` directory under `dir`.
fn newest_run(dir: &Path) -> std::path::PathBuf {
    let mut runs: Vec<_> = std::fs::read_dir(dir.join(".aiwg/rlm"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_string_lossy().starts_with("batch-"))
        .collect();
    runs.sort();
    runs.pop().expect("a run directory")
}

/// `-v`, `-vv` and `RLM_LOG=trace` with a credentialed base URL: the diagnostics are there,
/// and neither the password (plain, decoded or as a Basic credential) nor the API key is.
#[test]
fn diagnostics_never_show_a_url_password_or_the_key() {
    let mock = MockLlm::start();
    let p = Project::new().file("src/a.ts", "export const a = 1;\n");
    let password = "pa55w0rd-sekrit";
    let url = mock.url().replacen("://", &format!("://alice:{password}@"), 1);
    // base64("alice:pa55w0rd-sekrit"), as an Authorization: Basic header carries it.
    let basic = "YWxpY2U6cGE1NXcwcmQtc2Vrcml0";
    for (flag, log) in [("-v", None), ("-vv", None), ("-q", Some("trace"))] {
        let mut run = p.rlm(&batch("src/*.ts", &url, &[flag, "--no-cache"]));
        if let Some(level) = log {
            run = run.env("RLM_LOG", level);
        }
        let out = run.run();
        out.assert_exit(0);
        assert!(
            out.stderr.contains("sending request"),
            "{flag}: no diagnostics:\n{}",
            out.stderr
        );
        assert!(
            out.stderr.contains("alice") || out.stderr.contains("***@"),
            "{}",
            out.stderr
        );
        for secret in [password, basic, TEST_KEY] {
            assert!(
                !out.stderr.contains(secret) && !out.stdout.contains(secret),
                "{flag} {log:?}: {secret} shown:\n{}",
                out.stderr
            );
        }
    }
}

/// What a command agent gets: rlm's environment without the provider secrets rlm reads
/// (keys and base URLs), plus RLM_DEPTH and RLM_PARENT_RUN; `--agent-env NAME` passes one.
#[cfg(unix)]
#[test]
fn a_command_agent_gets_no_provider_secret_unless_passed_by_name() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new().file("src/a.txt", "alpha\n");
    p.write("agent.sh", "#!/bin/sh\ncat > /dev/null\nenv > agent-env.txt\necho ok\n");
    std::fs::set_permissions(p.path().join("agent.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let secrets = [
        ("ANTHROPIC_API_KEY", "sk-ant-agent-secret"),
        ("OPENAI_API_KEY", "sk-openai-agent-secret"),
        ("ANTHROPIC_BASE_URL", "https://alice:pw-agent@gw.example"),
        ("OPENAI_BASE_URL", "https://bob:pw2-agent@gw.example/v1"),
        ("RLM_API_KEY", "rlm-agent-secret"),
        ("RLM_BASE_URL", "http://carol:pw3@127.0.0.1:1"),
    ];
    let run = |extra: &[&str]| {
        let mut args = vec![
            "batch",
            "src/*.txt",
            "Summarize {file}",
            "--command",
            "./agent.sh",
            "--no-cache",
        ];
        args.extend_from_slice(extra);
        let mut run = p.rlm(&args).env("MY_OWN_SETTING", "kept").env_remove("RLM_DEPTH");
        for (name, value) in secrets {
            run = run.env(name, value);
        }
        run.run()
    };
    run(&[]).assert_exit(0);
    let env = p.read("agent-env.txt");
    for (name, value) in secrets {
        assert!(
            !env.contains(name) && !env.contains(value),
            "{name} reached the agent:\n{env}"
        );
    }
    assert!(env.contains("MY_OWN_SETTING=kept"), "{env}");
    assert!(
        env.contains("RLM_DEPTH=1") && env.contains("RLM_PARENT_RUN=batch-"),
        "{env}"
    );

    run(&["--agent-env", "ANTHROPIC_API_KEY"]).assert_exit(0);
    let env = p.read("agent-env.txt");
    assert!(env.contains("ANTHROPIC_API_KEY=sk-ant-agent-secret"), "{env}");
    assert!(!env.contains("OPENAI_API_KEY"), "{env}");

    // A name the agent gets anyway is a usage error that says so.
    let out = run(&["--agent-env", "HOME"]);
    out.assert_exit(2);
    assert!(out.stderr.contains("the agent gets HOME anyway"), "{}", out.stderr);
}
