//! Batches submitted to a provider's batch API, and their requests (issue 18).
//!
//! A batch is paid for and runs at the provider whatever happens to rlm, so its id and the
//! custom ids of its requests are written here *before* rlm starts waiting: after a
//! `kill -9`, a closed laptop or the end of a CI job, `rlm resume` finds the batch and
//! collects it instead of submitting again. Each poll records the batch's status and
//! counts (`rlm status` reads them without a network call); each result read records its
//! request's outcome, so a resume reads only what it lacks.
//!
//! Before a batch's create request is sent, the intent to submit it is written too
//! ([`NewBatchIntent`]: a token of rlm's own and the requests), and settled when the batch
//! is recorded: a `kill -9` between the request and its reply, or a reply that never came,
//! leaves the intent, and the next attempt looks for the batch at the provider before it
//! sends anything again (`provider::batch_api::reconcile`).
//!
//! The tables come with schema version 3 ([`MIGRATION`]); the intents with version 5
//! ([`INTENTS_MIGRATION`]).

use std::collections::HashSet;

use rusqlite::{params, OptionalExtension};

use super::error::StoreError;
use super::records::RunId;
use super::task_store::TaskStore;
use super::timestamp::Timestamp;
use super::write_batch::WriteBatch;
use crate::batch_state::{BatchCounts, BatchState, BatchStatus};

/// Schema version 3: the batch tables.
pub(super) const MIGRATION: &str = "
    CREATE TABLE batch_submissions (
        run_id          TEXT NOT NULL REFERENCES runs (id),
        batch_id        TEXT NOT NULL,          -- the provider's id
        provider        TEXT NOT NULL,          -- ProviderKind::name
        server          TEXT NOT NULL,          -- the base URL as shown (never credentials)
        phase           TEXT NOT NULL,          -- what its requests are: `map`, `summarize`…
        request_count   INTEGER NOT NULL,
        submitted_at    TEXT NOT NULL,
        status          TEXT NOT NULL,          -- BatchStatus::name at the last poll
        polled_at       TEXT,
        polls           INTEGER NOT NULL DEFAULT 0,
        processing      INTEGER NOT NULL DEFAULT 0,
        succeeded       INTEGER NOT NULL DEFAULT 0,
        errored         INTEGER NOT NULL DEFAULT 0,
        canceled        INTEGER NOT NULL DEFAULT 0,
        expired         INTEGER NOT NULL DEFAULT 0,
        cancel_requested_at TEXT,
        collected_at    TEXT,                   -- every result read and recorded
        PRIMARY KEY (run_id, batch_id)
    );

    CREATE TABLE batch_requests (
        run_id          TEXT NOT NULL,
        batch_id        TEXT NOT NULL,
        custom_id       TEXT NOT NULL,
        unit_id         TEXT NOT NULL,
        outcome         TEXT,                   -- ItemOutcome::name; NULL until its result is read
        reason          TEXT,                   -- why it errored
        PRIMARY KEY (run_id, batch_id, custom_id)
    );
    CREATE INDEX batch_requests_by_unit ON batch_requests (run_id, unit_id);
";

/// Schema version 5: the intents to submit a batch, written before its create request is
/// sent and deleted once the batch is recorded (or known not to exist).
pub(super) const INTENTS_MIGRATION: &str = "
    CREATE TABLE IF NOT EXISTS batch_intents (
        run_id          TEXT NOT NULL,
        token           TEXT NOT NULL,          -- rlm's own id of the submission (OpenAI metadata)
        provider        TEXT NOT NULL,
        server          TEXT NOT NULL,
        phase           TEXT NOT NULL,
        request_count   INTEGER NOT NULL,
        requests_json   TEXT NOT NULL,          -- [[custom_id, unit_id], …]
        recorded_at     TEXT NOT NULL,          -- before the create request was sent
        PRIMARY KEY (run_id, token)
    );
";

