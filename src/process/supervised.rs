//! `run`: one supervised call of a command-line agent (`claude -p`, `codex exec`, `llm`):
//! the prompt on stdin, the answer on stdout, success by exit status.
//!
//! Supervision, in one `select!` loop so the order of what can happen is visible in one
//! place: the child runs in its own process group; stdin is written while stdout and
//! stderr are read, so a large prompt and a large answer cannot deadlock on full pipes;
//! stdout is capped; on timeout or cancellation the whole group gets SIGTERM, then SIGKILL
//! after the grace period; when the command exits, whatever it left running in its group
//! is killed; and if the future is dropped (its task aborted), the group's guard kills
//! everything. No orphans, including grandchildren.

use std::future::Future;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{sleep_until, Instant};

use super::error::ProcessError;
use super::process_group::ProcessGroup;
use super::stderr_tail::StderrTail;

/// Default cap on a command's stdout: far above any model answer, far below trouble.
pub const DEFAULT_MAX_STDOUT: usize = 16 * 1024 * 1024;

/// Default time a stopped command gets between SIGTERM and SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// How much of stderr is kept for error messages.
const STDERR_TAIL: usize = 8 * 1024;

/// After the command exits, how long to wait for its pipes to close. Only a process that
/// left the group (`setsid`) can hold them open past the group's death.
const PIPE_DRAIN: Duration = Duration::from_secs(2);

/// How often to look whether a terminating group has emptied before its SIGKILL is due.
const GROUP_POLL: Duration = Duration::from_millis(50);

/// What to run and how to supervise it.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// The program and its arguments (see [`super::split_command`]); never run by a shell.
    pub argv: Vec<String>,
    /// Added to the inherited environment (`RLM_DEPTH`, `RLM_PARENT_RUN`, …).
    pub env: Vec<(String, String)>,
    /// Removed from the inherited environment (the provider secrets rlm withholds).
    pub env_remove: Vec<String>,
    /// The working directory; `None` for the current one.
    pub cwd: Option<PathBuf>,
    /// Stop the command after this long; `None` for never.
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when the command is stopped.
    pub grace: Duration,
    /// Most bytes of stdout accepted; beyond, the command is killed.
    pub max_stdout: usize,
}

impl CommandSpec {
    /// `argv` with no extra environment, no timeout and the default grace and cap.
    pub fn new(argv: Vec<String>) -> Self {
        CommandSpec {
            argv,
            env: Vec::new(),
            env_remove: Vec::new(),
            cwd: None,
            timeout: None,
            grace: DEFAULT_GRACE,
            max_stdout: DEFAULT_MAX_STDOUT,
        }
    }
}

/// What a successful command produced.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    /// Everything it wrote to stdout (invalid UTF-8 replaced).
    pub stdout: String,
    /// The last few KiB of its stderr (agents log progress there).
    pub stderr_tail: String,
    pub status: ExitStatus,
    pub duration: Duration,
    /// Its pid, which was also its process group id.
    pub pid: u32,
}

/// Why the command is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
    Cancelled,
    Overflow,
}

/// Where the supervision is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The command runs.
    Running,
    /// SIGTERM sent to the group; SIGKILL when the grace is over, unless it empties first.
    Terminating,
    /// SIGKILL sent to the group (or it was found empty): only reaping and draining remain.
    Killed,
}

