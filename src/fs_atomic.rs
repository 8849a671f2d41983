//! Atomic file writes: a temporary file beside the target, then a rename over it. A reader
//! (or a crash) sees the old file or the new one, never half of one.
//!
//! Temporary files are named `.rlm-tmp-*` so a run can sweep those a `kill -9` left behind
//! ([`sweep_temp_files`]). Durable writes are fsynced before the rename, and the directory
//! after it (the rename itself is durable only then): a paid answer in the cache must
//! survive a power loss; files derived from the cache need not. A write can also be put in
//! place first and fsynced later ([`write_atomic_unsynced_in`]), so the wait for the disk
//! does not hold up the next call. This is the one atomic write of the code base.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Prefix of every temporary file rlm creates.
pub const TEMP_PREFIX: &str = ".rlm-tmp-";

/// Whether a write must reach the disk before it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync the data before the rename (the only copy of something paid for).
    Synced,
    /// Leave flushing to the OS (derivable files: a crash of rlm still loses nothing).
    Buffered,
}

/// Writes `bytes` to `path` atomically. The parent directory must exist.
pub fn write_atomic(path: &Path, bytes: &[u8], durability: Durability) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    write_atomic_in(path, bytes, durability, dir)
}

/// [`write_atomic`] with the temporary file in `temp_dir` (on the same file system), so
/// leftovers of a killed process gather in one place to sweep.
pub fn write_atomic_in(path: &Path, bytes: &[u8], durability: Durability, temp_dir: &Path) -> std::io::Result<()> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMP_PREFIX);
    // Readable like any file the user creates (tempfile's default is owner-only).
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    let mut tmp = builder.tempfile_in(temp_dir).map_err(|e| named(e, temp_dir))?;
    tmp.write_all(bytes).map_err(|e| named(e, path))?;
    if durability == Durability::Synced {
        tmp.as_file().sync_all().map_err(|e| named(e, path))?;
    }
    tmp.persist(path).map_err(|e| named(e.error, path))?;
    if durability == Durability::Synced {
        sync_dir_of(path);
    }
    Ok(())
}

/// [`write_atomic`] of what `write` puts out, streamed to the temporary file (through a
/// buffer) rather than built in memory first: a plan or report of 100,000 units is hundreds
/// of megabytes of text.
pub fn write_atomic_with(
    path: &Path,
    durability: Durability,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMP_PREFIX);
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    let mut tmp = builder.tempfile_in(dir).map_err(|e| named(e, dir))?;
    {
        let mut out = std::io::BufWriter::with_capacity(256 * 1024, tmp.as_file_mut());
        write(&mut out).and_then(|()| out.flush()).map_err(|e| named(e, path))?;
    }
    if durability == Durability::Synced {
        tmp.as_file().sync_all().map_err(|e| named(e, path))?;
    }
    tmp.persist(path).map_err(|e| named(e.error, path))?;
    if durability == Durability::Synced {
        sync_dir_of(path);
    }
    Ok(())
}

/// A file written by [`write_atomic_unsynced_in`]: in place (a reader, or a crash of rlm,
/// sees all of it) but not yet on the disk.
#[derive(Debug)]
pub struct Unsynced {
    file: std::fs::File,
    path: std::path::PathBuf,
}

impl Unsynced {
    /// fsyncs the file, then its directory: from here on it survives a power loss too.
    pub fn sync(self) -> std::io::Result<()> {
        self.file.sync_all().map_err(|e| named(e, &self.path))?;
        sync_dir_of(&self.path);
        Ok(())
    }
}

/// [`write_atomic_in`] whose fsync is left to the caller ([`Unsynced::sync`]), so a paid
/// answer is in place — visible to other processes, kept if rlm dies — at once, and the
/// wait for the disk need not hold up anything else. The rename comes before the fsync:
/// until the sync returns, a power loss may leave the file empty or partial, which readers
/// of such files (the cache) take for a miss.
pub fn write_atomic_unsynced_in(path: &Path, bytes: &[u8], temp_dir: &Path) -> std::io::Result<Unsynced> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMP_PREFIX);
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    let mut tmp = builder.tempfile_in(temp_dir).map_err(|e| named(e, temp_dir))?;
    tmp.write_all(bytes).map_err(|e| named(e, path))?;
    let file = tmp.persist(path).map_err(|e| named(e.error, path))?;
    Ok(Unsynced {
        file,
        path: path.to_path_buf(),
    })
}

/// Files made durable in groups (group commit): each [`Unsynced`] handed over waits for the
/// next group, which is synced at once when `group` files wait, or when the first of them
/// has waited [`GROUP_WAIT`]. On Linux a group is one `syncfs` (every file and directory
/// of the file system the files are on, in one journal commit) rather than two fsyncs a
/// file; elsewhere each file and its directory are synced as [`Unsynced::sync`] does.
///
/// Each file is in place before it is handed over (a kill -9 loses nothing), so what a
/// power cut can lose is what waits for a group: at most `group` files.
#[derive(Debug)]
pub struct GroupSync {
    sender: std::sync::Mutex<Option<std::sync::mpsc::Sender<Waiting>>>,
    group: usize,
}

/// A file waiting for its group, and who to tell when it is durable.
type Waiting = (Unsynced, std::sync::mpsc::SyncSender<std::io::Result<()>>);

/// The longest a file waits for the rest of its group.
pub const GROUP_WAIT: Duration = Duration::from_millis(50);

/// The wait for a file's group (see [`GroupSync::submit`]).
#[derive(Debug)]
pub struct Durable(std::sync::mpsc::Receiver<std::io::Result<()>>);