/// A submission about to be sent.
#[derive(Debug, Clone)]
pub struct NewBatchIntent<'a> {
    pub token: &'a str,
    pub provider: &'a str,
    pub server: &'a str,
    pub phase: &'a str,
    /// `(custom_id, unit_id)` of every request.
    pub requests: &'a [(String, String)],
    /// `(custom_id, cache_key)` of the requests whose keys this run claimed
    /// ([`super::KeyClaim`]): they get the submission's token.
    pub keys: &'a [(String, String)],
}

/// A submission whose batch was never recorded: its create request was sent (or about to
/// be) and no reply recorded.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BatchIntent {
    pub token: String,
    pub provider: String,
    pub server: String,
    pub phase: String,
    pub request_count: u64,
    pub recorded_at: Timestamp,
}

/// A batch just created at the provider.
#[derive(Debug, Clone)]
pub struct NewBatchSubmission<'a> {
    /// The state the creation call returned (its id, status and counts).
    pub state: &'a BatchState,
    /// `anthropic` or `openai`.
    pub provider: &'a str,
    /// The server, as it may be shown.
    pub server: &'a str,
    /// What the requests are: `map` for units, `summarize`… for aggregation phases.
    pub phase: &'a str,
    /// `(custom_id, unit_id)` of every request.
    pub requests: &'a [(String, String)],
    /// The token of the intent it settles, if one was recorded.
    pub token: Option<&'a str>,
}

/// A batch as the store knows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BatchSubmission {
    pub batch_id: String,
    pub provider: String,
    pub server: String,
    pub phase: String,
    pub request_count: u64,
    pub submitted_at: Timestamp,
    /// At the last poll (or at submission, before any).
    pub status: BatchStatus,
    pub polled_at: Option<Timestamp>,
    pub polls: u64,
    pub counts: BatchCounts,
    pub cancel_requested_at: Option<Timestamp>,
    /// Set once every result was read and recorded: nothing left to fetch.
    pub collected_at: Option<Timestamp>,
}

/// One request of a batch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BatchRequestRecord {
    pub custom_id: String,
    pub unit_id: String,
    /// `succeeded`, `errored`, `canceled`, `expired`; `None` until its result is read.
    pub outcome: Option<String>,
    pub reason: Option<String>,
}

/// A result read, to record.
#[derive(Debug, Clone, Copy)]
pub struct RequestOutcome<'a> {
    pub custom_id: &'a str,
    /// `ItemOutcome::name`.
    pub outcome: &'a str,
    pub reason: Option<&'a str>,
}

