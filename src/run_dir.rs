//! The run directory: where a run's per-unit results, aggregate, report and events live,
//! and the names they get.
//!
//! A default run directory `.aiwg/rlm/batch-{timestamp}/` is created exclusively (two runs
//! started in the same second get `-2`, `-3`…). An `--output-dir` must be new, empty, or an
//! earlier run's directory, whose results are replaced cleanly; anything else is refused
//! before a call is made. Every write is atomic and passes through the run's redactor.
//!
//! A run holds its directory for its whole life with a [`RunLock`] (an `flock` on
//! `.rlm-lock` inside it, naming the holder's pid), taken before anything in the directory
//! is replaced: two runs on one `-o out` would otherwise both pay for every unit and mix
//! their outputs (issue 17). The kernel releases the lock when the process ends, `kill -9`
//! included, so a crashed run never blocks the next one.
//!
//! The `.rlm-run` marker names the run a directory holds now: `rlm resume` never takes up a
//! directory whose marker names another run ([`check_still_owned`]), which would overwrite
//! that run's results and append to its `events.jsonl`.

use std::collections::HashSet;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{InUse, LockHolder, OutputFailure, RlmError, StoreRefusal};
use crate::file_lock::FileLock;
use crate::fs_atomic::{sweep_temp_files, write_atomic, Durability};
use crate::hash::sha256_hex;
use crate::secret::Redactor;

/// Longest sanitized stem before it is shortened (file systems allow 255 bytes a name).
const MAX_STEM: usize = 180;
/// The marker that makes a directory an rlm run directory.
const MARKER: &str = ".rlm-run";
/// The directory of a run directory that holds answers the cache did not take (see
/// `batch::pending`).
pub const PENDING_CACHE_DIR: &str = "pending-cache";
/// The lock file of a run directory: held (`flock`) by the run working in it, and holding
/// that run's pid.
pub use crate::store::RUN_LOCK_FILE as LOCK_FILE;

/// The directory and files of one run.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// `{output-dir}`: per-unit results, aggregate, report.json, events.jsonl.
    pub dir: PathBuf,
    /// The markdown report: `.aiwg/rlm/batch-{timestamp}-report.md` (the seed's place), or
    /// `report.md` inside an `--output-dir`.
    pub report_md: PathBuf,
    /// `batch-YYYY-MM-DD-HHMMSS` (UTC), with `-2`… when taken; unique among this project's runs.
    pub run_id: String,
    /// `YYYY-MM-DD-HHMMSS` (UTC), as shown in the aggregate.
    pub timestamp: String,
    redactor: Redactor,
    /// This run's hold on the directory, for as long as any copy of the `RunDir` lives
    /// (never read: holding it is the point).
    _lock: Arc<RunLock>,
}

/// A run's exclusive hold on its directory: see the module doc.
#[derive(Debug)]
pub struct RunLock {
    _lock: FileLock,
}

impl RunLock {
    /// Takes the lock of `dir` (created if missing) for a new run, or refuses — exit 2,
    /// naming the pid of the rlm that holds it — when another run works in it.
    pub fn acquire(dir: &Path) -> Result<RunLock, RlmError> {
        Self::take(dir)?.map_err(|holder| {
            InUse::RunDirectory {
                dir: dir.to_path_buf(),
                holder,
            }
            .into()
        })
    }

    /// Takes the lock of run `run_id`'s directory for `rlm resume`, or refuses (exit 2,
    /// naming the pid of the rlm that holds it). `owner` is the pid the store says works on
    /// the run, if any: the holder is then the run itself, still going on; any other holder
    /// is another run working in the directory (run `run_id` is not running).
    pub fn acquire_for_resume(dir: &Path, run_id: &str, owner: Option<u32>) -> Result<RunLock, RlmError> {
        Self::take(dir)?.map_err(|holder| {
            let (run, dir) = (run_id.to_string(), dir.to_path_buf());
            if owner.is_some() && holder.pid == owner {
                InUse::StillRunning { run, dir, holder }.into()
            } else {
                InUse::DirectoryTaken { run, dir, holder }.into()
            }
        })
    }

