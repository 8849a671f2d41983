//! Giving freed memory back to the operating system.
//!
//! Planning a run renders every unit's request once to measure it and a batch-API
//! submission builds its body in memory: hundreds of megabytes that are freed at once, but
//! among the plan's long-lived allocations, so glibc's allocator keeps the pages (the
//! process's resident size stays at its peak). [`release_free`] returns the free pages
//! after those stages; a 100,000-unit batch-API run's peak RSS is what it holds, not what
//! it once held.

/// Below this resident size a process keeps its free pages: a small heap has little to
/// give back, and what it gave would be faulted in again by the next stage (trimming cost
/// a 10,000-file cached rerun a few percent of its time).
const TRIM_FROM_MIB: u64 = 128;

/// Returns the allocator's free pages to the operating system (glibc's `malloc_trim`;
/// nothing elsewhere), once the process holds [`TRIM_FROM_MIB`] or more. Takes a few
/// milliseconds: call it after a stage, not per unit.
pub fn release_free() {
    if resident_mib().0 < TRIM_FROM_MIB {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it has no
    // preconditions and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// How many malloc arenas the process keeps. glibc gives each thread that allocates while
/// another holds an arena a new one (up to eight per core), and each keeps its freed pages:
/// a run's tokio workers and blocking threads then hold tens of megabytes of free memory
/// between them (a 50,000-unit batch-API run: 213 MB resident for 126 MB allocated). Two
/// arenas keep that waste small and the threads of a 2-core machine from contending.
const ARENAS: i32 = 2;

/// Caps the allocator's arenas at [`ARENAS`] (glibc; nothing elsewhere). Call first thing,
/// before any thread starts; `MALLOC_ARENA_MAX` in the environment still wins.
pub fn limit_arenas() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before other threads exist.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
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
