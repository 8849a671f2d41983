//! `--batch-api`, `--batch-api-fallback` and the config key `rlm.batch_api`, with the
//! environment knobs of the batch-API stage (`RLM_BATCH_POLL_MS`, `RLM_BATCH_LIMITS`,
//! `RLM_BATCH_WAIT_LINE_MS`, `RLM_BATCH_CANCEL_WAIT_MS`), → one [`BatchApiSettings`]; and the batch mode a run recorded,
//! which its resume keeps.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Environment;
use crate::error::{EnvBlame, EnvFailure, RlmError};
use crate::provider::batch_api::{BatchLimits, PollSchedule};
use crate::provider::ProviderKind;

/// Whether units go through the provider's batch API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchApiMode {
    /// Realtime calls.
    #[default]
    Off,
    /// Units that miss the cache go through the batch API; aggregation calls realtime. A
    /// server without a batch API is an error.
    On,
    /// As `On`, but a server without a batch API gets realtime calls, with a notice.
    Auto,
    /// As `On`, and the aggregation calls too, phase by phase.
    All,
}

impl BatchApiMode {
    pub fn name(self) -> &'static str {
        match self {
            BatchApiMode::Off => "off",
            BatchApiMode::On => "on",
            BatchApiMode::Auto => "auto",
            BatchApiMode::All => "all",
        }
    }

    pub fn from_name(name: &str) -> Option<BatchApiMode> {
        [
            BatchApiMode::Off,
            BatchApiMode::On,
            BatchApiMode::Auto,
            BatchApiMode::All,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }

    /// Whether the batch API is asked for at all.
    pub fn is_on(self) -> bool {
        self != BatchApiMode::Off
    }

    /// The mode a run was started with, from the settings it recorded (`None` for a run
    /// recorded without one).
    pub fn recorded_in(settings: &serde_json::Value) -> Option<BatchApiMode> {
        settings
            .pointer("/exec/batch_api/mode")
            .and_then(serde_json::Value::as_str)
            .and_then(BatchApiMode::from_name)
    }
}

/// Where the items a batch returns `errored` or `expired` are tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchFallback {
    /// In a follow-up batch (at the batch price).
    #[default]
    Batch,
    /// In realtime calls (sooner, at the list price).
    Realtime,
}

/// How a run uses the provider's batch API.
#[derive(Debug, Clone, Serialize)]
pub struct BatchApiSettings {
    pub mode: BatchApiMode,
    pub fallback: BatchFallback,
    /// `RLM_BATCH_POLL_MS=FIRST[,MOST]`: the poll schedule (default 5 s doubling to 5 min).
    #[serde(skip)]
    pub poll: PollSchedule,
    /// `RLM_BATCH_LIMITS=REQUESTS[,BYTES]`: smaller limits than the provider's (a proxy
    /// with its own, or a test of the split).
    #[serde(skip)]
    pub limits: Option<BatchLimits>,
    /// `rlm cancel`: cancel the run's batches at the provider, collect what had finished,
    /// submit nothing.
    #[serde(skip)]
    pub cancel: bool,
    /// `rlm cancel --forget`: batches rlm cannot reach (recorded at another server, or
    /// unknown to this one) are given up instead of refused.
    #[serde(skip)]
    pub forget: bool,
    /// `RLM_BATCH_WAIT_LINE_MS`: without a terminal, a line about the wait this often
    /// (default a minute; tests use less).
    #[serde(skip)]
    pub wait_line: Duration,
    /// `RLM_BATCH_CANCEL_WAIT_MS`: how long `rlm cancel` waits for the batches it canceled
    /// to end, to collect what they had finished (default [`CANCEL_WAIT`]). Its own bound,
    /// not the run's `--deadline`, which may have passed long ago.
    #[serde(skip)]
    pub cancel_wait: Duration,
}

impl BatchApiSettings {
    /// From the flags (`None`: not given), the config key and the environment.
    pub fn resolve(
        flag: Option<BatchApiMode>,
        config: Option<BatchApiMode>,
        fallback: BatchFallback,
        kind: ProviderKind,
        env: &Environment,
    ) -> Result<Self, RlmError> {
        Ok(BatchApiSettings {
            mode: flag.or(config).unwrap_or_default(),
            fallback,
            poll: poll_schedule(env.var("RLM_BATCH_POLL_MS"))?,
            limits: limits(env.var("RLM_BATCH_LIMITS"), kind)?,
            cancel: false,
            forget: false,
            wait_line: wait_line(env.var("RLM_BATCH_WAIT_LINE_MS"))?,
            cancel_wait: cancel_wait(env.var("RLM_BATCH_CANCEL_WAIT_MS"))?,
        })
    }

