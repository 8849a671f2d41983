//! Shared helpers of the integration tests: a throwaway project directory and a builder
//! that runs the real `rlm` binary in it, with a scrubbed environment and a hard timeout.
//!
//! ```ignore
//! let mock = MockLlm::start();
//! let p = Project::new().file("src/a.ts", "export const a = 1;\n");
//! let out = p.rlm(&["batch", "src/**/*.ts", "List {file}", "--base-url", &mock.url()]).run();
//! out.assert_exit(0);
//! assert_eq!(p.report()["status"], "SUCCESS");
//! ```
#![allow(dead_code)]

pub mod mock_llm;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The API key every run gets unless a test says otherwise.
pub const TEST_KEY: &str = "test-key-0123456789";

/// No run may take longer than this; a hang fails the test instead of stalling CI.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

/// A fresh directory under `CARGO_TARGET_TMPDIR`, unique per test (and per call). It is
/// removed when the test passes and kept for inspection when it fails.
pub struct Project {
    /// `rlm-it/{test}-{pid}-{n}/`, holding `project/` and `home/`.
    base: PathBuf,
    root: PathBuf,
}

impl Project {
    /// A new, empty project directory named after the running test.
    pub fn new() -> Project {
        let thread = std::thread::current();
        let test = thread.name().unwrap_or("test").rsplit("::").next().unwrap_or("test");
        let test: String = test
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rlm-it").join(format!(
            "{test}-{}-{}",
            std::process::id(),
            NEXT_ID.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("project");
        for dir in [&root, &base.join("home")] {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        }
        Project { base, root }
    }

    /// Adds a text file (parents created).
    pub fn file(self, path: &str, content: &str) -> Project {
        self.write(path, content);
        self
    }

    /// Adds `n` small TypeScript files `src/f00.ts`, `src/f01.ts`, … with distinct content.
    pub fn ts_files(self, n: usize) -> Project {
        for i in 0..n {
            self.write(&format!("src/f{i:02}.ts"), &format!("export const f{i:02} = {i};\n"));
        }
        self
    }

    /// Adds a file with arbitrary bytes.
    pub fn bytes(self, path: &str, content: &[u8]) -> Project {
        self.write_bytes(path, content);
        self
    }

    /// Creates or replaces a file after construction.
    pub fn write(&self, path: &str, content: &str) {
        self.write_bytes(path, content.as_bytes());
    }

    pub fn write_bytes(&self, path: &str, content: &[u8]) {
        let p = self.root.join(path);
        std::fs::create_dir_all(p.parent().expect("a file has a parent"))
            .unwrap_or_else(|e| panic!("cannot create the parent of {}: {e}", p.display()));
        std::fs::write(&p, content).unwrap_or_else(|e| panic!("cannot write {}: {e}", p.display()));
    }

    /// The project directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// `rlm ARGS` to be run in the project directory.
    pub fn rlm(&self, args: &[&str]) -> Run {
        let home = self.base.join("home");
        let mut env = BTreeMap::new();
        env.insert("PATH".to_string(), std::env::var("PATH").unwrap_or_default());
        // An empty HOME: no global gitignore or config of the developer changes what matches.
        env.insert("HOME".to_string(), home.display().to_string());
        env.insert("ANTHROPIC_API_KEY".to_string(), TEST_KEY.to_string());
        env.insert("RLM_BACKOFF_BASE_MS".to_string(), "20".to_string());
        Run {
            args: args.iter().map(std::ffi::OsString::from).collect(),
            cwd: self.root.clone(),
            env,
            timeout: RUN_TIMEOUT,
            stdin: None,
            unprivileged: false,
            via: Vec::new(),
            terminal: false,
        }
    }

    /// The contents of a file of the project (panics with the path if it is missing).
    pub fn read(&self, path: &str) -> String {
        let p = self.root.join(path);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
    }

    pub fn exists(&self, path: &str) -> bool {
        self.root.join(path).exists()
    }

