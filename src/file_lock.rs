//! `FileLock`: an advisory, exclusive lock on a whole file (`flock(2)`), held for as long as
//! the value lives.
//!
//! Why `flock` and not a lock file whose existence is the lock: the kernel releases an
//! `flock` when its holder's last descriptor closes, so a holder that is killed (`kill -9`,
//! a crash, a CI cancel) can never leave a stale lock behind, and nobody has to guess from a
//! pid whether a lock is still meant. The descriptor is opened close-on-exec (Rust's
//! default), so a child process — a command provider's agent — never inherits it and never
//! keeps the lock after rlm is gone. Two opens of one file in the same process are two
//! holders, as for two processes.
//!
//! std::fs, not fs_err: the descriptor is handed to `flock` and its errno matched
//! (`EWOULDBLOCK`), and every error is named once, here, by [`named`].

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// An exclusive lock on `path`; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct FileLock {
    file: File,
    path: PathBuf,
}

impl FileLock {
    /// Takes the lock on `path` (creating the file) if nobody holds it; `Ok(None)` when
    /// another holder has it.
    pub fn try_exclusive(path: &Path) -> io::Result<Option<FileLock>> {
        let file = open(path)?;
        match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => Ok(Some(FileLock {
                file,
                path: path.to_path_buf(),
            })),
            Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(None),
            Err(e) => Err(named(e, path)),
        }
    }

    /// Takes the lock on `path` (creating the file), waiting for as long as another holder
    /// has it. Blocks the thread: call it off the async workers.
    pub fn exclusive(path: &Path) -> io::Result<FileLock> {
        let file = open(path)?;
        flock(&file, libc::LOCK_EX).map_err(|e| named(e, path))?;
        Ok(FileLock {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Whether somebody holds the lock on `path` now, without creating the file: `None` when
    /// there is no such file (or it cannot be opened), so nothing is known.
    #[allow(clippy::disallowed_methods)] // std::fs: see the module doc; no error is shown
    pub fn is_held(path: &Path) -> Option<bool> {
        let file = OpenOptions::new().read(true).open(path).ok()?;
        match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            // Taken, so nobody held it; let go when `file` closes.
            Ok(()) => Some(false),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Some(true),
            Err(_) => None,
        }
    }

    /// The locked file (to write who holds it, say).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The path the lock was taken on.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `path` still names the file this lock is on. A holder that removes the file
    /// while others wait for it leaves them locking a file nobody else can find: such a
    /// lock protects nothing, and the waiter must take the lock again.
    #[allow(clippy::disallowed_methods)] // std::fs: see the module doc.
    pub fn is_current(&self) -> io::Result<bool> {
        use std::os::unix::fs::MetadataExt;
        let held = self.file.metadata()?;
        match std::fs::metadata(&self.path) {
            Ok(named) => Ok(named.dev() == held.dev() && named.ino() == held.ino()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(named(e, &self.path)),
        }
    }
}

#[allow(clippy::disallowed_methods)] // std::fs: see the module doc.
fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| named(e, path))
}

/// An exclusive lock on one byte of a file that is never removed (Linux's open file
/// description locks, `F_OFD_SETLK`): one file holds the locks of any number of names, so
/// taking one creates and removes no file (an inode made and freed per lock is most of
/// what a lock file costs the kernel). Like an `flock`, it belongs to its descriptor: it
/// goes when the value is dropped or its process ends, and two of one process conflict.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct RangeLock {
    /// Holds the lock; closing it lets go.
    _file: File,
}

#[cfg(target_os = "linux")]
impl RangeLock {
    /// Takes byte `at` of `path` (creating the file) if nobody holds it; `Ok(None)` when
    /// another holder has it.
    pub fn try_exclusive(path: &Path, at: u64) -> io::Result<Option<RangeLock>> {
        let file = open(path)?;
        match ofd_lock(&file, libc::F_OFD_SETLK, libc::F_WRLCK, at) {
            Ok(_) => Ok(Some(RangeLock { _file: file })),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => Ok(None),
            Err(e) => Err(named(e, path)),
        }
    }