    /// A resume keeps the batch mode its run was started with (flag or config key),
    /// whatever the config says now: its batches wait at the provider, and a resume that
    /// went realtime would pay for their units twice and never collect them.
    pub fn keep_recorded_mode(&mut self, recorded: &serde_json::Value) {
        if let Some(mode) = BatchApiMode::recorded_in(recorded) {
            self.mode = mode;
        }
    }
}

/// How long `rlm cancel` waits by default for its canceled batches to end: a canceled batch
/// ends once the requests it was running finish, usually within a minute or two.
pub const CANCEL_WAIT: Duration = Duration::from_secs(5 * 60);

fn cancel_wait(value: Option<&str>) -> Result<Duration, RlmError> {
    let Some(value) = value else {
        return Ok(CANCEL_WAIT);
    };
    match value.trim().parse::<u64>() {
        Ok(ms) if (1..=MOST_POLL_MS).contains(&ms) => Ok(Duration::from_millis(ms)),
        _ => Err(EnvFailure::bad_value(
            "RLM_BATCH_CANCEL_WAIT_MS",
            value,
            format!(
                "a number of milliseconds from 1 to {MOST_POLL_MS} (how long rlm cancel waits for the canceled \
                 batches to end)"
            ),
            EnvBlame::Usage,
        )
        .into()),
    }
}

/// A line about the wait, without a terminal, this often by default.
pub const WAIT_LINE_EVERY: Duration = Duration::from_secs(60);

fn wait_line(value: Option<&str>) -> Result<Duration, RlmError> {
    let Some(value) = value else {
        return Ok(WAIT_LINE_EVERY);
    };
    match value.trim().parse::<u64>() {
        Ok(ms) if (1..=MOST_POLL_MS).contains(&ms) => Ok(Duration::from_millis(ms)),
        _ => Err(EnvFailure::bad_value(
            "RLM_BATCH_WAIT_LINE_MS",
            value,
            format!(
                "a number of milliseconds from 1 to {MOST_POLL_MS} (how often a line about the wait is printed \
                 without a terminal)"
            ),
            EnvBlame::Usage,
        )
        .into()),
    }
}

/// Most milliseconds between two polls `RLM_BATCH_POLL_MS` may ask for (an hour).
const MOST_POLL_MS: u64 = 3_600_000;