impl WriteBatch<'_> {
    /// Records a batch and its requests. Call it as soon as the batch exists, before
    /// waiting for it.
    pub fn record_batch_submission(&mut self, run: &RunId, batch: &NewBatchSubmission<'_>) -> Result<(), StoreError> {
        let now = Timestamp::now().to_rfc3339();
        let state = batch.state;
        let c = state.counts;
        self.tx
            .execute(
                "INSERT INTO batch_submissions (run_id, batch_id, provider, server, phase, request_count,
                     submitted_at, status, processing, succeeded, errored, canceled, expired)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    run.as_str(),
                    state.batch_id,
                    batch.provider,
                    batch.server,
                    batch.phase,
                    batch.requests.len() as i64,
                    now,
                    state.status.name(),
                    c.processing as i64,
                    c.succeeded as i64,
                    c.errored as i64,
                    c.canceled as i64,
                    c.expired as i64,
                ],
            )
            .map_err(|e| self.sqlite(e))?;
        let mut insert = self
            .tx
            .prepare_cached("INSERT INTO batch_requests (run_id, batch_id, custom_id, unit_id) VALUES (?1, ?2, ?3, ?4)")
            .map_err(|e| self.sqlite(e))?;
        for (custom_id, unit_id) in batch.requests {
            insert
                .execute(params![run.as_str(), state.batch_id, custom_id, unit_id])
                .map_err(|e| self.sqlite(e))?;
        }
        drop(insert);
        if let Some(token) = batch.token {
            self.claims_submitted(run, token, &state.batch_id)?;
            self.drop_batch_intent(run, token)?;
        }
        Ok(())
    }

    /// Records the intent to submit a batch, before its create request is sent.
    pub fn record_batch_intent(&mut self, run: &RunId, intent: &NewBatchIntent<'_>) -> Result<(), StoreError> {
        // Pairs of strings always serialize.
        let requests = serde_json::to_string(intent.requests).unwrap_or_else(|_| "[]".to_string());
        self.tx
            .execute(
                "INSERT INTO batch_intents (run_id, token, provider, server, phase, request_count, requests_json,
                     recorded_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    run.as_str(),
                    intent.token,
                    intent.provider,
                    intent.server,
                    intent.phase,
                    intent.requests.len() as i64,
                    requests,
                    Timestamp::now().to_rfc3339(),
                ],
            )
            .map_err(|e| self.sqlite(e))?;
        self.claims_intended(run, intent.token, intent.keys)
    }

    /// Settles an intent: its batch was recorded, its create request refused, or the provider
    /// shows that it created nothing.
    pub fn drop_batch_intent(&mut self, run: &RunId, token: &str) -> Result<(), StoreError> {
        self.tx
            .execute(
                "DELETE FROM batch_intents WHERE run_id = ?1 AND token = ?2",
                params![run.as_str(), token],
            )
            .map_err(|e| self.sqlite(e))?;
        self.claims_voided(run, token)
    }

    /// Records what a poll saw.
    pub fn record_batch_poll(&mut self, run: &RunId, state: &BatchState) -> Result<(), StoreError> {
        let c = state.counts;
        let changed = self
            .tx
            .execute(
                "UPDATE batch_submissions SET status = ?3, polled_at = ?4, polls = polls + 1,
                     processing = ?5, succeeded = ?6, errored = ?7, canceled = ?8, expired = ?9
                 WHERE run_id = ?1 AND batch_id = ?2",
                params![
                    run.as_str(),
                    state.batch_id,
                    state.status.name(),
                    Timestamp::now().to_rfc3339(),
                    c.processing as i64,
                    c.succeeded as i64,
                    c.errored as i64,
                    c.canceled as i64,
                    c.expired as i64,
                ],
            )
            .map_err(|e| self.sqlite(e))?;
        expect_batch(run, &state.batch_id, changed)
    }

    /// Records the outcomes of results read (a request read twice keeps its last outcome).
    pub fn record_batch_outcomes(
        &mut self,
        run: &RunId,
        batch_id: &str,
        outcomes: &[RequestOutcome<'_>],
    ) -> Result<(), StoreError> {
        let mut update = self
            .tx
            .prepare_cached(
                "UPDATE batch_requests SET outcome = ?4, reason = ?5
                 WHERE run_id = ?1 AND batch_id = ?2 AND custom_id = ?3",
            )
            .map_err(|e| self.sqlite(e))?;
        for o in outcomes {
            // A custom id the batch never had (a provider's mistake) changes nothing.
            update
                .execute(params![run.as_str(), batch_id, o.custom_id, o.outcome, o.reason])
                .map_err(|e| self.sqlite(e))?;
        }
        // (The keys' claims are let go with the batch, in `record_batch_collected`: until
        // then, whoever needs an answer kept already reads it from the cache first.)
        Ok(())
    }

    /// Records that a cancel was asked of the provider.
    pub fn record_batch_cancel_requested(&mut self, run: &RunId, batch_id: &str) -> Result<(), StoreError> {
        let changed = self
            .tx
            .execute(
                "UPDATE batch_submissions SET cancel_requested_at = COALESCE(cancel_requested_at, ?3)
                 WHERE run_id = ?1 AND batch_id = ?2",
                params![run.as_str(), batch_id, Timestamp::now().to_rfc3339()],
            )
            .map_err(|e| self.sqlite(e))?;
        expect_batch(run, batch_id, changed)
    }

    /// Records that every result of the batch was read and recorded.
    pub fn record_batch_collected(&mut self, run: &RunId, batch_id: &str) -> Result<(), StoreError> {
        let changed = self
            .tx
            .execute(
                "UPDATE batch_submissions SET collected_at = COALESCE(collected_at, ?3)
                 WHERE run_id = ?1 AND batch_id = ?2",
                params![run.as_str(), batch_id, Timestamp::now().to_rfc3339()],
            )
            .map_err(|e| self.sqlite(e))?;
        self.claims_collected(batch_id)?;
        expect_batch(run, batch_id, changed)
    }
}

