//! What the user sees while a run is going: an indicatif bar on a terminal, one plain line
//! per finished file without one (CI), nothing with `--quiet`. Everything goes to stderr.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::exec::Notice;

/// How progress is shown; decided once per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    Bar,
    Lines,
    Quiet,
}

impl ProgressMode {
    pub fn choose(quiet: bool, stderr_is_terminal: bool) -> Self {
        if quiet {
            ProgressMode::Quiet
        } else if stderr_is_terminal {
            ProgressMode::Bar
        } else {
            ProgressMode::Lines
        }
    }
}

/// The live progress display of the dispatched units.
pub struct Progress {
    mode: ProgressMode,
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
    failed: usize,
    active: usize,
    cost: f64,
}

impl Progress {
    pub fn new(mode: ProgressMode, total: usize) -> Self {
        let bar = (mode == ProgressMode::Bar && total > 0).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg} · ETA {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        let progress = Progress {
            mode,
            bar,
            total,
            done: 0,
            failed: 0,
            active: 0,
            cost: 0.0,
        };
        progress.refresh();
        progress
    }

    fn refresh(&self) {
        if let Some(bar) = &self.bar {
            bar.set_position(self.done as u64);
            bar.set_message(format!(
                "active {} · failed {} · ${:.4}",
                self.active, self.failed, self.cost
            ));
        }
    }

    /// Prints a line above the bar (or plainly), unless quiet.
    pub fn say(&self, line: &str) {
        match (&self.bar, self.mode) {
            (_, ProgressMode::Quiet) => {}
            (Some(bar), _) => bar.println(line),
            (None, _) => eprintln!("{line}"),
        }
    }

    /// A line shown even with `--quiet` (a fatal error), above the bar if there is one.
    pub fn error(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    pub fn dispatched(&mut self) {
        self.active += 1;
        self.refresh();
    }

    /// A unit finished; `outcome` is `Ok(detail)` or `Err(reason)`.
    pub fn finished(&mut self, path: &str, outcome: Result<String, String>, cost_so_far: f64) {
        self.active = self.active.saturating_sub(1);
        self.done += 1;
        self.cost = cost_so_far;
        let width = self.total.to_string().len();
        match &outcome {
            Ok(detail) if self.mode == ProgressMode::Lines => {
                eprintln!("[{:>width$}/{}] ok     {path} ({detail})", self.done, self.total);
            }
            Err(reason) => {
                self.failed += 1;
                if self.mode != ProgressMode::Quiet {
                    self.say(&format!(
                        "[{:>width$}/{}] FAILED {path}: {reason}",
                        self.done, self.total
                    ));
                }
            }
            Ok(_) => {}
        }
        self.refresh();
    }

    pub fn notice(&self, notice: &Notice) {
        match notice {
            Notice::Retrying {
                label,
                attempt,
                reason,
                wait,
            } => self.say(&format!(
                "retrying {label} in {:.1}s (attempt {} failed: {reason})",
                wait.as_secs_f64(),
                attempt
            )),
            Notice::RateLimited { wait } => self.say(&format!(
                "rate limited: pausing all calls for {:.1}s",
                wait.as_secs_f64()
            )),
            Notice::Warning(text) => self.say(&format!("rlm: warning: {text}")),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
