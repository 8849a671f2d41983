//! The width of the worker pool, resolved as the seed specifies.

/// The seed's hard cap on model calls in flight (REF-086).
pub const HARD_CAP: usize = 7;
/// Width used when neither the flag nor the config says.
pub const FALLBACK_PARALLEL: usize = 4;

/// The resolved width and the warning (if any) the user should see.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Parallelism {
    pub width: usize,
    /// The width was given with `-j`/`--max-parallel`: the pool starts there, against any
    /// server. Without it the width is rlm's default, which a local server's width search
    /// may start below (issue 27).
    pub given: bool,
    pub warning: Option<String>,
}

/// Config cap, hard cap 7, the flag — the smallest wins; a flag above the cap warns and
/// clamps, never fails; 4 when nothing is configured.
pub fn resolve_parallelism(flag: Option<usize>, config: Option<usize>) -> Parallelism {
    let cap = config.map_or(HARD_CAP, |c| c.min(HARD_CAP));
    match flag {
        Some(n) if n > cap => {
            let source = match config {
                Some(c) if c < HARD_CAP => format!(".aiwg/aiwg.config caps it at {c}"),
                _ => format!("the hard cap is {HARD_CAP}"),
            };
            Parallelism {
                width: cap,
                given: true,
                warning: Some(format!("--max-parallel {n} clamped to {cap}: {source}")),
            }
        }
        Some(n) => Parallelism {
            width: n.max(1),
            given: true,
            warning: None,
        },
        None => Parallelism {
            width: config.map_or(FALLBACK_PARALLEL, |_| cap),
            given: false,
            // A configured width above the hard cap is clamped as the flag's is, and said.
            warning: config.filter(|&c| c > HARD_CAP).map(|c| {
                format!(
                    "parallelism.max_parallel_subagents {c} in .aiwg/aiwg.config clamped to {HARD_CAP}: the hard cap is \
                     {HARD_CAP}"
                )
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence() {
        assert_eq!(resolve_parallelism(None, None).width, 4);
        assert!(
            !resolve_parallelism(None, Some(3)).given,
            "a configured cap is not a start"
        );
        assert!(resolve_parallelism(Some(20), None).given);
        let configured = resolve_parallelism(None, Some(10));
        assert_eq!(configured.width, 7);
        assert!(configured
            .warning
            .unwrap()
            .contains("max_parallel_subagents 10 in .aiwg/aiwg.config clamped to 7"));
        assert_eq!(resolve_parallelism(None, Some(3)).width, 3);
        assert_eq!(resolve_parallelism(Some(5), None).width, 5);
        let clamped = resolve_parallelism(Some(20), None);
        assert_eq!(clamped.width, 7);
        assert!(clamped.warning.unwrap().contains("clamped to 7"));
        let by_config = resolve_parallelism(Some(6), Some(2));
        assert_eq!(by_config.width, 2);
        assert!(by_config.warning.unwrap().contains("aiwg.config"));
    }
}
