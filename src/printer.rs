//! The one place that writes to the terminal.
//!
//! Data goes to stdout (the completion summary, a dry-run listing, the one JSON document of
//! `--json`); everything else — banner, progress, warnings, errors — goes to stderr. What is
//! shown is decided here once, from `--quiet`, `--json`, `--color` and whether stderr is a
//! terminal: `--quiet` silences only the banner and progress, never errors, warnings or
//! the list of failures. Every line passes through the run's [`Redactor`]. A closed stdout
//! (`rlm … | head`) is not an error.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::secret::Redactor;

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// How the run's output is shaped; decided once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PrinterMode {
    pub quiet: bool,
    pub json: bool,
    pub stderr_is_terminal: bool,
    pub color: bool,
}

impl PrinterMode {
    /// Colour is on for `always`, off for `never`, and with `auto` only on a terminal and
    /// when `NO_COLOR` is unset or empty.
    pub fn color_enabled(choice: ColorChoice, stderr_is_terminal: bool, no_color: bool) -> bool {
        match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => stderr_is_terminal && !no_color,
        }
    }
}

/// What the live progress display looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressStyleKind {
    /// A bar on a terminal.
    Bar,
    /// One plain line per finished unit (CI, pipes).
    Lines,
    /// Nothing (`--quiet`).
    Off,
}

/// The terminal writer, shared by the dispatcher and the reporters.
#[derive(Clone)]
pub struct Printer {
    inner: Arc<Inner>,
}

struct Inner {
    mode: PrinterMode,
    redactor: Redactor,
    bar: Mutex<Option<ProgressBar>>,
    /// Errors already said: one error is one line, however many places report it.
    said: Mutex<std::collections::HashSet<String>>,
    /// Whether the one JSON document of `--json` has been written (an error after it must
    /// not write a second).
    json_written: std::sync::atomic::AtomicBool,
}

impl Printer {
    pub fn new(mode: PrinterMode, redactor: Redactor) -> Self {
        Printer {
            inner: Arc::new(Inner {
                mode,
                redactor,
                bar: Mutex::new(None),
                said: Mutex::default(),
                json_written: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// A printer for errors before a run's settings exist (no colour, nothing to scrub).
    pub fn plain() -> Self {
        Printer::new(PrinterMode::default(), Redactor::default())
    }

    pub fn mode(&self) -> PrinterMode {
        self.inner.mode
    }

    /// The progress display this mode calls for.
    pub fn progress_kind(&self) -> ProgressStyleKind {
        let mode = self.inner.mode;
        if mode.quiet {
            ProgressStyleKind::Off
        } else if mode.stderr_is_terminal {
            ProgressStyleKind::Bar
        } else {
            ProgressStyleKind::Lines
        }
    }

    /// Data for stdout (never with `--json`, whose stdout is one document).
    pub fn data(&self, text: &str) {
        if self.inner.mode.json {
            return;
        }
        self.stdout(text);
    }

    /// The one JSON document of `--json`.
    pub fn json<T: serde::Serialize + ?Sized>(&self, value: &T) {
        // Streamed as it is serialized (a report of 100,000 units is hundreds of megabytes
        // of text, as a `Value` tree more), scrubbed line by line on its way out.
        self.inner
            .json_written
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let stdout = std::io::stdout().lock();
        let mut out = crate::secret::ScrubLines::new(&self.inner.redactor, std::io::BufWriter::new(stdout));
        // A closed pipe (`| head`) is not an error worth reporting.
        // Laid out as the run directory's JSON files are: a unit (a run, a file) a line.
        let _ = crate::pretty_json::to_writer(&mut out, value)
            .map_err(std::io::Error::other)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
    }

    /// Whether [`Printer::json`] has written its document.
    pub fn json_written(&self) -> bool {
        self.inner.json_written.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The start-up banner and other narration: hidden by `--quiet`.
    pub fn banner(&self, text: &str) {
        if !self.inner.mode.quiet {
            self.stderr(text);
        }
    }

    /// One progress line (above the bar when there is one): hidden by `--quiet`.
    pub fn progress(&self, text: &str) {
        if !self.inner.mode.quiet {
            self.stderr(text);
        }
    }

    /// `rlm: warning: …`, always shown.
    pub fn warn(&self, text: &str) {
        let label = self.paint("rlm: warning:", console::Style::new().yellow());
        self.stderr(&format!("{label} {text}"));
    }

    /// `rlm: error: …`, always shown, once.
    pub fn error(&self, text: &str) {
        let first = self
            .inner
            .said
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(text.to_string());
        if !first {
            return;
        }
        let label = self.paint("rlm: error:", console::Style::new().red().bold());
        self.stderr(&format!("{label} {text}"));
    }

    /// A line for stderr that is shown even with `--quiet` (a failure list, say).
    pub fn important(&self, text: &str) {
        self.stderr(text);
    }

    /// `text` in `style` when colour is on.
    pub fn paint(&self, text: &str, style: console::Style) -> String {
        if self.inner.mode.color {
            style.force_styling(true).apply_to(text).to_string()
        } else {
            text.to_string()
        }
    }

    /// Starts the progress bar (on a terminal only) for `total` units.
    pub fn start_bar(&self, total: u64) {
        if self.progress_kind() != ProgressStyleKind::Bar || total == 0 {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(120));
        *self.bar() = Some(bar);
    }

    /// Moves the bar (a no-op without one).
    pub fn update_bar(&self, position: u64, length: u64, message: String) {
        if let Some(bar) = self.bar().as_ref() {
            bar.set_length(length);
            bar.set_position(position);
            bar.set_message(message);
        }
    }

    /// Removes the bar.
    pub fn finish_bar(&self) {
        if let Some(bar) = self.bar().take() {
            bar.finish_and_clear();
        }
    }

    fn bar(&self) -> std::sync::MutexGuard<'_, Option<ProgressBar>> {
        self.inner.bar.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn stderr(&self, text: &str) {
        let text = self.inner.redactor.scrub(text);
        match self.bar().as_ref() {
            Some(bar) => bar.println(text),
            None => {
                let _ = writeln!(std::io::stderr().lock(), "{text}");
            }
        }
    }

    fn stdout(&self, text: &str) {
        let text = self.inner.redactor.scrub(text);
        // A closed pipe (`| head`) is not an error worth reporting.
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    }
}

/// `1 item`, `2 items`: a count and its noun, for messages.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_follows_the_choice_terminal_and_no_color() {
        assert!(PrinterMode::color_enabled(ColorChoice::Always, false, true));
        assert!(!PrinterMode::color_enabled(ColorChoice::Never, true, false));
        assert!(PrinterMode::color_enabled(ColorChoice::Auto, true, false));
        assert!(!PrinterMode::color_enabled(ColorChoice::Auto, true, true));
        assert!(!PrinterMode::color_enabled(ColorChoice::Auto, false, false));
    }

    #[test]
    fn progress_kind_from_mode() {
        let p = |quiet, tty| {
            Printer::new(
                PrinterMode {
                    quiet,
                    json: false,
                    stderr_is_terminal: tty,
                    color: false,
                },
                Redactor::default(),
            )
            .progress_kind()
        };
        assert_eq!(p(true, true), ProgressStyleKind::Off);
        assert_eq!(p(false, true), ProgressStyleKind::Bar);
        assert_eq!(p(false, false), ProgressStyleKind::Lines);
    }
}
