//! `events.jsonl` in the run directory: one JSON object per event, with the time and the
//! run id, scrubbed of secrets, written as it happens so a crash keeps what came before.
//!
//! A resumed run appends to its log, after a `run:resumed` line, so the log keeps the whole
//! history of the run across its attempts (issue 17); a new run starts a new log.
//!
//! Every unit queued has an ending line: `task:completed`, `task:failed` (or
//! `task:timeout`) or `task:cancelled`. A unit the run never got to (an interrupt, a budget
//! or a deadline stops dispatching) hears no event of its own, so the log closes it with a
//! `task:cancelled` line before `batch:completed`, saying why, as the task store records it
//! cancelled (issue 17: 3 of 18 interrupted units had one).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::Reporter;
use crate::exec::Event;
use crate::secret::Redactor;
use crate::unit::{UnitId, UnitKind};

/// The version of an `events.jsonl` line's layout, on every line; bumped when a field
/// changes meaning.
pub const EVENTS_SCHEMA_VERSION: u32 = 1;

/// A unit queued and not ended: its order of queueing, its label, its kind and whether it
/// started.
type OpenUnit = (u64, std::sync::Arc<str>, UnitKind, bool);

/// The event log of one run.
pub struct EventLog {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    run_id: String,
    /// How deep in nested rlm runs this one is (`RLM_DEPTH`), on every line.
    depth: u32,
    redactor: Redactor,
    /// The first write error (the log then stops; the run does not).
    error: Option<String>,
    /// Units queued that have not ended yet, with their label and kind, and the order they
    /// were queued in (the closing `task:cancelled` lines keep it).
    open: HashMap<UnitId, OpenUnit>,
    queued: u64,
    /// Why the run stopped dispatching (`run:stopping`), for the units it never got to.
    stopping: Option<String>,
}

impl EventLog {
    /// Creates (or replaces) `path`.
    pub fn create(path: &Path, run_id: &str, depth: u32, redactor: Redactor) -> std::io::Result<Self> {
        Self::open(path, run_id, depth, redactor, None)
    }

