//! `--provider command`: a command-line agent as the model, supervised, with the recursion
//! depth passed down and enforced.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::support::*;

/// Writes an executable script `name` into the project.
fn script(p: &Project, name: &str, body: &str) {
    p.write(name, &format!("#!/bin/sh\n{body}"));
    let path = p.path().join(name);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn run(p: &Project, command: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "batch",
        "src/*.txt",
        "Summarize {file}",
        "--command",
        command,
        "-o",
        "out",
        "--no-batch-small",
    ];
    args.extend_from_slice(extra);
    p.rlm(&args)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("RLM_DEPTH")
        .run()
}

#[test]
fn the_agent_reads_the_prompt_on_stdin_and_its_stdout_is_the_answer() {
    let p = Project::new()
        .file("src/a.txt", "alpha content\n")
        .file("src/b.txt", "beta content\n");
    script(
        &p,
        "agent.sh",
        "echo call >> calls.log\ninput=$(cat)\necho \"depth=$RLM_DEPTH parent=$RLM_PARENT_RUN\"\nprintf '%s' \"$input\" | grep -c content\n",
    );
    let out = run(&p, "./agent.sh", &[]);
    out.assert_exit(0);
    let report = p.report();
    let run_id = report["run_id"].as_str().unwrap().to_string();
    let answer = p.read("out/src-a.txt.result.md");
    assert!(answer.contains(&format!("depth=1 parent={run_id}")), "{answer}");
    assert!(answer.contains('1'), "the file's content was on stdin: {answer}");
    assert_eq!(report["model"], "command:agent.sh");
    assert!(
        out.stdout.contains("unknown (the command's agent bills its own use"),
        "{}",
        out.stdout
    );
    assert_eq!(p.read("calls.log").lines().count(), 2);
    // A rerun is served from the cache: the agent is not run again.
    run(&p, "./agent.sh", &[]).assert_exit(0);
    assert_eq!(p.read("calls.log").lines().count(), 2);
    // Another command line is another model: not served from the first one's answers.
    run(&p, "./agent.sh --other", &[]).assert_exit(0);
    assert_eq!(p.read("calls.log").lines().count(), 4);
}

