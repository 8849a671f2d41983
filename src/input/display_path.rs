//! The one way a file's path becomes the name the user sees: `{file}` in prompts, the
//! `artifactId` of cache keys, unit ids, result file names and every listing derive from it.
//!
//! A name on Linux is bytes, not text. Shown lossily, `x\xFF.txt` and `x\xFE.txt` both became
//! `x�.txt`, and one of the two files vanished from the run unlisted (issue 17). The
//! rendering is therefore injective: a UTF-8 name without a backslash is shown as it is (so
//! every ordinary name looks as the user typed it); any other name has its backslashes
//! doubled and each byte that is not UTF-8 written as `\xHH`. The two forms cannot meet (only
//! the second holds a backslash), and the second decodes back to its bytes, so two different
//! names never share a display. Control characters are left to [`crate::escape::name`] where
//! the name is printed. The path itself stays an `OsStr` for reading.

use std::path::Path;

/// `path` as it is shown and keyed (see the module doc).
pub fn display_path(path: &Path) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        render_bytes(path.as_os_str().as_bytes())
    }
    #[cfg(not(unix))]
    {
        // Windows names are UTF-16; a lone surrogate is the only thing lost, and `\` is the
        // separator, shown as `/` as everywhere else.
        path.to_string_lossy().replace('\\', "/")
    }
}

/// A name the user typed, as it is shown back: as typed when it is UTF-8 (a glob such as
/// `src/\*.ts` keeps its single backslash), else as [`display_path`] renders it, each byte
/// that is not UTF-8 as `\xHH`.
pub fn shown_name(name: &std::ffi::OsStr) -> String {
    match name.to_str() {
        Some(text) => text.to_string(),
        None => display_path(Path::new(name)),
    }
}

/// `#[serde(serialize_with = …)]` for a name in a record a person reads (`settings.json`):
/// [`shown_name`]'s form. A name that is not UTF-8 made serde fail, and the whole record
/// was written as `null`.
pub fn serialize_shown<S: serde::Serializer, N: AsRef<std::ffi::OsStr>>(
    name: &N,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&shown_name(name.as_ref()))
}

/// [`serialize_shown`] for an optional name.
pub fn serialize_shown_option<S: serde::Serializer, N: AsRef<std::ffi::OsStr>>(
    name: &Option<N>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match name {
        Some(name) => serializer.serialize_some(&shown_name(name.as_ref())),
        None => serializer.serialize_none(),
    }
}

/// The injective rendering of a name's bytes.
fn render_bytes(bytes: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(bytes) {
        if !text.contains('\\') {
            return text.to_string();
        }
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            use std::fmt::Write;
            let _ = write!(out, "\\x{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_are_shown_as_they_are() {
        assert_eq!(render_bytes(b"src/auth/login.ts"), "src/auth/login.ts");
        assert_eq!(render_bytes("café/ü.md".as_bytes()), "café/ü.md");
    }

    #[test]
    fn invalid_bytes_are_escaped_and_never_collide() {
        assert_eq!(render_bytes(b"x\xff.txt"), "x\\xFF.txt");
        assert_ne!(render_bytes(b"x\xff.txt"), render_bytes(b"x\xfe.txt"));
        // A valid name that spells the escape is not the invalid one.
        assert_ne!(render_bytes(b"x\\xFF.txt"), render_bytes(b"x\xff.txt"));
        assert_eq!(render_bytes(b"x\\xFF.txt"), "x\\\\xFF.txt");
        assert_eq!(render_bytes(b"a\\b\xc3"), "a\\\\b\\xC3");
    }

    #[cfg(unix)]
    #[test]
    fn paths_render_through_their_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"dir/\xe9t\xe9.txt"));
        assert_eq!(display_path(p), "dir/\\xE9t\\xE9.txt");
    }
}
