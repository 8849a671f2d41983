//! Verifiable citations: the tuple `{artifact_id, content_hash, lines}` that ties a claim
//! to a file, a version and a line range, and everything done with it.
//!
//! Owns: the tuple and its forms ([`Citation`], [`LineRange`]), the strict inline and
//! `## Sources` parser ([`parse_inline`], [`parse_document`]), the instruction block of
//! `--require-citations` ([`instruction_block`]), deduplication and the Sources footer
//! ([`dedupe`], [`sources_footer`]), the merge of findings with their citations
//! ([`CitedClaim`], [`merge_claims`]), and verification against the files
//! ([`check`], [`check_all`], `rlm verify-citations` in [`command`]).

mod cited_claim;
pub mod command;
mod document;
mod error;
mod instruction;
mod markdown;
mod parser;
mod sources;
mod tuple;
mod verify;

pub use cited_claim::{claims_from_markdown, merge_claims, CitedClaim};
pub use document::{in_json, in_markdown, load as load_document, Found};
pub use error::CitationError;
pub use instruction::{input_block, instruction_block, SUMMARIZER_RULE};
pub use parser::{
    bracket_citations, parse_document, parse_for_verification, parse_inline, parse_source_entry, Located,
};
pub use sources::{dedupe, sources_footer};
pub use tuple::{is_content_hash, Citation, LineRange};
pub use verify::{check, check_all, Check, Status, Summary};

/// The content hash of a file's bytes: the first 16 lowercase hex characters of its sha256
/// (the index's convention, so a citation names one exact version).
pub fn content_hash(bytes: &[u8]) -> String {
    let mut hex = crate::hash::sha256_hex(bytes);
    hex.truncate(16);
    hex
}