/// An update that changed no row named a batch the store does not have.
fn expect_batch(run: &RunId, batch_id: &str, changed: usize) -> Result<(), StoreError> {
    if changed == 0 {
        return Err(StoreError::UnknownBatch {
            run: run.to_string(),
            batch: batch_id.to_string(),
        });
    }
    Ok(())
}

impl TaskStore {
    /// Records a batch and its requests in one transaction (see
    /// [`WriteBatch::record_batch_submission`]).
    pub fn record_batch_submission(&mut self, run: &RunId, batch: &NewBatchSubmission<'_>) -> Result<(), StoreError> {
        let mut tx = self.begin()?;
        tx.record_batch_submission(run, batch)?;
        tx.commit()
    }

    /// Records the intent to submit a batch (see [`WriteBatch::record_batch_intent`]).
    pub fn record_batch_intent(&mut self, run: &RunId, intent: &NewBatchIntent<'_>) -> Result<(), StoreError> {
        let mut tx = self.begin()?;
        tx.record_batch_intent(run, intent)?;
        tx.commit()
    }

    /// Settles an intent (see [`WriteBatch::drop_batch_intent`]).
    pub fn drop_batch_intent(&mut self, run: &RunId, token: &str) -> Result<(), StoreError> {
        let mut tx = self.begin()?;
        tx.drop_batch_intent(run, token)?;
        tx.commit()
    }

