//! Secrets: the API key type and the redactor every writer scrubs text through.
//!
//! The key lives in a [`secrecy::SecretString`], so no `Debug` or `Display` can print it.
//! Text that leaves the process (stdout, stderr, the run directory, the cache, events)
//! passes through a [`Redactor`] first: an error body or a model reply can echo what we
//! sent, the key included.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
