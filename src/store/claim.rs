//! Claiming a run for `rlm resume`: the checks that keep two processes from working on one
//! run, and the requeueing of what the previous owner left behind.

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use super::error::StoreError;
use super::lifecycle::{RunStatus, UnitState};
use super::liveness::{self, Liveness};
use super::records::{Detail, RunId};
use super::task_store::TaskStore;
use super::timestamp::Timestamp;
use super::write_batch::WriteBatch;

/// What a claim (the start of a resume) did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Claim {
    /// Units left `running` by the previous owner, or cancelled when it stopped, now
    /// `queued` again.
    pub recovered: u64,
    /// Failed and timed-out units sent back to the queue (`--failed`).
    pub retried: u64,
    /// The number of the attempt this claim starts (2 for the first resume).
    pub attempt: u32,
    /// What the run's earlier attempts spent and how long they ran: a budget and a deadline
    /// count the whole run, so the resumed attempt starts from these.
    pub earlier: Spent,
    /// The latest limits earlier resumes gave (a budget raised once stays raised).
    pub limits: Limits,
}

/// The `--max-cost` and `--deadline` given to `rlm resume`, which replace the command's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Limits {
    pub max_cost_usd: Option<f64>,
    pub deadline_ms: Option<u64>,
}

impl Limits {
    /// These limits, each one given here or else as `earlier`.
    pub fn or(self, earlier: Limits) -> Limits {
        Limits {
            max_cost_usd: self.max_cost_usd.or(earlier.max_cost_usd),
            deadline_ms: self.deadline_ms.or(earlier.deadline_ms),
        }
    }
}

/// What a run's attempts spent and how long they ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spent {
    /// Dollars, over every unit and attempt recorded.
    pub cost_usd: f64,
    /// Running time, summed over the attempts (a crashed one counts to its last heartbeat).
    pub elapsed_ms: u64,
    /// How many attempts there were.
    pub attempts: u32,
}

impl Spent {
    /// The running time as a duration.
    pub fn elapsed(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.elapsed_ms)
    }
}

impl WriteBatch<'_> {
    /// Makes this process the owner of `run` and requeues what a resume should dispatch;
    /// see [`super::TaskStore::claim_run`].
    pub fn claim_run(
        &mut self,
        run: &RunId,
        retry_unsuccessful: bool,
        limits: Limits,
        holding_dir: bool,
    ) -> Result<Claim, StoreError> {
        let owner = self
            .tx
            .query_row(
                "SELECT status, owner_pid, owner_identity, heartbeat_at,
                        (SELECT by_run FROM superseded_runs WHERE superseded_runs.run_id = runs.id), output_dir
                 FROM runs WHERE id = ?1",
                [run.as_str()],
                |row| {
                    Ok((
                        (
                            row.get::<_, String>(0)?,
                            row.get::<_, Option<u32>>(1)?,
                            row.get::<_, Option<String>>(2)?,
                            row.get::<_, Option<String>>(3)?,
                        ),
                        (row.get::<_, Option<String>>(4)?, row.get::<_, String>(5)?),
                    ))
                },
            )
            .optional()
            .map_err(|e| self.sqlite(e))?;
        let Some(((status, pid, identity, heartbeat), (superseded_by, output_dir))) = owner else {
            return Err(StoreError::UnknownRun(run.to_string()));
        };
        if RunStatus::from_name(&status) == Some(RunStatus::Superseded) {
            return Err(StoreError::Superseded {
                run: run.to_string(),
                by: superseded_by.unwrap_or_else(|| "another run".into()),
                dir: output_dir.into(),
            });
        }
        let me = std::process::id();
        if let (Some(RunStatus::Running), Some(pid)) = (RunStatus::from_name(&status), pid) {
            // This process holds the run directory's lock: whoever the store names is gone.
            let exists = !holding_dir
                && pid != me
                && liveness::owner_alive(pid, identity.as_deref(), std::path::Path::new(&output_dir));
            let age = heartbeat
                .as_deref()
                .and_then(Timestamp::parse)
                .map_or(std::time::Duration::MAX, |at| Timestamp::now().since(at));
            match Liveness::judge(exists, age) {
                Liveness::Gone => {}
                Liveness::Alive => {
                    return Err(StoreError::RunInUse {
                        run: run.to_string(),
                        pid,
                        why: "it is running".to_string(),
                    })
                }
                Liveness::Stalled => {
                    return Err(StoreError::RunInUse {
                        run: run.to_string(),
                        pid,
                        why: format!("no heartbeat for {}s: suspended or stuck", age.as_secs()),
                    })
                }
            }
        }
        let earlier = spent(&self.tx, run)
            .map_err(|e| self.sqlite(e))?
            .ok_or_else(|| StoreError::UnknownRun(run.to_string()))?;
        let at = Timestamp::now();
        let now = at.to_rfc3339();
        self.tx
            .execute(
                "UPDATE runs SET status = ?2, started_at = ?3, finished_at = NULL, heartbeat_at = ?3,
                     owner_pid = ?4, owner_identity = ?5 WHERE id = ?1",
                params![
                    run.as_str(),
                    RunStatus::Running.name(),
                    now,
                    me,
                    liveness::current_identity()
                ],
            )
            .map_err(|e| self.sqlite(e))?;
        let earlier_limits = given_limits(&self.tx, run).map_err(|e| self.sqlite(e))?;
        let attempt = earlier.attempts + 1;
        self.start_attempt(run, attempt, at)?;
        self.tx
            .execute(
                "UPDATE attempts SET max_cost_usd = ?3, deadline_ms = ?4 WHERE run_id = ?1 AND attempt = ?2",
                params![run.as_str(), attempt, limits.max_cost_usd, limits.deadline_ms],
            )
            .map_err(|e| self.sqlite(e))?;
        let mut claim = Claim {
            attempt,
            earlier,
            limits: earlier_limits,
            ..Claim::default()
        };
        // What the previous owner was running when it died, and what it cancelled when it
        // stopped (Ctrl-C, a budget, a deadline), is what a resume is for.
        let recovered = Detail::reason("requeued: the run's previous rlm process was gone");
        for unit in self.unit_ids(run, &[UnitState::Running])? {
            self.transition(run, &unit, UnitState::Queued, &recovered)?;
            claim.recovered += 1;
        }
        let resumed = Detail::reason("requeued: rlm resume");
        for unit in self.unit_ids(run, &[UnitState::Cancelled])? {
            self.transition(run, &unit, UnitState::Queued, &resumed)?;
            claim.recovered += 1;
        }
        if retry_unsuccessful {
            for unit in self.unit_ids(run, &[UnitState::Failed, UnitState::TimedOut])? {
                self.transition(run, &unit, UnitState::Queued, &Detail::default())?;
                claim.retried += 1;
            }
        }
        Ok(claim)
    }
}

