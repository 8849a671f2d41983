//! `WriteBatch`: one immediate transaction holding any number of writes, committed once.
//!
//! Every write of the store lives here — the single-write methods of `TaskStore` are a
//! batch of one — so the lifecycle check in [`WriteBatch::transition`] is the only way a
//! unit's state changes. A write that returns an error has written nothing, and the batch
//! stays usable: the caller decides whether to go on or drop (roll back) the batch.

use std::path::Path;

use rusqlite::{params, ErrorCode, OptionalExtension, Transaction};

use super::error::StoreError;
use super::lifecycle::{RunStatus, UnitState};
use super::liveness;
use super::records::{Detail, NewRun, NewUnit, RunId};
use super::timestamp::Timestamp;

/// Writes in one transaction; see the module doc.
pub struct WriteBatch<'a> {
    pub(super) tx: Transaction<'a>,
    path: &'a Path,
    rlm_dir: &'a Path,
}

impl<'a> WriteBatch<'a> {
    pub(crate) fn new(tx: Transaction<'a>, path: &'a Path, rlm_dir: &'a Path) -> Self {
        WriteBatch { tx, path, rlm_dir }
    }

    /// Makes every write of the batch durable at once.
    pub fn commit(self) -> Result<(), StoreError> {
        self.tx.commit().map_err(|e| StoreError::sqlite(self.path, e))
    }

    pub(super) fn sqlite(&self, e: rusqlite::Error) -> StoreError {
        StoreError::sqlite(self.path, e)
    }