    /// Takes byte `at` of `path` (creating the file), waiting while another holder has it.
    /// Blocks the thread: call it off the async workers.
    pub fn exclusive(path: &Path, at: u64) -> io::Result<RangeLock> {
        let file = open(path)?;
        ofd_lock(&file, libc::F_OFD_SETLKW, libc::F_WRLCK, at).map_err(|e| named(e, path))?;
        Ok(RangeLock { _file: file })
    }

    /// Whether somebody holds byte `at` of `path` now, without creating the file or taking
    /// the lock: `None` when the file cannot be opened, so nothing is known.
    #[allow(clippy::disallowed_methods)] // std::fs: see the module doc; no error is shown
    pub fn is_held(path: &Path, at: u64) -> Option<bool> {
        let file = OpenOptions::new().read(true).open(path).ok()?;
        let found = ofd_lock(&file, libc::F_OFD_GETLK, libc::F_WRLCK, at).ok()?;
        Some(found.l_type != libc::F_UNLCK as libc::c_short)
    }
}

/// `fcntl(fd, cmd, {kind, byte at})` for an open file description lock, retried when a
/// signal interrupts the wait; the lock record as the kernel left it (`F_OFD_GETLK` says
/// there who holds it).
#[cfg(target_os = "linux")]
fn ofd_lock(file: &File, cmd: libc::c_int, kind: libc::c_int, at: u64) -> io::Result<libc::flock> {
    // SAFETY: a plain C struct of integers, for which all zeroes is a valid value.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = (at & (i64::MAX as u64)) as libc::off_t;
    lock.l_len = 1;
    loop {
        // SAFETY: the descriptor is open for as long as `file` lives, and `lock` outlives
        // the call; fcntl writes only into `lock`.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), cmd, &raw mut lock) };
        if rc == 0 {
            return Ok(lock);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// `flock(fd, operation)`, retried when a signal interrupts the wait.
fn flock(file: &File, operation: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: the descriptor is open for as long as `file` lives; flock touches nothing else.
        let rc = unsafe { libc::flock(file.as_raw_fd(), operation) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn named(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn range_locks_of_one_byte_exclude_each_other_and_no_other_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.lock");
        assert_eq!(RangeLock::is_held(&path, 7), None, "no file yet");
        let held = RangeLock::try_exclusive(&path, 7).unwrap().expect("free");
        assert!(
            RangeLock::try_exclusive(&path, 7).unwrap().is_none(),
            "taken, even in this process"
        );
        assert_eq!(RangeLock::is_held(&path, 7), Some(true));
        assert_eq!(RangeLock::is_held(&path, 8), Some(false));
        let other = RangeLock::try_exclusive(&path, u64::MAX)
            .unwrap()
            .expect("another byte is free");
        drop(held);
        assert_eq!(RangeLock::is_held(&path, 7), Some(false), "let go when dropped");
        assert!(RangeLock::try_exclusive(&path, 7).unwrap().is_some());
        drop(other);
    }

    #[test]
    fn one_holder_at_a_time_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let first = FileLock::try_exclusive(&path).unwrap().expect("free");
        assert!(FileLock::try_exclusive(&path).unwrap().is_none(), "held");
        assert!(first.is_current().unwrap());
        drop(first);
        assert!(FileLock::try_exclusive(&path).unwrap().is_some(), "released");
    }

    #[test]
    fn a_waiter_gets_the_lock_when_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("y.lock");
        let held = FileLock::exclusive(&path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let lock = FileLock::exclusive(&path).unwrap();
                tx.send("acquired").unwrap();
                drop(lock);
            })
        };
        // The waiter cannot have the lock while it is held.
        assert!(rx.recv_timeout(std::time::Duration::from_millis(100)).is_err());
        drop(held);
        assert_eq!(rx.recv().unwrap(), "acquired");
        waiter.join().unwrap();
    }

    #[test]
    fn a_removed_file_is_no_longer_current() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.lock");
        let lock = FileLock::exclusive(&path).unwrap();
        fs_err::remove_file(&path).unwrap();
        assert!(!lock.is_current().unwrap());
    }
}
