//! A job is also a run of kind `job` in the task store, so `rlm status` and `rlm list`
//! see it: one unit per batch, moved through its states as the batch runs. The store also
//! keeps two rlm processes off one job (a resume claims the run).
//!
//! `job.json` is the job's own record; the store is a view of it. A store that cannot be
//! written is a warning, never the end of a job whose answers are safe on disk.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::job_dir::JobDir;
use super::settings::JobSettings;
use super::state::JobStatus;
use crate::error::{InUse, RlmError};
use crate::printer::Printer;
use crate::store::{Detail, NewRun, NewUnit, RunId, RunStatus, StoreError, TaskStore, UnitKind, UnitState};

/// How often the owner says it is alive.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(5);

/// The job's run in the task store.
pub struct StoreLink {
    store: Option<TaskStore>,
    run: RunId,
    states: HashMap<String, UnitState>,
    printer: Printer,
    last_heartbeat: Instant,
}

impl StoreLink {
    /// Records a new job as a run, or claims the run of a job taken up again (refused while
    /// another live rlm owns it).
    pub fn open(settings: &JobSettings, job: &JobDir, new: bool, printer: &Printer) -> Result<Self, RlmError> {
        let mut link = StoreLink {
            store: None,
            run: RunId(job.id.clone()),
            states: HashMap::new(),
            printer: printer.clone(),
            last_heartbeat: Instant::now(),
        };
        let mut store = match TaskStore::open(&settings.rlm_dir()) {
            Ok(s) => s,
            Err(e) => {
                printer.warn(&format!(
                    "the task store is not available ({e}): rlm status will not show this job"
                ));
                return Ok(link);
            }
        };
        let new_run = NewRun {
            id: Some(job.id.clone()),
            kind: "job".to_string(),
            command: settings.argv.iter().map(|a| without_credentials(a)).collect(),
            cwd: settings.cwd.clone(),
            output_dir: Some(job.root.clone()),
            parent: settings.parent_run.as_deref().map(RunId::from),
            depth: settings.provider.depth,
            settings: serde_json::to_value(settings.remembered.to_store()).unwrap_or_default(),
            started: None,
        };
        let registered = if new {
            store.create_run(&new_run).map(drop)
        } else {
            match store.claim_run(&link.run, false, crate::store::Limits::default(), false) {
                Ok(_) => Ok(()),
                Err(e @ StoreError::RunInUse { .. }) => return Err(InUse::Claimed(e).into()),
                // Not recorded when it started (the store was unavailable then): record it now.
                Err(StoreError::UnknownRun(_)) => store.create_run(&new_run).map(drop),
                Err(e) => Err(e),
            }
        };
        if let Err(e) = registered {
            printer.warn(&format!("the task store did not record this job ({e})"));
            return Ok(link);
        }
        link.states = store
            .unit_states(&link.run)
            .map(|v| v.into_iter().collect())
            .unwrap_or_default();
        link.store = Some(store);
        Ok(link)
    }

    /// Adds the batches not yet known; `done` ones are added completed.
    pub fn add(&mut self, units: &[(String, bool)], kind: UnitKind) {
        let new: Vec<(NewUnit, bool)> = units
            .iter()
            .filter(|(id, _)| !self.states.contains_key(id))
            .map(|(id, done)| {
                (
                    NewUnit {
                        id: id.clone(),
                        label: id.clone(),
                        kind,
                        priority: 0,
                        cache_key: None,
                    },
                    *done,
                )
            })
            .collect();
        if new.is_empty() {
            return;
        }
        let served: Vec<usize> = new
            .iter()
            .enumerate()
            .filter(|(_, (_, d))| *d)
            .map(|(i, _)| i)
            .collect();
        let units: Vec<NewUnit> = new.iter().map(|(u, _)| u.clone()).collect();
        let run = self.run.clone();
        if self.write(|s| s.add_units_served(&run, &units, &served)) {
            for (u, done) in new {
                let state = if done { UnitState::Completed } else { UnitState::Queued };
                self.states.insert(u.id, state);
            }
        }
    }

    /// A batch's call started.
    pub fn started(&mut self, unit: &str) {
        self.move_to(unit, UnitState::Running, &Detail::default());
        self.heartbeat();
    }

    /// A batch ended: completed, failed, or cancelled (it runs again on resume).
    pub fn finished(&mut self, unit: &str, to: UnitState, detail: Detail) {
        if self.states.get(unit) == Some(&UnitState::Queued) && to != UnitState::Cancelled {
            self.move_to(unit, UnitState::Running, &Detail::default());
        }
        self.move_to(unit, to, &detail);
        self.heartbeat();
    }

    /// Says the owner is alive, at most every few seconds.
    pub fn heartbeat(&mut self) {
        if self.last_heartbeat.elapsed() < HEARTBEAT_EVERY {
            return;
        }
        self.last_heartbeat = Instant::now();
        let run = self.run.clone();
        self.write(|s| s.heartbeat(&run));
    }

    /// Records how this invocation ended.
    pub fn end(&mut self, status: JobStatus) {
        let status = match status {
            JobStatus::Success => RunStatus::Success,
            JobStatus::Partial => RunStatus::Partial,
            JobStatus::Failed => RunStatus::Failed,
            JobStatus::BudgetExceeded => RunStatus::BudgetExceeded,
            JobStatus::DeadlineExceeded => RunStatus::DeadlineExceeded,
            JobStatus::Paused => RunStatus::Paused,
            JobStatus::Interrupted | JobStatus::Running => RunStatus::Interrupted,
        };
        let run = self.run.clone();
        self.write(|s| s.record_run_end(&run, status));
    }

    fn move_to(&mut self, unit: &str, to: UnitState, detail: &Detail) {
        let Some(from) = self.states.get(unit).copied() else {
            return;
        };
        if !from.can_move_to(to) {
            return;
        }
        let run = self.run.clone();
        if self.write(|s| s.transition(&run, unit, to, detail)) {
            self.states.insert(unit.to_string(), to);
        }
    }

    /// One write; on failure a warning, once, and the store is given up.
    fn write(&mut self, f: impl FnOnce(&mut TaskStore) -> Result<(), StoreError>) -> bool {
        let Some(store) = self.store.as_mut() else {
            return false;
        };
        match f(store) {
            Ok(()) => true,
            Err(e) => {
                self.printer.warn(&format!(
                    "the task store stopped recording this job ({e}); its files are unaffected"
                ));
                self.store = None;
                false
            }
        }
    }
}

/// An argument with any URL's credentials hidden (the command line is stored and shown).
fn without_credentials(arg: &str) -> String {
    match arg.find("http://").or_else(|| arg.find("https://")) {
        Some(at) => format!("{}{}", &arg[..at], crate::secret::redact_url(&arg[at..])),
        None => arg.to_string(),
    }
}