    /// The run's intents not settled: submissions whose batch, if any, is not recorded.
    pub fn batch_intents(&self, run: &RunId) -> Result<Vec<BatchIntent>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT token, provider, server, phase, request_count, recorded_at FROM batch_intents
                 WHERE run_id = ?1 ORDER BY recorded_at, rowid",
            )
            .map_err(|e| self.sqlite_error(e))?;
        let rows = stmt
            .query_map([run.as_str()], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, i64>(4)?,
                    row.get::<_, String>(5)?,
                ))
            })
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.sqlite_error(e))?;
        rows.into_iter()
            .map(|(token, provider, server, phase, count, at)| {
                Ok(BatchIntent {
                    token,
                    provider,
                    server,
                    phase,
                    request_count: u64::try_from(count).unwrap_or(0),
                    recorded_at: self.timestamp("batch_intents.recorded_at", at)?,
                })
            })
            .collect()
    }

    /// The `(custom_id, unit_id)` requests of an intent.
    pub fn batch_intent_requests(&self, run: &RunId, token: &str) -> Result<Vec<(String, String)>, StoreError> {
        let json: Option<String> = self
            .conn
            .prepare_cached("SELECT requests_json FROM batch_intents WHERE run_id = ?1 AND token = ?2")
            .and_then(|mut stmt| {
                stmt.query_row(params![run.as_str(), token], |row| row.get(0))
                    .optional()
            })
            .map_err(|e| self.sqlite_error(e))?;
        match json {
            None => Ok(Vec::new()),
            Some(json) => serde_json::from_str(&json).map_err(|_| self.corrupt("batch_intents.requests_json", json)),
        }
    }

    /// Every batch id the store has recorded, for any run: a batch found in a provider's
    /// listing that one of them knows is never taken for a lost submission.
    pub fn known_batch_ids(&self) -> Result<HashSet<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT batch_id FROM batch_submissions")
            .map_err(|e| self.sqlite_error(e))?;
        stmt.query_map([], |row| row.get::<_, String>(0))
            .and_then(Iterator::collect::<Result<HashSet<_>, _>>)
            .map_err(|e| self.sqlite_error(e))
    }

    /// Records what a poll saw.
    pub fn record_batch_poll(&mut self, run: &RunId, state: &BatchState) -> Result<(), StoreError> {
        let mut tx = self.begin()?;
        tx.record_batch_poll(run, state)?;
        tx.commit()
    }

    /// Records the outcomes of results read, in one transaction.
    pub fn record_batch_outcomes(
        &mut self,
        run: &RunId,
        batch_id: &str,
        outcomes: &[RequestOutcome<'_>],
    ) -> Result<(), StoreError> {
        let mut tx = self.begin()?;
        tx.record_batch_outcomes(run, batch_id, outcomes)?;
        tx.commit()
    }

    /// Records that a cancel was asked of the provider.
    pub fn record_batch_cancel_requested(&mut self, run: &RunId, batch_id: &str) -> Result<(), StoreError> {
        let mut tx = self.begin()?;
        tx.record_batch_cancel_requested(run, batch_id)?;
        tx.commit()
    }

    /// Records that every result of the batch was read and recorded.
    pub fn record_batch_collected(&mut self, run: &RunId, batch_id: &str) -> Result<(), StoreError> {
        let mut tx = self.begin()?;
        tx.record_batch_collected(run, batch_id)?;
        tx.commit()
    }

    /// The run's batches, in the order they were submitted.
    pub fn batch_submissions(&self, run: &RunId) -> Result<Vec<BatchSubmission>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT batch_id, provider, server, phase, request_count, submitted_at, status, polled_at, polls,
                     processing, succeeded, errored, canceled, expired, cancel_requested_at, collected_at
                 FROM batch_submissions WHERE run_id = ?1 ORDER BY submitted_at, rowid",
            )
            .map_err(|e| self.sqlite_error(e))?;
        let rows = stmt
            .query_map([run.as_str()], |row| {
                Ok(RawSubmission {
                    batch_id: row.get(0)?,
                    provider: row.get(1)?,
                    server: row.get(2)?,
                    phase: row.get(3)?,
                    request_count: row.get(4)?,
                    submitted_at: row.get(5)?,
                    status: row.get(6)?,
                    polled_at: row.get(7)?,
                    polls: row.get(8)?,
                    counts: [row.get(9)?, row.get(10)?, row.get(11)?, row.get(12)?, row.get(13)?],
                    cancel_requested_at: row.get(14)?,
                    collected_at: row.get(15)?,
                })
            })
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.sqlite_error(e))?;
        rows.into_iter().map(|raw| self.submission(raw)).collect()
    }

    /// The requests of a batch, in submission order.
    pub fn batch_requests(&self, run: &RunId, batch_id: &str) -> Result<Vec<BatchRequestRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT custom_id, unit_id, outcome, reason FROM batch_requests
                 WHERE run_id = ?1 AND batch_id = ?2 ORDER BY rowid",
            )
            .map_err(|e| self.sqlite_error(e))?;
        stmt.query_map(params![run.as_str(), batch_id], |row| {
            Ok(BatchRequestRecord {
                custom_id: row.get(0)?,
                unit_id: row.get(1)?,
                outcome: row.get(2)?,
                reason: row.get(3)?,
            })
        })
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| self.sqlite_error(e))
    }

    /// The batch a unit was last submitted in, if any (a resume asks before submitting
    /// the unit again).
    pub fn batch_of_unit(&self, run: &RunId, unit_id: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT batch_id FROM batch_requests WHERE run_id = ?1 AND unit_id = ?2
                 ORDER BY rowid DESC LIMIT 1",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![run.as_str(), unit_id], |row| row.get(0))
                    .optional()
            })
            .map_err(|e| self.sqlite_error(e))
    }

    fn submission(&self, raw: RawSubmission) -> Result<BatchSubmission, StoreError> {
        let status = BatchStatus::from_name(&raw.status)
            .ok_or_else(|| self.corrupt("batch_submissions.status", raw.status.clone()))?;
        let count = |i: usize| u64::try_from(raw.counts[i]).unwrap_or(0);
        Ok(BatchSubmission {
            batch_id: raw.batch_id,
            provider: raw.provider,
            server: raw.server,
            phase: raw.phase,
            request_count: u64::try_from(raw.request_count).unwrap_or(0),
            submitted_at: self.timestamp("batch_submissions.submitted_at", raw.submitted_at)?,
            status,
            polled_at: self.optional_timestamp("batch_submissions.polled_at", raw.polled_at)?,
            polls: u64::try_from(raw.polls).unwrap_or(0),
            counts: BatchCounts {
                processing: count(0),
                succeeded: count(1),
                errored: count(2),
                canceled: count(3),
                expired: count(4),
            },
            cancel_requested_at: self
                .optional_timestamp("batch_submissions.cancel_requested_at", raw.cancel_requested_at)?,
            collected_at: self.optional_timestamp("batch_submissions.collected_at", raw.collected_at)?,
        })
    }
}

