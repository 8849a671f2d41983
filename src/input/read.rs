//! Reading the matched files: hash, size, line count, and the binary/empty/unreadable sort.
//!
//! Files are read in parallel (this dominates a fully cached rerun), and by a walk as it
//! finds them ([`ReadAhead`]). A reader thread that panics does not drop its files: they
//! are listed as unreadable with the reason.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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
            let mut source = crate::source::SourceText::decode_owned(bytes);
            let lines = count_lines(source.text.as_bytes());
            let detection = crate::content::detect(
                &display,
                crate::content::head_lines(&source.text, crate::content::SNIFF_LINES),
            );
            if !hold_text(size) {
                source = source.released();
            }
            Read::File(InputFile {
                size,
                // Of the text, not the bytes: UTF-16's newlines are two bytes.
                lines,
                content_hash: content_hash.into(),
                source: Some(source),
                detection: Some(detection),
                path: path.into(),
                display: display.into(),
            })
        }
    }
}

/// How many bytes of file text the reads of a process keep for planning: beyond this a
/// file is hashed and counted, and its text read again when planning needs it (a corpus
/// larger than memory is planned in memory that does not grow with it).
const HELD_TEXT_BYTES: u64 = 32 << 20;

/// What holding a text costs besides its bytes: the shared record around it and the
/// allocator's headers. A million one-line files hold more of that than of text.
const HELD_TEXT_OVERHEAD: u64 = std::mem::size_of::<crate::source::SourceText>() as u64 + 32;

/// Whether a file of `size` bytes keeps its text from this read (see [`HELD_TEXT_BYTES`]).
fn hold_text(size: u64) -> bool {
    use std::sync::atomic::{AtomicU64, Ordering};
    static HELD: AtomicU64 = AtomicU64::new(0);
    let cost = size + HELD_TEXT_OVERHEAD;
    HELD.fetch_add(cost, Ordering::Relaxed) + cost <= HELD_TEXT_BYTES
}

/// The bytes of a regular file. The walk checked the type, but the name may have become a
/// FIFO since: it is opened without blocking and its type checked on the open handle, so a
/// FIFO is never read (a read would wait for a writer forever).
#[allow(clippy::disallowed_methods)]
pub(crate) fn read_regular(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    // std::fs, not fs_err: this opens every input file, and an fs_err `File` keeps a copy of
    // its path (an allocation per file); the caller names the file beside the reason.
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let mut file = options.open(below_cwd(path))?;
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

/// `path` relative to the process's working directory when it lies below it (as every
/// path made from a relative pattern does): the kernel then looks up only the components
/// below it rather than every one from the root, and opening is most of what reading
/// thousands of small files costs. rlm never changes its working directory.
fn below_cwd(path: &std::path::Path) -> &std::path::Path {
    static CWD: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let cwd = CWD.get_or_init(|| std::env::current_dir().ok());
    match cwd.as_deref().and_then(|cwd| path.strip_prefix(cwd).ok()) {
        Some(below) if !below.as_os_str().is_empty() && path.is_absolute() => below,
        _ => path,
    }
}

/// Lines as an editor counts them, of the text the bytes decode to: a final line without
/// a newline still counts. UTF-16 (with its BOM) is decoded first: its newlines are two
/// bytes, and a byte 0x0A may be half of another character (`Ċ` is 0A 01).
pub fn count_lines(bytes: &[u8]) -> u64 {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return count_newline_ended(crate::source::SourceText::decode(bytes).text.as_bytes());
    }
    count_newline_ended(bytes)
}

fn count_newline_ended(bytes: &[u8]) -> u64 {
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    newlines + u64::from(bytes.last().is_some_and(|&b| b != b'\n'))
}

/// Hashes every candidate (already sorted) and sorts out the binary, empty and unreadable
/// ones, keeping the order.
pub fn read_candidates(candidates: Vec<(PathBuf, String)>) -> Manifest {
    let reads = crate::parallel::map(&candidates, crate::parallel::io_threads(), |c| read_one(c.clone()));
    assemble(reads.into_iter().zip(candidates))
}

/// The manifest of files read, in the given order; a file without a read (its reader
/// failed) is unreadable.
fn assemble(reads: impl Iterator<Item = (Option<Read>, (PathBuf, String))>) -> Manifest {
    let mut manifest = Manifest::default();
    for (read, (_, display)) in reads {
        match read {
            Some(Read::File(f)) => manifest.files.push(f),
            Some(Read::Skip(s)) => manifest.skipped.push(s),
            Some(Read::Unreadable(s)) => manifest.unreadable.push(s),
            None => manifest.unreadable.push(reader_failed(&display)),
        }
    }
    manifest
}

/// Files read on a few threads as they are handed over, while the caller goes on finding
/// the next ones: the walk of a large tree then costs no time of its own.
pub struct ReadAhead {
    sender: Option<std::sync::mpsc::Sender<(usize, PathBuf, String)>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    /// How many files were handed over.
    handed: usize,
    /// What the readers read, by the order files were handed over in.
    reads: Arc<Mutex<Vec<(usize, Read)>>>,
}