    /// The log of a run: `resumed: None` creates (or replaces) `path` for a new run;
    /// `Some(fields)` appends to it, first a `run:resumed` line with those fields (flushed:
    /// the line says a new attempt began, whatever comes next).
    pub fn open(
        path: &Path,
        run_id: &str,
        depth: u32,
        redactor: Redactor,
        resumed: Option<serde_json::Value>,
    ) -> std::io::Result<Self> {
        let file = match resumed {
            Some(_) => fs_err::OpenOptions::new().create(true).append(true).open(path)?,
            None => fs_err::File::create(path)?,
        };
        let mut log = EventLog {
            path: path.to_path_buf(),
            out: Some(BufWriter::new(file.into_parts().0)),
            run_id: run_id.to_string(),
            depth,
            redactor,
            error: None,
            open: HashMap::new(),
            queued: 0,
            stopping: None,
        };
        if let Some(fields) = resumed {
            let mut line = serde_json::json!({ "event": "run:resumed" });
            if let (Some(target), Some(source)) = (line.as_object_mut(), fields.as_object()) {
                target.extend(source.clone());
            }
            let line = log.envelope(&line.to_string());
            if let Some(out) = log.out.as_mut() {
                writeln!(out, "{line}").and_then(|()| out.flush())?;
            }
        }
        Ok(log)
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

    /// The last lines: a `task:cancelled` for every unit that never ended, then
    /// `batch:completed` with the run's outcome; then flushes. Written after the report, so a
    /// log without it is a run that did not finish.
    pub fn complete(&mut self, outcome: &serde_json::Value) -> Option<String> {
        let known = self.error.is_some();
        self.close_open_units(outcome["status"].as_str().unwrap_or_default());
        if self.out.is_some() {
            let mut fields = serde_json::json!({ "event": "batch:completed" });
            if let (Some(target), Some(source)) = (fields.as_object_mut(), outcome.as_object()) {
                target.extend(source.clone());
            }
            let line = self.envelope(&fields.to_string());
            if let Some(Err(e)) = self.out.as_mut().map(|out| writeln!(out, "{line}")) {
                self.fail(e);
            }
        }
        // An error already reported by `finish` is not reported twice.
        self.finish().filter(|_| !known)
    }

    /// A `task:cancelled` line for each unit queued that never ended, in queue order, with
    /// the reason the task store gives it.
    fn close_open_units(&mut self, status: &str) {
        use crate::store::RunStatus as Status;
        let status = Status::from_name(status).unwrap_or(Status::Failed);
        let mut open: Vec<(UnitId, OpenUnit)> = self.open.drain().collect();
        open.sort_by_key(|(_, (order, ..))| *order);
        for (unit, (_, label, kind, started)) in open {
            let reason = super::left_open(status, started, self.stopping.as_deref());
            self.report(&Event::Cancelled {
                unit,
                label,
                kind,
                reason,
            });
        }
    }

    /// Follows which units are open: queued and not yet ended.
    fn track(&mut self, event: &Event) {
        match event {
            Event::Queued { unit, label, kind } => {
                self.queued += 1;
                self.open
                    .insert(unit.clone(), (self.queued, label.clone(), *kind, false));
            }
            Event::Started { unit, .. } => {
                if let Some(open) = self.open.get_mut(unit) {
                    open.3 = true;
                }
            }
            Event::Completed { unit, .. } | Event::Failed { unit, .. } | Event::Cancelled { unit, .. } => {
                self.open.remove(unit);
            }
            Event::Stopping { reason, .. } => {
                self.stopping.get_or_insert_with(|| reason.clone());
            }
            _ => {}
        }
    }

    /// One line: the envelope (`v`, `ts`, `run_id`, `depth`) and then the event's own fields. A
    /// failure by timeout is the seed's `task:timeout`.
    fn line(&self, event: &Event) -> String {
        let fields = if let Event::Failed {
            error: Some(crate::provider::ErrorKind::Timeout),
            ..
        } = event
        {
            let mut fields = serde_json::to_value(event).unwrap_or_default();
            fields["event"] = "task:timeout".into();
            fields.to_string()
        } else {
            // Written as it is, not built as a `Value` first: a line for every event of
            // every unit, by the hundred thousand in a large run.
            serde_json::to_string(event).unwrap_or_default()
        };
        self.envelope(&fields)
    }

    fn envelope(&self, fields: &str) -> String {
        let rest = fields.strip_prefix('{').unwrap_or("}");
        let run_id = serde_json::to_string(&self.run_id).unwrap_or_default();
        let sep = if rest == "}" { "" } else { "," };
        let line = format!(
            "{{\"schema_version\":{EVENTS_SCHEMA_VERSION},\"ts\":\"{}\",\"run_id\":{run_id},\"depth\":{}{sep}{rest}",
            jiff::Timestamp::now(),
            self.depth
        );
        self.redactor.scrub(&line).into_owned()
    }
}

impl Reporter for EventLog {
    fn report(&mut self, event: &Event) {
        self.track(event);
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
                | Event::BatchSubmitted { .. }
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
        let mut log = EventLog::create(&path, "batch-1", 0, Redactor::new([&key])).unwrap();
        log.report(&Event::Started {
            unit: UnitId::named("u-1"),
            attempt: 1,
        });
        log.report(&Event::Warning {
            message: "echoed sk-secret-key".into(),
        });
        assert!(log.finish().is_none());
        let text = fs_err::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event"], "task:started");
        assert_eq!(lines[0]["run_id"], "batch-1");
        assert_eq!(lines[0]["unit"], "u-1");
        assert!(lines[0]["ts"].as_str().unwrap().ends_with('Z'));
        assert!(!text.contains("sk-secret-key"));
    }