/// Runs `spec` with `stdin` as its input until it exits, times out, or `cancel` completes.
/// Pass `std::future::pending()` as `cancel` for a call nobody cancels. Dropping the
/// returned future kills the command's whole process group at once.
pub async fn run(
    spec: &CommandSpec,
    stdin: &str,
    cancel: impl Future<Output = ()>,
) -> Result<ProcessOutput, ProcessError> {
    let program = spec.argv.first().ok_or(ProcessError::EmptyCommand)?.clone();
    if let Some(cwd) = spec.cwd.as_ref().filter(|d| !d.is_dir()) {
        return Err(ProcessError::NoWorkingDirectory {
            program,
            cwd: cwd.clone(),
        });
    }
    let mut command = tokio::process::Command::new(&program);
    for name in &spec.env_remove {
        command.env_remove(name);
    }
    command
        .args(&spec.argv[1..])
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: signals reach the command and everything it starts, and a
        // Ctrl-C at our terminal reaches only us (we decide what the command gets).
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let started = Instant::now();
    let mut child = command.spawn().map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ProcessError::NotFound {
            program: program.clone(),
        },
        std::io::ErrorKind::PermissionDenied => ProcessError::NotExecutable {
            program: program.clone(),
        },
        _ => ProcessError::Spawn {
            program: program.clone(),
            source,
        },
    })?;
    let pid = child.id().unwrap_or(0);
    // Declared after `child`, so dropped before it: the group dies while its leader is
    // still unreaped, and its id cannot have been reused yet.
    let mut group = ProcessGroup::led_by(pid);
    let signal = |group: &Option<ProcessGroup>, sig| {
        if let Some(g) = group {
            g.signal(sig);
        }
    };
    let io_error = |source| ProcessError::Io {
        program: program.clone(),
        source,
    };
    let (Some(mut stdin_pipe), Some(mut stdout_pipe), Some(mut stderr_pipe)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(io_error(std::io::Error::other("the child's pipes were not set up")));
    };

    let write_stdin = async move {
        // A command that exits without reading its input is not our failure: its exit
        // status will tell. So a broken pipe here is ignored.
        let _ = stdin_pipe.write_all(stdin.as_bytes()).await;
        let _ = stdin_pipe.shutdown().await;
        drop(stdin_pipe);
    };
    tokio::pin!(write_stdin);
    tokio::pin!(cancel);
    let timeout = sleep_until(spec.timeout.map_or(far_future(), |t| started + t));
    tokio::pin!(timeout);
    let terminate_deadline = sleep_until(far_future());
    tokio::pin!(terminate_deadline);
    let drain_deadline = sleep_until(far_future());
    tokio::pin!(drain_deadline);
    let mut poll = tokio::time::interval(GROUP_POLL);

    let mut stdout = Vec::new();
    let mut stderr = StderrTail::new(STDERR_TAIL);
    let mut out_chunk = vec![0u8; 64 * 1024];
    let mut err_chunk = vec![0u8; 16 * 1024];
    let (mut stdin_done, mut stdout_open, mut stderr_open) = (false, true, true);
    let mut status: Option<ExitStatus> = None;
    let mut phase = Phase::Running;
    let mut stop: Option<Stop> = None;
    let mut read_error: Option<std::io::Error> = None;
    let mut drain_expired = false;

    loop {
        let pipes_done = (!stdout_open && !stderr_open) || drain_expired;
        if status.is_some() && pipes_done && phase != Phase::Terminating {
            break;
        }
        let terminating = phase == Phase::Terminating;
        tokio::select! {
            read = stdout_pipe.read(&mut out_chunk), if stdout_open => match read {
                Ok(0) => stdout_open = false,
                Ok(_) if stop == Some(Stop::Overflow) => {} // drain and discard
                Ok(n) if stdout.len() + n > spec.max_stdout => {
                    signal(&group, libc::SIGKILL);
                    stop = Some(Stop::Overflow);
                    phase = Phase::Killed;
                }
                Ok(n) => stdout.extend_from_slice(&out_chunk[..n]),
                Err(e) => {
                    stdout_open = false;
                    read_error.get_or_insert(e);
                }
            },
            read = stderr_pipe.read(&mut err_chunk), if stderr_open => match read {
                Ok(0) | Err(_) => stderr_open = false,
                Ok(n) => stderr.push(&err_chunk[..n]),
            },
            () = &mut write_stdin, if !stdin_done => stdin_done = true,
            exited = child.wait(), if status.is_none() => {
                status = Some(exited.map_err(&io_error)?);
                if phase == Phase::Running {
                    // The command is done; anything it left in its group would be an orphan.
                    signal(&group, libc::SIGKILL);
                    phase = Phase::Killed;
                }
                drain_deadline.as_mut().reset(Instant::now() + PIPE_DRAIN);
            },
            () = &mut timeout, if phase == Phase::Running && spec.timeout.is_some() => {
                stop = Some(Stop::Timeout);
                phase = terminate(group.as_ref(), spec.grace, terminate_deadline.as_mut());
            },
            () = &mut cancel, if phase == Phase::Running => {
                stop = Some(Stop::Cancelled);
                phase = terminate(group.as_ref(), spec.grace, terminate_deadline.as_mut());
            },
            () = &mut terminate_deadline, if terminating => {
                signal(&group, libc::SIGKILL);
                phase = Phase::Killed;
            },
            _ = poll.tick(), if terminating && status.is_some() => {
                if !group.as_ref().is_some_and(ProcessGroup::has_live_members) {
                    phase = Phase::Killed;
                }
            },
            () = &mut drain_deadline, if status.is_some() && !pipes_done => drain_expired = true,
        }
    }
    // Leader reaped, group killed or found empty: its id may now be reused, so disarm.
    if let Some(g) = group.as_mut() {
        g.disarm();
    }
    let status = status.unwrap_or_default();
    let stderr_tail = stderr.text();
    match stop {
        Some(Stop::Overflow) => Err(ProcessError::StdoutTooLarge {
            program,
            limit: spec.max_stdout,
        }),
        Some(Stop::Timeout) => Err(ProcessError::Timeout {
            program,
            after: spec.timeout.unwrap_or_default(),
            stderr_tail,
        }),
        Some(Stop::Cancelled) => Err(ProcessError::Cancelled { program }),
        None if !status.success() => Err(ProcessError::Exit {
            program,
            status,
            stderr_tail,
        }),
        None => match read_error {
            Some(e) => Err(io_error(e)),
            None => Ok(ProcessOutput {
                stdout: String::from_utf8_lossy(&stdout).into_owned(),
                stderr_tail,
                status,
                duration: started.elapsed(),
                pid,
            }),
        },
    }
}

/// Sends SIGTERM to the group and schedules its SIGKILL after `grace`.
fn terminate(group: Option<&ProcessGroup>, grace: Duration, deadline: std::pin::Pin<&mut tokio::time::Sleep>) -> Phase {
    if let Some(g) = group {
        g.signal(libc::SIGTERM);
    }
    deadline.reset(Instant::now() + grace);
    Phase::Terminating
}

/// A deadline that never comes (about thirty years away, as tokio does).
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365 * 30)
}

#[cfg(test)]
#[path = "supervised_tests.rs"]
mod tests;
