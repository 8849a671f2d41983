//! Tests of `run` with small shell scripts as the "agent". Scripts run as `sh script`
//! rather than executed directly: a script written and executed at once can fail with
//! "text file busy" when another test forks at that moment.

use std::path::Path;
use std::time::{Duration, Instant};

use super::*;
use crate::process::{wait_for_group_death, FailureKind};

fn agent(dir: &Path, name: &str, body: &str) -> CommandSpec {
    let path = dir.join(name);
    fs_err::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    CommandSpec::new(vec!["sh".into(), path.to_string_lossy().into_owned()])
}

fn never() -> std::future::Pending<()> {
    std::future::pending()
}

/// A liveness guard, not a speed bound: what it guards against would take an hour (the
/// scripts sleep 3600 s, the grace is an hour), so ten minutes can only be reached by the
/// bug, never by a loaded machine.
const HOUR_OR_BUG: Duration = Duration::from_secs(600);

/// Waits for a pid file the script writes, and returns the pid in it.
async fn pid_from(file: &Path) -> u32 {
    let started = Instant::now();
    loop {
        if let Ok(text) = fs_err::read_to_string(file) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{} never appeared",
            file.display()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn success_returns_stdout_and_sees_the_added_environment() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = agent(
        dir.path(),
        "upper.sh",
        "echo \"depth=$RLM_DEPTH parent=$RLM_PARENT_RUN\"\necho working >&2\ntr a-z A-Z",
    );
    spec.env = vec![
        ("RLM_DEPTH".into(), "2".into()),
        ("RLM_PARENT_RUN".into(), "batch-2026-11-22-101530".into()),
    ];
    let out = run(&spec, "count the functions\n", never()).await.unwrap();
    assert_eq!(
        out.stdout,
        "depth=2 parent=batch-2026-11-22-101530\nCOUNT THE FUNCTIONS\n"
    );
    assert_eq!(out.stderr_tail, "working\n");
    assert!(out.status.success());
    assert!(out.pid > 1);
    assert!(wait_for_group_death(out.pid, Duration::from_secs(2)));
}

#[tokio::test]
async fn a_non_zero_exit_is_a_failure_with_the_stderr_tail() {
    let dir = tempfile::tempdir().unwrap();
    let spec = agent(
        dir.path(),
        "fail.sh",
        "cat >/dev/null\necho 'Error: invalid API key' >&2\nexit 3",
    );
    let err = run(&spec, "prompt", never()).await.unwrap_err();
    match &err {
        ProcessError::Exit {
            status, stderr_tail, ..
        } => {
            assert_eq!(status.code(), Some(3));
            assert_eq!(stderr_tail, "Error: invalid API key\n");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.kind(), FailureKind::ExitFailure);
    assert_eq!(err.to_string(), "sh exited with status 3: Error: invalid API key");
}

#[tokio::test]
async fn a_timeout_escalates_to_sigkill_for_a_group_that_ignores_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let mut spec = agent(
        dir.path(),
        "stubborn.sh",
        &format!("echo $$ > {}\ntrap '' TERM\nsleep 3600\nsleep 3600", pid_file.display()),
    );
    spec.timeout = Some(Duration::from_millis(300));
    spec.grace = Duration::from_millis(700);
    let started = Instant::now();
    let err = run(&spec, "", never()).await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, ProcessError::Timeout { .. }), "{err:?}");
    assert_eq!(err.kind(), FailureKind::Retryable);
    // A lower bound (load cannot break it): the kill waited for the grace.
    assert!(
        took >= Duration::from_secs(1),
        "SIGKILL came before the grace ended: {took:?}"
    );
    let pgid = pid_from(&pid_file).await;
    assert!(
        wait_for_group_death(pgid, Duration::from_secs(2)),
        "a process of the group survived"
    );
}

#[tokio::test]
async fn a_group_that_obeys_sigterm_does_not_wait_for_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = agent(dir.path(), "slow.sh", "sleep 3600");
    spec.timeout = Some(Duration::from_millis(200));
    spec.grace = Duration::from_secs(3600);
    let err = tokio::time::timeout(HOUR_OR_BUG, run(&spec, "", never()))
        .await
        .expect("waited for the grace although the group had obeyed SIGTERM")
        .unwrap_err();
    assert!(matches!(err, ProcessError::Timeout { .. }), "{err:?}");
}

