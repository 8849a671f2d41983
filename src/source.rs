//! The text of an input file, read once per run.
//!
//! The manifest reads every file to hash it; the decoded text is kept from that one read and
//! shared (`Arc`) by everything after it — detection, chunking, the rendered request, the
//! dry run — so a file is never read twice and what is sent is exactly what was hashed.

use std::sync::Arc;

/// A file's content as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceText {
    pub text: String,
    /// The encoding it was decoded from (`utf-8`, `utf-16le`, `utf-16be`, `windows-1252`).
    pub encoding: &'static str,
    /// Some bytes could not be decoded and were replaced (U+FFFD): the report warns.
    pub lossy: bool,
}

impl SourceText {
    /// Decodes a file's bytes (see [`crate::content::decode`]).
    pub fn decode(bytes: &[u8]) -> Arc<SourceText> {
        let decoded = crate::content::decode(bytes);
        Arc::new(SourceText {
            text: decoded.text,
            encoding: decoded.encoding,
            lossy: decoded.lossy,
        })
    }

    /// Whether the report should name the file: its bytes were not exactly UTF-8 text.
    pub fn is_unusual(&self) -> bool {
        self.lossy || self.encoding != "utf-8"
    }
}
