//! The read side of `TaskStore`: what `rlm status`, `rlm list`, `--tree` and `resume` ask.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rusqlite::{params, OptionalExtension, Row};

use super::error::StoreError;
use super::lifecycle::{RunStatus, UnitKind, UnitState};
use super::liveness::{self, Liveness};
use super::records::RunId;
use super::summary::{Failure, Owner, RunSummary, RunTree, TransitionRecord, UnitCounts, UnitRecord};
use super::task_store::TaskStore;
use super::timestamp::Timestamp;

/// A tree deeper than this is cut (recursion is capped at a few levels; a cycle of parent
/// ids, possible only in a hand-edited store, must not loop forever).
const MAX_TREE_DEPTH: usize = 32;

const RUN_COLUMNS: &str = "id, command_json, cwd, output_dir, created_at, started_at, finished_at, status,
     parent_run_id, depth, settings_json, tokens_in, tokens_out, cost_usd, owner_pid, owner_identity, heartbeat_at";

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
    /// with: it stopped early (interrupted, over budget or deadline, or crashed), or it
    /// still has units queued or running. A run whose owner is alive is not offered.
    pub fn latest_unfinished_run(&self, cwd: &Path, depth: u32) -> Result<Option<RunSummary>, StoreError> {
        let stopped: Vec<String> = RunStatus::ALL
            .into_iter()
            .filter(|s| s.is_stopped_early())
            .map(|s| format!("'{}'", s.name()))
            .collect();
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE cwd = ?1 AND depth = ?2
               AND (status IN ({}) OR EXISTS (SELECT 1 FROM units
                    WHERE units.run_id = runs.id AND units.state IN ('queued', 'running')))
             ORDER BY created_at DESC, id DESC LIMIT 20",
            stopped.join(", ")
        );
        let runs = self.run_rows(&sql, params![cwd.to_string_lossy(), depth])?;
        Ok(runs.into_iter().find(|run| {
            !matches!(
                run.owner.as_ref().map(|o| o.liveness),
                Some(Liveness::Alive | Liveness::Stalled)
            )
        }))
    }

    /// The newest `limit` runs, newest first.
    pub fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY created_at DESC, id DESC LIMIT ?1");
        self.run_rows(&sql, params![i64::try_from(limit).unwrap_or(i64::MAX)])
    }

    /// The runs `run` started (through `RLM_PARENT_RUN`), oldest first.
    pub fn children(&self, run: &RunId) -> Result<Vec<RunSummary>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE parent_run_id = ?1 ORDER BY created_at, id");
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

    /// The ids of `run`'s units in any of `states`, in the order they were added (resume
    /// asks for `completed` to skip, or `queued` to dispatch).
    pub fn units_in_state(&self, run: &RunId, states: &[UnitState]) -> Result<Vec<String>, StoreError> {
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
        let wanted: Vec<&str> = states.iter().map(|s| s.name()).collect();
        Ok(rows
            .into_iter()
            .filter(|(_, state)| wanted.contains(&state.as_str()))
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

    /// A unit's history, oldest first.
    pub fn history(&self, run: &RunId, unit: &str) -> Result<Vec<TransitionRecord>, StoreError> {
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

    /// Runs `sql` (selecting [`RUN_COLUMNS`]) and completes each row into a summary.
    fn run_rows(&self, sql: &str, params: impl rusqlite::Params) -> Result<Vec<RunSummary>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.sqlite_error(e))?;
        let raw = stmt
            .query_map(params, read_run_columns)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.sqlite_error(e))?;
        raw.into_iter()
            .map(|columns| {
                let summary = self.run_row(columns)?;
                self.complete(summary)
            })
            .collect()
    }

    fn run_row(&self, c: RunColumns) -> Result<RunSummary, StoreError> {
        let status = RunStatus::from_name(&c.status).ok_or_else(|| self.corrupt("runs.status", c.status.clone()))?;
        let heartbeat_at = self.optional_timestamp("runs.heartbeat_at", c.heartbeat_at)?;
        let owner = match (status, c.owner_pid) {
            (RunStatus::Running, Some(pid)) => {
                let exists = liveness::owner_exists(pid, c.owner_identity.as_deref());
                let age = heartbeat_at.map_or(std::time::Duration::MAX, |at| Timestamp::now().since(at));
                Some(Owner {
                    pid,
                    heartbeat_at,
                    liveness: Liveness::judge(exists, age),
                })
            }
            // A run marked running with no owner recorded cannot be going on.
            (RunStatus::Running, None) => Some(Owner {
                pid: 0,
                heartbeat_at,
                liveness: Liveness::Gone,
            }),
            _ => None,
        };
        Ok(RunSummary {
            id: RunId(c.id),
            command: serde_json::from_str(&c.command_json)
                .map_err(|_| self.corrupt("runs.command_json", c.command_json))?,
            cwd: PathBuf::from(c.cwd),
            output_dir: PathBuf::from(c.output_dir),
            created_at: self.timestamp("runs.created_at", c.created_at)?,
            started_at: self.optional_timestamp("runs.started_at", c.started_at)?,
            finished_at: self.optional_timestamp("runs.finished_at", c.finished_at)?,
            status,
            parent: c.parent_run_id.map(RunId),
            depth: c.depth,
            settings: serde_json::from_str(&c.settings_json).unwrap_or(serde_json::Value::Null),
            tokens_in: c.tokens_in,
            tokens_out: c.tokens_out,
            cost_usd: c.cost_usd,
            units: UnitCounts::default(),
            owner,
            mean_completed_ms: None,
            completed_since_start: 0,
        })
    }

    /// Adds the unit counts and the ETA inputs to a run's row.
    fn complete(&self, mut summary: RunSummary) -> Result<RunSummary, StoreError> {
        let id = summary.id.as_str();
        let mut stmt = self
            .conn
            .prepare_cached("SELECT state, COUNT(*) FROM units WHERE run_id = ?1 GROUP BY state")
            .map_err(|e| self.sqlite_error(e))?;
        let counts = stmt
            .query_map([id], |row| Ok((row.get::<_, String>(0)?, row.get::<_, u64>(1)?)))
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.sqlite_error(e))?;
        for (state, n) in counts {
            summary.units.add(self.unit_state(state)?, n);
        }
        let (mean, since_start): (Option<f64>, u64) = self
            .conn
            .prepare_cached(
                "SELECT AVG(duration_ms), COUNT(CASE WHEN finished_at >= ?2 THEN 1 END)
                 FROM units WHERE run_id = ?1 AND state = 'completed'",
            )
            .and_then(|mut stmt| {
                let started = summary.started_at.map(Timestamp::to_rfc3339);
                stmt.query_row(params![id, started], |row| Ok((row.get(0)?, row.get(1)?)))
            })
            .map_err(|e| self.sqlite_error(e))?;
        summary.mean_completed_ms = mean.map(|m| m.round() as u64);
        summary.completed_since_start = since_start;
        Ok(summary)
    }

    fn unit_state(&self, name: String) -> Result<UnitState, StoreError> {
        UnitState::from_name(&name).ok_or_else(|| self.corrupt("units.state", name))
    }

    fn timestamp(&self, column: &'static str, text: String) -> Result<Timestamp, StoreError> {
        Timestamp::parse(&text).ok_or_else(|| self.corrupt(column, text))
    }

    fn optional_timestamp(&self, column: &'static str, text: Option<String>) -> Result<Option<Timestamp>, StoreError> {
        text.map(|t| self.timestamp(column, t)).transpose()
    }

    fn corrupt(&self, column: &'static str, value: String) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            column,
            value,
        }
    }
}

