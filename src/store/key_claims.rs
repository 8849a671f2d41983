//! Claims on cache keys that outlive a process (issue 24): a request in a provider batch is
//! paid for once, whoever else needs the same answer meanwhile.
//!
//! A realtime call claims its key with an `flock` ([`crate::cache`]): the kernel lets go
//! when the process ends, which is right for a call that dies with its process. A request
//! in a provider batch does not: the batch runs on at the provider after a Ctrl-C, a
//! `kill -9` or the end of a CI job, and its answer will be paid for. So each request sent
//! in a batch is claimed here, in the shared store, by its cache key, from before its
//! submission is sent until its result is kept (or its batch has ended without one):
//!
//! - claimed (no token yet): the run means to submit it; nothing was sent;
//! - with the submission's token (and custom id): written with the intent, before the
//!   create request goes out;
//! - with the batch id: the batch exists;
//! - deleted: its batch was collected (each answer is in the cache first, and whoever needs
//!   one reads the cache before the claims), or its submission was voided.
//!
//! Another rlm that needs a claimed key (any run, any output directory, realtime or batch,
//! `rlm batch` or `rlm job`) asks [`TaskStore::key_holder`] after its own cache miss: while
//! the holder's rlm lives it waits for the answer in the cache; when it is gone, a batch
//! run collects the holder's batch itself (the store knows its id and custom ids), and a
//! realtime one says which run to resume, never paying again.

use rusqlite::{params, OptionalExtension};

use super::error::StoreError;
use super::lifecycle::RunStatus;
use super::liveness;
use super::records::RunId;
use super::task_store::TaskStore;
use super::timestamp::Timestamp;
use super::write_batch::WriteBatch;

/// Schema version 6: the keys claimed by requests in provider batches.
pub(super) const MIGRATION: &str = "
    CREATE TABLE IF NOT EXISTS key_claims (
        cache_key       TEXT PRIMARY KEY,
        run_id          TEXT NOT NULL,          -- the run whose batch pays for it
        server          TEXT NOT NULL,          -- where the batch is (as shown, no credentials)
        token           TEXT,                   -- its submission's token, once the intent is written
        custom_id       TEXT,                   -- its custom id in that submission
        batch_id        TEXT,                   -- once the batch is recorded
        claimed_at      TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS key_claims_by_batch ON key_claims (batch_id, custom_id);
";

/// Who holds a claim on a key, and what became of its rlm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyHolder {
    pub run: RunId,
    pub server: String,
    /// The request's custom id in its submission (once its intent was written).
    pub custom_id: Option<String>,
    /// The batch that will answer it (once recorded).
    pub batch_id: Option<String>,
    /// The holder's rlm still works on its run (its directory's lock is held).
    pub alive: bool,
}

impl KeyHolder {
    /// What a run that needs this key and cannot collect the holder's batch itself is told.
    pub fn describe(&self) -> String {
        match (&self.batch_id, self.alive) {
            (Some(batch), true) => format!("in batch {batch} of run {}, still collecting it", self.run),
            (Some(batch), false) => format!(
                "in batch {batch} of run {} at {} (its rlm is gone): `rlm resume {}` collects it",
                self.run, self.server, self.run
            ),
            (None, true) => format!("being submitted by run {}", self.run),
            (None, false) => format!(
                "in a submission of run {} whose reply was never recorded: `rlm resume {}` looks for its batch",
                self.run, self.run
            ),
        }
    }
}

/// What claiming one key for a batch came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyClaim {
    /// This run's to submit (claimed now, or already its own).
    Mine,
    /// Another run's batch holds it.
    Held(KeyHolder),
}

/// The claim on `key` as the store has it, with its run's owner.
type ClaimRow = (
    (String, String, Option<String>, Option<String>, Option<String>),
    (Option<String>, Option<u32>, Option<String>, Option<String>),
);

