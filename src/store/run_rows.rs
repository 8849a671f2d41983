//! Reading `runs` rows into [`RunSummary`]s: the columns, their parsing, the owner's
//! liveness, and the unit counts and ETA inputs that complete a summary.

use std::path::{Path, PathBuf};

use rusqlite::{params, Row};

use super::error::StoreError;
use super::lifecycle::RunStatus;
use super::liveness::{self, Liveness};
use super::records::RunId;
use super::summary::{Owner, RunSummary, UnitCounts};
use super::task_store::TaskStore;
use super::timestamp::Timestamp;

/// The columns every run query selects, in the order [`read_run_columns`] reads them.
pub(super) const RUN_COLUMNS: &str = "id, command_json, cwd, output_dir, created_at, started_at, finished_at, status,
     parent_run_id, depth, settings_json, tokens_in, tokens_out, cost_usd, owner_pid, owner_identity, heartbeat_at,
     (SELECT by_run FROM superseded_runs WHERE superseded_runs.run_id = runs.id)";

impl TaskStore {
    /// Runs `sql` (selecting [`RUN_COLUMNS`]) and completes each row into a summary.
    pub(super) fn run_rows(&self, sql: &str, params: impl rusqlite::Params) -> Result<Vec<RunSummary>, StoreError> {
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
                let exists = liveness::owner_alive(pid, c.owner_identity.as_deref(), Path::new(&c.output_dir));
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
            attempts: 0,
            elapsed_ms: 0,
            units: UnitCounts::default(),
            owner,
            superseded_by: c.superseded_by.map(RunId),
            not_cached: 0,
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
        summary.not_cached = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM uncached_units WHERE run_id = ?1")
            .and_then(|mut stmt| stmt.query_row([id], |row| row.get(0)))
            .map_err(|e| self.sqlite_error(e))?;
        summary.completed_since_start = since_start;
        (summary.attempts, summary.elapsed_ms) = self
            .conn
            .prepare_cached("SELECT COUNT(*), COALESCE(SUM(elapsed_ms), 0) FROM attempts WHERE run_id = ?1")
            .and_then(|mut stmt| stmt.query_row([id], |row| Ok((row.get(0)?, row.get(1)?))))
            .map_err(|e| self.sqlite_error(e))?;
        Ok(summary)
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
    superseded_by: Option<String>,
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
        superseded_by: row.get(17)?,
    })
}