impl Durable {
    /// Blocks until the file is durable (or its sync failed).
    pub fn wait(self) -> std::io::Result<()> {
        self.0.recv().unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "the sync thread ended before the file was synced",
            ))
        })
    }
}

impl GroupSync {
    /// Groups of at most `group` files (at least 1).
    pub fn new(group: usize) -> GroupSync {
        GroupSync {
            sender: std::sync::Mutex::new(None),
            group: group.max(1),
        }
    }

    /// Hands `file` over to be synced with its group; [`Durable::wait`] says when it is.
    pub fn submit(&self, file: Unsynced) -> Durable {
        let (tell, told) = std::sync::mpsc::sync_channel(1);
        let mut sender = self.sender.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let tx = sender.get_or_insert_with(|| {
            let (tx, rx) = std::sync::mpsc::channel::<Waiting>();
            let group = self.group;
            // A thread that cannot start drops `rx`: every send then fails, and each file
            // is synced alone below.
            let _ = std::thread::Builder::new()
                .name("rlm-group-sync".into())
                .spawn(move || sync_groups(&rx, group));
            tx
        });
        if let Err(unsent) = tx.send((file, tell)) {
            // No sync thread: this file is synced here, alone.
            let (file, tell) = unsent.0;
            let _ = tell.send(file.sync());
        }
        Durable(told)
    }
}

/// The sync thread: gathers a group (see [`GroupSync`]), syncs it, tells each waiter.
fn sync_groups(rx: &std::sync::mpsc::Receiver<Waiting>, group: usize) {
    while let Ok(first) = rx.recv() {
        let deadline = std::time::Instant::now() + GROUP_WAIT;
        let mut waiting = vec![first];
        while waiting.len() < group {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(next) => waiting.push(next),
                Err(_) => break,
            }
        }
        sync_group(waiting);
    }
}

fn sync_group(waiting: Vec<Waiting>) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::io::AsRawFd;
        let dev_of = |f: &Unsynced| f.file.metadata().map(|m| m.dev()).ok();
        // One syncfs covers every file of the group on the first one's file system (a
        // cache's entries share one); a file on another is synced on its own.
        let synced = waiting.first().and_then(|(first, _)| {
            let dev = dev_of(first)?;
            // SAFETY: the descriptor is open for as long as `first` lives (past this call).
            let rc = unsafe { libc::syncfs(first.file.as_raw_fd()) };
            let result = match rc {
                0 => Ok(()),
                _ => {
                    let e = named(std::io::Error::last_os_error(), &first.path);
                    Err((e.kind(), e.to_string()))
                }
            };
            Some((dev, result))
        });
        for (file, tell) in waiting {
            let result = match &synced {
                Some((dev, result)) if dev_of(&file) == Some(*dev) => result
                    .clone()
                    .map_err(|(kind, message)| std::io::Error::new(kind, message)),
                _ => file.sync(),
            };
            let _ = tell.send(result);
        }
    }
    #[cfg(not(target_os = "linux"))]
    for (file, tell) in waiting {
        let _ = tell.send(file.sync());
    }
}

/// fsyncs the directory holding `path` (what makes a rename durable). Best effort: not
/// every platform can open a directory.
fn sync_dir_of(path: &Path) {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Ok(d) = fs_err::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Removes `.rlm-tmp-*` files in `dir` older than `min_age` (left by a process that was
/// killed mid-write). Errors are ignored: a leftover costs nothing but disk space.
pub fn sweep_temp_files(dir: &Path, min_age: Duration) {
    let Ok(entries) = fs_err::read_dir(dir) else { return };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(TEMP_PREFIX) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).unwrap_or_default() >= min_age);
        if old {
            let _ = fs_err::remove_file(entry.path());
        }
    }
}

/// An I/O error that names the path it concerns.
fn named(e: std::io::Error, path: &Path) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_write_replaces_the_file_and_a_failed_one_leaves_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plan.json");
        write_atomic(&p, b"old", Durability::Buffered).unwrap();
        write_atomic_with(&p, Durability::Buffered, |w| w.write_all(b"new")).unwrap();
        assert_eq!(fs_err::read_to_string(&p).unwrap(), "new");
        let failed = write_atomic_with(&p, Durability::Synced, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("no room"))
        });
        assert!(failed.unwrap_err().to_string().contains("plan.json: no room"));
        assert_eq!(fs_err::read_to_string(&p).unwrap(), "new");
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn replaces_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.md");
        write_atomic(&p, b"one", Durability::Synced).unwrap();
        write_atomic(&p, b"two", Durability::Buffered).unwrap();
        assert_eq!(fs_err::read_to_string(&p).unwrap(), "two");
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_unsynced_write_is_in_place_before_its_sync() {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join("tmp");
        fs_err::create_dir(&temp).unwrap();
        let p = dir.path().join("a.json");
        fs_err::write(&p, "old").unwrap();
        let pending = write_atomic_unsynced_in(&p, b"new", &temp).unwrap();
        assert_eq!(fs_err::read_to_string(&p).unwrap(), "new");
        assert_eq!(fs_err::read_dir(&temp).unwrap().count(), 0, "no temporary file is left");
        pending.sync().unwrap();
        assert_eq!(fs_err::read_to_string(&p).unwrap(), "new");
    }

    #[test]
    fn errors_name_the_path_and_sweep_removes_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(&dir.path().join("missing/a.md"), b"x", Durability::Buffered).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
        fs_err::write(dir.path().join(".rlm-tmp-abc"), b"").unwrap();
        fs_err::write(dir.path().join("keep.md"), b"").unwrap();
        sweep_temp_files(dir.path(), Duration::ZERO);
        let names: Vec<_> = fs_err::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["keep.md"]);
    }
}