fn claim_row(conn: &rusqlite::Connection, key: &str) -> rusqlite::Result<Option<ClaimRow>> {
    // Prepared once per connection: a realtime run asks it for every key it pays for.
    conn.prepare_cached(
        "SELECT c.run_id, c.server, c.custom_id, c.batch_id, c.token,
                        r.status, r.owner_pid, r.owner_identity, r.output_dir
                 FROM key_claims c LEFT JOIN runs r ON r.id = c.run_id WHERE c.cache_key = ?1",
    )?
    .query_row([key], |row| {
        Ok((
            (
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, Option<String>>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, Option<String>>(4)?,
            ),
            (
                row.get::<_, Option<String>>(5)?,
                row.get::<_, Option<u32>>(6)?,
                row.get::<_, Option<String>>(7)?,
                row.get::<_, Option<String>>(8)?,
            ),
        ))
    })
    .optional()
}

/// Who holds a claim, from its row: `None` when nobody does, or its run died before
/// writing its intent (then nothing was sent: `Err(())`, to be deleted by a writer).
fn holder_of(row: Option<ClaimRow>) -> Result<Option<KeyHolder>, ()> {
    let Some(((run, server, custom_id, batch_id, token), (status, pid, identity, output_dir))) = row else {
        return Ok(None);
    };
    let alive = status.as_deref().and_then(RunStatus::from_name) == Some(RunStatus::Running)
        && pid.is_some_and(|pid| {
            let dir = output_dir.unwrap_or_default();
            pid == std::process::id() || liveness::owner_alive(pid, identity.as_deref(), std::path::Path::new(&dir))
        });
    if !alive && token.is_none() {
        return Err(());
    }
    Ok(Some(KeyHolder {
        run: RunId::from(run.as_str()),
        server,
        custom_id,
        batch_id,
        alive,
    }))
}

