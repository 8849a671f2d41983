//! rlm: fan one prompt out over many files to language models in parallel, and combine the
//! answers into one result and a completion report.
//!
//! The flow runs one way — inputs → manifest → plan → cache pre-pass → execute →
//! aggregate → report — with one module per stage and a plain data type between stages.

pub mod aggregate;
pub mod answer;
pub mod batch;
pub mod batch_state;
pub mod cache;
pub mod citation;
pub mod cli;
pub mod commands;
pub mod completions;
pub mod content;
pub mod duration;
pub mod error;
pub mod escape;
pub mod exec;
pub mod file_lock;
pub mod findings;
pub mod fs_atomic;
pub mod hash;
pub mod index;
pub mod input;
pub mod job;
pub mod man_page;
pub mod memory;
pub mod merge;
pub mod money;
pub mod parallel;
pub mod plan;
pub mod pretty_json;
pub mod printer;
pub mod process;
pub mod prompt;
pub mod provider;
pub mod report;
pub mod reporter;
pub mod request;
pub mod run_dir;
pub mod runs;
pub mod schema;
pub mod secret;
pub mod settings;
pub mod shard;
pub mod skill;
pub mod source;
pub mod store;
pub mod tokens;
pub mod unit;
pub mod unit_failure;

pub use commands::run_cli;
