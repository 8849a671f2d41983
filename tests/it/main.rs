//! The integration tests: one binary (linking one is cheaper than linking eighteen), one
//! module per area. Every test runs the real `rlm` binary, against the mock model server of
//! `support::mock_llm` where it needs one.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed unwrap is a failed test
#![allow(clippy::pedantic)] // test code is held to the default lints
#![allow(clippy::disallowed_methods)] // std::fs in tests: a failure fails the test, path or not

mod support;

mod batch;
mod batch_api;
mod batch_api_lost;
mod batch_api_run;
mod cache;
mod chunking;
mod ci;
mod ci_review_script;
mod code_grammar;
mod command;
mod concurrency;
mod content;
mod demo;
mod directory;
mod durable;
mod engine;
mod faults;
mod full_disk;
mod graph_batch;
mod index;
mod inputs;
mod interfaces;
mod job;
mod job_checks;
mod job_clusters;
mod job_fetch;
mod mock_selftest;
mod newcomer;
mod one_engine;
mod packing;
mod prompt_cache;
mod pushback;
mod real_model;
mod resume;
mod scale;
mod schema;
mod shard;
mod skill;
mod spine;
mod spine_batches;
mod spine_findings;
