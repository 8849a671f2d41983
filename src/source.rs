//! The text of an input file, read once per run.
//!
//! The manifest reads every file to hash it; the decoded text is kept from that one read and
//! shared (`Arc`) by everything after it — detection, chunking, the rendered request, the
//! dry run — so a file is never read twice and what is sent is exactly what was hashed.

use std::sync::Arc;

/// A file's content as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceText {
    pub text: String,
    /// The encoding it was decoded from (`utf-8`, `utf-16le`, `utf-16be`, `windows-1252`).
    pub encoding: &'static str,
    /// Some bytes could not be decoded and were replaced (U+FFFD): the report warns.
    pub lossy: bool,
    /// Where each line starts (byte offsets), made the first time a span of lines is
    /// asked for: a file cut into hundreds of chunks is then scanned once, not once a chunk.
    line_starts: std::sync::OnceLock<Vec<usize>>,
    /// `false` for a text let go of (see [`SourceText::released`]): `text` is then empty, and
    /// the file is read again ([`SourceText::reread`]) when its text is needed.
    held: bool,
}

/// Why a file's text could not be had again: it was edited (or removed) since it was read
/// and hashed. A unit never sends other content under the key it was planned with.
pub const CHANGED: &str = "changed since the run was planned; rerun to plan it again";

impl Default for SourceText {
    /// An empty text (held: there is nothing to read again).
    fn default() -> Self {
        SourceText {
            text: String::new(),
            encoding: "utf-8",
            lossy: false,
            line_starts: std::sync::OnceLock::new(),
            held: true,
        }
    }
}

impl SourceText {
    /// Decodes a file's bytes (see [`crate::content::decode`]).
    pub fn decode(bytes: &[u8]) -> Arc<SourceText> {
        let decoded = crate::content::decode(bytes);
        Arc::new(SourceText {
            text: decoded.text,
            encoding: decoded.encoding,
            lossy: decoded.lossy,
            line_starts: std::sync::OnceLock::new(),
            held: true,
        })
    }

    /// [`SourceText::decode`], taking the bytes: UTF-8 without a BOM (nearly every file)
    /// becomes the text without a copy.
    pub fn decode_owned(bytes: Vec<u8>) -> Arc<SourceText> {
        if encoding_rs::Encoding::for_bom(&bytes).is_some() {
            return Self::decode(&bytes);
        }
        match String::from_utf8(bytes) {
            Ok(text) => Arc::new(SourceText {
                text,
                encoding: "utf-8",
                lossy: false,
                line_starts: std::sync::OnceLock::new(),
                held: true,
            }),
            Err(e) => Self::decode(e.as_bytes()),
        }
    }

    /// What is known of the text without the text itself: its encoding. A plan holds
    /// this, not the text (which would grow with the corpus); the text is read again when
    /// its unit is sent.
    pub fn released(&self) -> Arc<SourceText> {
        // Nearly every file is plain UTF-8: its released text is one shared value.
        static UTF8: std::sync::LazyLock<Arc<SourceText>> = std::sync::LazyLock::new(|| {
            Arc::new(SourceText {
                held: false,
                ..SourceText::default()
            })
        });
        if self.encoding == "utf-8" && !self.lossy {
            return UTF8.clone();
        }
        Arc::new(SourceText {
            text: String::new(),
            encoding: self.encoding,
            lossy: self.lossy,
            line_starts: std::sync::OnceLock::new(),
            held: false,
        })
    }

    /// Whether the text is here (not [`SourceText::released`]).
    pub fn is_held(&self) -> bool {
        self.held
    }

    /// The text of `path` read again, when its bytes still hash to `content_hash` (else
    /// [`CHANGED`], or why it cannot be read). The chunks of one file share one read: a
    /// text read again lately, or still held by a unit, is given again (it is the planned
    /// text, checked when it was read), so a file cut into thousands of chunks is read
    /// and hashed once, not once a chunk (see [`Rereads`]).
    pub fn reread(path: &std::path::Path, content_hash: &str) -> Result<Arc<SourceText>, String> {
        if let Some(text) = Rereads::find(path, content_hash) {
            return Ok(text);
        }
        let bytes = match crate::input::read_regular(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(CHANGED.to_string()),
            Err(e) => return Err(format!("cannot be read again: {e}")),
        };
        if crate::hash::sha256_hex(&bytes) != content_hash {
            return Err(CHANGED.to_string());
        }
        let text = Self::decode_owned(bytes);
        Rereads::keep(path, content_hash, &text);
        Ok(text)
    }