fn poll_schedule(value: Option<&str>) -> Result<PollSchedule, RlmError> {
    let Some(value) = value else {
        return Ok(PollSchedule::DEFAULT);
    };
    let bad = || -> RlmError {
        EnvFailure::bad_value(
            "RLM_BATCH_POLL_MS",
            value,
            format!(
                "FIRST or FIRST,MOST: milliseconds from 1 to {MOST_POLL_MS} (the first wait between polls, and the \
                 longest it doubles to)"
            ),
            EnvBlame::Usage,
        )
        .into()
    };
    let numbers: Vec<u64> = value
        .split(',')
        .map(|n| n.trim().parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let (first, most) = match numbers.as_slice() {
        [first] => (*first, *first),
        [first, most] if most >= first => (*first, *most),
        _ => return Err(bad()),
    };
    if !(1..=MOST_POLL_MS).contains(&first) || most > MOST_POLL_MS {
        return Err(bad());
    }
    Ok(PollSchedule {
        first: Duration::from_millis(first),
        most: Duration::from_millis(most),
    })
}

/// `RLM_BATCH_LIMITS`, each part no higher than the provider's own limit.
fn limits(value: Option<&str>, kind: ProviderKind) -> Result<Option<BatchLimits>, RlmError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let most = BatchLimits::of(kind);
    let bad = || -> RlmError {
        EnvFailure::bad_value(
            "RLM_BATCH_LIMITS",
            value,
            format!(
                "REQUESTS or REQUESTS,BYTES: at most {} requests and {} bytes a batch, each at least 1",
                most.max_requests, most.max_bytes
            ),
            EnvBlame::Usage,
        )
        .into()
    };
    let numbers: Vec<u64> = value
        .split(',')
        .map(|n| n.trim().parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let (requests, bytes) = match numbers.as_slice() {
        [requests] => (*requests, None),
        [requests, bytes] => (*requests, Some(*bytes)),
        _ => return Err(bad()),
    };
    if !(1..=most.max_requests as u64).contains(&requests) || bytes.is_some_and(|b| !(1..=most.max_bytes).contains(&b))
    {
        return Err(bad());
    }
    Ok(Some(BatchLimits {
        max_requests: requests as usize,
        max_bytes: bytes.unwrap_or(most.max_bytes),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poll_schedule_is_read_and_range_checked() {
        assert_eq!(poll_schedule(None).unwrap(), PollSchedule::DEFAULT);
        let s = poll_schedule(Some("20")).unwrap();
        assert_eq!((s.first.as_millis(), s.most.as_millis()), (20, 20));
        let s = poll_schedule(Some("10, 80")).unwrap();
        assert_eq!((s.first.as_millis(), s.most.as_millis()), (10, 80));
        for bad in ["", "0", "x", "80,10", "1,2,3", "-5", "3600001"] {
            let e = poll_schedule(Some(bad)).unwrap_err().to_string();
            assert!(e.starts_with("RLM_BATCH_POLL_MS="), "{bad}: {e}");
        }
    }

    #[test]
    fn limits_only_lower_the_providers() {
        let openai = ProviderKind::Openai;
        assert_eq!(limits(None, openai).unwrap(), None);
        let l = limits(Some("40"), openai).unwrap().unwrap();
        assert_eq!((l.max_requests, l.max_bytes), (40, BatchLimits::OPENAI.max_bytes));
        let l = limits(Some("50000,5000"), openai).unwrap().unwrap();
        assert_eq!((l.max_requests, l.max_bytes), (50_000, 5000));
        for bad in ["0", "50001", "5,0", "a", "1,2,3", "5,200000001"] {
            assert!(limits(Some(bad), openai).is_err(), "{bad}");
        }
        assert!(limits(Some("100000"), ProviderKind::Anthropic).is_ok());
    }

    #[test]
    fn the_wait_line_interval_is_read_and_range_checked() {
        assert_eq!(wait_line(None).unwrap(), WAIT_LINE_EVERY);
        assert_eq!(wait_line(Some("250")).unwrap(), Duration::from_millis(250));
        for bad in ["", "0", "x", "-1", "3600001"] {
            let e = wait_line(Some(bad)).unwrap_err().to_string();
            assert!(e.starts_with("RLM_BATCH_WAIT_LINE_MS="), "{bad}: {e}");
        }
    }

    #[test]
    fn a_resume_keeps_the_mode_its_run_recorded() {
        let env = Environment::with_vars(&[], std::path::PathBuf::from("/"));
        let kind = ProviderKind::Anthropic;
        let mut now = BatchApiSettings::resolve(None, None, BatchFallback::Batch, kind, &env).unwrap();
        assert_eq!(now.mode, BatchApiMode::Off);
        let recorded = serde_json::json!({"exec": {"batch_api": {"mode": "all", "fallback": "batch"}}});
        now.keep_recorded_mode(&recorded);
        assert_eq!(now.mode, BatchApiMode::All);
        // A run that recorded none (an older rlm) keeps what the settings say now.
        let mut now =
            BatchApiSettings::resolve(Some(BatchApiMode::On), None, BatchFallback::Batch, kind, &env).unwrap();
        now.keep_recorded_mode(&serde_json::json!({"model": "haiku"}));
        assert_eq!(now.mode, BatchApiMode::On);
    }

    #[test]
    fn the_flag_wins_over_the_config() {
        let env = Environment::with_vars(&[], std::path::PathBuf::from("/"));
        let kind = ProviderKind::Anthropic;
        let s = BatchApiSettings::resolve(None, Some(BatchApiMode::Auto), BatchFallback::Batch, kind, &env).unwrap();
        assert_eq!(s.mode, BatchApiMode::Auto);
        let s = BatchApiSettings::resolve(
            Some(BatchApiMode::Off),
            Some(BatchApiMode::Auto),
            BatchFallback::Batch,
            kind,
            &env,
        )
        .unwrap();
        assert_eq!(s.mode, BatchApiMode::Off);
        assert_eq!(BatchApiMode::from_name("all"), Some(BatchApiMode::All));
    }
}
