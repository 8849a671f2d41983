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

    /// One line: the envelope (`ts`, `run_id`) and the event's own fields.
    fn line(&self, event: &Event) -> String {
        let mut value = serde_json::to_value(event).unwrap_or(serde_json::Value::Null);
        if let Some(map) = value.as_object_mut() {
            map.insert("ts".into(), jiff::Timestamp::now().to_string().into());
            map.insert("run_id".into(), self.run_id.clone().into());
        }
        self.redactor.scrub(&value.to_string()).into_owned()
    }
}

impl Reporter for EventLog {
    fn report(&mut self, event: &Event) {
        if self.out.is_none() {
            return;
        }
        let line = self.line(event);
        // Cache hits come by the thousand and carry nothing a crash could lose: buffer them;
        // flush everything else at once.
        let flush = !matches!(event, Event::Completed { cached: true, .. });
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
