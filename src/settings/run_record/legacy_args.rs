//! Version 0 of the run record: the `rlm batch` arguments as rlm recorded them before the
//! record had a version (the clap struct itself, serialized, under `args`). The shape is
//! frozen here as those versions wrote it, field for field (enum values in their Rust
//! spelling: `"Auto"`, `"Anthropic"`), so a flag added or renamed since never changes how
//! an old run reads; such a run still resumes and merges.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::aggregate::AggregateStrategy;
use crate::cache::CacheMode;
use crate::content::Focus;
use crate::findings::FailOn;
use crate::index::Direction;
use crate::provider::ProviderKind;
use crate::settings::{BatchApiMode, BatchFallback, BatchOptions};
use crate::shard::Shard;

/// Where the recorded settings of older rlm versions hold their arguments.
pub const KEY: &str = "args";

/// The options recorded as version 0.
pub fn read(args: &Value) -> Result<BatchOptions, serde_json::Error> {
    LegacyArgs::deserialize(args).map(Into::into)
}

/// The arguments as version 0 recorded them (`Option` fields may be missing, as serde
/// allowed then; the others are required).
#[derive(Deserialize)]
#[allow(clippy::struct_excessive_bools)] // the flags as they were
struct LegacyArgs {
    #[serde(with = "crate::settings::recorded_name", default)]
    pattern: Option<OsString>,
    sub_prompt: Option<String>,
    #[serde(with = "crate::settings::recorded_name", default)]
    prompt_file: Option<PathBuf>,
    #[serde(with = "crate::settings::recorded_name", default)]
    files_from: Option<PathBuf>,
    null: bool,
    changed_since: Option<String>,
    #[serde(with = "crate::settings::recorded_name", default)]
    sarif: Option<PathBuf>,
    fail_on: Option<LegacyFailOn>,
    #[serde(with = "crate::settings::recorded_name", default)]
    schema: Option<PathBuf>,
    chunking: LegacyChunking,
    batch_small: bool,
    no_batch_small: bool,
    focus: LegacyFocus,
    model: Option<String>,
    provider: Option<LegacyProvider>,
    command: Option<String>,
    agent_env: Vec<String>,
    max_depth: u32,
    base_url: Option<String>,
    #[serde(with = "crate::settings::recorded_name", default)]
    output_dir: Option<PathBuf>,
    aggregate: Option<LegacyAggregate>,
    max_parallel: Option<usize>,
    no_prompt_cache: bool,
    no_cache: bool,
    cache_only: bool,
    batch_api: Option<LegacyBatchApi>,
    batch_api_fallback: LegacyBatchFallback,
    force: bool,
    yes: bool,
    dry_run: bool,
    json: bool,
    quiet: bool,
    timeout: f64,
    connect_timeout: f64,
    retries: u32,
    deadline: Option<f64>,
    #[serde(with = "crate::settings::recorded_name", default)]
    save_trajectory: Option<PathBuf>,
    rate_limit_wait: f64,
    max_tokens: Option<u32>,
    max_cost: Option<f64>,
    context_window: Option<u64>,
    temperature: Option<f32>,
    no_ignore: bool,
    hidden: bool,
    follow_links: bool,
    include: Vec<String>,
    exclude: Vec<String>,
    no_recursive: bool,
    shard: Option<Shard>,
    max_files: Option<usize>,
    neighbors_of: Option<String>,
    direction: Option<LegacyDirection>,
    depth: Option<u32>,
    graph: Option<String>,
    #[serde(with = "crate::settings::recorded_name", default)]
    graph_file: Option<PathBuf>,
    require_citations: bool,
}

#[derive(Deserialize)]
enum LegacyFailOn {
    Error,
    Warning,
    Note,
}

#[derive(Deserialize, PartialEq)]
enum LegacyChunking {
    Auto,
    Off,
}

#[derive(Deserialize)]
enum LegacyFocus {
    General,
    Security,
    Architecture,
    Performance,
}

#[derive(Deserialize)]
enum LegacyProvider {
    Anthropic,
    Openai,
    Command,
}

#[derive(Deserialize)]
enum LegacyAggregate {
    Concat,
    Merge,
    Summarize,
    Synthesize,
}