impl WriteBatch<'_> {
    /// The holder of `key`, if a batch request claims it. A claim of a run that died before
    /// writing its intent (nothing was sent) is let go.
    pub fn key_holder(&self, key: &str) -> Result<Option<KeyHolder>, StoreError> {
        let row = claim_row(&self.tx, key).map_err(|e| self.sqlite(e))?;
        match holder_of(row) {
            Ok(holder) => Ok(holder),
            Err(()) => {
                self.tx
                    .execute("DELETE FROM key_claims WHERE cache_key = ?1", [key])
                    .map_err(|e| self.sqlite(e))?;
                Ok(None)
            }
        }
    }

    /// Claims `keys` for run `run`'s next submission at `server`: each is this run's
    /// (claimed now, or already its own) or held by another run's batch.
    pub fn claim_keys(&mut self, run: &RunId, server: &str, keys: &[&str]) -> Result<Vec<KeyClaim>, StoreError> {
        let now = Timestamp::now().to_rfc3339();
        let mut claimed = Vec::with_capacity(keys.len());
        let insert = |tx: &rusqlite::Transaction<'_>, key: &str| {
            tx.prepare_cached(
                "INSERT INTO key_claims (cache_key, run_id, server, claimed_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (cache_key) DO NOTHING",
            )
            .and_then(|mut s| s.execute(params![key, run.as_str(), server, now]))
        };
        for key in keys {
            // Most keys are nobody's: one insert claims them; only a key already claimed
            // is asked who holds it (a dead run's claim never sent is let go there).
            if insert(&self.tx, key).map_err(|e| self.sqlite(e))? == 1 {
                claimed.push(KeyClaim::Mine);
                continue;
            }
            let claim = match self.key_holder(key)? {
                Some(holder) if holder.run != *run => KeyClaim::Held(holder),
                Some(_) => KeyClaim::Mine,
                None => {
                    insert(&self.tx, key).map_err(|e| self.sqlite(e))?;
                    KeyClaim::Mine
                }
            };
            claimed.push(claim);
        }
        Ok(claimed)
    }

    /// The keys of a submission about to be sent get its token and their custom ids.
    pub(super) fn claims_intended(
        &mut self,
        run: &RunId,
        token: &str,
        keys: &[(String, String)],
    ) -> Result<(), StoreError> {
        let mut update = self
            .tx
            .prepare_cached("UPDATE key_claims SET token = ?3, custom_id = ?4 WHERE cache_key = ?1 AND run_id = ?2")
            .map_err(|e| self.sqlite(e))?;
        for (custom_id, key) in keys {
            update
                .execute(params![key, run.as_str(), token, custom_id])
                .map_err(|e| self.sqlite(e))?;
        }
        Ok(())
    }

    /// The keys of submission `token` are in batch `batch_id`.
    pub(super) fn claims_submitted(&mut self, run: &RunId, token: &str, batch_id: &str) -> Result<(), StoreError> {
        self.tx
            .execute(
                "UPDATE key_claims SET batch_id = ?3 WHERE run_id = ?1 AND token = ?2",
                params![run.as_str(), token, batch_id],
            )
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// Submission `token` was never sent or created nothing: its keys are free.
    pub(super) fn claims_voided(&mut self, run: &RunId, token: &str) -> Result<(), StoreError> {
        self.tx
            .execute(
                "DELETE FROM key_claims WHERE run_id = ?1 AND token = ?2 AND batch_id IS NULL",
                params![run.as_str(), token],
            )
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// Batch `batch_id` was collected: whatever it still held is free.
    pub(super) fn claims_collected(&mut self, batch_id: &str) -> Result<(), StoreError> {
        self.tx
            .execute("DELETE FROM key_claims WHERE batch_id = ?1", [batch_id])
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// Run `run`'s claims on `keys`, not submitted yet, are let go.
    pub fn release_claims(&mut self, run: &RunId, keys: &[&str]) -> Result<(), StoreError> {
        let mut delete = self
            .tx
            .prepare_cached("DELETE FROM key_claims WHERE run_id = ?1 AND cache_key = ?2 AND token IS NULL")
            .map_err(|e| self.sqlite(e))?;
        for key in keys {
            delete.execute(params![run.as_str(), key]).map_err(|e| self.sqlite(e))?;
        }
        Ok(())
    }

    /// Run `run`'s claims on keys it never submitted (a budget, a stop, a failure before
    /// the intent) are let go.
    pub fn release_unsent_claims(&mut self, run: &RunId) -> Result<(), StoreError> {
        self.tx
            .execute(
                "DELETE FROM key_claims WHERE run_id = ?1 AND token IS NULL",
                [run.as_str()],
            )
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }
}

impl TaskStore {
    /// The holder of `key`, if a batch request claims it (see [`WriteBatch::key_holder`]):
    /// read without a write lock, so a realtime run asks it for every key it pays for.
    pub fn key_holder(&self, key: &str) -> Result<Option<KeyHolder>, StoreError> {
        let row = claim_row(&self.conn, key).map_err(|e| self.sqlite_error(e))?;
        match holder_of(row) {
            Ok(holder) => Ok(holder),
            Err(()) => Ok(None),
        }
    }

    /// Claims `keys` in one transaction (see [`WriteBatch::claim_keys`]).
    pub fn claim_keys(&mut self, run: &RunId, server: &str, keys: &[&str]) -> Result<Vec<KeyClaim>, StoreError> {
        let mut batch = self.begin()?;
        let claimed = batch.claim_keys(run, server, keys)?;
        batch.commit()?;
        Ok(claimed)
    }

    /// See [`WriteBatch::release_claims`].
    pub fn release_claims(&mut self, run: &RunId, keys: &[&str]) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.release_claims(run, keys)?;
        batch.commit()
    }

    /// See [`WriteBatch::release_unsent_claims`].
    pub fn release_unsent_claims(&mut self, run: &RunId) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.release_unsent_claims(run)?;
        batch.commit()
    }

    /// Every claim of batch `batch_id` with its key, for a run that collects it in its
    /// dead holder's place: `(custom_id, cache_key)`.
    pub fn batch_claims(&self, batch_id: &str) -> Result<Vec<(String, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT custom_id, cache_key FROM key_claims WHERE batch_id = ?1 AND custom_id IS NOT NULL")
            .map_err(|e| self.sqlite_error(e))?;
        let rows = stmt
            .query_map([batch_id], |row| Ok((row.get(0)?, row.get(1)?)))
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.sqlite_error(e))?;
        Ok(rows)
    }
}