    /// Records a new `RUNNING` run owned by this process; see [`NewRun`] for its id.
    pub fn create_run(&mut self, run: &NewRun) -> Result<RunId, StoreError> {
        let now = Timestamp::now();
        let command = serde_json::to_string(&run.command).unwrap_or_else(|_| "[]".to_string());
        let base = run
            .id
            .clone()
            .unwrap_or_else(|| format!("{}-{}", run.kind, now.to_compact()));
        let mut stmt = self
            .tx
            .prepare_cached(
                "INSERT INTO runs (id, command_json, cwd, output_dir, created_at, started_at, status,
                     parent_run_id, depth, settings_json, owner_pid, owner_identity, heartbeat_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?5)",
            )
            .map_err(|e| StoreError::sqlite(self.path, e))?;
        // Two runs started in the same second get `-2`, `-3`…; the immediate transaction
        // makes the check and the insert one step for concurrent rlm processes. An id given
        // by the caller was reserved by it ([`super::TaskStore::reserve_run_id`]); one the
        // store picks must not be reserved by anybody.
        let mut reserve = self
            .tx
            .prepare_cached("INSERT OR IGNORE INTO run_ids (id, reserved_at) VALUES (?1, ?2)")
            .map_err(|e| StoreError::sqlite(self.path, e))?;
        for n in 1..1000 {
            let id = if n == 1 { base.clone() } else { format!("{base}-{n}") };
            let reserved = reserve
                .execute(params![id, now.to_rfc3339()])
                .map_err(|e| StoreError::sqlite(self.path, e))?;
            if reserved == 0 && run.id.is_none() {
                continue;
            }
            // `out/./x` and `out/x` are one directory: stored as the latter, so a run that
            // takes over another's directory finds it (see `supersede`).
            let output_dir: std::path::PathBuf = run
                .output_dir
                .clone()
                .unwrap_or_else(|| self.rlm_dir.join(&id))
                .components()
                .collect();
            let inserted = stmt.execute(params![
                id,
                command,
                run.cwd.to_string_lossy(),
                output_dir.to_string_lossy(),
                now.to_rfc3339(),
                RunStatus::Running.name(),
                run.parent.as_ref().map(RunId::as_str),
                run.depth,
                run.settings.to_string(),
                std::process::id(),
                liveness::current_identity(),
            ]);
            match inserted {
                Ok(_) => {
                    let id = RunId(id);
                    self.start_attempt(&id, 1, run.started.map_or(now, |at| at.min(now)))?;
                    self.supersede(&id, &output_dir, now)?;
                    return Ok(id);
                }
                Err(e) if is_constraint(&e) && run.id.is_none() => continue,
                Err(e) if is_constraint(&e) => return Err(StoreError::RunExists(id)),
                Err(e) => return Err(StoreError::sqlite(self.path, e)),
            }
        }
        Err(StoreError::RunExists(base))
    }

    /// Marks the unfinished runs whose output directory `run` now works in as
    /// [`RunStatus::Superseded`] by it: their results are being replaced, so `rlm resume`
    /// must not take them up again (it would overwrite `run`'s results and append to its
    /// `events.jsonl`; issue 17). Unfinished is what `rlm resume` would go on with: stopped
    /// early, or with units not completed. The caller holds the directory's lock, so no
    /// live rlm works on any of them.
    fn supersede(&self, run: &RunId, output_dir: &Path, now: Timestamp) -> Result<(), StoreError> {
        let stopped: Vec<String> = RunStatus::ALL
            .into_iter()
            .filter(|s| s.is_stopped_early())
            .map(|s| format!("'{}'", s.name()))
            .collect();
        let sql = format!(
            "INSERT OR REPLACE INTO superseded_runs (run_id, by_run, at)
             SELECT id, ?1, ?4 FROM runs
             WHERE output_dir = ?2 AND id != ?1 AND status != ?3
               AND (status IN ({}) OR EXISTS (SELECT 1 FROM units
                    WHERE units.run_id = runs.id AND units.state IN ('queued', 'running', 'cancelled')))",
            stopped.join(", ")
        );
        let sqlite = |e| StoreError::sqlite(self.path, e);
        let (dir, superseded, at) = (
            output_dir.to_string_lossy(),
            RunStatus::Superseded.name(),
            now.to_rfc3339(),
        );
        self.tx
            .execute(&sql, params![run.as_str(), dir, superseded, at])
            .map_err(sqlite)?;
        self.tx
            .execute(
                "UPDATE runs SET status = ?2, finished_at = COALESCE(finished_at, ?3)
                 WHERE status != ?2 AND id IN (SELECT run_id FROM superseded_runs WHERE by_run = ?1)",
                params![run.as_str(), superseded, at],
            )
            .map_err(sqlite)?;
        Ok(())
    }

    /// Adds `units`, all `queued`, each with its first history entry.
    pub fn add_units(&mut self, run: &RunId, units: &[NewUnit]) -> Result<(), StoreError> {
        self.add_units_served(run, units, &[])
    }

    /// [`WriteBatch::add_units`], where the units whose index is in `served` are added
    /// `completed` at once: their answers came from the cache, so they never run (a fully
    /// cached rerun of thousands of files costs one insert per unit, not three transitions).
    pub fn add_units_served(&mut self, run: &RunId, units: &[NewUnit], served: &[usize]) -> Result<(), StoreError> {
        self.require_run(run)?;
        let served: std::collections::HashSet<usize> = served.iter().copied().collect();
        let now = Timestamp::now().to_rfc3339();
        let next_seq: i64 = self
            .tx
            .query_row(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM units WHERE run_id = ?1",
                [run.as_str()],
                |row| row.get(0),
            )
            .map_err(|e| self.sqlite(e))?;
        let sqlite = |e| StoreError::sqlite(self.path, e);
        let mut insert_unit = self
            .tx
            .prepare_cached(
                "INSERT INTO units (run_id, unit_id, seq, label, kind, priority, state, cache_key, queued_at,
                                    finished_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )
            .map_err(sqlite)?;
        // Inserted in the order of their ids, not the plan's (`seq` keeps that, and every
        // listing orders by it): the index of the key `(run_id, unit_id)` then grows at its
        // end, page after page, where ids in plan order (hashes) land all over it.
        let mut order: Vec<usize> = (0..units.len()).collect();
        order.sort_unstable_by(|&a, &b| units[a].id.cmp(&units[b].id));
        for i in order {
            let unit = &units[i];
            let done = served.contains(&i);
            let queued = if done {
                UnitState::Completed.name()
            } else {
                UnitState::Queued.name()
            };
            let seq = next_seq + i64::try_from(i).unwrap_or(i64::MAX);
            let added = insert_unit.execute(params![
                run.as_str(),
                unit.id,
                seq,
                unit.label,
                unit.kind.name(),
                unit.priority,
                queued,
                unit.cache_key,
                now,
                done.then_some(&now)
            ]);
            match added {
                Ok(_) => {}
                Err(e) if is_constraint(&e) => {
                    return Err(StoreError::DuplicateUnit {
                        run: run.to_string(),
                        unit: unit.id.clone(),
                    })
                }
                Err(e) => return Err(sqlite(e)),
            }
        }
        Ok(())
    }

    /// Adds the detail's tokens and cost to the run and its current attempt: a unit's move
    /// does, and so does a call that is no unit (an aggregation call: a summary, a
    /// synthesis), whose spend is the run's too.
    pub fn add_spend(&mut self, run: &RunId, detail: &Detail) -> Result<(), StoreError> {
        if !detail.spent() {
            return Ok(());
        }
        let sqlite = |e| StoreError::sqlite(self.path, e);
        self.tx
            .prepare_cached(
                "UPDATE runs SET tokens_in = tokens_in + ?2, tokens_out = tokens_out + ?3,
                     cost_usd = cost_usd + ?4 WHERE id = ?1",
            )
            .map_err(sqlite)?
            .execute(params![
                run.as_str(),
                detail.tokens_in,
                detail.tokens_out,
                detail.cost_usd
            ])
            .map_err(sqlite)?;
        self.tx
            .prepare_cached(&format!(
                "UPDATE attempts SET cost_usd = cost_usd + ?2 WHERE {CURRENT_ATTEMPT}"
            ))
            .map_err(sqlite)?
            .execute(params![run.as_str(), detail.cost_usd])
            .map_err(sqlite)?;
        Ok(())
    }

    /// Removes the units of `run` named in `units`, with their history: units a resume's
    /// plan no longer has, whose file was deleted or excluded or is cut otherwise now —
    /// answered or not, the run's counts are its plan's. What they spent stays in the
    /// run's and its attempts' totals.
    pub fn drop_units(&mut self, run: &RunId, units: &[String]) -> Result<(), StoreError> {
        let sqlite = |e| StoreError::sqlite(self.path, e);
        for unit in units {
            let dropped = self
                .tx
                .prepare_cached("DELETE FROM units WHERE run_id = ?1 AND unit_id = ?2")
                .map_err(sqlite)?
                .execute(params![run.as_str(), unit])
                .map_err(sqlite)?;
            if dropped > 0 {
                self.tx
                    .prepare_cached("DELETE FROM transitions WHERE run_id = ?1 AND unit_id = ?2")
                    .map_err(sqlite)?
                    .execute(params![run.as_str(), unit])
                    .map_err(sqlite)?;
            }
        }
        Ok(())
    }

    /// Moves `unit` to `to` if the lifecycle allows it ([`UnitState::can_move_to`]), adds
    /// the detail's spend to the unit and the run, and appends the move to the history.
    pub fn transition(&mut self, run: &RunId, unit: &str, to: UnitState, detail: &Detail) -> Result<(), StoreError> {
        self.move_unit(run, unit, &[(to, detail)])?;
        self.add_spend(run, detail)
    }

    /// [`WriteBatch::transition`] for every move, in order, with one update of the run's
    /// spend for all of them; the moves of one unit are read and written once (a call that
    /// began and ended within one group: running, then how it ended), each still in its
    /// history.
    pub fn transition_all<U: AsRef<str>>(
        &mut self,
        run: &RunId,
        moves: &[(U, UnitState, Detail)],
    ) -> Result<(), StoreError> {
        let mut units: Vec<(&str, Vec<(UnitState, &Detail)>)> = Vec::new();
        let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        let mut spent = Detail::default();
        for (unit, to, detail) in moves {
            let unit = unit.as_ref();
            let i = *at.entry(unit).or_insert_with(|| {
                units.push((unit, Vec::new()));
                units.len() - 1
            });
            units[i].1.push((*to, detail));
            spent.add_spend(detail);
        }
        for (unit, steps) in &units {
            self.move_unit(run, unit, steps)?;
        }
        self.add_spend(run, &spent)
    }

    /// Moves `unit` through `steps` (each allowed from the one before), in one read and one
    /// write of its row, each step appended to its history. The run's spend is the caller's.
    fn move_unit(&mut self, run: &RunId, unit: &str, steps: &[(UnitState, &Detail)]) -> Result<(), StoreError> {
        let sqlite = |e| StoreError::sqlite(self.path, e);
        let current = self
            .tx
            .prepare_cached("SELECT state, attempts, reason FROM units WHERE run_id = ?1 AND unit_id = ?2")
            .map_err(sqlite)?
            .query_row(params![run.as_str(), unit], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, u32>(1)?,
                    row.get::<_, Option<String>>(2)?,
                ))
            })
            .optional()
            .map_err(sqlite)?;
        let Some((from, mut attempts, mut reason)) = current else {
            return Err(StoreError::UnknownUnit {
                run: run.to_string(),
                unit: unit.to_string(),
            });
        };
        let mut from = UnitState::from_name(&from).ok_or_else(|| StoreError::Corrupt {
            path: self.path.to_path_buf(),
            column: "units.state",
            value: from,
        })?;
        let now = Timestamp::now().to_rfc3339();
        let mut sum = Detail::default();
        let (mut duration_ms, mut started) = (0_u64, false);
        for &(to, detail) in steps {
            if !from.can_move_to(to) {
                return Err(StoreError::IllegalTransition {
                    run: run.to_string(),
                    unit: unit.to_string(),
                    from,
                    to,
                });
            }
            attempts += u32::from(to == UnitState::Running) + detail.retries;
            reason = match (&detail.reason, to) {
                (Some(given), _) => Some(given.clone()),
                (None, UnitState::Completed) => None,
                (None, _) => reason,
            };
            started |= to == UnitState::Running;
            duration_ms = duration_ms.saturating_add(
                detail
                    .duration
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            );
            sum.add_spend(detail);
            if detail.result_file.is_some() {
                sum.result_file.clone_from(&detail.result_file);
            }
            if detail.cache_key.is_some() {
                sum.cache_key.clone_from(&detail.cache_key);
            }
            self.tx
                .prepare_cached(
                    "INSERT INTO transitions (run_id, unit_id, from_state, to_state, at, attempt, detail)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(sqlite)?
                .execute(params![
                    run.as_str(),
                    unit,
                    from.name(),
                    to.name(),
                    now,
                    attempts,
                    detail.reason
                ])
                .map_err(sqlite)?;
            from = to;
        }
        self.tx
            .prepare_cached(
                "UPDATE units SET state = ?3, attempts = ?4, reason = ?5,
                     tokens_in = tokens_in + ?6, tokens_out = tokens_out + ?7, cost_usd = cost_usd + ?8,
                     duration_ms = duration_ms + ?9,
                     result_file = COALESCE(?10, result_file), cache_key = COALESCE(?11, cache_key),
                     started_at = CASE WHEN ?12 THEN ?13 ELSE started_at END,
                     finished_at = ?14
                 WHERE run_id = ?1 AND unit_id = ?2",
            )
            .map_err(sqlite)?
            .execute(params![
                run.as_str(),
                unit,
                from.name(),
                attempts,
                reason,
                sum.tokens_in,
                sum.tokens_out,
                sum.cost_usd,
                duration_ms,
                sum.result_file,
                sum.cache_key,
                started,
                now,
                from.is_finished().then_some(&now),
            ])
            .map_err(sqlite)?;
        Ok(())
    }

    /// Records how the run ended (`RUNNING` leaves it unfinished), and how this attempt did.
    pub fn record_run_end(&mut self, run: &RunId, status: RunStatus) -> Result<(), StoreError> {
        let now = Timestamp::now().to_rfc3339();
        let finished = (status != RunStatus::Running).then_some(&now);
        let changed = self
            .tx
            .execute(
                "UPDATE runs SET status = ?2, finished_at = ?3, heartbeat_at = ?4 WHERE id = ?1",
                params![run.as_str(), status.name(), finished, now],
            )
            .map_err(|e| self.sqlite(e))?;
        Self::require_changed(changed, run)?;
        self.tx
            .execute(
                &format!(
                    "UPDATE attempts SET heartbeat_at = ?2, elapsed_ms = {ELAPSED_MS}, finished_at = ?3,
                         status = ?4 WHERE {CURRENT_ATTEMPT}"
                ),
                params![
                    run.as_str(),
                    now,
                    finished,
                    (status != RunStatus::Running).then_some(status.name())
                ],
            )
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// Marks `unit` of `run` as completed with an answer the cache did not take (kept in the
    /// run directory's `pending-cache/`).
    pub fn mark_uncached(&mut self, run: &RunId, unit: &str) -> Result<(), StoreError> {
        self.tx
            .execute(
                "INSERT OR IGNORE INTO uncached_units (run_id, unit_id) VALUES (?1, ?2)",
                params![run.as_str(), unit],
            )
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// The answers kept in `output_dir` are in the cache now: no unit of a run working there
    /// is marked uncached any more.
    pub fn clear_uncached(&mut self, output_dir: &Path) -> Result<(), StoreError> {
        let dir: std::path::PathBuf = output_dir.components().collect();
        self.tx
            .execute(
                "DELETE FROM uncached_units WHERE run_id IN (SELECT id FROM runs WHERE output_dir = ?1)",
                [dir.to_string_lossy()],
            )
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// Refreshes the run's heartbeat, and the running time of this attempt.
    pub fn heartbeat(&mut self, run: &RunId) -> Result<(), StoreError> {
        let now = Timestamp::now().to_rfc3339();
        let changed = self
            .tx
            .execute(
                "UPDATE runs SET heartbeat_at = ?2 WHERE id = ?1",
                params![run.as_str(), now],
            )
            .map_err(|e| self.sqlite(e))?;
        Self::require_changed(changed, run)?;
        self.tx
            .prepare_cached(&format!(
                "UPDATE attempts SET heartbeat_at = ?2, elapsed_ms = {ELAPSED_MS} WHERE {CURRENT_ATTEMPT}"
            ))
            .map_err(|e| self.sqlite(e))?
            .execute(params![run.as_str(), now])
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// Records attempt `attempt` of `run` (1 at its start, then one per resume), begun `at`.
    pub(super) fn start_attempt(&self, run: &RunId, attempt: u32, at: Timestamp) -> Result<(), StoreError> {
        let at = at.to_rfc3339();
        self.tx
            .execute(
                "INSERT INTO attempts (run_id, attempt, pid, started_at, heartbeat_at) VALUES (?1, ?2, ?3, ?4, ?4)",
                params![run.as_str(), attempt, std::process::id(), at],
            )
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    pub(super) fn unit_ids(&self, run: &RunId, states: &[UnitState]) -> Result<Vec<String>, StoreError> {
        let mut ids = Vec::new();
        let mut stmt = self
            .tx
            .prepare_cached("SELECT unit_id FROM units WHERE run_id = ?1 AND state = ?2 ORDER BY seq")
            .map_err(|e| self.sqlite(e))?;
        for state in states {
            let rows = stmt
                .query_map(params![run.as_str(), state.name()], |row| row.get::<_, String>(0))
                .map_err(|e| self.sqlite(e))?;
            for id in rows {
                ids.push(id.map_err(|e| self.sqlite(e))?);
            }
        }
        Ok(ids)
    }

    fn require_run(&self, run: &RunId) -> Result<(), StoreError> {
        let exists = self
            .tx
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [run.as_str()], |_| Ok(()))
            .optional()
            .map_err(|e| self.sqlite(e))?;
        exists.ok_or_else(|| StoreError::UnknownRun(run.to_string()))
    }

    fn require_changed(changed: usize, run: &RunId) -> Result<(), StoreError> {
        if changed == 0 {
            return Err(StoreError::UnknownRun(run.to_string()));
        }
        Ok(())
    }
}

/// The `WHERE` clause of the latest attempt of run `?1`: the one under way.
const CURRENT_ATTEMPT: &str = "run_id = ?1 AND attempt = (SELECT MAX(attempt) FROM attempts WHERE run_id = ?1)";

/// An attempt's running time up to `?2` (an RFC 3339 time), in whole milliseconds.
const ELAPSED_MS: &str = "MAX(0, CAST(ROUND((julianday(?2) - julianday(started_at)) * 86400000) AS INTEGER))";

/// A UNIQUE or PRIMARY KEY violation (a duplicate id).
fn is_constraint(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::ConstraintViolation)
}
