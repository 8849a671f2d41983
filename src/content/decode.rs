//! Turning a file's bytes into text (issue 16): UTF-8 (a BOM stripped), UTF-16 with a BOM
//! decoded, and text that is not UTF-8 read as windows-1252 — the common legacy encoding,
//! of which Latin-1 is a subset — instead of being replaced with U+FFFD. Also what counts
//! as binary.
//!
//! Nothing here reads a file or warns: the reader calls [`decode`] and names the file in a
//! warning when [`Decoded::lossy`] (or a legacy encoding) says the text is not exactly
//! what the file holds.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8, WINDOWS_1252};

/// How many leading bytes [`looks_binary`] looks at (the reader passes at most this many).
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// A file's text and how it was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The text, without any byte-order mark.
    pub text: String,
    /// The encoding the bytes were read in: `"utf-8"`, `"utf-16le"`, `"utf-16be"` or
    /// `"windows-1252"`.
    pub encoding: &'static str,
    /// Whether some bytes could not be decoded and were replaced with U+FFFD: the text is
    /// not exactly what the file holds.
    pub lossy: bool,
    /// Whether the file started with a byte-order mark (removed from `text`).
    pub bom: bool,
}

impl Decoded {
    /// Whether the text was read in another encoding than UTF-8 without a BOM, or lossily:
    /// what the reader warns about.
    pub fn is_unusual(&self) -> bool {
        self.lossy || self.encoding != "utf-8"
    }
}

/// Decodes a whole file. A BOM decides the encoding (UTF-8, UTF-16LE, UTF-16BE); without
/// one, valid UTF-8 is UTF-8. Bytes that are not valid UTF-8 are read as windows-1252
/// (which maps every byte, so nothing is lost), unless the text is mostly valid UTF-8
/// with a few broken sequences: then those are replaced with U+FFFD and `lossy` is set,
/// because reading the whole file as windows-1252 would garble every correct character.
pub fn decode(bytes: &[u8]) -> Decoded {
    if let Some((encoding, bom_len)) = Encoding::for_bom(bytes) {
        let (text, lossy) = encoding.decode_without_bom_handling(&bytes[bom_len..]);
        return Decoded {
            text: text.into_owned(),
            encoding: name(encoding),
            lossy,
            bom: true,
        };
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Decoded {
            text: text.to_owned(),
            encoding: name(UTF_8),
            lossy: false,
            bom: false,
        };
    }
    let (valid_multibyte, broken) = utf8_evidence(bytes);
    let encoding = if valid_multibyte > broken { UTF_8 } else { WINDOWS_1252 };
    let (text, lossy) = encoding.decode_without_bom_handling(bytes);
    Decoded {
        text: match text {
            Cow::Borrowed(t) => t.to_owned(),
            Cow::Owned(t) => t,
        },
        encoding: name(encoding),
        lossy,
        bom: false,
    }
}

/// Whether the first bytes of a file (up to [`BINARY_SNIFF_BYTES`]) look binary: a NUL
/// byte, except in UTF-16 text that starts with its BOM (where every ASCII character has
/// one). A UTF-32 BOM is binary: it is not decoded.
pub fn looks_binary(head: &[u8]) -> bool {
    let head = &head[..head.len().min(BINARY_SNIFF_BYTES)];
    let utf32 = head.starts_with(&[0xFF, 0xFE, 0, 0]) || head.starts_with(&[0, 0, 0xFE, 0xFF]);
    let utf16 = !utf32 && (head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]));
    !utf16 && head.contains(&0)
}

/// Valid multi-byte UTF-8 characters and broken sequences in `bytes`.
fn utf8_evidence(bytes: &[u8]) -> (usize, usize) {
    let mut valid = 0;
    let mut broken = 0;
    for chunk in bytes.utf8_chunks() {
        valid += chunk.valid().chars().filter(|c| !c.is_ascii()).count();
        broken += usize::from(!chunk.invalid().is_empty());
    }
    (valid, broken)
}

fn name(encoding: &'static Encoding) -> &'static str {
    if encoding == UTF_16LE {
        "utf-16le"
    } else if encoding == UTF_16BE {
        "utf-16be"
    } else if encoding == WINDOWS_1252 {
        "windows-1252"
    } else {
        "utf-8"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
        let mut out = if big_endian { vec![0xFE, 0xFF] } else { vec![0xFF, 0xFE] };
        for unit in text.encode_utf16() {
            let b = if big_endian {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            };
            out.extend_from_slice(&b);
        }
        out
    }

    #[test]
    fn utf8_is_read_as_is_and_its_bom_removed() {
        let d = decode("naïve café\n".as_bytes());
        assert_eq!(
            (d.text.as_str(), d.encoding, d.lossy, d.bom),
            ("naïve café\n", "utf-8", false, false)
        );
        assert!(!d.is_unusual());
        let d = decode(b"\xEF\xBB\xBFid,name\n1,a\n");
        assert_eq!(
            (d.text.as_str(), d.encoding, d.lossy, d.bom),
            ("id,name\n1,a\n", "utf-8", false, true)
        );
    }

    #[test]
    fn utf16_with_a_bom_is_decoded_in_both_byte_orders() {
        let text = "def f():\n    return \"é ✓ 𝄞\"\n";
        for big_endian in [false, true] {
            let bytes = utf16(text, big_endian);
            assert!(!looks_binary(&bytes));
            let d = decode(&bytes);
            assert_eq!(d.text, text);
            assert_eq!(d.encoding, if big_endian { "utf-16be" } else { "utf-16le" });
            assert!(d.bom && !d.lossy && d.is_unusual());
        }
    }

    #[test]
    fn latin1_text_is_read_as_windows_1252_without_loss() {
        // "café — 10 €" in windows-1252: é = E9, — = 97, € = 80.
        let d = decode(b"caf\xE9 \x97 10 \x80\n");
        assert_eq!(d.text, "café — 10 €\n");
        assert_eq!((d.encoding, d.lossy), ("windows-1252", false));
        assert!(d.is_unusual());
    }

    #[test]
    fn mostly_utf8_with_a_broken_byte_keeps_its_characters_and_says_lossy() {
        let mut bytes = "größe: über, naïve, café\n".as_bytes().to_vec();
        bytes.push(0xFF);
        bytes.extend_from_slice(b"\n");
        let d = decode(&bytes);
        assert_eq!(d.text, "größe: über, naïve, café\n\u{FFFD}\n");
        assert_eq!((d.encoding, d.lossy), ("utf-8", true));
    }

    #[test]
    fn broken_utf16_is_lossy() {
        // A lone high surrogate.
        let d = decode(&[0xFF, 0xFE, 0x00, 0xD8, b'a', 0]);
        assert!(d.lossy);
        assert_eq!(d.text, "\u{FFFD}a");
    }

    #[test]
    fn a_nul_means_binary_except_in_utf16_with_a_bom() {
        assert!(looks_binary(b"\x7FELF\x02\x01\x01\x00"));
        assert!(!looks_binary(b"plain text\n"));
        assert!(!looks_binary(&[0xFF, 0xFE, b'a', 0, b'\n', 0]));
        assert!(!looks_binary(&[0xFE, 0xFF, 0, b'a']));
        assert!(looks_binary(&[0xFF, 0xFE, 0, 0, b'a', 0, 0, 0]));
        // Only the first 8 KiB count.
        let mut late = vec![b'a'; BINARY_SNIFF_BYTES];
        late.push(0);
        assert!(!looks_binary(&late));
        // UTF-16 without a BOM is not recognised: binary, as before.
        assert!(looks_binary(&[b'a', 0, b'b', 0]));
    }
}