    /// Every run directory `.aiwg/rlm/batch-*/` (sorted, so the newest is last).
    pub fn run_dirs(&self) -> Vec<PathBuf> {
        let rlm = self.root.join(".aiwg/rlm");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&rlm)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("batch-")))
                    .collect()
            })
            .unwrap_or_default();
        // `batch-T`, `batch-T-2`, … sort by (timestamp, suffix number).
        dirs.sort_by_key(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy().to_string();
            let rest = name.strip_prefix("batch-").unwrap_or_default();
            let (stamp, suffix) = rest.split_at(rest.len().min(17));
            let n = suffix
                .strip_prefix('-')
                .and_then(|n| n.parse::<u32>().ok())
                .unwrap_or(1);
            (stamp.to_string(), n)
        });
        dirs
    }

    /// The output directory of the newest run: `out/` if it has a report, else the newest
    /// `.aiwg/rlm/batch-*/`.
    pub fn out_dir(&self) -> PathBuf {
        let out = self.root.join("out");
        if out.join("report.json").exists() {
            return out;
        }
        self.run_dirs()
            .pop()
            .unwrap_or_else(|| panic!("no run directory under {}", self.root.join(".aiwg/rlm").display()))
    }

    /// `report.json` of the newest run.
    pub fn report(&self) -> Value {
        read_json(&self.out_dir().join("report.json"))
    }

    /// `aggregate.md` of the newest run.
    pub fn aggregate_md(&self) -> String {
        let p = self.out_dir().join("aggregate.md");
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
    }

    /// `aggregate.json` of the newest run.
    pub fn aggregate_json(&self) -> Value {
        read_json(&self.out_dir().join("aggregate.json"))
    }

    /// The markdown report of the newest run: `out/report.md`, else the newest
    /// `.aiwg/rlm/batch-*-report.md`.
    pub fn report_md(&self) -> String {
        let path = self.out_dir().join("report.md");
        let path = if path.exists() {
            path
        } else {
            self.markdown_reports().pop().expect("a markdown report")
        };
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    }

    /// The markdown reports `.aiwg/rlm/batch-*-report.md`, sorted.
    pub fn markdown_reports(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = files_under(&self.root.join(".aiwg/rlm"))
            .into_iter()
            .filter(|p| p.parent() == Some(&self.root.join(".aiwg/rlm")))
            .filter(|p| p.to_string_lossy().ends_with("-report.md"))
            .collect();
        v.sort();
        v
    }

    /// Makes the project and its home usable by any user (for [`Run::unprivileged`]).
    pub fn open_to_all(&self) {
        let status = Command::new("chmod")
            .args(["-R", "a+rwX"])
            .arg(&self.base)
            .status()
            .unwrap_or_else(|e| panic!("cannot run chmod: {e}"));
        assert!(status.success(), "chmod -R a+rwX {} failed", self.base.display());
    }

    /// Every file under the project directory, recursively.
    pub fn all_files(&self) -> Vec<PathBuf> {
        files_under(&self.root)
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("test files kept in {}", self.root.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.base);
        }
    }
}

/// Whether the tests run as root (then permissions do not stop reads: see
/// [`Run::unprivileged`]).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Parses a JSON file, panicking with the path and content on failure.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON ({e}):\n{text}", path.display()))
}

/// Every file under `dir`, recursively, sorted (symlinks are not followed).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Names of the files directly in `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

/// One invocation of the binary, not yet started.
pub struct Run {
    args: Vec<std::ffi::OsString>,
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    timeout: Duration,
    stdin: Option<Vec<u8>>,
    unprivileged: bool,
    /// A command that runs the binary (`nsenter … --`): the binary's path and arguments
    /// follow it.
    via: Vec<String>,
    /// stdin and stderr on a pseudo-terminal.
    terminal: bool,
}

