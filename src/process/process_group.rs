//! `ProcessGroup`: the process group a supervised command runs in, signalled as a whole so
//! that grandchildren die with the command, and killed on drop so that an aborted task
//! never leaves orphans.

use std::time::Duration;

/// The group of a child spawned with `process_group(0)`: its id is the child's pid.
///
/// While armed, dropping it sends SIGKILL to the whole group. It is disarmed only once
/// the group is known to be dead, because a group id, like a pid, can be reused after.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: libc::pid_t,
    armed: bool,
}

impl ProcessGroup {
    /// The group led by `pid` (armed). `None` for a pid no group can have.
    pub fn led_by(pid: u32) -> Option<Self> {
        let pgid = libc::pid_t::try_from(pid).ok().filter(|&p| p > 1)?;
        Some(ProcessGroup { pgid, armed: true })
    }

    /// The group id (the leader's pid).
    pub fn id(&self) -> u32 {
        self.pgid.unsigned_abs()
    }

    /// Sends `signal` to every process of the group.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) with a negative pid signals the group; `pgid > 1` (checked in
        // `led_by`), so this never means "every process" (-1) or our own group (0).
        unsafe {
            libc::kill(-self.pgid, signal);
        }
    }

    /// Whether any process of the group is still alive; see [`group_alive`].
    pub fn has_live_members(&self) -> bool {
        group_alive(self.id())
    }

    /// Stops the SIGKILL on drop: the group is dead and its id may be reused.
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed {
            self.signal(libc::SIGKILL);
        }
    }
}

/// Whether the process group `pgid` has a live member. `kill(-pgid, 0)` failing with
/// ESRCH means none; otherwise, on Linux, members are looked up in `/proc`, because an
/// exited grandchild stays a zombie in the group until its new parent reaps it, and some
/// init processes (containers, sandboxes) never do. A zombie is dead: it runs nothing and
/// holds nothing. Elsewhere a group that answers is taken as alive.
pub fn group_alive(pgid: u32) -> bool {
    let Ok(id) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the group exists; nothing is delivered.
    let rc = unsafe { libc::kill(-id, 0) };
    if rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return false;
    }
    live_members_in_proc(pgid).unwrap_or(true)
}

/// Polls [`group_alive`] until the group is dead or `patience` has passed; true if dead.
/// For tests and diagnostics: a killed process takes a moment to leave.
pub fn wait_for_group_death(pgid: u32, patience: Duration) -> bool {
    let until = std::time::Instant::now() + patience;
    loop {
        if !group_alive(pgid) {
            return true;
        }
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `Some(true)` if `/proc` lists a member of `pgid` that is not a zombie; `None` when
/// `/proc` cannot be read.
fn live_members_in_proc(pgid: u32) -> Option<bool> {
    let entries = fs_err::read_dir("/proc").ok()?;
    let wanted = pgid.to_string();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().filter(|n| n.bytes().all(|b| b.is_ascii_digit())) else {
            continue;
        };
        let Ok(stat) = fs_err::read_to_string(format!("/proc/{pid}/stat")) else {
            continue; // exited while we looked
        };
        // Fields after the parenthesised command name: state, ppid, pgrp, …
        let Some(close) = stat.rfind(')') else { continue };
        let mut fields = stat[close + 1..].split_whitespace();
        let (Some(state), Some(_ppid), Some(pgrp)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        if pgrp == wanted && state != "Z" && state != "X" {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn dropping_an_armed_group_kills_every_member() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30; wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let group = ProcessGroup::led_by(child.id()).unwrap();
        let pgid = group.id();
        assert!(group.has_live_members());
        drop(group);
        child.wait().unwrap();
        assert!(wait_for_group_death(pgid, Duration::from_secs(5)), "a member survived");
    }

    #[test]
    fn a_disarmed_group_is_left_alone() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let mut group = ProcessGroup::led_by(child.id()).unwrap();
        group.disarm();
        let pgid = group.id();
        drop(group);
        assert!(group_alive(pgid));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!group_alive(pgid));
    }

    #[test]
    fn no_group_for_impossible_pids() {
        assert!(ProcessGroup::led_by(0).is_none());
        assert!(ProcessGroup::led_by(1).is_none());
        assert!(ProcessGroup::led_by(u32::MAX).is_none());
    }
}
