//! Deeper recursion runs at lower priority (the supervisor seed's `priority: 5 - depth`).
//! rlm has no shared supervisor queue across processes: each nested rlm is its own process
//! with its own pool. What all of them share is the machine, so a run started `RLM_DEPTH`
//! levels deep lowers its own scheduling priority by that many steps, and everything it
//! starts (its command agents, its own child runs) inherits it: depth 0 is served before
//! depth 1, depth 1 before depth 2, and a deep fan-out cannot starve the run that asked
//! for it.

/// Lowers this process's scheduling priority (raises its nice value) by `depth` steps.
/// Best effort: the kernel caps the value at 19, and a failure changes nothing else.
pub fn lower_for_depth(depth: u32) {
    if depth == 0 {
        return;
    }
    #[cfg(unix)]
    {
        let steps = libc::c_int::try_from(depth.min(19)).unwrap_or(19);
        // SAFETY: nice(2) only changes this process's own scheduling priority; it takes
        // no pointers and cannot fail in a way that leaves memory in a bad state.
        let _ = unsafe { libc::nice(steps) };
    }
}
