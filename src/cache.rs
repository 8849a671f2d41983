//! The content-addressed result cache under `.aiwg/rlm/cache/`.
//!
//! Key = sha256 over the canonical JSON (sorted keys, no whitespace) of the seed's
//! `{inputs:[{artifactId, contentHash}], query, subPrompt, model, aggregateStrategy}`, inputs
//! sorted by path. A changed file misses; an unchanged one hits. Entries live in a
//! versioned bucket (`results-v1/ab/<key>.json`) and are written atomically, so a format
//! change never reads old data wrongly and a crash never leaves half an entry.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fs_atomic::write_atomic;
use crate::input::sha256_hex;
use crate::provider::Usage;

/// The bucket name; bump it when [`CacheEntry`] changes incompatibly.
const BUCKET: &str = "results-v1";

/// One input of a cached call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRef {
    #[serde(rename = "artifactId")]
    pub artifact_id: String,
    #[serde(rename = "contentHash")]
    pub content_hash: String,
}

/// The hex sha256 that addresses one cached result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey(pub String);

impl CacheKey {
    /// The seed's key over these fields.
    pub fn new(inputs: &[ArtifactRef], query: &str, sub_prompt: &str, model: &str, aggregate: &str) -> Self {
        let mut inputs = inputs.to_vec();
        inputs.sort_by(|a, b| a.artifact_id.cmp(&b.artifact_id));
        // serde_json's map is a BTreeMap (no `preserve_order`), so keys come out sorted and
        // `to_string` is canonical.
        let canonical = serde_json::json!({
            "inputs": inputs,
            "query": query,
            "subPrompt": sub_prompt,
            "model": model,
            "aggregateStrategy": aggregate,
        })
        .to_string();
        CacheKey(sha256_hex(canonical.as_bytes()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A cached result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheEntry {
    pub key: String,
    pub model: String,
    pub inputs: Vec<ArtifactRef>,
    pub text: String,
    pub usage: Usage,
    pub truncated: bool,
    /// The output limit the answer was produced under: a truncated answer is only reused
    /// by runs that allow no more tokens than that.
    pub max_tokens: u32,
    pub created_unix: u64,
}

/// The cache rooted at `.aiwg/rlm/cache`.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    pub fn new(rlm_dir: &Path) -> Self {
        Cache {
            root: rlm_dir.join("cache").join(BUCKET),
        }
    }

    fn path(&self, key: &CacheKey) -> PathBuf {
        self.root.join(&key.0[..2]).join(format!("{}.json", key.0))
    }

    /// The entry for `key`, if present, readable and usable under `max_tokens`. A corrupt
    /// entry is a miss (and is overwritten by the next result).
    pub fn get(&self, key: &CacheKey, max_tokens: u32) -> Option<CacheEntry> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        let entry: CacheEntry = serde_json::from_slice(&bytes).ok()?;
        (entry.key == key.0 && (!entry.truncated || max_tokens <= entry.max_tokens)).then_some(entry)
    }

    /// Stores an entry atomically.
    pub fn put(&self, entry: &CacheEntry) -> std::io::Result<()> {
        let key = CacheKey(entry.key.clone());
        let path = self.path(&key);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let bytes = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
        write_atomic(&path, &bytes)
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
        let a = CacheKey::new(&[artifact("a", "1"), artifact("b", "2")], "q", "p", "m", "concat");
        let b = CacheKey::new(&[artifact("b", "2"), artifact("a", "1")], "q", "p", "m", "concat");
        let c = CacheKey::new(&[artifact("a", "1"), artifact("b", "3")], "q", "p", "m", "concat");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.0.len(), 64);
    }

    #[test]
    fn key_matches_the_canonical_json() {
        let key = CacheKey::new(&[artifact("a.ts", "h")], "q", "p", "m", "merge");
        let canonical = r#"{"aggregateStrategy":"merge","inputs":[{"artifactId":"a.ts","contentHash":"h"}],"model":"m","query":"q","subPrompt":"p"}"#;
        assert_eq!(key.0, sha256_hex(canonical.as_bytes()));
    }

    #[test]
    fn round_trip_and_truncation_rule() {
        let dir = std::env::temp_dir().join(format!("rlm-cache-{}", std::process::id()));
        let cache = Cache::new(&dir);
        let key = CacheKey::new(&[artifact("a", "1")], "q", "p", "m", "concat");
        assert!(cache.get(&key, 100).is_none());
        let entry = CacheEntry {
            key: key.0.clone(),
            model: "m".into(),
            inputs: vec![artifact("a", "1")],
            text: "result".into(),
            usage: Usage {
                input_tokens: 3,
                output_tokens: 4,
                cached_input_tokens: 0,
            },
            truncated: true,
            max_tokens: 100,
            created_unix: 0,
        };
        cache.put(&entry).unwrap();
        assert_eq!(cache.get(&key, 100).unwrap().text, "result");
        assert!(
            cache.get(&key, 200).is_none(),
            "a truncated answer must not satisfy a larger limit"
        );
    }
}