    #[test]
    fn a_resumed_run_appends_after_a_run_resumed_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut first = EventLog::create(&path, "batch-3", 0, Redactor::new([])).unwrap();
        first.report(&Event::Started {
            unit: UnitId::named("u-1"),
            attempt: 1,
        });
        assert!(first.finish().is_none());
        drop(first);
        let fields = serde_json::json!({"attempt": 2, "earlier_cost_usd": 0.5});
        let mut again = EventLog::open(&path, "batch-3", 0, Redactor::new([]), Some(fields)).unwrap();
        again.report(&Event::Started {
            unit: UnitId::named("u-2"),
            attempt: 1,
        });
        assert!(again.complete(&serde_json::json!({"status": "SUCCESS"})).is_none());
        let text = fs_err::read_to_string(&path).unwrap();
        let events: Vec<String> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["event"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            events,
            ["task:started", "run:resumed", "task:started", "batch:completed"]
        );
        let resumed: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
        assert_eq!(resumed["attempt"], 2);
        assert_eq!(resumed["run_id"], "batch-3");
    }

    #[test]
    fn units_that_never_ended_are_closed_as_cancelled_before_the_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::create(&path, "batch-4", 0, Redactor::new([])).unwrap();
        for name in ["u-3", "u-1", "u-2"] {
            log.report(&Event::Queued {
                unit: UnitId::named(name),
                label: format!("{name}.ts").into(),
                kind: UnitKind::Map,
            });
        }
        log.report(&Event::Cancelled {
            unit: UnitId::named("u-1"),
            label: "u-1.ts".into(),
            kind: UnitKind::Map,
            reason: "not started: the run stopped dispatching".into(),
        });
        log.report(&Event::Started {
            unit: UnitId::named("u-2"),
            attempt: 1,
        });
        assert!(log.complete(&serde_json::json!({"status": "INTERRUPTED"})).is_none());
        let text = fs_err::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let tail: Vec<(String, String)> = lines[4..]
            .iter()
            .filter(|l| l["event"] != "task:started")
            .map(|l| {
                (
                    l["event"].as_str().unwrap().to_string(),
                    l["unit"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        assert_eq!(
            tail,
            [
                ("task:cancelled".to_string(), "u-3".to_string()),
                ("task:cancelled".to_string(), "u-2".to_string()),
                ("batch:completed".to_string(), String::new()),
            ]
        );
        // A unit that never started was not run; one that started was not finished.
        let n = lines.len();
        assert_eq!(
            lines[n - 3]["reason"],
            "not run: the run was interrupted (rlm resume goes on)"
        );
        assert_eq!(
            lines[n - 2]["reason"],
            "not finished: the run was interrupted (rlm resume goes on)"
        );
        assert_eq!(lines[n - 2]["label"], "u-2.ts");
    }

    #[test]
    fn a_timeout_is_task_timeout_and_the_run_closes_with_batch_completed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::create(&path, "batch-2", 2, Redactor::new([])).unwrap();
        log.report(&Event::Failed {
            unit: UnitId::named("u-1"),
            label: "a.ts".into(),
            kind: crate::unit::UnitKind::Map,
            attempts: 4,
            duration_ms: 120_000,
            usage: Default::default(),
            cost_usd: 0.0,
            error: Some(crate::provider::ErrorKind::Timeout),
            reason: "timed out after 30 s".into(),
        });
        assert!(log
            .complete(&serde_json::json!({"status": "PARTIAL", "failed": 1}))
            .is_none());
        let text = fs_err::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event"], "task:timeout");
        assert_eq!(lines[0]["depth"], 2);
        assert_eq!(lines[0]["attempts"], 4);
        assert_eq!(lines[1]["event"], "batch:completed");
        assert_eq!(lines[1]["status"], "PARTIAL");
        assert_eq!(lines[1]["run_id"], "batch-2");
    }
}