    /// Takes the lock of a run's directory, or says who holds it (`rlm process 1234`):
    /// `rlm cancel` leaves the collecting to an rlm that still waits for the run.
    pub fn try_for_resume(dir: &Path) -> Result<Result<RunLock, LockHolder>, RlmError> {
        Self::take(dir)
    }

    /// The lock, or who holds it (`rlm process 1234`, with its pid when it wrote one).
    fn take(dir: &Path) -> Result<Result<RunLock, LockHolder>, RlmError> {
        fs_err::create_dir_all(dir).map_err(OutputFailure::OutputDir)?;
        let path = dir.join(LOCK_FILE);
        let lock = FileLock::try_exclusive(&path).map_err(|source| OutputFailure::Lock {
            dir: dir.to_path_buf(),
            source,
        })?;
        let Some(lock) = lock else {
            return Ok(Err(LockHolder { pid: holder_pid(&path) }));
        };
        // Who holds it, for the message of whoever comes next.
        let mut file = lock.file();
        let written = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()));
        if let Err(e) = written {
            tracing::debug!(path = %path.display(), "cannot write the pid into the lock file: {e}");
        }
        Ok(Ok(RunLock { _lock: lock }))
    }
}

/// The pid the holder wrote into its lock file. The holder writes it just after taking the
/// lock, so an empty file is read again for a moment before giving up.
fn holder_pid(path: &Path) -> Option<u32> {
    for _ in 0..20 {
        if let Ok(text) = fs_err::read_to_string(path) {
            if let Ok(pid) = text.trim().parse() {
                return Some(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// Whether `dir` is an rlm run directory (it holds the `.rlm-run` marker).
pub fn is_run_dir(dir: &Path) -> bool {
    dir.join(MARKER).is_file()
}

/// The run whose directory `dir` is, as its `.rlm-run` marker says (`None` when there is
/// no marker, or it cannot be read).
pub fn marked_run(dir: &Path) -> Option<String> {
    let text = fs_err::read_to_string(dir.join(MARKER)).ok()?;
    let marker: serde_json::Value = serde_json::from_str(&text).ok()?;
    marker.get("run_id")?.as_str().map(str::to_string)
}

/// Refuses to take up run `run_id` in `dir` when the directory's marker names another run:
/// that run took the directory over, and taking it up again would overwrite its results and
/// append to its `events.jsonl` (issue 17).
pub fn check_still_owned(dir: &Path, run_id: &str) -> Result<(), RlmError> {
    match marked_run(dir) {
        Some(other) if other != run_id => Err(StoreRefusal::DirectoryTakenOver {
            run: run_id.to_string(),
            dir: dir.to_path_buf(),
            other,
        }
        .into()),
        _ => Ok(()),
    }
}

impl RunDir {
    /// Takes up the directory of run `run_id` again (`rlm resume`), under `lock` (taken by
    /// the resume before it claimed the run): its earlier outputs are replaced as the run
    /// goes on, under the same id; `events.jsonl` is kept, to be appended to. Refused when
    /// another run has taken the directory over since ([`check_still_owned`]).
    pub fn reopen(
        rlm_dir: &Path,
        dir: &Path,
        run_id: &str,
        lock: Arc<RunLock>,
        redactor: Redactor,
    ) -> Result<Self, RlmError> {
        let timestamp = jiff::Timestamp::now().strftime("%Y-%m-%d-%H%M%S").to_string();
        check_usable(dir)?;
        check_still_owned(dir, run_id)?;
        clear_outputs(dir, Keep::EventLog)?;
        let report_md = if dir == rlm_dir.join(run_id) {
            rlm_dir.join(format!("{run_id}-report.md"))
        } else {
            dir.join("report.md")
        };
        let run = RunDir {
            dir: dir.to_path_buf(),
            report_md,
            run_id: run_id.to_string(),
            timestamp,
            redactor,
            _lock: lock,
        };
        run.write(MARKER, &format!("{{\"run_id\": \"{run_id}\"}}\n"))
            .map_err(|source| OutputFailure::RunDirUnwritable {
                dir: dir.to_path_buf(),
                source,
            })?;
        Ok(run)
    }

    /// Creates the run's directory (or takes over `output_dir`) and proves it writable.
    pub fn create(rlm_dir: &Path, output_dir: Option<&Path>, redactor: Redactor) -> Result<Self, RlmError> {
        Self::create_unique(rlm_dir, output_dir, redactor, &|_| Ok(false), &|_| Ok(()))
    }

    /// [`RunDir::create`], with an id that `taken` does not refuse. `taken` is asked about
    /// each candidate id in turn; the task store's [`crate::store::TaskStore::reserve_run_id`]
    /// answers it atomically, so two rlm processes never end up with one id. When it cannot
    /// answer (an error), no id is handed out: the error refuses the run.
    ///
    /// `take_over` is asked, with the id of the run an `output_dir` holds, before that run's
    /// outputs are removed: it refuses when that run still has work at the provider (a
    /// batch not collected), which taking its directory would abandon.
    pub fn create_unique(
        rlm_dir: &Path,
        output_dir: Option<&Path>,
        redactor: Redactor,
        taken: &dyn Fn(&str) -> Result<bool, RlmError>,
        take_over: &dyn Fn(&str) -> Result<(), RlmError>,
    ) -> Result<Self, RlmError> {
        let timestamp = jiff::Timestamp::now().strftime("%Y-%m-%d-%H%M%S").to_string();
        fs_err::create_dir_all(rlm_dir)?;
        let run = match output_dir {
            Some(dir) => {
                // Refused before anything is written in it; locked before anything is removed.
                check_usable(dir)?;
                let lock = Arc::new(RunLock::acquire(dir)?);
                if let Some(earlier) = marked_run(dir) {
                    take_over(&earlier)?;
                }
                clear_outputs(dir, Keep::Nothing)?;
                let run_id = unique_id(&timestamp, |id| {
                    if rlm_dir.join(id).exists() || rlm_dir.join(format!("{id}-report.md")).exists() {
                        return Ok(true);
                    }
                    taken(id)
                })?;
                RunDir {
                    dir: dir.to_path_buf(),
                    report_md: dir.join("report.md"),
                    run_id,
                    timestamp,
                    redactor,
                    _lock: lock,
                }
            }
            None => {
                let run_id = unique_id(&timestamp, |id| {
                    if rlm_dir.join(id).exists() || taken(id)? {
                        return Ok(true);
                    }
                    match fs_err::create_dir(rlm_dir.join(id)) {
                        Ok(()) => Ok(false),
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(true),
                        Err(e) => Err(e.into()),
                    }
                })?;
                let dir = rlm_dir.join(&run_id);
                RunDir {
                    _lock: Arc::new(RunLock::acquire(&dir)?),
                    dir,
                    report_md: rlm_dir.join(format!("{run_id}-report.md")),
                    run_id,
                    timestamp,
                    redactor,
                }
            }
        };
        // The probe: a run directory that cannot take a small file cannot take results.
        run.write(MARKER, &format!("{{\"run_id\": \"{}\"}}\n", run.run_id))
            .map_err(OutputFailure::OutputDirUnwritable)?;
        Ok(run)
    }

    /// Writes a file of the run directory atomically, scrubbed of secrets.
    pub fn write(&self, name: &str, content: &str) -> std::io::Result<PathBuf> {
        let path = self.dir.join(name);
        write_atomic(&path, self.redactor.scrub(content).as_bytes(), Durability::Buffered)?;
        Ok(path)
    }

    /// Writes a record of the run that nothing reads back (a unit's prompt, kept to inspect
    /// or replay), scrubbed of secrets, in place: one file made, no temporary file and
    /// rename. A kill mid-write may leave it partial; a resume writes it again.
    pub fn write_record(&self, name: &str, content: &str) -> std::io::Result<PathBuf> {
        let path = self.dir.join(name);
        fs_err::write(&path, self.redactor.scrub(content).as_bytes())?;
        Ok(path)
    }

    /// Writes `value` as JSON (and a newline; each array element on one line, see
    /// [`crate::pretty_json`]) to a file of the run directory,
    /// atomically and scrubbed of secrets like [`RunDir::write`], streamed rather than built
    /// in memory: the plan and the report of a 100,000-unit run are hundreds of megabytes.
    pub fn write_json(&self, name: &str, value: &impl serde::Serialize) -> std::io::Result<PathBuf> {
        let path = self.dir.join(name);
        crate::fs_atomic::write_atomic_with(&path, Durability::Buffered, |out| {
            let out = crate::secret::ScrubLines::new(&self.redactor, out);
            // Buffered before it is scrubbed: the serializer writes a token at a time, and
            // the scrubber then sees thousands of lines at once (see `ScrubLines::write`).
            let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
            crate::pretty_json::to_writer(&mut out, value).map_err(std::io::Error::other)?;
            std::io::Write::write_all(&mut out, b"\n")?;
            std::io::Write::flush(&mut out)
        })?;
        Ok(path)
    }

    /// Writes a result file: plainly, without a temporary file or an fsync. Its answer is
    /// already in the cache, durably, so a crash loses nothing a rerun cannot write again;
    /// a file of that name is removed first, never written through (it may be a hard link
    /// into the cache, see [`RunDir::link_result`]).
    pub fn write_result(&self, name: &str, content: &str) -> std::io::Result<PathBuf> {
        let path = self.dir.join(name);
        let bytes = self.redactor.scrub(content);
        create_new_replacing(&path, |file| file.write_all(bytes.as_bytes()))?;
        Ok(path)
    }

    /// Makes the result file `name` a hard link to `source` (the cache's copy of its
    /// answer), if the link then holds exactly `content` as it would be written; false when
    /// it does not (the caller writes it instead). A link costs the file system no new
    /// file, which is most of what a fully cached rerun of thousands of files spends.
    pub fn link_result(&self, name: &str, content: &str, source: &Path) -> std::io::Result<bool> {
        let path = self.dir.join(name);
        let expected = self.redactor.scrub(content);
        match fs_err::hard_link(source, &path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                fs_err::remove_file(&path)?;
                if fs_err::hard_link(source, &path).is_err() {
                    return Ok(false);
                }
            }
            // No copy in the cache, or another file system: written instead.
            Err(_) => return Ok(false),
        }
        // Checked through the link itself, so what the run directory holds is what was
        // compared, whatever happens to the cache's file meanwhile.
        let holds = holds_exactly(&path, expected.as_bytes());
        if !holds {
            fs_err::remove_file(&path)?;
        }
        Ok(holds)
    }

    /// Writes the markdown report, scrubbed.
    pub fn write_report_md(&self, content: &str) -> std::io::Result<()> {
        write_atomic(
            &self.report_md,
            self.redactor.scrub(content).as_bytes(),
            Durability::Buffered,
        )
    }
}

/// Whether the file at `path` holds exactly `expected`: one read of one byte more than
/// that (a regular file reads whole up to the size asked), so a file that is longer,
/// shorter or different is told apart without asking its size first.
// std::fs, not fs_err: called for every cached result, its error unused, and an fs_err
// `File` keeps a copy of its path.
#[allow(clippy::disallowed_methods)]
fn holds_exactly(path: &Path, expected: &[u8]) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut bytes = Vec::with_capacity(expected.len() + 1);
    let limit = expected.len() as u64 + 1;
    file.take(limit).read_to_end(&mut bytes).is_ok() && bytes == expected
}

/// Creates `path` anew (removing a file already there) and fills it with `fill`. std::fs,
/// not fs_err: called for every result file, and an fs_err `File` keeps a copy of its path;
/// the errors are named here.
#[allow(clippy::disallowed_methods)]
fn create_new_replacing(path: &Path, fill: impl Fn(&mut std::fs::File) -> std::io::Result<()>) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    let mut file = match options.open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(path)?;
            options.open(path)
        }
        other => other,
    }
    .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    fill(&mut file).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// `batch-{timestamp}`, or with `-2`, `-3`… while `taken` says so (its error ends the search).
fn unique_id(timestamp: &str, mut taken: impl FnMut(&str) -> Result<bool, RlmError>) -> Result<String, RlmError> {
    let base = format!("batch-{timestamp}");
    let mut id = base.clone();
    let mut n = 1;
    while taken(&id)? {
        n += 1;
        id = format!("{base}-{n}");
    }
    Ok(id)
}

/// Files an earlier run left in its directory, replaced by the new run.
fn is_run_output(name: &str) -> bool {
    name.ends_with(".result.md")
        || name.ends_with(".rejected.md")
        || name.starts_with(crate::fs_atomic::TEMP_PREFIX)
        || matches!(
            name,
            "aggregate.md"
                | "aggregate.json"
                | crate::aggregate::SOURCES_FILE
                | "report.json"
                | "report.md"
                | "events.jsonl"
                | "settings.json"
                | "plan.json"
                | MARKER
        )
}

/// What [`clear_outputs`] leaves in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    Nothing,
    /// A resumed run appends to its `events.jsonl`.
    EventLog,
}