/// A `batch_submissions` row as read.
struct RawSubmission {
    batch_id: String,
    provider: String,
    server: String,
    phase: String,
    request_count: i64,
    submitted_at: String,
    status: String,
    polled_at: Option<String>,
    polls: i64,
    counts: [i64; 5],
    cancel_requested_at: Option<String>,
    collected_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::super::tests::new_run;
    use super::*;

    fn state(batch_id: &str, status: BatchStatus, counts: BatchCounts) -> BatchState {
        BatchState {
            batch_id: batch_id.into(),
            status,
            provider_status: status.name().into(),
            counts,
            result_files: Vec::new(),
            errors: Vec::new(),
            over_token_limit: false,
        }
    }

    #[test]
    fn a_batch_is_recorded_polled_and_collected() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = TaskStore::open(dir.path()).unwrap();
        let run = store.create_run(&new_run(dir.path())).unwrap();
        let requests: Vec<(String, String)> = (0..3).map(|i| (format!("c{i}"), format!("src/{i}.ts"))).collect();
        let created = state(
            "msgbatch_1",
            BatchStatus::InProgress,
            BatchCounts {
                processing: 3,
                ..BatchCounts::default()
            },
        );
        store
            .record_batch_submission(
                &run,
                &NewBatchSubmission {
                    state: &created,
                    provider: "anthropic",
                    server: "https://api.anthropic.com",
                    phase: "map",
                    requests: &requests,
                    token: None,
                },
            )
            .unwrap();
        let [b] = store.batch_submissions(&run).unwrap().try_into().unwrap();
        assert_eq!(
            (b.status, b.request_count, b.polls, b.counts.processing),
            (BatchStatus::InProgress, 3, 0, 3)
        );
        assert!(b.polled_at.is_none() && b.collected_at.is_none());
        assert_eq!(
            store.batch_of_unit(&run, "src/1.ts").unwrap().as_deref(),
            Some("msgbatch_1")
        );
        assert_eq!(store.batch_of_unit(&run, "src/9.ts").unwrap(), None);

        let ended = state(
            "msgbatch_1",
            BatchStatus::Ended,
            BatchCounts {
                succeeded: 2,
                expired: 1,
                ..BatchCounts::default()
            },
        );
        store.record_batch_poll(&run, &ended).unwrap();
        store
            .record_batch_outcomes(
                &run,
                "msgbatch_1",
                &[
                    RequestOutcome {
                        custom_id: "c2",
                        outcome: "expired",
                        reason: None,
                    },
                    RequestOutcome {
                        custom_id: "c0",
                        outcome: "succeeded",
                        reason: None,
                    },
                ],
            )
            .unwrap();
        let requests = store.batch_requests(&run, "msgbatch_1").unwrap();
        let outcomes: Vec<Option<&str>> = requests.iter().map(|r| r.outcome.as_deref()).collect();
        assert_eq!(
            outcomes,
            [Some("succeeded"), None, Some("expired")],
            "in submission order"
        );
        store.record_batch_collected(&run, "msgbatch_1").unwrap();
        let [b] = store.batch_submissions(&run).unwrap().try_into().unwrap();
        assert_eq!((b.status, b.polls, b.counts.expired), (BatchStatus::Ended, 1, 1));
        assert!(b.polled_at.is_some() && b.collected_at.is_some());

