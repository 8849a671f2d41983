//! The mock's prompt caches: the usage fields of a provider that caches prompt prefixes.
//!
//! Anthropic: the prefix up to the last block that carries `cache_control` (tools, then
//! system, then the messages' blocks, in order) is cached when it is at least the minimum
//! (1,024 tokens by default, at the mock's 4 characters a token): the first request with
//! it reports `cache_creation_input_tokens`, every later one `cache_read_input_tokens`,
//! and `input_tokens` the rest. Always on: only a request with a marker is affected.
//!
//! OpenAI: off unless [`MockLlm::set_openai_prompt_cache`] turns it on (every other test's
//! numbers stay as they were). Then, as OpenAI does by itself, the longest prefix of the
//! prompt (system then user text) seen before, in steps of 128 tokens from 1,024, is
//! reported as `prompt_tokens_details.cached_tokens`.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Api, MockLlm, State};

/// Characters a token, as the mock counts them.
const CHARS_PER_TOKEN: usize = 4;
/// OpenAI caches in steps of 128 tokens.
const OPENAI_STEP: usize = 128 * CHARS_PER_TOKEN;

#[derive(Default)]
pub(super) struct PromptCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Anthropic prefixes written.
    anthropic: HashSet<[u8; 32]>,
    /// Prefixes of OpenAI prompts seen, at each step.
    openai: HashSet<[u8; 32]>,
    openai_enabled: bool,
    /// Smallest cached prefix, in tokens; `None` for 1,024.
    min_tokens: Option<u64>,
    writes: usize,
    reads: usize,
}

impl PromptCache {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the cache did for one request, in tokens.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct CacheUsage {
    pub read: u64,
    pub write: u64,
    /// Whether to report `prompt_tokens_details` (OpenAI caching on).
    pub openai_details: bool,
}

impl MockLlm {
    /// Turns OpenAI's automatic prompt caching on (off by default).
    pub fn set_openai_prompt_cache(&self, on: bool) {
        self.state.prompt_cache.lock().openai_enabled = on;
    }

    /// The smallest prefix the mock caches, in its tokens (4 characters each; 1,024 by
    /// default, for both providers).
    pub fn set_min_cacheable_tokens(&self, tokens: u64) {
        self.state.prompt_cache.lock().min_tokens = Some(tokens);
    }

    /// Cache writes and reads served so far (requests that reported any).
    pub fn prompt_cache_counts(&self) -> (usize, usize) {
        let inner = self.state.prompt_cache.lock();
        (inner.writes, inner.reads)
    }
}

/// The cache's part in the usage of a request with this body.
pub(super) fn usage(state: &State, api: Api, body: &Value) -> CacheUsage {
    let mut inner = state.prompt_cache.lock();
    let min_chars = inner.min_tokens.unwrap_or(1024) as usize * CHARS_PER_TOKEN;
    let usage = match api {
        Api::Anthropic => anthropic(&mut inner, body, min_chars),
        Api::OpenAi if inner.openai_enabled => openai(&mut inner, body, min_chars),
        Api::OpenAi => CacheUsage::default(),
    };
    if usage.write > 0 {
        inner.writes += 1;
    }
    if usage.read > 0 {
        inner.reads += 1;
    }
    usage
}

fn anthropic(inner: &mut Inner, body: &Value, min_chars: usize) -> CacheUsage {
    // The blocks in prefix order: the tools, the system, each message's content.
    let mut hasher = Sha256::new();
    hasher.update(body.get("model").map(Value::to_string).unwrap_or_default());
    if let Some(tools) = body.get("tools") {
        hasher.update(tools.to_string());
    }
    let mut chars = 0;
    let mut cached: Option<(usize, Sha256)> = None;
    let mut blocks: Vec<&Value> = Vec::new();
    let system = body.get("system");
    let messages = body.get("messages").and_then(Value::as_array);
    for content in system
        .into_iter()
        .chain(messages.into_iter().flatten().filter_map(|m| m.get("content")))
    {
        match content {
            Value::Array(items) => blocks.extend(items),
            other => blocks.push(other),
        }
    }
    for block in blocks {
        let text = match block {
            Value::String(s) => s.as_str(),
            other => other.get("text").and_then(Value::as_str).unwrap_or(""),
        };
        hasher.update(text.as_bytes());
        hasher.update([0u8]);
        chars += text.chars().count();
        if block.get("cache_control").is_some() {
            cached = Some((chars, hasher.clone()));
        }
    }
    let Some((prefix_chars, prefix)) = cached.filter(|(c, _)| *c >= min_chars) else {
        return CacheUsage::default();
    };
    let tokens = prefix_chars.div_ceil(CHARS_PER_TOKEN) as u64;
    let key: [u8; 32] = prefix.finalize().into();
    if inner.anthropic.insert(key) {
        CacheUsage {
            write: tokens,
            ..CacheUsage::default()
        }
    } else {
        CacheUsage {
            read: tokens,
            ..CacheUsage::default()
        }
    }
}

fn openai(inner: &mut Inner, body: &Value, min_chars: usize) -> CacheUsage {
    let mut prompt = String::new();
    prompt.push_str(&body.get("model").map(Value::to_string).unwrap_or_default());
    for message in body.get("messages").and_then(Value::as_array).into_iter().flatten() {
        if let Some(Value::String(text)) = message.get("content") {
            prompt.push_str(text);
            prompt.push('\u{0}');
        }
    }
    let bytes = prompt.as_bytes();
    let mut hasher = Sha256::new();
    let mut longest = 0;
    let mut missed = false;
    let mut at = 0;
    while at + OPENAI_STEP <= bytes.len() {
        hasher.update(&bytes[at..at + OPENAI_STEP]);
        at += OPENAI_STEP;
        let key: [u8; 32] = hasher.clone().finalize().into();
        let seen = !inner.openai.insert(key);
        if seen && !missed && at >= min_chars {
            longest = at;
        }
        missed |= !seen;
    }
    CacheUsage {
        read: (longest / CHARS_PER_TOKEN) as u64,
        write: 0,
        openai_details: true,
    }
}
