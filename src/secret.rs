//! Secrets: the API key type and the redactor every writer scrubs text through.
//!
//! The key lives in a [`secrecy::SecretString`], so no `Debug` or `Display` can print it.
//! Text that leaves the process (stdout, stderr, the run directory, the cache, events)
//! passes through a [`Redactor`] first: an error body or a model reply can echo what we
//! sent, the key included.
//!
//! Diagnostics (`-v`, `-vv`, `RLM_LOG`) come from code rlm does not own (reqwest, hyper) as
//! well as its own, so they are scrubbed where they are written, not where they are made:
//! [`LogWriter`] removes the credentials of every URL (`scheme://user:password@`) and every
//! secret the process was given — the API keys in the environment and the user info of the
//! base URLs on the command line and in the environment (issue 17: `-v` printed a base
//! URL's password).

use std::borrow::Cow;
use std::sync::Arc;

use secrecy::{ExposeSecret, SecretString};

/// An API key. Shown nowhere; exposed only to build the request header.
#[derive(Clone)]
pub struct ApiKey(SecretString);

impl ApiKey {
    pub fn new(key: &str) -> Self {
        ApiKey(SecretString::from(key.trim().to_string()))
    }

    /// The key, for the one place that needs it: the request header.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([REDACTED])")
    }
}

/// Replaces every known secret in a text with `[REDACTED]`. Cheap to clone and share.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Arc<Vec<SecretString>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

/// Keys shorter than this are not scrubbed: they would scrub ordinary words.
const MIN_SCRUBBED: usize = 4;

impl Redactor {
    /// A redactor for these keys (short or empty ones are ignored).
    pub fn new<'a>(keys: impl IntoIterator<Item = &'a ApiKey>) -> Self {
        let secrets = keys
            .into_iter()
            .filter(|k| k.expose().len() >= MIN_SCRUBBED)
            .map(|k| SecretString::from(k.expose().to_string()))
            .collect();
        Redactor {
            secrets: Arc::new(secrets),
        }
    }

    /// A redactor for these secret strings (short or empty ones are ignored).
    pub fn from_secrets(secrets: impl IntoIterator<Item = String>) -> Self {
        let secrets = secrets
            .into_iter()
            .filter(|s| s.len() >= MIN_SCRUBBED)
            .map(SecretString::from)
            .collect();
        Redactor {
            secrets: Arc::new(secrets),
        }
    }

    /// `text` with every secret replaced; borrowed when there was nothing to replace.
    pub fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for secret in self.secrets.iter() {
            let s = secret.expose_secret();
            if out.contains(s) {
                out = Cow::Owned(out.replace(s, "[REDACTED]"));
            }
        }
        out
    }
}

/// A writer that passes on what is written to it scrubbed by a [`Redactor`], line by line:
/// a secret holds no newline, so no secret can span two lines, and a document streamed
/// through it (pretty JSON: every value on a line of its own) is scrubbed as a whole one
/// would be without being held in memory. [`std::io::Write::flush`] scrubs and passes on a
/// last line without a newline.
pub struct ScrubLines<'r, W: std::io::Write> {
    redactor: &'r Redactor,
    inner: W,
    line: Vec<u8>,
}

impl<'r, W: std::io::Write> ScrubLines<'r, W> {
    pub fn new(redactor: &'r Redactor, inner: W) -> Self {
        ScrubLines {
            redactor,
            inner,
            line: Vec::new(),
        }
    }

    fn pass_on(&mut self) -> std::io::Result<()> {
        let line = std::mem::take(&mut self.line);
        self.scrub_into_inner(&line)?;
        self.line = line;
        self.line.clear();
        Ok(())
    }

    /// Passes on `lines` (whole lines, or the last line at the end) scrubbed.
    fn scrub_into_inner(&mut self, lines: &[u8]) -> std::io::Result<()> {
        match std::str::from_utf8(lines) {
            Ok(text) => self.inner.write_all(self.redactor.scrub(text).as_bytes()),
            Err(_) => self
                .inner
                .write_all(self.redactor.scrub(&String::from_utf8_lossy(lines)).as_bytes()),
        }
    }
}

impl<W: std::io::Write> std::io::Write for ScrubLines<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Every whole line in `buf` passed on at once: a secret holds no newline, so lines
        // scrubbed together are scrubbed as each alone would be (and a byte sequence that is
        // not UTF-8 ends at a newline too), at a fraction of the cost per line of a
        // document of millions of lines.
        let Some(last) = buf.iter().rposition(|&b| b == b'\n') else {
            self.line.extend_from_slice(buf);
            return Ok(buf.len());
        };
        let (lines, rest) = buf.split_at(last + 1);
        if self.line.is_empty() {
            self.scrub_into_inner(lines)?;
        } else {
            self.line.extend_from_slice(lines);
            self.pass_on()?;
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.line.is_empty() {
            self.pass_on()?;
        }
        self.inner.flush()
    }
}

