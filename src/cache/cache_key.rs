//! The cache key: sha256 over the canonical JSON (sorted keys, no whitespace) of the seed's
//! `{inputs:[{artifactId, contentHash}], query, subPrompt, model, aggregateStrategy}`,
//! inputs sorted by artifact id.
//!
//! Two fields are optional so that the keys the seed defines stay valid: `aggregateStrategy`
//! is only part of keys whose answer depends on it (summaries), and `endpoint` only of keys
//! for servers other than the providers' own APIs, where one model name can mean different
//! models.

use serde::{Deserialize, Serialize};

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
        let mut inputs: Vec<&ArtifactRef> = inputs.iter().collect();
        inputs.sort_by(|a, b| a.artifact_id.cmp(&b.artifact_id));
        // The canonical JSON written straight into the hash: the fields in sorted order
        // (what a `serde_json::Value`, whose map is a BTreeMap, prints), absent optional
        // fields left out, no whitespace. Building the `Value` and its string first cost
        // more than hashing them, thousands of times a plan.
        #[derive(Serialize)]
        struct Canonical<'a> {
            #[serde(rename = "aggregateStrategy", skip_serializing_if = "Option::is_none")]
            aggregate: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            endpoint: Option<&'a str>,
            inputs: Vec<&'a ArtifactRef>,
            model: &'a str,
            query: &'a str,
            #[serde(rename = "subPrompt")]
            sub_prompt: &'a str,
        }
        let canonical = Canonical {
            aggregate,
            endpoint,
            inputs,
            model,
            query,
            sub_prompt,
        };
        let mut hasher = crate::hash::Sha256Writer::default();
        // Writing into a hash cannot fail, and these fields always serialize.
        let _ = serde_json::to_writer(&mut hasher, &canonical);
        CacheKey(hasher.hex())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256_hex;

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
    fn key_is_the_hash_of_the_value_canonical_json() {
        // Every combination of the optional fields, against what the key was defined as:
        // sha256 of `serde_json::Value`'s sorted, compact text.
        let inputs = [artifact("z\"q", "2"), artifact("a/é", "1")];
        for aggregate in [None, Some("merge")] {
            for endpoint in [None, Some("http://h:1/v1")] {
                let mut value = serde_json::json!({
                    "inputs": [
                        {"artifactId": "a/é", "contentHash": "1"},
                        {"artifactId": "z\"q", "contentHash": "2"},
                    ],
                    "query": "q\n",
                    "subPrompt": "Review {file}",
                    "model": "m",
                });
                if let Some(a) = aggregate {
                    value["aggregateStrategy"] = a.into();
                }
                if let Some(e) = endpoint {
                    value["endpoint"] = e.into();
                }
                let key = CacheKey::new(&inputs, "q\n", "Review {file}", "m", aggregate, endpoint);
                assert_eq!(
                    key.0,
                    sha256_hex(value.to_string().as_bytes()),
                    "{aggregate:?} {endpoint:?}"
                );
            }
        }
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
