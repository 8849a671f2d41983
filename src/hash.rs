//! Content hashes: sha256 in lowercase hex, the one hash every part of rlm names files,
//! cache keys and units by. A module of its own so that the index (which hashes files)
//! never reaches into input resolution (which reads the index for `--neighbors-of`).

use sha2::{Digest, Sha256};

/// Lowercase hex of sha256(bytes).
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        use std::fmt::Write;
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_digest() {
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
