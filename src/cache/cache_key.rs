//! The cache key: sha256 over the canonical JSON (sorted keys, no whitespace) of the seed's
//! `{inputs:[{artifactId, contentHash}], query, subPrompt, model, aggregateStrategy}`,
//! inputs sorted by artifact id.
//!
//! Two fields are optional so that the keys the seed defines stay valid: `aggregateStrategy`
//! is only part of keys whose answer depends on it (summaries), and `endpoint` only of keys
//! for servers other than the providers' own APIs, where one model name can mean different
//! models.

use serde::{Deserialize, Serialize};

use crate::hash::sha256_hex;

/// One input of a cached call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRef {
    #[serde(rename = "artifactId")]
    pub artifact_id: String,
    #[serde(rename = "contentHash")]
    pub content_hash: String,
}

/// The hex sha256 that addresses one cached result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CacheKey(pub String);

impl CacheKey {
    /// The key over these fields.
    pub fn new(
        inputs: &[ArtifactRef],
        query: &str,
        sub_prompt: &str,
        model: &str,
        aggregate: Option<&str>,
        endpoint: Option<&str>,
    ) -> Self {
        let mut inputs = inputs.to_vec();
        inputs.sort_by(|a, b| a.artifact_id.cmp(&b.artifact_id));
        // serde_json's map is a BTreeMap (no `preserve_order`), so keys come out sorted and
        // `to_string` is canonical.
        let mut canonical = serde_json::json!({
            "inputs": inputs,
            "query": query,
            "subPrompt": sub_prompt,
            "model": model,
        });
        if let Some(a) = aggregate {
            canonical["aggregateStrategy"] = a.into();
        }
        if let Some(e) = endpoint {
            canonical["endpoint"] = e.into();
        }
        CacheKey(sha256_hex(canonical.to_string().as_bytes()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(id: &str, hash: &str) -> ArtifactRef {
        ArtifactRef {
            artifact_id: id.into(),
            content_hash: hash.into(),
        }
    }

    #[test]
    fn key_is_order_independent_and_content_sensitive() {
        let a = CacheKey::new(&[artifact("a", "1"), artifact("b", "2")], "q", "p", "m", None, None);
        let b = CacheKey::new(&[artifact("b", "2"), artifact("a", "1")], "q", "p", "m", None, None);
        let c = CacheKey::new(&[artifact("a", "1"), artifact("b", "3")], "q", "p", "m", None, None);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.0.len(), 64);
    }

    #[test]
    fn key_matches_the_canonical_json() {
        let key = CacheKey::new(&[artifact("a.ts", "h")], "q", "p", "m", Some("merge"), None);
        let canonical = r#"{"aggregateStrategy":"merge","inputs":[{"artifactId":"a.ts","contentHash":"h"}],"model":"m","query":"q","subPrompt":"p"}"#;
        assert_eq!(key.0, sha256_hex(canonical.as_bytes()));
    }

    #[test]
    fn the_endpoint_separates_servers() {
        let here = CacheKey::new(&[artifact("a", "1")], "q", "p", "m", None, Some("http://a:1/v1"));
        let there = CacheKey::new(&[artifact("a", "1")], "q", "p", "m", None, Some("http://b:1/v1"));
        let official = CacheKey::new(&[artifact("a", "1")], "q", "p", "m", None, None);
        assert_ne!(here, there);
        assert_ne!(here, official);
    }
}