/// A URL as it may be shown: any `user:password@` is replaced by `***@`.
pub fn redact_url(url: &str) -> Cow<'_, str> {
    let Some(scheme_end) = url.find("://") else {
        return Cow::Borrowed(url);
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => Cow::Owned(format!("{}***@{}", &url[..scheme_end + 3], &rest[at + 1..])),
        None => Cow::Borrowed(url),
    }
}

/// `text` with the user info of every URL in it (`https://user:pw@host` → `https://***@host`);
/// borrowed when there was none.
pub fn scrub_url_credentials(text: &str) -> Cow<'_, str> {
    if !text.contains("://") || !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority ends where a path, query, fragment, quote or space begins.
        let end = tail
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '`' | '<' | '>' | ')' | ']') || c.is_whitespace()
            })
            .unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(user_info_end) => {
                out.push_str("***");
                rest = &tail[user_info_end..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The secrets in a URL's user info: `user:password`, the password, and their decoded forms
/// (what an `Authorization: Basic` header or a log of the parsed URL would show).
pub fn url_secrets(url: &str) -> Vec<String> {
    let Some(scheme_end) = url.find("://") else {
        return Vec::new();
    };
    let rest = &url[scheme_end + 3..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let Some(at) = authority.rfind('@') else {
        return Vec::new();
    };
    let user_info = &authority[..at];
    let mut secrets = vec![user_info.to_string()];
    if let Some((_, password)) = user_info.split_once(':') {
        secrets.push(password.to_string());
    }
    let decoded: Vec<String> = secrets
        .iter()
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    secrets.extend(decoded);
    // `Basic base64(user:password)`, as reqwest sends it.
    secrets.push(base64(
        percent_encoding::percent_decode_str(user_info)
            .collect::<Vec<u8>>()
            .as_slice(),
    ));
    secrets.sort();
    secrets.dedup();
    secrets
}

/// Standard base64 with padding (only to recognise a Basic credential in a log line).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The secrets a process may be holding, for scrubbing diagnostics before any settings
/// exist: the API keys in the environment and the user info of every URL in the
/// environment and on the command line.
pub fn process_secrets(vars: &[(String, String)], argv: &[String]) -> Redactor {
    let mut secrets = Vec::new();
    for (name, value) in vars {
        if name.ends_with("_API_KEY") || name.ends_with("_AUTH_TOKEN") {
            secrets.push(value.trim().to_string());
        }
        secrets.extend(url_secrets(value));
    }
    for arg in argv {
        secrets.extend(url_secrets(arg));
    }
    Redactor::from_secrets(secrets)
}

/// The writer of diagnostics: each event is collected whole, scrubbed of URL credentials
/// and known secrets, and written to stderr in one piece.
#[derive(Clone)]
pub struct LogWriter {
    redactor: Redactor,
}

impl LogWriter {
    pub fn new(redactor: Redactor) -> Self {
        LogWriter { redactor }
    }

    /// One scrubbed text, as it will reach stderr.
    pub fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match scrub_url_credentials(text) {
            Cow::Borrowed(t) => self.redactor.scrub(t),
            Cow::Owned(t) => Cow::Owned(self.redactor.scrub(&t).into_owned()),
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogEvent;

    fn make_writer(&'a self) -> LogEvent {
        LogEvent {
            writer: self.clone(),
            buffer: Vec::new(),
        }
    }
}

/// One event being written: kept until it is complete, so a secret split over two writes
/// is still seen whole.
pub struct LogEvent {
    writer: LogWriter,
    buffer: Vec<u8>,
}

impl std::io::Write for LogEvent {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogEvent {
    fn drop(&mut self) {
        if self.buffer.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.buffer);
        let text = self.writer.scrub(&text);
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_written_in_pieces_is_scrubbed_line_by_line() {
        use std::io::Write as _;
        let key = ApiKey::new("sk-very-secret");
        let r = Redactor::new([&key]);
        let mut out = Vec::new();
        {
            let mut w = ScrubLines::new(&r, &mut out);
            for piece in [
                "{\n  \"a\": \"sk-ve",
                "ry-se",
                "cret and \u{e9}\"\n}\n",
                "last sk-very-",
                "secret",
            ] {
                w.write_all(piece.as_bytes()).unwrap();
            }
            w.flush().unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n  \"a\": \"[REDACTED] and \u{e9}\"\n}\nlast [REDACTED]"
        );
    }

    #[test]
    fn many_lines_written_at_once_are_scrubbed_as_each_line_alone() {
        use std::io::Write as _;
        let key = ApiKey::new("sk-very-secret");
        let r = Redactor::new([&key]);
        let mut doc: Vec<u8> = b"a sk-very-secret\nsk-very-secret b sk-very-secret\n".to_vec();
        doc.extend_from_slice(b"not \xFF utf-8 sk-very-secret\nplain\nsk-very-");
        let mut whole = Vec::new();
        let mut pieces = Vec::new();
        {
            let mut w = ScrubLines::new(&r, &mut whole);
            w.write_all(&doc).unwrap();
            w.write_all(b"secret").unwrap();
            w.flush().unwrap();
            let mut w = ScrubLines::new(&r, &mut pieces);
            for byte in doc.iter().chain(b"secret") {
                w.write_all(&[*byte]).unwrap();
            }
            w.flush().unwrap();
        }
        assert_eq!(whole, pieces);
        assert_eq!(
            String::from_utf8(whole).unwrap(),
            "a [REDACTED]\n[REDACTED] b [REDACTED]\nnot \u{fffd} utf-8 [REDACTED]\nplain\n[REDACTED]"
        );
    }
    #[test]
    fn keys_never_show_in_debug() {
        let key = ApiKey::new("sk-very-secret");
        assert_eq!(format!("{key:?}"), "ApiKey([REDACTED])");
        let r = Redactor::new([&key]);
        assert!(!format!("{r:?}").contains("very-secret"));
    }

    #[test]
    fn scrubs_every_occurrence_and_skips_short_keys() {
        let r = Redactor::new([&ApiKey::new("sk-abc"), &ApiKey::new("ab")]);
        assert_eq!(
            r.scrub("key sk-abc in body sk-abc, ab"),
            "key [REDACTED] in body [REDACTED], ab"
        );
        assert!(matches!(r.scrub("nothing"), Cow::Borrowed(_)));
    }

    #[test]
    fn url_userinfo_is_hidden() {
        assert_eq!(redact_url("https://user:pw@host:8080/v1"), "https://***@host:8080/v1");
        assert_eq!(redact_url("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(redact_url("http://host/path@x"), "http://host/path@x");
    }

    #[test]
    fn url_credentials_are_scrubbed_anywhere_in_a_line() {
        assert_eq!(
            scrub_url_credentials("sending request endpoint=http://alice:s3cret@127.0.0.1:9/v1/messages x"),
            "sending request endpoint=http://***@127.0.0.1:9/v1/messages x"
        );
        assert_eq!(
            scrub_url_credentials("a https://u:p@h b \"ftp://x@y/z\" c http://plain/a@b"),
            "a https://***@h b \"ftp://***@y/z\" c http://plain/a@b"
        );
        assert!(matches!(scrub_url_credentials("no url here"), Cow::Borrowed(_)));
    }

    #[test]
    fn url_secrets_cover_the_password_its_decoding_and_basic_auth() {
        let secrets = url_secrets("http://alice:p%40ss@host/v1");
        assert!(secrets.contains(&"p%40ss".to_string()));
        assert!(secrets.contains(&"p@ss".to_string()));
        assert!(secrets.contains(&"alice:p@ss".to_string()));
        assert!(secrets.contains(&base64(b"alice:p@ss")));
        assert_eq!(base64(b"alice:pw"), "YWxpY2U6cHc=");
        assert_eq!(base64(b"ab"), "YWI=");
        assert!(url_secrets("http://host/v1").is_empty());
    }

    #[test]
    fn the_log_writer_scrubs_keys_and_credentials() {
        let vars = vec![
            ("ANTHROPIC_API_KEY".to_string(), "sk-ant-12345".to_string()),
            ("OPENAI_BASE_URL".to_string(), "https://bob:hunter22@gw/v1".to_string()),
        ];
        let argv = vec!["--base-url".to_string(), "http://alice:pw1234@127.0.0.1:1".to_string()];
        let writer = LogWriter::new(process_secrets(&vars, &argv));
        let line = "key sk-ant-12345 pw hunter22 again pw1234 url http://alice:pw1234@127.0.0.1:1/v1";
        let shown = writer.scrub(line);
        for secret in ["sk-ant-12345", "hunter22", "pw1234"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