impl Run {
    /// Appends an argument, which need not be UTF-8 (a file name).
    pub fn arg(mut self, arg: impl AsRef<std::ffi::OsStr>) -> Run {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// Appends arguments.
    pub fn args(mut self, args: &[&str]) -> Run {
        self.args.extend(args.iter().map(std::ffi::OsString::from));
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Run {
        self.env.insert(key.to_string(), value.to_string());
        self
    }

    /// Removes an environment variable (including the default test key).
    pub fn env_remove(mut self, key: &str) -> Run {
        self.env.remove(key);
        self
    }

    /// Runs in this subdirectory of the project instead of its root.
    pub fn cwd(mut self, sub: &str) -> Run {
        self.cwd = self.cwd.join(sub);
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Run {
        self.timeout = timeout;
        self
    }

    /// Feeds these bytes to the binary's stdin (else stdin is empty).
    pub fn stdin(mut self, bytes: &[u8]) -> Run {
        self.stdin = Some(bytes.to_vec());
        self
    }

    /// Runs as an unprivileged user (nobody) when the tests run as root, so that file
    /// permissions mean what they say; the project must be opened to that user first
    /// ([`Project::open_to_all`]).
    pub fn unprivileged(mut self) -> Run {
        self.unprivileged = true;
        self
    }

    /// Gives the binary a pseudo-terminal for stdin and stderr, as a person at a terminal
    /// has: it asks its questions there. Nothing is typed; stderr is read as ever (its lines
    /// end in `\r\n`).
    pub fn terminal(mut self) -> Run {
        self.terminal = true;
        self
    }

    /// Runs the binary through `command` (its path and arguments appended): in another
    /// namespace, say.
    pub fn via(mut self, command: &[&str]) -> Run {
        self.via = command.iter().map(|a| a.to_string()).collect();
        self
    }

    /// Starts the binary without waiting for it.
    pub fn spawn(self) -> Running {
        let mut cmd = if let Some((program, args)) = self.via.split_first() {
            let mut c = Command::new(program);
            c.args(args).arg(env!("CARGO_BIN_EXE_rlm"));
            c
        } else if self.unprivileged && is_root() {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(env!("CARGO_BIN_EXE_rlm"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_rlm"))
        };
        cmd.args(&self.args)
            .current_dir(&self.cwd)
            .env_clear()
            .envs(&self.env)
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let terminal = self.terminal.then(open_terminal);
        if let Some((_, side)) = &terminal {
            let open = || {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .custom_flags(libc::O_NOCTTY)
                    .open(side)
                    .unwrap_or_else(|e| panic!("cannot open {}: {e}", side.display()))
            };
            cmd.stdin(open()).stderr(open());
        }
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", env!("CARGO_BIN_EXE_rlm")));
        if let (Some(bytes), Some(mut pipe)) = (self.stdin, child.stdin.take()) {
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = pipe.write_all(&bytes);
            });
        }
        let stdout = drain(child.stdout.take().expect("piped stdout"), Arc::default());
        let stderr_seen = Arc::new(Mutex::new(Vec::new()));
        let stderr = match terminal {
            Some((controller, _)) => drain(controller, stderr_seen.clone()),
            None => drain(child.stderr.take().expect("piped stderr"), stderr_seen.clone()),
        };
        Running {
            child,
            stdout: Some(stdout),
            stderr: Some(stderr),
            stderr_seen,
            started,
            deadline: started + self.timeout,
            description: format!(
                "rlm {}",
                self.args
                    .iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        }
    }

    /// Runs to completion (or kills it at the timeout and panics).
    pub fn run(self) -> Output {
        self.spawn().wait()
    }
}

/// Reads `pipe` to its end (a terminal's, once the binary is gone, fails instead), each
/// piece as it comes into `seen`; returns all of it.
fn drain(mut pipe: impl Read + Send + 'static, seen: Arc<Mutex<Vec<u8>>>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => seen.lock().unwrap().extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let all = seen.lock().unwrap();
        String::from_utf8_lossy(&all).into_owned()
    })
}

/// A new pseudo-terminal: the side rlm's tests read, and the path of the side the binary
/// gets.
fn open_terminal() -> (std::fs::File, PathBuf) {
    use std::os::fd::FromRawFd;
    // SAFETY: posix_openpt takes no pointers; it returns a new descriptor or -1.
    let fd = unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY) };
    assert!(
        fd >= 0,
        "cannot open a pseudo-terminal: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: `fd` was just opened and nothing else owns it.
    let controller = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: `fd` is the terminal just opened; `name` is writable for the length given,
    // and ptsname_r ends what it writes there with a NUL.
    let ready = unsafe {
        libc::grantpt(fd) == 0 && libc::unlockpt(fd) == 0 && libc::ptsname_r(fd, name.as_mut_ptr(), name.len()) == 0
    };
    assert!(
        ready,
        "cannot set up a pseudo-terminal: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: ptsname_r succeeded, so `name` holds a NUL-terminated path.
    let side = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) };
    (controller, PathBuf::from(side.to_string_lossy().into_owned()))
}

