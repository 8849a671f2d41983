//! Content hashes: sha256 in lowercase hex, the one hash every part of rlm names files,
//! cache keys and units by. A module of its own so that the index (which hashes files)
//! never reaches into input resolution (which reads the index for `--neighbors-of`).

use sha2::{Digest, Sha256};

/// Lowercase hex of sha256(bytes).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes` (a digest), by table: `format!("{b:02x}")` per byte was a
/// visible part of planning tens of thousands of files.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// A 64-bit hash of `bytes` for telling values apart in memory within one process (never
/// written anywhere: std's `DefaultHasher`, with its fixed keys, may change between Rust
/// releases).
pub fn fast_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

/// sha256 of everything written into it: a value serialized straight into the hash (with
/// `serde_json::to_writer`), without building its text first.
#[derive(Default)]
pub struct Sha256Writer(Sha256);

impl Sha256Writer {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// Lowercase hex of the hash of what was written.
    pub fn hex(self) -> String {
        hex(&self.0.finalize())
    }
}

impl std::io::Write for Sha256Writer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_lowercase_two_digits_a_byte() {
        assert_eq!(super::hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(super::hex(&[]), "");
    }

    #[test]
    fn the_writer_hashes_what_is_written() {
        use std::io::Write;
        let mut w = super::Sha256Writer::default();
        w.update(b"a");
        w.write_all(b"bc").unwrap();
        assert_eq!(w.hex(), super::sha256_hex(b"abc"));
    }

    #[test]
    fn known_digest() {
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
