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