/// A started binary.
pub struct Running {
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
    /// What the binary wrote to stderr so far.
    stderr_seen: Arc<Mutex<Vec<u8>>>,
    started: Instant,
    deadline: Instant,
    description: String,
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the binary has written to stderr so far.
    pub fn stderr_so_far(&self) -> String {
        String::from_utf8_lossy(&self.stderr_seen.lock().unwrap()).into_owned()
    }

    /// Waits until stderr says `needle` (at most 20 s; the test fails, showing stderr, if
    /// it never does).
    pub fn await_stderr(&self, needle: &str) {
        assert!(
            wait_until(Duration::from_secs(20), || self.stderr_so_far().contains(needle)),
            "never said {needle:?}: {}",
            self.stderr_so_far()
        );
    }

    /// Time since the start.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Whether the binary has exited (reaps it; [`Running::wait`] still works after).
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Sends a signal by name (`INT`, `TERM`) with the system's `kill`.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.pid().to_string()])
            .status()
            .unwrap_or_else(|e| panic!("cannot run kill: {e}"));
        assert!(status.success(), "kill -{name} {} failed", self.pid());
    }

    /// Waits for the exit; past the deadline the child is killed and the test fails.
    pub fn wait(mut self) -> Output {
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() >= self.deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    let (stdout, stderr) = self.collect();
                    panic!(
                        "{} did not finish within {:?}; killed.\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
                        self.description,
                        self.deadline - self.started
                    );
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => panic!("cannot wait for {}: {e}", self.description),
            }
        };
        let duration = self.started.elapsed();
        let (stdout, stderr) = self.collect();
        #[cfg(unix)]
        let code = {
            use std::os::unix::process::ExitStatusExt;
            status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
        };
        #[cfg(not(unix))]
        let code = status.code().unwrap_or(-1);
        Output {
            status: code,
            stdout,
            stderr,
            duration,
            description: self.description.clone(),
        }
    }

    fn collect(&mut self) -> (String, String) {
        let join = |h: Option<JoinHandle<String>>| h.map(|h| h.join().unwrap_or_default()).unwrap_or_default();
        (join(self.stdout.take()), join(self.stderr.take()))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A test that panicked while the binary ran must not leave it behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What a finished run produced.
#[derive(Debug)]
pub struct Output {
    /// The exit code (128 + signal when killed by one).
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
    description: String,
}

impl Output {
    /// Asserts the exit code, showing both streams when it differs.
    pub fn assert_exit(&self, code: i32) -> &Output {
        assert_eq!(
            self.status, code,
            "{}: expected exit {code}, got {}\n--- stdout\n{}\n--- stderr\n{}",
            self.description, self.status, self.stdout, self.stderr
        );
        self
    }

    /// Parses stdout as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\n--- stderr\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Sends Ctrl-C to `running`: it stops within seconds, exit 130 (interrupted).
pub fn stops_at_once_on_ctrl_c(running: Running) -> Output {
    let asked = Instant::now();
    running.signal("INT");
    let out = running.wait();
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "stopped in {:?}: {}",
        asked.elapsed(),
        out.stderr
    );
    assert_eq!(out.status, 130, "interrupted: {}", out.stderr);
    out
}

/// Polls until `cond` holds or `timeout` passes; true if it held.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `rlm batch PATTERN "List {file}" --base-url URL --no-batch-small EXTRA...`: one call a
/// file, which the tests about something else than packing count on (an `EXTRA` of
/// `--batch-small` packs again; packing, the default, is tested through [`packed`]).
pub fn batch<'a>(pattern: &'a str, url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["batch", pattern, "List {file}", "--base-url", url, "--no-batch-small"];
    args.extend_from_slice(extra);
    args
}

/// `rlm batch PATTERN "List {file}" --base-url URL EXTRA...`: the defaults, small files
/// packed into shared calls.
pub fn packed<'a>(pattern: &'a str, url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["batch", pattern, "List {file}", "--base-url", url];
    args.extend_from_slice(extra);
    args
}

/// How many result files (`*.result.md`) the output directory `dir` of `p` holds.
pub fn results_in(p: &Project, dir: &str) -> usize {
    let dir = p.path().join(dir);
    if !dir.is_dir() {
        return 0;
    }
    file_names(&dir).iter().filter(|n| n.ends_with(".result.md")).count()
}
