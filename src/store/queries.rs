//! The read side of `TaskStore`: what `rlm status`, `rlm list`, `--tree` and `resume` ask.

use std::collections::HashSet;
use std::path::Path;

use rusqlite::{params, OptionalExtension};

use super::error::StoreError;
use super::lifecycle::{RunStatus, UnitKind, UnitState};
use super::records::RunId;
use super::run_rows::RUN_COLUMNS;
use super::summary::{Failure, RunSummary, RunTree, TransitionRecord, UnitRecord};
use super::task_store::TaskStore;
use super::timestamp::Timestamp;

/// A tree deeper than this is cut (recursion is capped at a few levels; a cycle of parent
/// ids, possible only in a hand-edited store, must not loop forever).
const MAX_TREE_DEPTH: usize = 32;

impl TaskStore {
    /// The summary of one run.
    pub fn run(&self, run: &RunId) -> Result<RunSummary, StoreError> {
        let rows = self.run_rows(
            &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
            params![run.as_str()],
        )?;
        rows.into_iter()
            .next()
            .ok_or_else(|| StoreError::UnknownRun(run.to_string()))
    }

    /// The run whose id is `query`, or the one run whose id starts with it.
    pub fn find_run(&self, query: &str) -> Result<RunId, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM runs WHERE id = ?1 OR substr(id, 1, length(?1)) = ?1 ORDER BY id LIMIT 6")
            .map_err(|e| self.sqlite_error(e))?;
        let ids: Vec<String> = stmt
            .query_map([query], |row| row.get(0))
            .and_then(Iterator::collect)
            .map_err(|e| self.sqlite_error(e))?;
        if query.trim().is_empty() {
            // Every id starts with nothing: an empty id names no run.
            return Err(StoreError::UnknownRun(query.to_string()));
        }
        if ids.iter().any(|id| id == query) {
            return Ok(RunId(query.to_string()));
        }
        match ids.as_slice() {
            [] => Err(StoreError::UnknownRun(query.to_string())),
            [one] => Ok(RunId(one.clone())),
            many => Err(StoreError::AmbiguousRun {
                query: query.to_string(),
                candidates: many.join(", "),
            }),
        }
    }

    /// The newest run started in `cwd` at recursion `depth` that `rlm resume` can go on
    /// with (see [`TaskStore::unfinished_runs`]), whose owner is not alive.
    pub fn latest_unfinished_run(&self, cwd: &Path, depth: u32) -> Result<Option<RunSummary>, StoreError> {
        Ok(self
            .unfinished_runs(cwd, depth)?
            .into_iter()
            .find(|run| !run.is_owned()))
    }

    /// The runs started in `cwd` at recursion `depth` that are not finished, newest first
    /// (at most 20): stopped early (interrupted, over budget or deadline, crashed) or with
    /// units queued, running or cancelled — those still going on included (their owner is
    /// alive), those another run took the directory of ([`RunStatus::Superseded`]) not.
    pub fn unfinished_runs(&self, cwd: &Path, depth: u32) -> Result<Vec<RunSummary>, StoreError> {
        self.resumable_runs(cwd, depth, false)
    }

    /// [`TaskStore::unfinished_runs`]; with `failed`, the runs with units failed or timed
    /// out too (a PARTIAL run among them): what `rlm resume --failed` takes up.
    pub fn resumable_runs(&self, cwd: &Path, depth: u32, failed: bool) -> Result<Vec<RunSummary>, StoreError> {
        let left = if failed {
            "'queued', 'running', 'cancelled', 'failed', 'timed_out'"
        } else {
            "'queued', 'running', 'cancelled'"
        };
        let stopped: Vec<String> = RunStatus::ALL
            .into_iter()
            .filter(|s| s.is_stopped_early())
            .map(|s| format!("'{}'", s.name()))
            .collect();
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE cwd = ?1 AND depth = ?2 AND status != '{}'
               AND (status IN ({}) OR EXISTS (SELECT 1 FROM units
                    WHERE units.run_id = runs.id AND units.state IN ({left})))
             ORDER BY created_at DESC, rowid DESC LIMIT 20",
            RunStatus::Superseded.name(),
            stopped.join(", ")
        );
        self.run_rows(&sql, params![cwd.to_string_lossy(), depth])
    }

    /// The newest `limit` runs, newest first.
    pub fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?1");
        self.run_rows(&sql, params![i64::try_from(limit).unwrap_or(i64::MAX)])
    }

    /// The runs `run` started (through `RLM_PARENT_RUN`), oldest first.
    pub fn children(&self, run: &RunId) -> Result<Vec<RunSummary>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE parent_run_id = ?1 ORDER BY created_at, rowid");
        self.run_rows(&sql, params![run.as_str()])
    }

    /// `root` and its descendants, for `rlm status --tree`.
    pub fn tree(&self, root: &RunId) -> Result<RunTree, StoreError> {
        let mut seen = HashSet::new();
        self.subtree(self.run(root)?, &mut seen, 0)
    }

    fn subtree(&self, run: RunSummary, seen: &mut HashSet<RunId>, depth: usize) -> Result<RunTree, StoreError> {
        seen.insert(run.id.clone());
        let mut children = Vec::new();
        if depth < MAX_TREE_DEPTH {
            for child in self.children(&run.id)? {
                if !seen.contains(&child.id) {
                    children.push(self.subtree(child, seen, depth + 1)?);
                }
            }
        }
        Ok(RunTree { run, children })
    }

    /// The units of `run` that ended without a result, in the order they were added.
    pub fn failures(&self, run: &RunId) -> Result<Vec<Failure>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT unit_id, label, state, attempts, reason FROM units
                 WHERE run_id = ?1 AND state IN ('failed', 'timed_out', 'cancelled') ORDER BY seq",
            )
            .map_err(|e| self.sqlite_error(e))?;
        let rows = stmt
            .query_map([run.as_str()], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, u32>(3)?,
                    row.get::<_, Option<String>>(4)?,
                ))
            })
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.sqlite_error(e))?;
        rows.into_iter()
            .map(|(unit, label, state, attempts, reason)| {
                Ok(Failure {
                    state: self.unit_state(state)?,
                    unit,
                    label,
                    attempts,
                    reason,
                })
            })
            .collect()
    }

    /// Every unit of `run` with its state, in the order they were added.
    pub fn unit_states(&self, run: &RunId) -> Result<Vec<(String, UnitState)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT unit_id, state FROM units WHERE run_id = ?1 ORDER BY seq")
            .map_err(|e| self.sqlite_error(e))?;
        let rows = stmt
            .query_map([run.as_str()], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.sqlite_error(e))?;
        rows.into_iter()
            .map(|(id, state)| Ok((id, self.unit_state(state)?)))
            .collect()
    }

    /// The ids of `run`'s units in any of `states`, in the order they were added (resume
    /// asks for `completed` to skip, or `queued` to dispatch).
    pub fn units_in_state(&self, run: &RunId, states: &[UnitState]) -> Result<Vec<String>, StoreError> {
        Ok(self
            .unit_states(run)?
            .into_iter()
            .filter(|(_, state)| states.contains(state))
            .map(|(id, _)| id)
            .collect())
    }

    /// Everything recorded about one unit.
    pub fn unit(&self, run: &RunId, unit: &str) -> Result<UnitRecord, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT label, kind, priority, state, attempts, tokens_in, tokens_out, cost_usd, duration_ms,
                        reason, result_file, cache_key, queued_at, started_at, finished_at
                 FROM units WHERE run_id = ?1 AND unit_id = ?2",
            )
            .map_err(|e| self.sqlite_error(e))?;
        type Raw = (String, String, i64, String, u32, u64, u64, f64, u64);
        type Rest = (
            Option<String>,
            Option<String>,
            Option<String>,
            String,
            Option<String>,
            Option<String>,
        );
        let row: Option<(Raw, Rest)> = stmt
            .query_row(params![run.as_str(), unit], |r| {
                Ok((
                    (
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                    ),
                    (r.get(9)?, r.get(10)?, r.get(11)?, r.get(12)?, r.get(13)?, r.get(14)?),
                ))
            })
            .optional()
            .map_err(|e| self.sqlite_error(e))?;
        let Some((raw, rest)) = row else {
            return Err(StoreError::UnknownUnit {
                run: run.to_string(),
                unit: unit.to_string(),
            });
        };
        let (label, kind, priority, state, attempts, tokens_in, tokens_out, cost_usd, duration_ms) = raw;
        let (reason, result_file, cache_key, queued_at, started_at, finished_at) = rest;
        Ok(UnitRecord {
            run: run.clone(),
            id: unit.to_string(),
            label,
            kind: UnitKind::from_name(&kind).ok_or_else(|| self.corrupt("units.kind", kind))?,
            priority,
            state: self.unit_state(state)?,
            attempts,
            tokens_in,
            tokens_out,
            cost_usd,
            duration_ms,
            reason,
            result_file,
            cache_key,
            queued_at: self.timestamp("units.queued_at", queued_at)?,
            started_at: self.optional_timestamp("units.started_at", started_at)?,
            finished_at: self.optional_timestamp("units.finished_at", finished_at)?,
        })
    }

    /// A unit's history, oldest first. Its first entry, the unit added in its first state,
    /// is not a row of its own (a run of 100,000 units wrote 100,000 of them): it is read
    /// from the unit — added at `queued_at`, in the state its first move left, or in the
    /// state it is still in. Stores written before keep such a row, and it is read as is.
    pub fn history(&self, run: &RunId, unit: &str) -> Result<Vec<TransitionRecord>, StoreError> {
        let mut history = self.recorded_moves(run, unit)?;
        if history.first().is_some_and(|t| t.from.is_none()) {
            return Ok(history);
        }
        let added = self
            .conn
            .prepare_cached("SELECT state, queued_at FROM units WHERE run_id = ?1 AND unit_id = ?2")
            .map_err(|e| self.sqlite_error(e))?
            .query_row(params![run.as_str(), unit], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .optional()
            .map_err(|e| self.sqlite_error(e))?;
        if let Some((state, queued_at)) = added {
            let first = match history.first().and_then(|t| t.from) {
                Some(state) => state,
                None => self.unit_state(state)?,
            };
            history.insert(
                0,
                TransitionRecord {
                    from: None,
                    to: first,
                    at: self.timestamp("units.queued_at", queued_at)?,
                    attempt: 0,
                    detail: None,
                },
            );
        }
        Ok(history)
    }

    /// The moves recorded for a unit, oldest first.
    fn recorded_moves(&self, run: &RunId, unit: &str) -> Result<Vec<TransitionRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT from_state, to_state, at, attempt, detail FROM transitions
                 WHERE run_id = ?1 AND unit_id = ?2 ORDER BY id",
            )
            .map_err(|e| self.sqlite_error(e))?;
        let rows = stmt
            .query_map(params![run.as_str(), unit], |row| {
                Ok((
                    row.get::<_, Option<String>>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, u32>(3)?,
                    row.get::<_, Option<String>>(4)?,
                ))
            })
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.sqlite_error(e))?;
        rows.into_iter()
            .map(|(from, to, at, attempt, detail)| {
                Ok(TransitionRecord {
                    from: from.map(|f| self.unit_state(f)).transpose()?,
                    to: self.unit_state(to)?,
                    at: self.timestamp("transitions.at", at)?,
                    attempt,
                    detail,
                })
            })
            .collect()
    }

    pub(super) fn unit_state(&self, name: String) -> Result<UnitState, StoreError> {
        UnitState::from_name(&name).ok_or_else(|| self.corrupt("units.state", name))
    }

    pub(super) fn timestamp(&self, column: &'static str, text: String) -> Result<Timestamp, StoreError> {
        Timestamp::parse(&text).ok_or_else(|| self.corrupt(column, text))
    }

    pub(super) fn optional_timestamp(
        &self,
        column: &'static str,
        text: Option<String>,
    ) -> Result<Option<Timestamp>, StoreError> {
        text.map(|t| self.timestamp(column, t)).transpose()
    }

    pub(super) fn corrupt(&self, column: &'static str, value: String) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            column,
            value,
        }
    }
}
