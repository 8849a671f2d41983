//! `--files-from FILE`: the input paths listed in a file (or on stdin with `-`), one per
//! line, or NUL-separated with `--null` (what `git diff -z` and `find -print0` write, and
//! the only form that carries a path containing a newline).
//!
//! The list is returned as written (relative paths are relative to the working directory);
//! the caller intersects it with the pattern and builds the manifest.

use std::io::Read;
use std::path::{Path, PathBuf};

/// How the entries of the list are separated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListSeparator {
    /// One path per line; `\r\n` endings are tolerated and blank lines ignored.
    Newline,
    /// NUL-separated (`--null`); empty entries ignored, every other byte is part of a path.
    Nul,
}

/// The list could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FilesFromError {
    /// The `fs_err` message names the file.
    #[error("cannot read the file list: {0}; check --files-from")]
    Read(#[source] std::io::Error),
    #[error("cannot read the file list from standard input: {0}")]
    Stdin(#[source] std::io::Error),
    /// Only on systems whose paths are not bytes (Windows).
    #[error("the file list {source_name} has an entry that is not UTF-8 (entry {entry}); write it as UTF-8")]
    NotUtf8 { source_name: String, entry: usize },
}

/// The paths listed in `list` (`-` for `stdin`), separated by `separator`, in order and
/// with duplicates and leading `./` removed.
pub fn read_files_from(
    list: &Path,
    separator: ListSeparator,
    stdin: &mut dyn Read,
) -> Result<Vec<PathBuf>, FilesFromError> {
    let mut bytes = Vec::new();
    let source_name = if list == Path::new("-") {
        stdin.read_to_end(&mut bytes).map_err(FilesFromError::Stdin)?;
        "on standard input".to_string()
    } else {
        bytes = fs_err::read(list).map_err(FilesFromError::Read)?;
        list.display().to_string()
    };
    parse_files_list(&bytes, separator).map_err(|entry| FilesFromError::NotUtf8 { source_name, entry })
}

/// The paths in a list's bytes. `Err(n)` names the 1-based entry that is not a path on this
/// system (only possible where paths must be UTF-8).
pub fn parse_files_list(bytes: &[u8], separator: ListSeparator) -> Result<Vec<PathBuf>, usize> {
    let entries: Vec<&[u8]> = match separator {
        ListSeparator::Nul => bytes.split(|b| *b == 0).filter(|e| !e.is_empty()).collect(),
        ListSeparator::Newline => bytes
            .split(|b| *b == b'\n')
            .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
            .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
            .collect(),
    };
    let mut seen = std::collections::HashSet::new();
    let mut paths = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let path = strip_dot_slash(path_from_bytes(entry).ok_or(i + 1)?);
        if seen.insert(path.clone()) {
            paths.push(path);
        }
    }
    Ok(paths)
}

#[cfg(unix)]
fn path_from_bytes(bytes: &[u8]) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: &[u8]) -> Option<PathBuf> {
    std::str::from_utf8(bytes).ok().map(PathBuf::from)
}

/// `./src/a.ts` → `src/a.ts`, so the same file listed two ways is one input (a lone `.`
/// stays).
fn strip_dot_slash(path: PathBuf) -> PathBuf {
    let mut p = path.as_path();
    while let Ok(rest) = p.strip_prefix(".") {
        if rest.as_os_str().is_empty() {
            break;
        }
        p = rest;
    }
    p.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(v: &[&str]) -> Vec<PathBuf> {
        v.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn lines_with_crlf_blank_lines_and_no_final_newline() {
        let list = b"src/a.ts\r\n\r\n  \nsrc/b c.ts\n./src/d.ts\n\nsrc/a.ts\nlast.md";
        assert_eq!(
            parse_files_list(list, ListSeparator::Newline),
            Ok(paths(&["src/a.ts", "src/b c.ts", "src/d.ts", "last.md"]))
        );
    }

    #[test]
    fn nul_separated_keeps_newlines_and_spaces_in_names() {
        let list = b"src/a.ts\0with\nnewline.txt\0 lead space\0\0trailing\r\0";
        assert_eq!(
            parse_files_list(list, ListSeparator::Nul),
            Ok(paths(&["src/a.ts", "with\nnewline.txt", " lead space", "trailing\r"]))
        );
    }

    #[test]
    fn an_empty_list_is_empty() {
        assert_eq!(parse_files_list(b"", ListSeparator::Newline), Ok(vec![]));
        assert_eq!(parse_files_list(b"\n\r\n", ListSeparator::Newline), Ok(vec![]));
        assert_eq!(parse_files_list(b"\0\0", ListSeparator::Nul), Ok(vec![]));
    }

    #[test]
    fn absolute_and_parent_paths_are_kept_as_written() {
        assert_eq!(
            parse_files_list(b"/abs/x.rs\n../up.rs\n.\n", ListSeparator::Newline),
            Ok(paths(&["/abs/x.rs", "../up.rs", "."]))
        );
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_names_survive_on_unix() {
        use std::os::unix::ffi::OsStrExt;
        let got = parse_files_list(b"caf\xe9.txt\n", ListSeparator::Newline).unwrap();
        assert_eq!(got[0].as_os_str().as_bytes(), b"caf\xe9.txt");
    }

    #[test]
    fn reads_a_file_or_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("changed.txt");
        fs_err::write(&list, "a.ts\nb.ts\n").unwrap();
        let mut no_stdin: &[u8] = b"";
        assert_eq!(
            read_files_from(&list, ListSeparator::Newline, &mut no_stdin).unwrap(),
            paths(&["a.ts", "b.ts"])
        );
        let mut stdin: &[u8] = b"x.ts\0y.ts\0";
        assert_eq!(
            read_files_from(Path::new("-"), ListSeparator::Nul, &mut stdin).unwrap(),
            paths(&["x.ts", "y.ts"])
        );
    }

    #[test]
    fn a_missing_list_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.txt");
        let err = read_files_from(&missing, ListSeparator::Newline, &mut std::io::empty()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "cannot read the file list: failed to open file `{}`: ",
                missing.display()
            )),
            "{text}"
        );
        assert!(text.ends_with("; check --files-from"), "{text}");
    }
}