impl ReadAhead {
    pub fn start() -> Self {
        let (sender, receiver) = std::sync::mpsc::channel::<(usize, PathBuf, String)>();
        let receiver = Arc::new(Mutex::new(receiver));
        let reads: Arc<Mutex<Vec<(usize, Read)>>> = Arc::default();
        let readers = (0..crate::parallel::io_threads())
            .map(|_| {
                let (receiver, reads) = (receiver.clone(), reads.clone());
                std::thread::spawn(move || loop {
                    let next = lock(&receiver).recv();
                    let Ok((index, path, display)) = next else { break };
                    // A panic reading one file (a bug) fails that file, not its reader.
                    let read = std::panic::catch_unwind(|| read_one((path, display.clone())))
                        .unwrap_or_else(|_| Read::Unreadable(reader_failed(&display)));
                    lock(&reads).push((index, read));
                })
            })
            .collect();
        ReadAhead {
            sender: Some(sender),
            readers,
            handed: 0,
            reads,
        }
    }

    /// Hands a file over to be read.
    pub fn read(&mut self, path: PathBuf, display: String) {
        if let Some(sender) = &self.sender {
            // Only fails once every reader is gone: `finish` then reads what is missing.
            let _ = sender.send((self.handed, path, display));
        }
        self.handed += 1;
    }

    /// The manifest of `candidates` — the files handed over, in that order (any further
    /// ones are read here) — sorted by display path, each once.
    pub fn finish(mut self, candidates: Vec<(PathBuf, String)>) -> Manifest {
        self.sender = None;
        for reader in std::mem::take(&mut self.readers) {
            let _ = reader.join();
        }
        let mut slots: Vec<Option<Read>> = (0..candidates.len()).map(|_| None).collect();
        for (index, read) in std::mem::take(&mut *lock(&self.reads)) {
            if let Some(slot) = slots.get_mut(index) {
                *slot = Some(read);
            }
        }
        let mut files: Vec<(Option<Read>, (PathBuf, String))> = slots.into_iter().zip(candidates).collect();
        files.sort_by(|a, b| a.1 .1.cmp(&b.1 .1));
        files.dedup_by(|a, b| a.1 .1 == b.1 .1);
        // Not read (a reader thread died, or never handed over): read here.
        assemble(
            files
                .into_iter()
                .map(|(read, candidate)| (Some(read.unwrap_or_else(|| read_one(candidate.clone()))), candidate)),
        )
    }
}

fn reader_failed(display: &str) -> SkippedFile {
    SkippedFile {
        path: display.to_string(),
        reason: "internal error: the reader thread failed".into(),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
    fn utf16_lines_are_counted_in_the_decoded_text() {
        let utf16 = |text: &str, bom: [u8; 2], unit: fn(u16) -> [u8; 2]| -> Vec<u8> {
            bom.into_iter().chain(text.encode_utf16().flat_map(unit)).collect()
        };
        // `Ċ` (U+010A) and `ਊ` (U+0A0A) hold bytes 0x0A that are no newline.
        let text = "Ċ one\nਊ two\nthree";
        assert_eq!(count_lines(&utf16(text, [0xFF, 0xFE], u16::to_le_bytes)), 3);
        assert_eq!(count_lines(&utf16(text, [0xFE, 0xFF], u16::to_be_bytes)), 3);
        assert_eq!(count_lines(text.as_bytes()), 3);
    }

    #[test]
    fn paths_below_the_working_directory_are_opened_relative_to_it() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(below_cwd(&cwd.join("a/b.txt")), std::path::Path::new("a/b.txt"));
        assert_eq!(below_cwd(&cwd), cwd.as_path());
        assert_eq!(
            below_cwd(std::path::Path::new("/elsewhere/x")),
            std::path::Path::new("/elsewhere/x")
        );
        assert_eq!(below_cwd(std::path::Path::new("rel/x")), std::path::Path::new("rel/x"));
    }

    #[test]
    fn a_file_is_read_whole_whatever_its_size() {
        let dir = tempfile::tempdir().unwrap();
        for len in [1usize, 31, 32, 33, 8191, 8192, 100_000] {
            let path = dir.path().join(format!("f{len}"));
            let content: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            fs_err::write(&path, &content).unwrap();
            assert_eq!(read_regular(&path).unwrap(), content, "{len} bytes");
        }
    }

    #[test]
    fn read_ahead_gives_the_manifest_of_the_candidates_sorted_and_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut candidates = Vec::new();
        let mut ahead = ReadAhead::start();
        for i in (0..300).rev() {
            let path = dir.path().join(format!("f{i:03}"));
            fs_err::write(&path, if i % 100 == 0 { String::new() } else { format!("{i}\n") }).unwrap();
            ahead.read(path.clone(), format!("f{i:03}"));
            candidates.push((path, format!("f{i:03}")));
        }
        // The same file twice is listed once; a candidate never handed over is read here.
        ahead.read(candidates[0].0.clone(), candidates[0].1.clone());
        candidates.push(candidates[0].clone());
        candidates.push((dir.path().join("gone"), "gone".into()));
        let m = ahead.finish(candidates);
        assert_eq!(m.files.len(), 297);
        assert_eq!(&*m.files[0].display, "f001");
        assert!(m.files.windows(2).all(|w| w[0].display < w[1].display));
        assert_eq!(*m.files[0].content_hash, crate::hash::sha256_hex(b"1\n"));
        assert_eq!(
            m.skipped.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(),
            ["f000", "f100", "f200"]
        );
        assert_eq!(
            m.unreadable.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(),
            ["gone"]
        );
    }

    #[test]
    fn a_missing_file_is_unreadable_not_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let m = read_candidates(vec![(dir.path().join("gone.txt"), "gone.txt".into())]);
        assert!(m.files.is_empty() && m.skipped.is_empty());
        assert_eq!(m.unreadable[0].path, "gone.txt");
    }
}