/// The latest `--max-cost` and `--deadline` resumes of `run` gave, each on its own.
pub(super) fn given_limits(conn: &Connection, run: &RunId) -> rusqlite::Result<Limits> {
    conn.query_row(
        "SELECT (SELECT max_cost_usd FROM attempts WHERE run_id = ?1 AND max_cost_usd IS NOT NULL
                 ORDER BY attempt DESC LIMIT 1),
                (SELECT deadline_ms FROM attempts WHERE run_id = ?1 AND deadline_ms IS NOT NULL
                 ORDER BY attempt DESC LIMIT 1)",
        [run.as_str()],
        |row| {
            Ok(Limits {
                max_cost_usd: row.get(0)?,
                deadline_ms: row.get(1)?,
            })
        },
    )
}

/// What `run`'s attempts so far spent and how long they ran; `None` for an unknown run.
pub(super) fn spent(conn: &Connection, run: &RunId) -> rusqlite::Result<Option<Spent>> {
    conn.query_row(
        "SELECT runs.cost_usd,
                (SELECT COALESCE(SUM(elapsed_ms), 0) FROM attempts WHERE run_id = runs.id),
                (SELECT COUNT(*) FROM attempts WHERE run_id = runs.id)
         FROM runs WHERE id = ?1",
        [run.as_str()],
        |row| {
            Ok(Spent {
                cost_usd: row.get(0)?,
                elapsed_ms: row.get(1)?,
                attempts: row.get(2)?,
            })
        },
    )
    .optional()
}

impl TaskStore {
    /// What `run`'s attempts so far spent and how long they ran (what a resume starts from).
    pub fn spent(&self, run: &RunId) -> Result<Spent, StoreError> {
        spent(&self.conn, run)
            .map_err(|e| self.sqlite_error(e))?
            .ok_or_else(|| StoreError::UnknownRun(run.to_string()))
    }

    /// The latest `--max-cost` and `--deadline` earlier resumes of `run` gave.
    pub fn resume_limits(&self, run: &RunId) -> Result<Limits, StoreError> {
        given_limits(&self.conn, run).map_err(|e| self.sqlite_error(e))
    }
}