/// Refuses, without writing anything, a `dir` that is a file or a non-empty directory
/// that holds no earlier run (a lock file alone is rlm's: a run that stopped right after
/// taking the directory).
fn check_usable(dir: &Path) -> Result<(), RlmError> {
    match fs_err::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(OutputFailure::OutputDir(e).into()),
        Ok(m) if !m.is_dir() => return Err(OutputFailure::OutputDirIsFile { dir: dir.to_path_buf() }.into()),
        Ok(_) => {}
    }
    let names = names_in(dir)?;
    let foreign = !names.iter().any(|n| n == MARKER) && names.iter().any(|n| n != LOCK_FILE);
    if foreign {
        return Err(OutputFailure::OutputDirNotEmpty { dir: dir.to_path_buf() }.into());
    }
    Ok(())
}

/// Removes an earlier run's outputs from `dir` (which this process has locked).
fn clear_outputs(dir: &Path, keep: Keep) -> Result<(), RlmError> {
    let names = names_in(dir)?;
    sweep_temp_files(dir, Duration::ZERO);
    if names.iter().any(|n| n == "prompts") {
        let _ = fs_err::remove_dir_all(dir.join("prompts"));
    }
    // A resumed run appends to its event log, and keeps the answers that were paid for and
    // rejected (`*.rejected.md`: never cached, and the store points at them).
    let kept = |n: &str| keep == Keep::EventLog && (n == "events.jsonl" || n.ends_with(".rejected.md"));
    for name in names.iter().filter(|n| is_run_output(n) && !kept(n)) {
        match fs_err::remove_file(dir.join(name)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(OutputFailure::CannotReplace(e).into()),
        }
    }
    Ok(())
}

