//! What a run records so that its settings can be built again without a command line: a
//! versioned [`RunRecord`] (the run's kind and its [`BatchOptions`]), kept under
//! [`RunRecord::KEY`] in the settings a run writes to the task store and `settings.json`.
//! `rlm resume` and `rlm cancel` read it from the store, `rlm merge` from `settings.json`.
//!
//! The record carries a version, so a change of its shape is never read wrongly: a record
//! newer than this rlm is refused, and the runs of rlm versions before the record (which
//! kept the clap arguments themselves under `args`) are read as version 0
//! ([`legacy_args`]), so they still resume and merge.

mod legacy_args;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::BatchOptions;

/// The version of [`RunRecord`] this rlm writes. Version 0 is the `args` of older rlm
/// versions, read only.
pub const RECORD_VERSION: u32 = 1;

/// Which command a run is, as far as its settings tell: the three kinds of batch run.
/// (Jobs record their own settings, in `job.json`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// `rlm batch`: the one kind `rlm resume` takes up.
    Batch,
    /// `rlm query`: every file read in chunks by its type's analyst, the answer on stdout.
    Query,
    /// `rlm merge`: the shards' answers combined, as one run of the whole plan.
    Merge,
}

/// A run's settings as it recorded them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub version: u32,
    pub kind: RunKind,
    pub settings: BatchOptions,
}

/// Why a run's record cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("record version {found}, newer than this rlm's {RECORD_VERSION}")]
    Newer { found: u32 },
    #[error("{0}")]
    Unreadable(#[from] serde_json::Error),
}

impl RunRecord {
    /// Where a run's recorded settings hold the record.
    pub const KEY: &'static str = "record";

    /// A record of this rlm's version.
    pub fn new(kind: RunKind, settings: BatchOptions) -> RunRecord {
        RunRecord {
            version: RECORD_VERSION,
            kind,
            settings,
        }
    }

    /// The record in a run's recorded settings (the task store's, or `settings.json`):
    /// `None` when the run recorded none (an rlm older still kept only its command line).
    /// The `args` of an older rlm are version 0, of kind batch: they tell no kind, and
    /// `rlm resume` checks the run's command before it reads them.
    pub fn read(recorded: &Value) -> Result<Option<RunRecord>, RecordError> {
        if let Some(record) = recorded.get(Self::KEY) {
            let found = record.get("version").and_then(Value::as_u64).unwrap_or(0);
            if found > u64::from(RECORD_VERSION) {
                return Err(RecordError::Newer {
                    found: u32::try_from(found).unwrap_or(u32::MAX),
                });
            }
            return Ok(Some(RunRecord::deserialize(record)?));
        }
        match recorded.get(legacy_args::KEY) {
            Some(args) => Ok(Some(RunRecord {
                version: 0,
                kind: RunKind::Batch,
                settings: legacy_args::read(args)?,
            })),
            None => Ok(None),
        }
    }

    /// The record as a run writes it: a base URL's credentials withheld (keys are never
    /// part of it).
    pub fn to_recorded(&self) -> Value {
        let mut record = self.clone();
        record.settings.base_url = record
            .settings
            .base_url
            .map(|u| crate::secret::redact_url(&u).into_owned());
        serde_json::to_value(&record).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_written_and_a_newer_one_is_refused() {
        let mut options = legacy_args::tests::options();
        options.base_url = Some("http://user:secret@127.0.0.1:9/".into());
        let record = RunRecord::new(RunKind::Query, options);
        let written = serde_json::json!({ "model": "haiku", "record": record.to_recorded() });
        assert!(!written.to_string().contains("secret"));
        let read = RunRecord::read(&written).unwrap().unwrap();
        assert_eq!(read.version, RECORD_VERSION);
        assert_eq!(read.kind, RunKind::Query);
        assert_eq!(read.settings.base_url.as_deref(), Some("http://***@127.0.0.1:9/"));
        let mut expected = record.settings.clone();
        expected.base_url = read.settings.base_url.clone();
        assert_eq!(read.settings, expected);

        let mut newer = written.clone();
        newer["record"]["version"] = serde_json::json!(RECORD_VERSION + 1);
        let err = RunRecord::read(&newer).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "record version {}, newer than this rlm's {RECORD_VERSION}",
                RECORD_VERSION + 1
            )
        );
        assert!(RunRecord::read(&serde_json::json!({"model": "haiku"}))
            .unwrap()
            .is_none());
        assert!(RunRecord::read(&serde_json::json!({ "record": "garbled" })).is_err());
    }
}
