//! The database schema and its forward migrations, versioned by `PRAGMA user_version`.
//!
//! `MIGRATIONS[i]` takes a database from version `i` to `i + 1`; a new schema is a new
//! entry at the end, never an edit of an old one. Migrations run in one immediate
//! transaction, so two rlm processes opening a fresh store at once cannot both apply them,
//! and a crash mid-migration leaves the old version intact. A database whose version is
//! newer than [`SCHEMA_VERSION`] is refused before anything is written to it.

use rusqlite::{Connection, TransactionBehavior};

/// The schema version this rlm writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Each entry migrates from its index to the next version.
const MIGRATIONS: [&str; 6] = [
    // Version 1: runs, their units, and the append-only history of unit transitions.
    "
    CREATE TABLE runs (
        id              TEXT PRIMARY KEY,
        command_json    TEXT NOT NULL,          -- argv as a JSON array of strings
        cwd             TEXT NOT NULL,
        output_dir      TEXT NOT NULL,
        created_at      TEXT NOT NULL,          -- RFC 3339 UTC, like every *_at column
        started_at      TEXT,                   -- the latest start (a resume restarts it)
        finished_at     TEXT,
        status          TEXT NOT NULL,          -- RunStatus::name
        parent_run_id   TEXT,                   -- no foreign key: a parent may live in another store
        depth           INTEGER NOT NULL,
        settings_json   TEXT NOT NULL,          -- never secrets (the caller's promise)
        tokens_in       INTEGER NOT NULL DEFAULT 0,
        tokens_out      INTEGER NOT NULL DEFAULT 0,
        cost_usd        REAL NOT NULL DEFAULT 0,
        owner_pid       INTEGER,                -- the rlm process working on the run
        owner_identity  TEXT,                   -- tells a reused pid from the owner (Linux)
        heartbeat_at    TEXT
    );
    CREATE INDEX runs_by_cwd ON runs (cwd, created_at);
    CREATE INDEX runs_by_parent ON runs (parent_run_id);
    CREATE INDEX runs_by_created ON runs (created_at);

    CREATE TABLE units (
        run_id          TEXT NOT NULL REFERENCES runs (id),
        unit_id         TEXT NOT NULL,          -- stable, chosen by the caller
        seq             INTEGER NOT NULL,       -- order of addition, for stable listings
        label           TEXT NOT NULL,
        kind            TEXT NOT NULL,          -- UnitKind::name
        priority        INTEGER NOT NULL,
        state           TEXT NOT NULL,          -- UnitState::name
        attempts        INTEGER NOT NULL DEFAULT 0,
        tokens_in       INTEGER NOT NULL DEFAULT 0,
        tokens_out      INTEGER NOT NULL DEFAULT 0,
        cost_usd        REAL NOT NULL DEFAULT 0,
        duration_ms     INTEGER NOT NULL DEFAULT 0,
        reason          TEXT,
        result_file     TEXT,
        cache_key       TEXT,
        queued_at       TEXT NOT NULL,
        started_at      TEXT,
        finished_at     TEXT,
        PRIMARY KEY (run_id, unit_id)
    );
    CREATE INDEX units_by_state ON units (run_id, state);

    CREATE TABLE transitions (
        id              INTEGER PRIMARY KEY,
        run_id          TEXT NOT NULL,
        unit_id         TEXT NOT NULL,
        from_state      TEXT,                   -- NULL when the unit was added
        to_state        TEXT NOT NULL,
        at              TEXT NOT NULL,
        attempt         INTEGER NOT NULL,
        detail          TEXT
    );
    CREATE INDEX transitions_by_unit ON transitions (run_id, unit_id);
    ",
    // Version 2 (issue 17): each attempt of a run (its start, then every resume) with its
    // spend and running time, so `--max-cost` and `--deadline` count the whole run; and the
    // run ids handed out, so two processes never get one id.
    "
    CREATE TABLE attempts (
        run_id          TEXT NOT NULL,
        attempt         INTEGER NOT NULL,       -- 1 for the start, then one more per resume
        pid             INTEGER,
        started_at      TEXT NOT NULL,
        heartbeat_at    TEXT NOT NULL,
        finished_at     TEXT,                   -- NULL while running, and after a crash
        status          TEXT,                   -- how it ended (RunStatus::name)
        cost_usd        REAL NOT NULL DEFAULT 0,
        elapsed_ms      INTEGER NOT NULL DEFAULT 0, -- to its end, or to its last heartbeat
        max_cost_usd    REAL,                   -- a new --max-cost given to rlm resume
        deadline_ms     INTEGER,                -- a new --deadline given to rlm resume
        PRIMARY KEY (run_id, attempt)
    );
    INSERT INTO attempts (run_id, attempt, pid, started_at, heartbeat_at, finished_at, status, cost_usd, elapsed_ms)
        SELECT id, 1, owner_pid, COALESCE(started_at, created_at), COALESCE(heartbeat_at, started_at, created_at),
               finished_at, CASE WHEN status = 'RUNNING' THEN NULL ELSE status END, cost_usd,
               MAX(0, CAST(ROUND((julianday(COALESCE(finished_at, heartbeat_at, started_at, created_at))
                                 - julianday(COALESCE(started_at, created_at))) * 86400000) AS INTEGER))
        FROM runs;

    CREATE TABLE run_ids (
        id              TEXT PRIMARY KEY,
        reserved_at     TEXT NOT NULL
    );
    INSERT INTO run_ids (id, reserved_at) SELECT id, created_at FROM runs;
    ",
    // Version 3 (issue 18): batches submitted to a provider's batch API, and their requests.
    super::batch_submissions::MIGRATION,
    // Version 4 (issue 17): the runs whose output directory a later run took over (their
    // status is then `SUPERSEDED`), and the completed units whose answer the cache did not
    // take (kept in the run directory's `pending-cache/` until it does). Tables of their
    // own, created only if missing: no existing table is altered.
    "
    CREATE TABLE IF NOT EXISTS superseded_runs (
        run_id          TEXT PRIMARY KEY,       -- the run taken over
        by_run          TEXT NOT NULL,          -- the run that took its output directory
        at              TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS uncached_units (
        run_id          TEXT NOT NULL,
        unit_id         TEXT NOT NULL,
        PRIMARY KEY (run_id, unit_id)
    );
    ",
    // Version 5 (issue 18): the intents to submit a batch, written before the create
    // request is sent, so a reply that never came is looked for at the provider, not sent
    // again blindly.
    super::batch_submissions::INTENTS_MIGRATION,
    // Version 6 (issue 24): the cache keys claimed by requests in provider batches, so no
    // other run pays for them again while their batch runs (a table of its own).
    super::key_claims::MIGRATION,
];

/// What [`check_version`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionCheck {
    /// At [`SCHEMA_VERSION`] or older (then [`migrate`] brings it forward).
    Usable(i64),
    /// Written by a newer rlm: do not touch.
    Newer(i64),
}

/// Reads the version without writing anything.
pub fn check_version(conn: &Connection) -> rusqlite::Result<VersionCheck> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    Ok(if found > SCHEMA_VERSION {
        VersionCheck::Newer(found)
    } else {
        VersionCheck::Usable(found)
    })
}

/// Applies the missing migrations in one immediate transaction. The version is read again
/// inside it, because another process may have migrated since [`check_version`].
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<VersionCheck> {
    // A store already at this version needs no write lock: `rlm status` must not wait for
    // a running rlm's write transaction (recording a batch of 100,000 requests, say).
    if let VersionCheck::Usable(SCHEMA_VERSION) = check_version(conn)? {
        return Ok(VersionCheck::Usable(SCHEMA_VERSION));
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = match check_version(&tx)? {
        VersionCheck::Usable(found) => found,
        newer @ VersionCheck::Newer(_) => return Ok(newer),
    };
    if found == SCHEMA_VERSION {
        return Ok(VersionCheck::Usable(found));
    }
    for (from, sql) in MIGRATIONS.iter().enumerate().skip(usize::try_from(found).unwrap_or(0)) {
        tx.execute_batch(sql)?;
        // `user_version` takes no bound parameter; the value is our own integer.
        tx.execute_batch(&format!("PRAGMA user_version = {}", from + 1))?;
    }
    tx.commit()?;
    Ok(VersionCheck::Usable(SCHEMA_VERSION))
}
