//! One run directory as `rlm merge` reads it: the options it was built from (its
//! [`RunRecord`]) and the identity of its plan (`settings.json`), and what
//! became of each of its units (`report.json`). Nothing is taken from the task store: the
//! runs of a CI matrix were made on other machines, and only their directories travel.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::RlmError;
use crate::provider::catalog::PriceTier;
use crate::report::UnitRecord;
use crate::settings::RunRecord;
use crate::shard::Shard;

/// A finished run to merge.
#[derive(Debug, Clone)]
pub struct FinishedRun {
    pub dir: PathBuf,
    /// As shown in messages.
    pub shown: String,
    pub run_id: String,
    pub plan_id: String,
    pub shard: Option<Shard>,
    /// The options its settings were built from, as it recorded them (a run whose record
    /// this rlm cannot read is refused as one that recorded none).
    pub record: RunRecord,
    /// The prompt it sent (as resolved: read from `--prompt-file` when it was given).
    pub sub_prompt: String,
    /// `anthropic`, `openai` or `command`, and the model it called.
    pub provider: String,
    pub model: String,
    pub estimated_cost_usd: f64,
    /// The tier its units were billed at (`batch` under `--batch-api`).
    pub price_tier: PriceTier,
    /// The provider batches it submitted (`--batch-api`).
    pub batches: Vec<String>,
    pub units: Vec<UnitRecord>,
}

impl FinishedRun {
    /// Reads the run in `dir`; a directory that is not a finished run of this rlm is a usage
    /// error that says what is missing.
    pub fn read(dir: &Path) -> Result<FinishedRun, RlmError> {
        let shown = crate::escape::name(&dir.display().to_string()).into_owned();
        let read_json = |name: &str, missing: &str| -> Result<Value, RlmError> {
            let path = dir.join(name);
            let text = match fs_err::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(RlmError::Usage(format!("{shown}: no {name}: {missing}")))
                }
                Err(e) => return Err(RlmError::File(e)),
            };
            serde_json::from_str(&text)
                .map_err(|e| RlmError::Usage(format!("{shown}/{name} is not valid JSON ({e}): is it an rlm run?")))
        };
        if !dir.is_dir() {
            return Err(RlmError::Usage(format!(
                "{shown} is not a directory: name the run directories to merge (each holds a report.json)"
            )));
        }
        let settings = read_json(
            "settings.json",
            "not an rlm run directory (rlm batch writes settings.json when it starts)",
        )?;
        let report = read_json(
            "report.json",
            "the run has not finished (rlm resume finishes it), or this is not an rlm run directory",
        )?;
        let older = || written_by_older_rlm(&shown);
        // A run that recorded no options is refused now; one whose record this rlm cannot
        // read, with the same words, once the rest of it is read.
        let record = RunRecord::read(&settings);
        if matches!(record, Ok(None)) {
            return Err(older());
        }
        let plan_id = text(&report, "plan_id").ok_or_else(older)?;
        let units: Vec<UnitRecord> = report
            .get("units")
            .and_then(|u| serde_json::from_value(u.clone()).ok())
            .ok_or_else(|| RlmError::Usage(format!("{shown}/report.json lists no units it can read")))?;
        let shard = report
            .get("shard")
            .and_then(|s| serde_json::from_value::<crate::report::ShardRecord>(s.clone()).ok())
            .map(|s| s.shard);
        let record = record.ok().flatten().ok_or_else(older)?;
        Ok(FinishedRun {
            dir: dir.to_path_buf(),
            run_id: text(&report, "run_id").unwrap_or_default(),
            plan_id,
            shard,
            record,
            sub_prompt: settings
                .pointer("/task/sub_prompt")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| text(&report, "sub_prompt"))
                .unwrap_or_default(),
            provider: text(&report, "provider").unwrap_or_default(),
            model: text(&report, "model").unwrap_or_default(),
            estimated_cost_usd: report
                .get("estimated_cost_usd")
                .and_then(Value::as_f64)
                .unwrap_or_default(),
            price_tier: report
                .get("price_tier")
                .and_then(|t| serde_json::from_value(t.clone()).ok())
                .unwrap_or_default(),
            batches: report
                .get("batches")
                .and_then(|b| serde_json::from_value(b.clone()).ok())
                .unwrap_or_default(),
            units,
            shown,
        })
    }

    /// `runs/a (shard 1/2)`.
    pub fn describe(&self) -> String {
        match self.shard {
            Some(shard) => format!("{} (shard {shard})", self.shown),
            None => self.shown.clone(),
        }
    }
}

fn written_by_older_rlm(shown: &str) -> RlmError {
    RlmError::Usage(format!(
        "{shown} was written by an older rlm that did not record {}: run it again with this rlm to merge it",
        "its arguments and plan"
    ))
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}
