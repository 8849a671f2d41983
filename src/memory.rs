//! Giving freed memory back to the operating system.
//!
//! Planning a run renders every unit's request once to measure it and a batch-API
//! submission builds its body in memory: hundreds of megabytes that are freed at once, but
//! among the plan's long-lived allocations, so glibc's allocator keeps the pages (the
//! process's resident size stays at its peak). [`release_free`] returns the free pages
//! after those stages; a 100,000-unit batch-API run's peak RSS is what it holds, not what
//! it once held.

/// Returns the allocator's free pages to the operating system (glibc's `malloc_trim`;
/// nothing elsewhere). Takes a few milliseconds: call it after a stage, not per unit.
pub fn release_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it has no
    // preconditions and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The process's resident size and its peak so far, in MiB (Linux; zeros elsewhere): said
/// in the debug log after each stage (`RLM_LOG=rlm=debug`), to see which one holds memory.
pub fn resident_mib() -> (u64, u64) {
    let Ok(status) = fs_err::read_to_string("/proc/self/status") else {
        return (0, 0);
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kib| kib / 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}
