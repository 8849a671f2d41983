//! The project's `.aiwg/aiwg.config` (JSON), the parts rlm reads, through serde.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::BatchApiMode;
use crate::error::RlmError;
use crate::provider::catalog::Price;

/// Why `.aiwg/aiwg.config` cannot be used (the file's path and an example are added by
/// [`ProjectConfig::load`]).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not JSON, or a key of the wrong shape.
    #[error("invalid ({0})")]
    Invalid(#[from] serde_json::Error),
    #[error("parallelism.max_parallel_subagents must be a whole number of at least 1")]
    NoParallelism,
    #[error(
        "rlm.prices.{model} must hold prices (input, output, and cache_read and cache_write when given) from 0 to \
         1000000 USD per million tokens"
    )]
    BadPrice { model: String },
}

/// The highest price a config may set, in USD per million tokens: far above any model's,
/// and low enough that no estimate becomes infinite (a price of `1e308` made it `$inf`).
const MAX_PRICE: f64 = 1_000_000.0;

/// `.aiwg/aiwg.config`; every key optional, unknown keys ignored (other tools share it).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ProjectConfig {
    #[serde(default)]
    pub parallelism: ParallelismConfig,
    #[serde(default)]
    pub rlm: RlmConfig,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ParallelismConfig {
    /// The project's cap on calls in flight.
    pub max_parallel_subagents: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RlmConfig {
    /// Prices by exact model id, USD per million tokens.
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    /// `rlm.batch_api`: `"on"`, `"auto"`, `"all"`, `"off"` or a boolean; `--batch-api`
    /// overrides it.
    #[serde(default, deserialize_with = "batch_api_mode")]
    pub batch_api: Option<BatchApiMode>,
    /// `false`: never mark prompt prefixes for the provider's cache (as `--no-prompt-cache`).
    pub prompt_cache: Option<bool>,
}

/// `rlm.batch_api`: a mode's name, or `true` (`on`) / `false` (`off`).
fn batch_api_mode<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<BatchApiMode>, D::Error> {
    use serde::de::Error;
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::Bool(on) => Ok(Some(if on { BatchApiMode::On } else { BatchApiMode::Off })),
        serde_json::Value::String(name) => BatchApiMode::from_name(&name).map(Some).ok_or_else(|| {
            D::Error::custom(format!(
                "rlm.batch_api is `{name}`: use on, auto, all, off, true or false"
            ))
        }),
        other => Err(D::Error::custom(format!(
            "rlm.batch_api is {other}: use on, auto, all, off, true or false"
        ))),
    }
}

impl ProjectConfig {
    /// Reads `.aiwg/aiwg.config` under `root`; a missing file is an empty config.
    pub fn load(root: &Path) -> Result<Self, RlmError> {
        let path = root.join(".aiwg").join("aiwg.config");
        let text = match fs_err::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(e.into()),
        };
        Self::parse(&text).map_err(|msg| {
            RlmError::Config(format!(
                "{}: {msg}; expected JSON such as {{\"parallelism\": {{\"max_parallel_subagents\": 4}}}}",
                path.display()
            ))
        })
    }

    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let config: ProjectConfig = serde_json::from_str(text)?;
        if config.parallelism.max_parallel_subagents == Some(0) {
            return Err(ConfigError::NoParallelism);
        }
        for (model, price) in &config.rlm.prices {
            // The cache prices too: a negative one lowered the cost `--max-cost` counts.
            let given = [
                Some(price.input),
                Some(price.output),
                price.cache_read,
                price.cache_write,
            ];
            if !given.into_iter().flatten().all(|p| (0.0..=MAX_PRICE).contains(&p)) {
                return Err(ConfigError::BadPrice { model: model.clone() });
            }
        }
        Ok(config)
    }

    /// The project's width cap, if it sets one.
    pub fn max_parallel(&self) -> Option<usize> {
        self.parallelism
            .max_parallel_subagents
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects_nonsense() {
        let c = ProjectConfig::parse(
            r#"{"parallelism":{"max_parallel_subagents":3},"rlm":{"prices":{"m":{"input":1,"output":2}}},"other":1}"#,
        )
        .unwrap();
        assert_eq!(c.max_parallel(), Some(3));
        assert_eq!(c.rlm.prices["m"].output, 2.0);
        let refused = |text: &str| ProjectConfig::parse(text).unwrap_err();
        assert!(matches!(refused("parallelism: 3"), ConfigError::Invalid(_)));
        assert!(matches!(
            refused(r#"{"parallelism":{"max_parallel_subagents":0}}"#),
            ConfigError::NoParallelism
        ));
        assert!(matches!(
            refused(r#"{"parallelism":{"max_parallel_subagents":-1}}"#),
            ConfigError::Invalid(_)
        ));
        assert!(matches!(
            refused(r#"{"rlm":{"prices":{"m":{"input":-1,"output":2}}}}"#),
            ConfigError::BadPrice { model } if model == "m"
        ));
        for bad in [
            r#"{"input":1e308,"output":2}"#,
            r#"{"input":1,"output":2,"cache_read":-0.1}"#,
            r#"{"input":1,"output":2,"cache_write":2e6}"#,
        ] {
            let text = format!(r#"{{"rlm":{{"prices":{{"m":{bad}}}}}}}"#);
            assert!(matches!(refused(&text), ConfigError::BadPrice { .. }), "{bad}");
        }
        let c = ProjectConfig::parse(r#"{"rlm":{"batch_api":"auto"}}"#).unwrap();
        assert_eq!(c.rlm.batch_api, Some(BatchApiMode::Auto));
        let c = ProjectConfig::parse(r#"{"rlm":{"batch_api":true}}"#).unwrap();
        assert_eq!(c.rlm.batch_api, Some(BatchApiMode::On));
        assert_eq!(ProjectConfig::parse("{}").unwrap().rlm.batch_api, None);
        let e = ProjectConfig::parse(r#"{"rlm":{"batch_api":"sometimes"}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("rlm.batch_api is `sometimes`"), "{e}");
    }
}
