//! `events.jsonl` in the run directory: one JSON object per event, with the time and the
//! run id, scrubbed of secrets, written as it happens so a crash keeps what came before.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::Reporter;
use crate::exec::Event;
use crate::secret::Redactor;

/// The event log of one run.
pub struct EventLog {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    run_id: String,
    redactor: Redactor,
    /// The first write error (the log then stops; the run does not).
    error: Option<String>,
}

impl EventLog {
    /// Creates (or replaces) `path`.
    pub fn create(path: &Path, run_id: &str, redactor: Redactor) -> std::io::Result<Self> {
        let file = fs_err::File::create(path)?;
        Ok(EventLog {
            path: path.to_path_buf(),
            out: Some(BufWriter::new(file.into_parts().0)),
            run_id: run_id.to_string(),
            redactor,
            error: None,
        })
    }

    /// Flushes; returns the write error, if one happened, as a warning for the report.
    pub fn finish(&mut self) -> Option<String> {
        if let Some(out) = &mut self.out {
            if let Err(e) = out.flush() {
                self.fail(e);
            }
        }
        self.error.clone()
    }

    fn fail(&mut self, e: std::io::Error) {
        self.out = None;
        self.error
            .get_or_insert_with(|| format!("cannot write {}: {e}", self.path.display()));
    }

    /// One line: the envelope (`ts`, `run_id`) and then the event's own fields.
    fn line(&self, event: &Event) -> String {
        let fields = serde_json::to_string(event).unwrap_or_else(|_| "{}".into());
        let rest = fields.strip_prefix('{').unwrap_or("}");
        let run_id = serde_json::to_string(&self.run_id).unwrap_or_default();
        let sep = if rest == "}" { "" } else { "," };
        let line = format!("{{\"ts\":\"{}\",\"run_id\":{run_id}{sep}{rest}", jiff::Timestamp::now());
        self.redactor.scrub(&line).into_owned()
    }
}

impl Reporter for EventLog {
    fn report(&mut self, event: &Event) {
        if self.out.is_none() {
            return;
        }
        let line = self.line(event);
        // Flushed when a unit ends (what a crash must not lose); the rest — queued,
        // started, cache hits, by the thousand — rides along in the buffer.
        let flush = matches!(
            event,
            Event::Completed { cached: false, .. }
                | Event::Failed { .. }
                | Event::Cancelled { .. }
                | Event::Stopping { .. }
        );
        let result = self
            .out
            .as_mut()
            .map(|out| writeln!(out, "{line}").and_then(|()| if flush { out.flush() } else { Ok(()) }));
        if let Some(Err(e)) = result {
            self.fail(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::ApiKey;
    use crate::unit::UnitId;

    #[test]
    fn one_scrubbed_object_per_line_with_the_envelope() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let key = ApiKey::new("sk-secret-key");
        let mut log = EventLog::create(&path, "batch-1", Redactor::new([&key])).unwrap();
        log.report(&Event::Started {
            unit: UnitId::named("u-1"),
            attempt: 1,
        });
        log.report(&Event::Warning {
            message: "echoed sk-secret-key".into(),
        });
        assert!(log.finish().is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event"], "task:started");
        assert_eq!(lines[0]["run_id"], "batch-1");
        assert_eq!(lines[0]["unit"], "u-1");
        assert!(lines[0]["ts"].as_str().unwrap().ends_with('Z'));
        assert!(!text.contains("sk-secret-key"));
    }
}
