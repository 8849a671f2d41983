//! Claiming a run for `rlm resume`: the checks that keep two processes from working on one
//! run, and the requeueing of what the previous owner left behind.

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::error::StoreError;
use super::lifecycle::{RunStatus, UnitState};
use super::liveness::{self, Liveness};
use super::records::{Detail, RunId};
use super::timestamp::Timestamp;
use super::write_batch::WriteBatch;

/// What a claim (the start of a resume) did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Claim {
    /// Units left `running` by the previous owner, now `queued` again.
    pub recovered: u64,
    /// Failed, timed-out or cancelled units sent back to the queue (`--failed`).
    pub retried: u64,
}

impl WriteBatch<'_> {
    /// Makes this process the owner of `run` and requeues what a resume should dispatch;
    /// see [`super::TaskStore::claim_run`].
    pub fn claim_run(&mut self, run: &RunId, retry_unsuccessful: bool) -> Result<Claim, StoreError> {
        let owner = self
            .tx
            .query_row(
                "SELECT status, owner_pid, owner_identity, heartbeat_at FROM runs WHERE id = ?1",
                [run.as_str()],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, Option<u32>>(1)?,
                        row.get::<_, Option<String>>(2)?,
                        row.get::<_, Option<String>>(3)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.sqlite(e))?;
        let Some((status, pid, identity, heartbeat)) = owner else {
            return Err(StoreError::UnknownRun(run.to_string()));
        };
        let me = std::process::id();
        if let (Some(RunStatus::Running), Some(pid)) = (RunStatus::from_name(&status), pid) {
            let exists = pid != me && liveness::owner_exists(pid, identity.as_deref());
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
        let now = Timestamp::now().to_rfc3339();
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
        let mut claim = Claim::default();
        let recovered = Detail::reason("requeued: the run's previous rlm process was gone");
        for unit in self.unit_ids(run, &[UnitState::Running])? {
            self.transition(run, &unit, UnitState::Queued, &recovered)?;
            claim.recovered += 1;
        }
        if retry_unsuccessful {
            for unit in self.unit_ids(run, &UnitState::UNSUCCESSFUL)? {
                self.transition(run, &unit, UnitState::Queued, &Detail::default())?;
                claim.retried += 1;
            }
        }
        Ok(claim)
    }
}
