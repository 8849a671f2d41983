//! `Liveness`: is the rlm process that owns a `RUNNING` run still there?
//!
//! A run records its owner's pid, an identity of that process and a heartbeat. The pid
//! alone is not enough: after a reboot or a long time, another program may have the same
//! pid. On Linux the identity is the boot id plus the process's start time, which no other
//! process can share; elsewhere it is absent and the pid is trusted. The heartbeat tells a
//! working owner from one that is suspended (a closed laptop lid, `SIGSTOP`).

use std::time::Duration;

use serde::Serialize;

/// A heartbeat older than this makes a live owner `Stalled` (the owner beats every few
/// seconds; a minute leaves room for a busy machine).
pub const HEARTBEAT_STALE_AFTER: Duration = Duration::from_secs(60);

/// What became of the process that owns a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Liveness {
    /// The owner exists and its heartbeat is fresh.
    Alive,
    /// The owner exists but has not beaten for a while (suspended, or stuck).
    Stalled,
    /// The owner is gone: the run crashed (or was killed) and can be resumed.
    Gone,
}

impl Liveness {
    /// Judges an owner from what is known about it.
    pub fn judge(owner_exists: bool, heartbeat_age: Duration) -> Self {
        match (owner_exists, heartbeat_age > HEARTBEAT_STALE_AFTER) {
            (false, _) => Liveness::Gone,
            (true, false) => Liveness::Alive,
            (true, true) => Liveness::Stalled,
        }
    }
}

/// The file in a run's output directory that its rlm holds an `flock` on while it works
/// there (see [`crate::run_dir`]): the kernel lets go of it when the process dies, even
/// before a zombie is reaped, so it is what tells a live owner from a dead one.
pub const RUN_LOCK_FILE: &str = ".rlm-lock";

/// Whether the rlm that owns a run, recorded as `pid` (with `identity`) working in
/// `output_dir`, is still there. The directory's lock is trusted first: free, the owner
/// is gone whatever process its pid now names (a zombie not yet reaped, a pid taken
/// again); where there is no lock to ask (a run that holds none), the pid tells.
pub fn owner_alive(pid: u32, identity: Option<&str>, output_dir: &std::path::Path) -> bool {
    match crate::file_lock::FileLock::is_held(&output_dir.join(RUN_LOCK_FILE)) {
        Some(false) => false,
        Some(true) | None => owner_exists(pid, identity),
    }
}

/// This process's identity, recorded as the owner of the runs it creates or claims.
pub fn current_identity() -> Option<String> {
    identity_of(std::process::id())
}

/// Whether the process `pid` exists and, when both identities are known, is the same
/// process that recorded `identity`.
pub fn owner_exists(pid: u32, identity: Option<&str>) -> bool {
    if !pid_exists(pid) {
        return false;
    }
    match (identity, identity_of(pid)) {
        (Some(recorded), Some(now)) => recorded == now,
        // Nothing to compare: trust the pid.
        _ => true,
    }
}

/// `kill(pid, 0)`: delivers nothing, but says whether the pid exists (EPERM means it
/// exists and belongs to another user).
fn pid_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission; nothing is delivered.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// `{boot id}:{start time in clock ticks}` from `/proc` (Linux); `None` elsewhere or when
/// unreadable. A zombie (exited, not yet reaped) still has a stat line but is no working
/// owner, so it gets an identity that matches nothing recorded.
fn identity_of(pid: u32) -> Option<String> {
    let boot_id = fs_err::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: split after it.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // fields[0] is the state (field 3); the start time is field 22, so fields[19].
    let state = *fields.first()?;
    let start = *fields.get(19)?;
    if state == "Z" || state == "X" {
        return Some("dead".to_string());
    }
    Some(format!("{}:{start}", boot_id.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_from_existence_and_heartbeat_age() {
        let fresh = Duration::from_secs(3);
        let old = HEARTBEAT_STALE_AFTER + Duration::from_secs(1);
        assert_eq!(Liveness::judge(true, fresh), Liveness::Alive);
        assert_eq!(Liveness::judge(true, old), Liveness::Stalled);
        assert_eq!(Liveness::judge(false, fresh), Liveness::Gone);
        assert_eq!(Liveness::judge(false, old), Liveness::Gone);
    }

    #[test]
    fn this_process_exists_with_its_own_identity() {
        let me = std::process::id();
        let identity = current_identity();
        assert!(owner_exists(me, identity.as_deref()));
        if identity.is_some() {
            assert!(!owner_exists(me, Some("another-boot:12345")));
        }
    }

    #[test]
    fn an_exited_owner_does_not_exist() {
        let mut child = std::process::Command::new("sleep").arg("0.3").spawn().unwrap();
        let pid = child.id();
        let identity = identity_of(pid);
        assert!(owner_exists(pid, identity.as_deref()));
        // Not reaped yet: a zombie, which is no owner either.
        std::thread::sleep(Duration::from_millis(800));
        if identity.is_some() {
            assert!(!owner_exists(pid, identity.as_deref()));
        }
        child.wait().unwrap();
        assert!(!owner_exists(pid, identity.as_deref()));
    }
}
