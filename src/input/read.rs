//! Reading the matched files: hash, size, line count, and the binary/empty/unreadable sort.
//!
//! Files are read in parallel (this dominates a fully cached rerun). A reader thread that
//! panics does not drop its files: they are listed as unreadable with the reason.

use std::path::PathBuf;

use super::{InputFile, Manifest, SkippedFile};
use crate::hash::sha256_hex;

enum Read {
    File(InputFile),
    Skip(SkippedFile),
    Unreadable(SkippedFile),
}

fn read_one((path, display): (PathBuf, String)) -> Read {
    match read_regular(&path) {
        Err(e) => Read::Unreadable(SkippedFile {
            path: display,
            reason: format!("cannot read: {e}"),
        }),
        Ok(bytes) if bytes.is_empty() => Read::Skip(SkippedFile {
            path: display,
            reason: "empty file".into(),
        }),
        Ok(bytes) if crate::content::looks_binary(&bytes) => Read::Skip(SkippedFile {
            path: display,
            reason: "binary file (NUL byte in the first 8 KiB)".into(),
        }),
        Ok(bytes) => {
            let size = bytes.len() as u64;
            let content_hash = sha256_hex(&bytes);
            let source = crate::source::SourceText::decode_owned(bytes);
            Read::File(InputFile {
                size,
                // Of the text, not the bytes: UTF-16's newlines are two bytes.
                lines: count_lines(source.text.as_bytes()),
                content_hash,
                source: Some(source),
                path,
                display,
            })
        }
    }
}

/// The bytes of a regular file. The walk checked the type, but the name may have become a
/// FIFO since: it is opened without blocking and its type checked on the open handle, so a
/// FIFO is never read (a read would wait for a writer forever).
fn read_regular(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let mut file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    // Read through `take`, not the `File` itself: `File::read_to_end` asks for the size
    // again (a statx and an lseek a file), which the metadata above already gave. A file
    // that grew since is still read to its end.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    (&mut file).take(u64::MAX).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Lines as an editor counts them: a final line without a newline still counts.
pub fn count_lines(bytes: &[u8]) -> u64 {
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    newlines + u64::from(bytes.last().is_some_and(|&b| b != b'\n'))
}

/// Hashes every candidate (already sorted) and sorts out the binary, empty and unreadable
/// ones, keeping the order.
pub fn read_candidates(candidates: Vec<(PathBuf, String)>) -> Manifest {
    let reads = crate::parallel::map(&candidates, crate::parallel::io_threads(), |c| read_one(c.clone()));
    let mut manifest = Manifest::default();
    for (read, (_, display)) in reads.into_iter().zip(candidates) {
        match read {
            Some(Read::File(f)) => manifest.files.push(f),
            Some(Read::Skip(s)) => manifest.skipped.push(s),
            Some(Read::Unreadable(s)) => manifest.unreadable.push(s),
            None => manifest.unreadable.push(SkippedFile {
                path: display,
                reason: "internal error: the reader thread failed".into(),
            }),
        }
    }
    manifest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_count_a_final_line_without_newline() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a"), 1);
        assert_eq!(count_lines(b"a\n"), 1);
        assert_eq!(count_lines(b"a\r\nb"), 2);
    }

    #[test]
    fn a_file_is_read_whole_whatever_its_size() {
        let dir = tempfile::tempdir().unwrap();
        for len in [1usize, 31, 32, 33, 8191, 8192, 100_000] {
            let path = dir.path().join(format!("f{len}"));
            let content: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            std::fs::write(&path, &content).unwrap();
            assert_eq!(read_regular(&path).unwrap(), content, "{len} bytes");
        }
    }

    #[test]
    fn a_missing_file_is_unreadable_not_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let m = read_candidates(vec![(dir.path().join("gone.txt"), "gone.txt".into())]);
        assert!(m.files.is_empty() && m.skipped.is_empty());
        assert_eq!(m.unreadable[0].path, "gone.txt");
    }
}