#[tokio::test]
async fn background_grandchildren_are_killed_when_the_command_exits() {
    let dir = tempfile::tempdir().unwrap();
    let grandchild = dir.path().join("grandchild");
    let spec = agent(
        dir.path(),
        "spawner.sh",
        &format!("sleep 3600 &\necho $! > {}\necho done", grandchild.display()),
    );
    // The grandchild holds stdout open: without the group kill this would wait an hour.
    let out = tokio::time::timeout(HOUR_OR_BUG, run(&spec, "", never()))
        .await
        .expect("waited for the grandchild that holds stdout open")
        .unwrap();
    assert_eq!(out.stdout, "done\n");
    let grandchild = pid_from(&grandchild).await;
    assert_ne!(grandchild, out.pid);
    assert!(
        wait_for_group_death(out.pid, Duration::from_secs(2)),
        "the grandchild survived"
    );
}

#[tokio::test]
async fn cancelling_stops_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let spec = agent(
        dir.path(),
        "long.sh",
        &format!("echo $$ > {}\nsleep 100 &\nsleep 100", pid_file.display()),
    );
    let err = run(&spec, "", tokio::time::sleep(Duration::from_millis(300)))
        .await
        .unwrap_err();
    assert!(matches!(err, ProcessError::Cancelled { .. }), "{err:?}");
    assert_eq!(err.kind(), FailureKind::Cancelled);
    assert!(wait_for_group_death(pid_from(&pid_file).await, Duration::from_secs(2)));
}

#[tokio::test]
async fn aborting_the_task_kills_the_group_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let spec = agent(
        dir.path(),
        "forever.sh",
        &format!("trap '' TERM\nsleep 100 &\necho $$ > {}\nsleep 100", pid_file.display()),
    );
    let task = tokio::spawn(async move { run(&spec, "", std::future::pending::<()>()).await });
    let pgid = pid_from(&pid_file).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert!(
        wait_for_group_death(pgid, Duration::from_secs(2)),
        "the aborted call left processes behind"
    );
}

#[tokio::test]
async fn a_mebibyte_in_and_out_does_not_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let spec = agent(dir.path(), "cat.sh", "cat");
    let prompt: String = (0..1024 * 1024).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let out = tokio::time::timeout(Duration::from_secs(20), run(&spec, &prompt, never()))
        .await
        .expect("deadlocked")
        .unwrap();
    assert_eq!(out.stdout.len(), prompt.len());
    assert!(out.stdout == prompt);
}

#[tokio::test]
async fn big_stdout_is_captured_and_too_big_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = agent(dir.path(), "big.sh", "head -c 5000000 /dev/zero | tr '\\0' x");
    let out = run(&spec, "", never()).await.unwrap();
    assert_eq!(out.stdout.len(), 5_000_000);
    assert!(out.stdout.bytes().all(|b| b == b'x'));

    let mut capped = agent(
        dir.path(),
        "flood.sh",
        "echo $$ > flood.pid\nwhile :; do echo flood; done",
    );
    capped.cwd = Some(dir.path().to_path_buf());
    capped.max_stdout = 100_000;
    let err = run(&capped, "", never()).await.unwrap_err();
    assert!(
        matches!(err, ProcessError::StdoutTooLarge { limit: 100_000, .. }),
        "{err:?}"
    );
    assert_eq!(err.kind(), FailureKind::Permanent);
    let pgid = pid_from(&dir.path().join("flood.pid")).await;
    assert!(wait_for_group_death(pgid, Duration::from_secs(2)));
}

#[tokio::test]
async fn a_command_that_ignores_its_input_still_succeeds() {
    let spec = CommandSpec::new(vec!["true".into()]);
    let out = run(&spec, &"x".repeat(4 * 1024 * 1024), never()).await.unwrap();
    assert_eq!(out.stdout, "");
}

#[tokio::test]
async fn spawn_failures_are_fatal_and_name_the_program() {
    let missing = CommandSpec::new(vec!["rlm-no-such-agent-7f3a".into(), "-p".into()]);
    let err = run(&missing, "", never()).await.unwrap_err();
    assert!(matches!(&err, ProcessError::NotFound { program } if program == "rlm-no-such-agent-7f3a"));
    assert!(err.to_string().starts_with("command not found: rlm-no-such-agent-7f3a"));
    assert_eq!(err.kind(), FailureKind::Fatal);

    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("not-executable.sh");
    fs_err::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let err = run(
        &CommandSpec::new(vec![script.to_string_lossy().into_owned()]),
        "",
        never(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ProcessError::NotExecutable { .. }), "{err:?}");
    assert_eq!(err.kind(), FailureKind::Fatal);

    let mut nowhere = CommandSpec::new(vec!["true".into()]);
    nowhere.cwd = Some(dir.path().join("missing"));
    let err = run(&nowhere, "", never()).await.unwrap_err();
    assert!(matches!(err, ProcessError::NoWorkingDirectory { .. }), "{err:?}");

    let err = run(&CommandSpec::new(vec![]), "", never()).await.unwrap_err();
    assert!(matches!(err, ProcessError::EmptyCommand));
}