fn names_in(dir: &Path) -> Result<Vec<String>, RlmError> {
    Ok(fs_err::read_dir(dir)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect())
}

/// `src/auth/login.ts` → `src-auth-login.ts`: only `[A-Za-z0-9._-]`, never `..`, never a
/// separator, never empty, never hidden.
pub fn sanitize(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
            c
        } else {
            '-'
        };
        // No "..": a dot never follows a dot.
        if c == '.' && out.ends_with('.') {
            continue;
        }
        out.push(c);
    }
    let trimmed = out.trim_start_matches(['.', '-']).trim_end_matches('.');
    let mut stem = if trimmed.is_empty() {
        "file".to_string()
    } else {
        trimmed.to_string()
    };
    if stem.len() > MAX_STEM {
        let hash = &sha256_hex(path.as_bytes())[..12];
        stem.truncate(MAX_STEM - 13);
        stem = format!("{}-{hash}", stem.trim_end_matches('.'));
    }
    stem
}

/// One unique `{sanitized}.result.md` name per path, in the given order: a collision gets
/// the first 8 hex characters of the path's hash appended.
pub fn result_names(paths: &[&str]) -> Vec<String> {
    // The names taken, by the hash of their lowercase form: equal names have equal hashes, so
    // no name is taken twice (two names that only share a hash get a salt they did not
    // need), and a million names cost a set of numbers, not a million copies.
    let mut seen = HashSet::with_capacity(paths.len());
    let mut names = Vec::with_capacity(paths.len());
    // Sanitized on all cores (a large plan has a million names), a block at a time so the
    // stems of a block are all that is held besides the names; made unique here, in order.
    for block in paths.chunks(1 << 16) {
        let stems = crate::parallel::map_pure(block, |path| sanitize(path));
        names.extend(block.iter().zip(stems).map(|(path, stem)| {
            let mut name = format!("{stem}.result.md");
            let mut salt = 0u32;
            while !seen.insert(crate::hash::fast_hash(name.to_ascii_lowercase().as_bytes())) {
                let hash = sha256_hex(format!("{path}#{salt}").as_bytes());
                name = format!("{stem}-{}.result.md", &hash[..8]);
                salt += 1;
            }
            name
        }));
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitized_names_stay_inside() {
        assert_eq!(sanitize("src/auth/login.ts"), "src-auth-login.ts");
        assert_eq!(sanitize("../../etc/passwd"), "etc-passwd");
        assert_eq!(sanitize("/abs/a b.py"), "abs-a-b.py");
        assert_eq!(sanitize("a/..b"), "a-.b");
        assert_eq!(sanitize(".."), "file");
        for p in ["../x", "a/../../b", "...", "x/.../y", "C:\\win\\f.txt", "ü/ß.md"] {
            let s = sanitize(p);
            assert!(
                !s.contains("..") && !s.contains('/') && !s.contains('\\') && !s.starts_with('.'),
                "{p} -> {s}"
            );
        }
        let long = "d/".repeat(200) + "f.rs";
        assert!(sanitize(&long).len() <= MAX_STEM);
    }

    #[test]
    fn names_are_unique() {
        let names = result_names(&["src/a-b.ts", "src-a/b.ts", "src/a/b.ts", "SRC/a-b.ts"]);
        assert_eq!(names[0], "src-a-b.ts.result.md");
        let set: HashSet<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        assert_eq!(set.len(), 4);
    }

    #[test]
    fn default_dirs_are_exclusive_and_output_dirs_are_checked() {
        let rlm = tempfile::tempdir().unwrap();
        let a = RunDir::create(rlm.path(), None, Redactor::default()).unwrap();
        let b = RunDir::create(rlm.path(), None, Redactor::default()).unwrap();
        assert_ne!(a.dir, b.dir);
        let out = rlm.path().join("out");
        let run = RunDir::create(rlm.path(), Some(&out), Redactor::default()).unwrap();
        run.write("x.result.md", "old").unwrap();
        fs_err::write(out.join("notes.txt"), "mine").unwrap();
        // While the run holds its directory, nobody else takes it, and nothing is removed.
        let err = RunDir::create(rlm.path(), Some(&out), Redactor::default()).unwrap_err();
        let pid = std::process::id().to_string();
        assert!(
            err.to_string().contains(&format!("in use by rlm process {pid}")),
            "{err}"
        );
        assert!(out.join("x.result.md").exists());
        drop(run);
        RunDir::create(rlm.path(), Some(&out), Redactor::default()).unwrap();
        assert!(!out.join("x.result.md").exists() && out.join("notes.txt").exists());
        let foreign = rlm.path().join("foreign");
        fs_err::create_dir(&foreign).unwrap();
        fs_err::write(foreign.join("a.txt"), "a").unwrap();
        assert!(RunDir::create(rlm.path(), Some(&foreign), Redactor::default()).is_err());
        let file = rlm.path().join("afile.txt");
        fs_err::write(&file, "a").unwrap();
        let err = RunDir::create(rlm.path(), Some(&file), Redactor::default()).unwrap_err();
        assert!(err.to_string().contains("is a file"), "{err}");
        assert!(
            !foreign.join(LOCK_FILE).exists(),
            "a refused directory is not written to"
        );
    }

    #[test]
    fn no_id_is_handed_out_when_the_reservation_fails() {
        let rlm = tempfile::tempdir().unwrap();
        let broken = |_: &str| Err(RlmError::io("tasks.db", std::io::Error::other("the store is busy")));
        for output_dir in [None, Some(rlm.path().join("out"))] {
            let err = RunDir::create_unique(rlm.path(), output_dir.as_deref(), Redactor::default(), &broken, &|_| {
                Ok(())
            })
            .unwrap_err();
            assert!(err.to_string().contains("busy"), "{err}");
        }
        assert!(
            fs_err::read_dir(rlm.path())
                .unwrap()
                .flatten()
                .all(|e| e.file_name() == "out"),
            "no run directory was made"
        );
    }

    #[test]
    fn a_resume_keeps_the_event_log_and_holds_the_lock_it_was_given() {
        let rlm = tempfile::tempdir().unwrap();
        let first = RunDir::create(rlm.path(), None, Redactor::default()).unwrap();
        first.write("events.jsonl", "{}\n").unwrap();
        first.write("a.result.md", "old").unwrap();
        let (dir, id) = (first.dir.clone(), first.run_id.clone());
        let me = Some(std::process::id());
        let err = RunLock::acquire_for_resume(&dir, &id, me).unwrap_err();
        assert!(err.to_string().contains("is still running in rlm process"), "{err}");
        // Held by a process the store does not name as the run's owner: another run.
        let err = RunLock::acquire_for_resume(&dir, &id, None).unwrap_err();
        assert!(
            err.to_string().contains("is not running, but its output directory"),
            "{err}"
        );
        drop(first);
        let lock = Arc::new(RunLock::acquire_for_resume(&dir, &id, None).unwrap());
        let again = RunDir::reopen(rlm.path(), &dir, &id, lock, Redactor::default()).unwrap();
        assert!(again.dir.join("events.jsonl").exists() && !again.dir.join("a.result.md").exists());
        assert!(RunLock::acquire(&dir).is_err(), "the resumed run holds the directory");
    }

    #[test]
    fn a_directory_another_run_took_over_is_not_reopened() {
        let rlm = tempfile::tempdir().unwrap();
        let out = rlm.path().join("out");
        let first = RunDir::create(rlm.path(), Some(&out), Redactor::default()).unwrap();
        let first_id = first.run_id.clone();
        drop(first);
        let taken = |id: &str| Ok(id == first_id);
        let second = RunDir::create_unique(rlm.path(), Some(&out), Redactor::default(), &taken, &|_| Ok(())).unwrap();
        second.write("a.result.md", "the second run's").unwrap();
        assert_eq!(marked_run(&out).as_deref(), Some(second.run_id.as_str()));
        let second_id = second.run_id.clone();
        drop(second);
        let lock = Arc::new(RunLock::acquire_for_resume(&out, &first_id, None).unwrap());
        let err = RunDir::reopen(rlm.path(), &out, &first_id, lock.clone(), Redactor::default()).unwrap_err();
        assert!(err.to_string().contains(&format!("now holds run {second_id}")), "{err}");
        assert!(out.join("a.result.md").exists(), "nothing of the second run is touched");
        RunDir::reopen(rlm.path(), &out, &second_id, lock, Redactor::default()).unwrap();
    }

    #[test]
    fn result_files_are_written_plainly_or_linked_only_when_they_hold_the_answer() {
        let rlm = tempfile::tempdir().unwrap();
        let key = crate::secret::ApiKey::new("sk-secret-123");
        let run = RunDir::create(rlm.path(), None, Redactor::new([&key])).unwrap();
        // Written plainly, scrubbed, replacing what was there without writing through it.
        let cached = rlm.path().join("cached.answer");
        fs_err::write(&cached, "cached").unwrap();
        fs_err::hard_link(&cached, run.dir.join("a.result.md")).unwrap();
        run.write_result("a.result.md", "key sk-secret-123").unwrap();
        assert_eq!(
            fs_err::read_to_string(run.dir.join("a.result.md")).unwrap(),
            "key [REDACTED]"
        );
        assert_eq!(
            fs_err::read_to_string(&cached).unwrap(),
            "cached",
            "the link was replaced, not written through"
        );
        // Linked when the cache's copy holds exactly the text, replacing a file of that name.
        assert!(run.link_result("a.result.md", "cached", &cached).unwrap());
        assert_eq!(fs_err::read_to_string(run.dir.join("a.result.md")).unwrap(), "cached");
        // Not when it differs (edited, stale, or the answer holds a secret): nothing is left.
        assert!(!run.link_result("b.result.md", "other", &cached).unwrap());
        fs_err::write(&cached, "sk-secret-123").unwrap();
        assert!(!run.link_result("c.result.md", "sk-secret-123", &cached).unwrap());
        assert!(!run.dir.join("b.result.md").exists() && !run.dir.join("c.result.md").exists());
        // No copy in the cache: not linked.
        assert!(!run
            .link_result("d.result.md", "x", &rlm.path().join("missing"))
            .unwrap());
    }
}