        // Another process reads the same (rlm status makes no network call).
        let reader = TaskStore::open(dir.path()).unwrap();
        assert_eq!(reader.batch_submissions(&run).unwrap()[0].status, BatchStatus::Ended);
    }

    #[test]
    fn a_store_of_version_2_gains_the_tables_and_keeps_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let run = {
            let mut store = TaskStore::open(dir.path()).unwrap();
            let run = store.create_run(&new_run(dir.path())).unwrap();
            // Back to what an rlm of schema 2 left.
            store
                .conn
                .execute_batch("DROP TABLE batch_requests; DROP TABLE batch_submissions; PRAGMA user_version = 2;")
                .unwrap();
            run
        };
        let mut store = TaskStore::open(dir.path()).unwrap();
        assert!(store.run(&run).is_ok());
        let s = state("b1", BatchStatus::Validating, BatchCounts::default());
        let batch = NewBatchSubmission {
            state: &s,
            provider: "openai",
            server: "https://api.openai.com",
            phase: "map",
            requests: &[],
            token: None,
        };
        store.record_batch_submission(&run, &batch).unwrap();
        assert_eq!(store.batch_submissions(&run).unwrap().len(), 1);
    }

    #[test]
    fn an_intent_is_kept_until_its_batch_is_recorded_or_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = TaskStore::open(dir.path()).unwrap();
        let run = store.create_run(&new_run(dir.path())).unwrap();
        let requests = vec![
            ("c0".to_string(), "src/a.ts".to_string()),
            ("c1".to_string(), "b\n\"c".to_string()),
        ];
        for token in ["sub-1", "sub-2"] {
            let intent = NewBatchIntent {
                token,
                provider: "anthropic",
                server: "https://api.anthropic.com",
                phase: "map",
                requests: &requests,
                keys: &[],
            };
            store.record_batch_intent(&run, &intent).unwrap();
        }
        let intents = store.batch_intents(&run).unwrap();
        assert_eq!(intents.len(), 2);
        assert_eq!((intents[0].token.as_str(), intents[0].request_count), ("sub-1", 2));
        assert_eq!(store.batch_intent_requests(&run, "sub-2").unwrap(), requests);

        // Recording the batch settles its intent, in the same transaction.
        let s = state("msgbatch_9", BatchStatus::InProgress, BatchCounts::default());
        let batch = NewBatchSubmission {
            state: &s,
            provider: "anthropic",
            server: "https://api.anthropic.com",
            phase: "map",
            requests: &requests,
            token: Some("sub-1"),
        };
        store.record_batch_submission(&run, &batch).unwrap();
        store.drop_batch_intent(&run, "sub-2").unwrap();
        assert!(store.batch_intents(&run).unwrap().is_empty());
        assert!(store.known_batch_ids().unwrap().contains("msgbatch_9"));
    }

    #[test]
    fn an_unknown_batch_is_an_error_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = TaskStore::open(dir.path()).unwrap();
        let run = store.create_run(&new_run(dir.path())).unwrap();
        let s = state("nope", BatchStatus::Ended, BatchCounts::default());
        assert!(matches!(
            store.record_batch_poll(&run, &s),
            Err(StoreError::UnknownBatch { .. })
        ));
        assert!(store.record_batch_cancel_requested(&run, "nope").is_err());
        assert!(store.batch_submissions(&run).unwrap().is_empty());
    }

    #[test]
    fn a_unit_retried_in_a_later_batch_is_found_there() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = TaskStore::open(dir.path()).unwrap();
        let run = store.create_run(&new_run(dir.path())).unwrap();
        let requests = vec![("c0".to_string(), "u0".to_string())];
        for id in ["b1", "b2"] {
            let s = state(id, BatchStatus::InProgress, BatchCounts::default());
            store
                .record_batch_submission(
                    &run,
                    &NewBatchSubmission {
                        state: &s,
                        provider: "openai",
                        server: "https://api.openai.com",
                        phase: "map",
                        requests: &requests,
                        token: None,
                    },
                )
                .unwrap();
        }
        store.record_batch_cancel_requested(&run, "b1").unwrap();
        assert_eq!(store.batch_of_unit(&run, "u0").unwrap().as_deref(), Some("b2"));
        let ids: Vec<String> = store
            .batch_submissions(&run)
            .unwrap()
            .into_iter()
            .map(|b| b.batch_id)
            .collect();
        assert_eq!(ids, ["b1", "b2"]);
        assert!(store.batch_submissions(&run).unwrap()[0].cancel_requested_at.is_some());
    }
}