#[test]
fn a_failing_agent_fails_its_unit_with_its_stderr() {
    let p = Project::new().file("src/a.txt", "a\n");
    script(
        &p,
        "fail.sh",
        "cat >/dev/null\necho 'boom: no credits left' >&2\nexit 3\n",
    );
    let out = run(&p, "./fail.sh", &[]);
    out.assert_exit(3);
    let reason = p.report()["failed"][0]["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("boom: no credits left"), "{reason}");
}

#[test]
fn a_hanging_agent_that_ignores_sigterm_is_killed_at_the_timeout_with_its_children() {
    let p = Project::new().file("src/a.txt", "a\n");
    script(
        &p,
        "hang.sh",
        "trap '' TERM\nsleep 300 &\necho $! > child.pid\necho $$ > agent.pid\nwait\n",
    );
    let out = run(&p, "./hang.sh", &["--timeout", "1", "--retries", "0"]);
    out.assert_exit(3);
    let reason = p.report()["failed"][0]["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("timed out"), "{reason}");
    for file in ["agent.pid", "child.pid"] {
        let pid: i32 = p.read(file).trim().parse().unwrap();
        let alive = wait_until(Duration::from_secs(5), || unsafe { libc_kill(pid) } != 0);
        assert!(alive, "{file} ({pid}) is still running: an orphan");
    }
}

/// `kill(pid, 0)`: 0 while the process exists.
unsafe fn libc_kill(pid: i32) -> i32 {
    extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    unsafe { kill(pid, 0) }
}

#[test]
fn a_missing_program_is_one_clear_line_before_anything_starts() {
    let p = Project::new().file("src/a.txt", "a\n").file("src/b.txt", "b\n");
    let out = run(&p, "no-such-agent-xyz -p", &[]);
    out.assert_exit(2);
    let errors: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("rlm: error: ")).collect();
    assert_eq!(errors.len(), 1, "{}", out.stderr);
    assert!(
        errors[0].contains("--command: the program no-such-agent-xyz is not found"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("RLM Batch Initialized"),
        "refused before the banner: {}",
        out.stderr
    );
    // One that is there but cannot be run says so too.
    p.write("agent.sh", "#!/bin/sh\ncat\n");
    let out = run(&p, "./agent.sh", &[]);
    out.assert_exit(2);
    assert!(
        out.stderr.contains("agent.sh is not executable: chmod +x it"),
        "{}",
        out.stderr
    );
}

#[test]
fn recursion_stops_at_max_depth_before_anything_runs() {
    let p = Project::new().file("src/a.txt", "a\n");
    script(&p, "agent.sh", "cat >/dev/null\necho called >> calls.log\necho ok\n");
    let args = ["batch", "src/*.txt", "x", "--command", "./agent.sh", "-o", "out"];
    let out = p.rlm(&args).env("RLM_DEPTH", "3").run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("RLM_DEPTH is 3") && out.stderr.contains("--max-depth 3"),
        "{}",
        out.stderr
    );
    assert!(!p.exists("calls.log"));
    let deeper = [&args[..], &["--max-depth", "4"]].concat();
    p.rlm(&deeper).env("RLM_DEPTH", "3").run().assert_exit(0);
    let answer_env = p.rlm(&args).env("RLM_DEPTH", "abc").run();
    answer_env.assert_exit(2);
}

#[cfg(target_os = "linux")]
#[test]
fn a_nested_run_runs_at_lower_priority_the_deeper_it_is() {
    // The agent prints its own nice value (field 19 of /proc/self/stat).
    let p = Project::new().file("src/a.txt", "a\n");
    script(
        &p,
        "agent.sh",
        "cat >/dev/null\nawk '{print \"nice=\" $19}' /proc/self/stat\n",
    );
    let base: i32 = std::fs::read_to_string("/proc/self/stat")
        .unwrap()
        .split_whitespace()
        .nth(18)
        .unwrap()
        .parse()
        .unwrap();
    for depth in [0, 2] {
        let args = [
            "batch",
            "src/*.txt",
            "x",
            "--command",
            "./agent.sh",
            "-o",
            "out",
            "--no-cache",
        ];
        let mut cmd = p.rlm(&args);
        cmd = if depth == 0 {
            cmd.env_remove("RLM_DEPTH")
        } else {
            cmd.env("RLM_DEPTH", "2")
        };
        cmd.run().assert_exit(0);
        let answer = p.read("out/src-a.txt.result.md");
        let expected = (base + depth).min(19);
        assert!(answer.contains(&format!("nice={expected}")), "depth {depth}: {answer}");
    }
}

#[test]
fn command_flags_are_checked() {
    let p = Project::new().file("src/a.txt", "a\n");
    let out = p.rlm(&["batch", "src/*.txt", "x", "--provider", "command"]).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("--provider command needs the program"),
        "{}",
        out.stderr
    );
    let out = p
        .rlm(&[
            "batch",
            "src/*.txt",
            "x",
            "--command",
            "a",
            "--base-url",
            "http://127.0.0.1:9",
        ])
        .run();
    out.assert_exit(2);
    let out = p.rlm(&["batch", "src/*.txt", "x", "--command", "a 'unclosed"]).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("--command"), "{}", out.stderr);
    let out = p
        .rlm(&["batch", "src/*.txt", "x", "--command", "a", "--max-depth", "0"])
        .run();
    out.assert_exit(2);
}

#[test]
fn an_agent_that_runs_rlm_makes_a_child_run_shown_in_the_tree() {
    let p = Project::new().file("src/a.txt", "a\n").file("sub/x.txt", "x\n");
    script(&p, "leaf.sh", "cat >/dev/null\necho leaf\n");
    script(
        &p,
        "agent.sh",
        "cat >/dev/null\n\"$RLM_TEST_BIN\" batch 'sub/*.txt' 'inner {file}' --command ./leaf.sh -o child-out -q >/dev/null 2>&1\necho \"child exit $?\"\n",
    );
    let out = p
        .rlm(&["batch", "src/*.txt", "outer", "--command", "./agent.sh", "-o", "out"])
        .env("RLM_TEST_BIN", env!("CARGO_BIN_EXE_rlm"))
        .env_remove("RLM_DEPTH")
        .run();
    out.assert_exit(0);
    assert!(p.read("out/src-a.txt.result.md").contains("child exit 0"));
    let parent = p.report()["run_id"].as_str().unwrap().to_string();
    let tree = p.rlm(&["status", &parent, "--tree"]).run();
    tree.assert_exit(0);
    let lines: Vec<&str> = tree.stdout.lines().collect();
    assert!(lines.len() >= 2, "the parent and its child: {}", tree.stdout);
    assert!(lines[0].contains(&parent), "{}", tree.stdout);
    let json = p.rlm(&["status", &parent, "--tree", "--json"]).run();
    json.assert_exit(0);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert!(v.to_string().contains("\"depth\":1"), "{v}");
}