    /// Lines `start..=end` (1-based) of the text, with their newlines: what
    /// [`crate::request::slice_lines`] gives, from an index of the lines made once.
    pub fn lines(&self, start: u64, end: u64) -> &str {
        let starts = self.line_starts.get_or_init(|| {
            std::iter::once(0)
                .chain(self.text.match_indices('\n').map(|(i, _)| i + 1))
                .collect()
        });
        let len = self.text.len();
        let at = |line: u64| {
            usize::try_from(line)
                .ok()
                .and_then(|l| starts.get(l))
                .copied()
                .unwrap_or(len)
        };
        let from = at(start.saturating_sub(1));
        let to = at(end);
        &self.text[from.min(len)..to.max(from).min(len)]
    }

    /// Whether the report should name the file: its bytes were not exactly UTF-8 text.
    pub fn is_unusual(&self) -> bool {
        self.lossy || self.encoding != "utf-8"
    }
}

/// The texts read again lately, by file and hash: the last [`Rereads::RECENT`] held (the
/// chunks of a file are sized, written into a provider batch or sent one after another, on
/// a few threads), the others for as long as a unit holds them. What it holds beyond the
/// units is at most those few texts.
#[derive(Default)]
struct Rereads {
    by_file: std::collections::HashMap<(std::path::PathBuf, String), std::sync::Weak<SourceText>>,
    recent: std::collections::VecDeque<Arc<SourceText>>,
}

impl Rereads {
    const RECENT: usize = 4;

    fn shared() -> std::sync::MutexGuard<'static, Rereads> {
        static SHARED: std::sync::LazyLock<std::sync::Mutex<Rereads>> = std::sync::LazyLock::new(Default::default);
        SHARED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn find(path: &std::path::Path, content_hash: &str) -> Option<Arc<SourceText>> {
        let rereads = Self::shared();
        if rereads.by_file.is_empty() {
            return None;
        }
        let key = (path.to_path_buf(), content_hash.to_string());
        rereads.by_file.get(&key).and_then(std::sync::Weak::upgrade)
    }

    fn keep(path: &std::path::Path, content_hash: &str, text: &Arc<SourceText>) {
        let mut rereads = Self::shared();
        if rereads.by_file.len() >= 64 * Self::RECENT {
            // The texts no unit holds any more are forgotten.
            rereads.by_file.retain(|_, text| text.strong_count() > 0);
        }
        let key = (path.to_path_buf(), content_hash.to_string());
        rereads.by_file.insert(key, Arc::downgrade(text));
        rereads.recent.push_back(text.clone());
        if rereads.recent.len() > Self::RECENT {
            rereads.recent.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_read_again_is_read_once_for_all_its_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.log");
        fs_err::write(&path, "one\ntwo\n").unwrap();
        let hash = crate::hash::sha256_hex(b"one\ntwo\n");
        let first = SourceText::reread(&path, &hash).unwrap();
        // Edited since: the planned text, read once, is what its other chunks get, never
        // the edit (and the file is not read again to find it changed).
        fs_err::write(&path, "ONE\ntwo\n").unwrap();
        let again = SourceText::reread(&path, &hash).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(again.text, "one\ntwo\n");
        // Another file's reads push it out of the recent ones; once no unit holds it, the
        // file is read again, and the edit found.
        drop((first, again));
        for i in 0..Rereads::RECENT {
            let other = dir.path().join(format!("o{i}"));
            fs_err::write(&other, format!("{i}")).unwrap();
            SourceText::reread(&other, &crate::hash::sha256_hex(format!("{i}").as_bytes())).unwrap();
        }
        assert_eq!(SourceText::reread(&path, &hash).unwrap_err(), CHANGED);
    }

    #[test]
    fn lines_by_index_are_lines_by_scan() {
        for text in ["", "a", "a\n", "a\nb\nc\nd", "a\n\nc\n", "\u{e9}\n\u{1f600}\nx\n"] {
            let source = SourceText::decode(text.as_bytes());
            for start in 0..7 {
                for end in 0..7 {
                    assert_eq!(
                        source.lines(start, end),
                        crate::request::slice_lines(text, start, end),
                        "{text:?} {start}..={end}"
                    );
                }
            }
        }
    }

    #[test]
    fn owned_decoding_is_decoding() {
        let cases: [&[u8]; 5] = [
            b"plain ascii\n",
            "caf\u{e9} \u{1f600}\n".as_bytes(),
            b"\xef\xbb\xbfwith a BOM\n",
            b"\xff\xfeu\x00t\x00f\x001\x006\x00",
            b"caf\xe9 latin-1\n",
        ];
        for bytes in cases {
            assert_eq!(
                SourceText::decode_owned(bytes.to_vec()),
                SourceText::decode(bytes),
                "{bytes:?}"
            );
        }
    }
}
