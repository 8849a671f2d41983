//! A parse under a deadline: on a thread of its own, waited for until its deadline and no
//! longer. tree-sitter asks whether to go on only between the steps of a parse, and one step
//! of its error recovery can take minutes, so a parse that overruns cannot be stopped: it is
//! left to finish at the lowest priority, and at most [`MOST_LEFT_RUNNING`] are left so.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a parse of `len` bytes may take before it is given up: a second, and a second
/// more a megabyte — twenty times what real code of that size takes here, so a real file is
/// always parsed, and cut the same way on every run.
pub(super) fn parse_deadline(len: usize) -> Duration {
    Duration::from_millis(1_000 + (len / 1_000) as u64)
}

/// How long past its deadline a parse is waited for: the time tree-sitter takes between
/// two of its checks on ordinary text.
pub(super) const PARSE_GRACE: Duration = Duration::from_millis(200);

/// The most parses left running past their deadline at once (see [`within`]). Each may
/// hold gigabytes and whatever CPU is idle until it ends; while this many are, no other
/// parse starts, and files are cut by the lines' rules instead: a tree of hostile files
/// cannot pile up parses the run no longer waits for.
const MOST_LEFT_RUNNING: usize = 2;

/// The parses of this process left running past their deadline.
static LEFT_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// What `work` returns, when it returns by `deadline`. It runs on a thread of its own; one
/// that overruns is left to finish there at the lowest priority, and nothing waits for it
/// (the process ends without it). For work that cannot be stopped: tree-sitter asks whether
/// to go on only between the steps of its parse, and one step of its error recovery can
/// take minutes. While [`MOST_LEFT_RUNNING`] are left running, `work` is not started.
pub(super) fn within<T: Send + 'static>(deadline: Instant, work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    within_counted(deadline, work, &LEFT_RUNNING, MOST_LEFT_RUNNING)
}

/// [`within`], counting what it leaves running in `left_running`, and starting nothing
/// while `most` are.
pub(super) fn within_counted<T: Send + 'static>(
    deadline: Instant,
    work: impl FnOnce() -> T + Send + 'static,
    left_running: &'static AtomicUsize,
    most: usize,
) -> Option<T> {
    if left_running.load(Ordering::Acquire) >= most {
        tracing::debug!("{most} parses are still running past their deadline: this one is not started");
        return None;
    }
    // Running, done, or left running: whichever of the thread and the waiter moves it from
    // running first decides who counts what the other cannot see.
    let state = Arc::new(AtomicU8::new(RUNNING));
    let (tx, rx) = std::sync::mpsc::sync_channel(2);
    let (started, done) = (tx.clone(), tx);
    let theirs = state.clone();
    let spawned = std::thread::Builder::new()
        .name("rlm-parse".into())
        // The main thread's stack size: tree-sitter recurses on deep text.
        .stack_size(8 << 20)
        .spawn(move || {
            let _ = started.send(Err(thread_id()));
            let value = work();
            if theirs
                .compare_exchange(RUNNING, DONE, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // Left running by the waiter, which counted it: it ends now.
                left_running.fetch_sub(1, Ordering::AcqRel);
            }
            let _ = done.send(Ok(value));
        });
    if spawned.is_err() {
        return None;
    }
    let mut worker = None;
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Err(id)) => worker = id,
            Ok(Ok(value)) => return Some(value),
            Err(_) => {
                // Counted before it is marked, so the thread never takes back a count not
                // yet made.
                left_running.fetch_add(1, Ordering::AcqRel);
                if state
                    .compare_exchange(RUNNING, LEFT, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    // It ended just now: nothing is left running.
                    left_running.fetch_sub(1, Ordering::AcqRel);
                } else if let Some(id) = worker {
                    lowest_priority(id);
                }
                return None;
            }
        }
    }
}

/// The states of a [`within`]'s work.
const RUNNING: u8 = 0;
const DONE: u8 = 1;
const LEFT: u8 = 2;

/// The kernel's id of the calling thread, where threads have a priority of their own.
fn thread_id() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions and cannot fail.
        Some(unsafe { libc::gettid() })
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Puts thread `id` at the lowest priority (nice 19), so a parse left running takes only
/// the time no other work wants.
fn lowest_priority(id: i32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority only reads its arguments; an id that is gone is an error
        // it returns, which changes nothing.
        let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, id as libc::id_t, 19) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = id;
}