/// The columns of [`RUN_COLUMNS`], as read.
struct RunColumns {
    id: String,
    command_json: String,
    cwd: String,
    output_dir: String,
    created_at: String,
    started_at: Option<String>,
    finished_at: Option<String>,
    status: String,
    parent_run_id: Option<String>,
    depth: u32,
    settings_json: String,
    tokens_in: u64,
    tokens_out: u64,
    cost_usd: f64,
    owner_pid: Option<u32>,
    owner_identity: Option<String>,
    heartbeat_at: Option<String>,
}

fn read_run_columns(row: &Row<'_>) -> rusqlite::Result<RunColumns> {
    Ok(RunColumns {
        id: row.get(0)?,
        command_json: row.get(1)?,
        cwd: row.get(2)?,
        output_dir: row.get(3)?,
        created_at: row.get(4)?,
        started_at: row.get(5)?,
        finished_at: row.get(6)?,
        status: row.get(7)?,
        parent_run_id: row.get(8)?,
        depth: row.get(9)?,
        settings_json: row.get(10)?,
        tokens_in: row.get(11)?,
        tokens_out: row.get(12)?,
        cost_usd: row.get(13)?,
        owner_pid: row.get(14)?,
        owner_identity: row.get(15)?,
        heartbeat_at: row.get(16)?,
    })
}
