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
    /// The encoding it was decoded from (`utf-8`, `utf-16le`, `windows-1252`, …).
    pub encoding: &'static str,
    /// Some bytes could not be decoded and were replaced (U+FFFD): the report warns.
    pub lossy: bool,
}

impl SourceText {
    /// Decodes a file's bytes (see [`crate::content::decode`]).
    pub fn decode(bytes: &[u8]) -> Arc<SourceText> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Arc::new(SourceText {
                text: text.strip_prefix('\u{feff}').unwrap_or(text).to_string(),
                encoding: "utf-8",
                lossy: false,
            }),
            Err(_) => Arc::new(SourceText {
                text: String::from_utf8_lossy(bytes).into_owned(),
                encoding: "utf-8",
                lossy: true,
            }),
        }
    }
}
