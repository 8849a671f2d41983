//! Token counts without a tokenizer: one rule for every size decision, another for money.
//!
//! Sizes (does a chunk fit the context budget? is a unit blocked?) use [`upper_bound`]:
//! three bytes a token, which over-counts English prose and code (about four bytes a
//! token) so that a unit planned to fit is never rejected by the provider. Every chunker
//! and the block check use this same function: a planned chunk is never blocked.
//! Estimates of cost use [`expected`] (four bytes a token), which is closer on average.
//! What a provider counted for a call is its [`Usage`].

/// Bytes per token assumed when deciding what fits.
pub const BYTES_PER_TOKEN_BOUND: u64 = 3;

/// Bytes per token assumed when estimating cost.
pub const BYTES_PER_TOKEN_EXPECTED: u64 = 4;

/// The most tokens `bytes` bytes of text are taken to be when deciding what fits.
pub fn upper_bound(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN_BOUND)
}

/// The most bytes that fit in `tokens` tokens by [`upper_bound`]'s rule.
pub fn bytes_within(tokens: u64) -> u64 {
    tokens.saturating_mul(BYTES_PER_TOKEN_BOUND)
}

/// The tokens `bytes` bytes of text are expected to be, for cost estimates.
pub fn expected(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN_EXPECTED)
}

/// Token usage of one call. `input_tokens` counts every prompt token, cached or not.
/// `cached_input_tokens` (read from the prompt cache) and `cache_write_tokens` (written to
/// it, Anthropic only) are the parts of it that are billed at other prices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache (Anthropic
    /// `cache_read_input_tokens`, OpenAI `prompt_tokens_details.cached_tokens`).
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the prompt cache (Anthropic `cache_creation_input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }

    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_never_below_the_expectation_and_round_trips() {
        for bytes in [0, 1, 2, 3, 4, 999, 1_000_000] {
            assert!(upper_bound(bytes) >= expected(bytes), "{bytes}");
            assert!(upper_bound(bytes_within(upper_bound(bytes))) == upper_bound(bytes));
            assert!(bytes_within(upper_bound(bytes)) >= bytes);
        }
    }
}