#[derive(Deserialize)]
enum LegacyBatchApi {
    On,
    Auto,
    All,
    Off,
}

#[derive(Deserialize)]
enum LegacyBatchFallback {
    Batch,
    Realtime,
}

#[derive(Deserialize)]
enum LegacyDirection {
    In,
    Out,
    Both,
}

impl From<LegacyArgs> for BatchOptions {
    /// As the command line made the settings of these arguments then.
    fn from(args: LegacyArgs) -> Self {
        let LegacyArgs {
            pattern,
            sub_prompt,
            prompt_file,
            files_from,
            null,
            changed_since,
            sarif,
            fail_on,
            schema,
            chunking,
            batch_small,
            no_batch_small,
            focus,
            model,
            provider,
            command,
            agent_env,
            max_depth,
            base_url,
            output_dir,
            aggregate,
            max_parallel,
            no_prompt_cache,
            no_cache,
            cache_only,
            batch_api,
            batch_api_fallback,
            force,
            yes,
            dry_run,
            json,
            quiet,
            timeout,
            connect_timeout,
            retries,
            deadline,
            save_trajectory,
            rate_limit_wait,
            max_tokens,
            max_cost,
            context_window,
            temperature,
            no_ignore,
            hidden,
            follow_links,
            include,
            exclude,
            no_recursive,
            shard,
            max_files,
            neighbors_of,
            direction,
            depth,
            graph,
            graph_file,
            require_citations,
        } = args;
        BatchOptions {
            pattern,
            sub_prompt,
            prompt_file,
            files_from,
            null,
            changed_since,
            sarif,
            fail_on: fail_on.map(|level| match level {
                LegacyFailOn::Error => FailOn::Error,
                LegacyFailOn::Warning => FailOn::Warning,
                LegacyFailOn::Note => FailOn::Note,
            }),
            schema,
            chunking: chunking == LegacyChunking::Auto,
            batch_small: !no_batch_small || batch_small,
            focus: match focus {
                LegacyFocus::General => Focus::General,
                LegacyFocus::Security => Focus::Security,
                LegacyFocus::Architecture => Focus::Architecture,
                LegacyFocus::Performance => Focus::Performance,
            },
            model,
            provider: provider.map(|p| match p {
                LegacyProvider::Anthropic => ProviderKind::Anthropic,
                LegacyProvider::Openai => ProviderKind::Openai,
                LegacyProvider::Command => ProviderKind::Command,
            }),
            command,
            agent_env,
            max_depth,
            base_url,
            output_dir,
            aggregate: aggregate.map(|a| match a {
                LegacyAggregate::Concat => AggregateStrategy::Concat,
                LegacyAggregate::Merge => AggregateStrategy::Merge,
                LegacyAggregate::Summarize => AggregateStrategy::Summarize,
                LegacyAggregate::Synthesize => AggregateStrategy::Synthesize,
            }),
            max_parallel,
            prompt_cache: !no_prompt_cache,
            cache_mode: if cache_only {
                CacheMode::ReadOnly
            } else if no_cache {
                CacheMode::WriteOnly
            } else {
                CacheMode::ReadWrite
            },
            force,
            yes,
            dry_run,
            json,
            quiet,
            timeout,
            connect_timeout,
            retries,
            deadline,
            save_trajectory,
            rate_limit_wait,
            max_tokens,
            max_cost,
            context_window,
            temperature,
            respect_ignore: !no_ignore,
            hidden,
            follow_links,
            include,
            exclude,
            no_recursive,
            shard,
            max_files,
            neighbors_of,
            direction: direction.map(|d| match d {
                LegacyDirection::In => Direction::In,
                LegacyDirection::Out => Direction::Out,
                LegacyDirection::Both => Direction::Both,
            }),
            depth,
            graph,
            graph_file,
            require_citations,
            batch_api: batch_api.map(|mode| match mode {
                LegacyBatchApi::On => BatchApiMode::On,
                LegacyBatchApi::Auto => BatchApiMode::Auto,
                LegacyBatchApi::All => BatchApiMode::All,
                LegacyBatchApi::Off => BatchApiMode::Off,
            }),
            batch_api_fallback: match batch_api_fallback {
                LegacyBatchFallback::Batch => BatchFallback::Batch,
                LegacyBatchFallback::Realtime => BatchFallback::Realtime,
            },
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `args` as rlm 0.x recorded them for `rlm batch 'src/*.ts' 'Summarize {file}'
    /// --base-url URL -m haiku -o out --no-batch-small --max-cost 2 --shard 1/2
    /// --batch-api --aggregate summarize --fail-on warning --no-cache`.
    pub fn recorded() -> Value {
        serde_json::from_str(
            r#"{
            "pattern": "src/*.ts", "sub_prompt": "Summarize {file}", "prompt_file": null,
            "files_from": null, "null": false, "changed_since": null, "sarif": null,
            "fail_on": "Warning", "schema": null, "chunking": "Auto", "batch_small": false,
            "no_batch_small": true, "focus": "General", "model": "haiku", "provider": null,
            "command": null, "agent_env": [], "max_depth": 3,
            "base_url": "http://***@127.0.0.1:9", "output_dir": "out", "aggregate": "Summarize",
            "max_parallel": null, "no_prompt_cache": false, "no_cache": true, "cache_only": false,
            "batch_api": "On", "batch_api_fallback": "Batch", "force": false, "yes": false,
            "dry_run": false, "json": false, "quiet": false, "timeout": 120.0,
            "connect_timeout": 10.0, "retries": 3, "deadline": null, "save_trajectory": null,
            "rate_limit_wait": 600.0, "max_tokens": null, "max_cost": 2.0,
            "context_window": null, "temperature": null, "no_ignore": false, "hidden": false,
            "follow_links": false, "include": [], "exclude": [], "no_recursive": false,
            "shard": {"index": 1, "count": 2}, "max_files": null, "neighbors_of": null,
            "direction": null, "depth": null, "graph": null, "graph_file": null,
            "require_citations": false
            }"#,
        )
        .unwrap()
    }

    /// The options [`recorded`] stands for.
    pub fn options() -> BatchOptions {
        BatchOptions {
            pattern: Some("src/*.ts".into()),
            sub_prompt: Some("Summarize {file}".into()),
            prompt_file: None,
            files_from: None,
            null: false,
            changed_since: None,
            sarif: None,
            fail_on: Some(FailOn::Warning),
            schema: None,
            chunking: true,
            batch_small: false,
            focus: Focus::General,
            model: Some("haiku".into()),
            provider: None,
            command: None,
            agent_env: Vec::new(),
            max_depth: 3,
            base_url: Some("http://***@127.0.0.1:9".into()),
            output_dir: Some("out".into()),
            aggregate: Some(AggregateStrategy::Summarize),
            max_parallel: None,
            prompt_cache: true,
            cache_mode: CacheMode::WriteOnly,
            force: false,
            yes: false,
            dry_run: false,
            json: false,
            quiet: false,
            timeout: 120.0,
            connect_timeout: 10.0,
            retries: 3,
            deadline: None,
            save_trajectory: None,
            rate_limit_wait: 600.0,
            max_tokens: None,
            max_cost: Some(2.0),
            context_window: None,
            temperature: None,
            respect_ignore: true,
            hidden: false,
            follow_links: false,
            include: Vec::new(),
            exclude: Vec::new(),
            no_recursive: false,
            shard: Some(Shard { index: 1, count: 2 }),
            max_files: None,
            neighbors_of: None,
            direction: None,
            depth: None,
            graph: None,
            graph_file: None,
            require_citations: false,
            batch_api: Some(BatchApiMode::On),
            batch_api_fallback: BatchFallback::Batch,
        }
    }

    #[test]
    fn arguments_recorded_by_older_rlm_read_as_version_0() {
        let recorded = serde_json::json!({ "model": "haiku", "args": recorded() });
        let record = crate::settings::RunRecord::read(&recorded).unwrap().unwrap();
        assert_eq!(record.version, 0);
        assert_eq!(record.kind, crate::settings::RunKind::Batch);
        assert_eq!(record.settings, options());
        // As then, a required flag missing is unreadable.
        let mut missing = recorded.clone();
        missing["args"].as_object_mut().unwrap().remove("timeout");
        assert!(crate::settings::RunRecord::read(&missing).is_err());
    }
}
