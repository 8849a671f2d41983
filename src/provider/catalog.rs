//! What rlm knows about models: the Claude aliases, context windows, prompt-cache minimums
//! and prices.
//!
//! Prices are USD per million tokens, as published in November 2026 (see
//! `../shared/PROVIDERS.md`): input, output, prompt-cache reads and (Anthropic) 5-minute
//! cache writes. The providers' batch APIs bill every one of them at half
//! ([`BATCH_DISCOUNT`]). Prices change: `.aiwg/aiwg.config` can override or add entries
//! (`rlm.prices`). A model missing from the table is counted at the priciest entry of its
//! provider ([`ceiling_for`]) on the provider's own API (so the cost thresholds still
//! protect the user) and at $0 elsewhere (local servers).

use std::collections::BTreeMap;

use super::Usage;

/// The date the built-in price table was last checked against the providers' pages.
pub const PRICES_CHECKED: &str = "2026-11";

/// What a batch-API call costs, as a share of the list price (both providers: half).
pub const BATCH_DISCOUNT: f64 = 0.5;

/// Cache reads of a model whose price gives none: a tenth of input (Anthropic's rule, and
/// OpenAI's for the GPT-5 family).
pub const DEFAULT_CACHE_READ_SHARE: f64 = 0.1;

/// Cache writes of a model whose price gives none: Anthropic's 5-minute writes, 1.25× input.
/// (OpenAI reports no writes, so the share never applies to it.)
pub const DEFAULT_CACHE_WRITE_SHARE: f64 = 1.25;

/// Resolves the Claude aliases `haiku`, `sonnet` and `opus` to current model ids; any
/// other string is passed through unchanged.
pub fn resolve_alias(model: &str) -> String {
    match model {
        "haiku" => "claude-haiku-5-5".to_string(),
        "sonnet" => "claude-sonnet-5-5".to_string(),
        "opus" => "claude-opus-5-5".to_string(),
        other => other.to_string(),
    }
}

/// A model's prices, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Prompt tokens read from the cache; `None`: a tenth of input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Prompt tokens written to the cache (Anthropic, 5-minute lifetime); `None`: 1.25×
    /// input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

/// Which of a provider's prices a call is billed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceTier {
    /// A realtime call: the list price.
    #[default]
    Realtime,
    /// A call through the provider's batch API: [`BATCH_DISCOUNT`] of the list price.
    Batch,
    /// Only in the report of `rlm merge`: the merged runs were billed at different tiers.
    /// No call is priced at it.
    Mixed,
}

impl PriceTier {
    /// The share of the list price this tier pays.
    pub fn share(self) -> f64 {
        match self {
            // (`Mixed` prices no call: each was priced at its own tier.)
            PriceTier::Realtime | PriceTier::Mixed => 1.0,
            PriceTier::Batch => BATCH_DISCOUNT,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PriceTier::Realtime => "realtime",
            PriceTier::Batch => "batch",
            PriceTier::Mixed => "mixed",
        }
    }
}

impl Price {
    /// A price with the default cache shares.
    pub const fn new(input: f64, output: f64) -> Self {
        Price {
            input,
            output,
            cache_read: None,
            cache_write: None,
        }
    }

    /// The price of a cache read, per million tokens (a bad override counts as unset).
    pub fn cache_read_price(&self) -> f64 {
        self.cache_read
            .filter(|p| p.is_finite() && *p >= 0.0)
            .unwrap_or(self.input * DEFAULT_CACHE_READ_SHARE)
    }

    /// The price of a cache write, per million tokens (a bad override counts as unset).
    pub fn cache_write_price(&self) -> f64 {
        self.cache_write
            .filter(|p| p.is_finite() && *p >= 0.0)
            .unwrap_or(self.input * DEFAULT_CACHE_WRITE_SHARE)
    }

    /// Cost of a realtime call with these token counts; `cached_input_tokens` are cache
    /// reads (a part of `input_tokens`).
    pub fn cost(&self, input_tokens: u64, cached_input_tokens: u64, output_tokens: u64) -> f64 {
        self.cost_of(
            Usage {
                input_tokens,
                output_tokens,
                cached_input_tokens,
                cache_write_tokens: 0,
            },
            PriceTier::Realtime,
        )
    }

    /// Cost of a call with this usage at this tier: fresh input at the input price, cache
    /// reads and writes at theirs, output at the output price.
    pub fn cost_of(&self, usage: Usage, tier: PriceTier) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - cached);
        let fresh = usage.input_tokens - cached - written;
        let usd = fresh as f64 * self.input
            + cached as f64 * self.cache_read_price()
            + written as f64 * self.cache_write_price()
            + usage.output_tokens as f64 * self.output;
        usd / 1_000_000.0 * tier.share()
    }

    /// What the prompt cache saved on a call with this usage: its cost had every prompt
    /// token been billed as fresh input, less its cost. Negative when the writes cost more
    /// than the reads saved (a prefix written and never read again).
    pub fn cache_savings(&self, usage: Usage, tier: PriceTier) -> f64 {
        let uncached = Usage {
            cached_input_tokens: 0,
            cache_write_tokens: 0,
            ..usage
        };
        self.cost_of(uncached, tier) - self.cost_of(usage, tier)
    }
}

/// A row of the built-in table: USD per million tokens for input, output, cache reads and
/// (Anthropic) 5-minute cache writes.
const fn row(prefix: &'static str, input: f64, output: f64, read: f64, write: f64) -> (&'static str, Price) {
    (
        prefix,
        Price {
            input,
            output,
            cache_read: Some(read),
            cache_write: Some(write),
        },
    )
}

/// Built-in prices, matched by model-id prefix (longest prefix wins). OpenAI bills no
/// cache writes (it reports none); its rows give input as the write price.
const PRICES: &[(&str, Price)] = &[
    // Anthropic, 2026-11: writes 1.25× input, reads 0.1× input.
    row("claude-fable-5", 10.0, 50.0, 1.0, 12.5),
    // The Opus 5.5 page lists reads at $0.20; 0.1× input is kept so an estimate is never
    // low.
    row("claude-opus-5-5", 4.0, 20.0, 0.40, 5.0),
    row("claude-opus-5", 5.0, 25.0, 0.50, 6.25),
    row("claude-sonnet-5", 2.0, 10.0, 0.20, 2.50),
    // Haiku 5.5 up to 100,000 prompt tokens (5× above that).
    row("claude-haiku-5", 0.10, 0.50, 0.01, 0.125),
    row("claude-opus-4-5", 5.0, 25.0, 0.50, 6.25),
    row("claude-opus-4-6", 5.0, 25.0, 0.50, 6.25),
    row("claude-opus-4", 15.0, 75.0, 1.50, 18.75),
    row("claude-sonnet-4", 3.0, 15.0, 0.30, 3.75),
    row("claude-haiku-4", 1.0, 5.0, 0.10, 1.25),
    // OpenAI, 2026-11: cached input 0.1× (GPT-5 family), 0.25× (GPT-4.1, o3, o4-mini),
    // 0.5× (GPT-4o); the pro models have no cache discount.
    row("gpt-5.5-pro", 30.0, 180.0, 30.0, 30.0),
    row("gpt-5.5", 5.0, 30.0, 0.50, 5.0),
    row("gpt-5.4-pro", 30.0, 180.0, 30.0, 30.0),
    row("gpt-5.4-mini", 0.75, 4.50, 0.075, 0.75),
    row("gpt-5.4-nano", 0.20, 1.25, 0.02, 0.20),
    row("gpt-5.4", 2.50, 15.0, 0.25, 2.50),
    row("gpt-5.3", 1.75, 14.0, 0.175, 1.75),
    row("gpt-5.2", 1.75, 14.0, 0.175, 1.75),
    row("gpt-5.1", 1.25, 10.0, 0.125, 1.25),
    row("gpt-5-mini", 0.25, 2.0, 0.025, 0.25),
    row("gpt-5-nano", 0.05, 0.40, 0.005, 0.05),
    row("gpt-5", 1.25, 10.0, 0.125, 1.25),
    row("gpt-4.1-mini", 0.40, 1.60, 0.10, 0.40),
    row("gpt-4.1-nano", 0.10, 0.40, 0.025, 0.10),
    row("gpt-4.1", 2.0, 8.0, 0.50, 2.0),
    row("gpt-4o-mini", 0.15, 0.60, 0.075, 0.15),
    row("gpt-4o", 2.5, 10.0, 1.25, 2.5),
    row("o3", 2.0, 8.0, 0.50, 2.0),
    row("o4-mini", 1.10, 4.40, 0.275, 1.10),
];

/// The built-in price of `model` (longest matching prefix), without overrides.
fn listed(model: &str) -> Option<Price> {
    PRICES
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, price)| price)
}

/// What an unlisted model costs on the provider's own API, as far as rlm's estimates and
/// limits are concerned: the priciest entry of its provider's rows (Claude models by their
/// `claude-` prefix, every other id by the priciest row of all), so an estimate is never
/// low.
pub fn ceiling_for(model: &str) -> Price {
    let claude = model.starts_with("claude-");
    PRICES
        .iter()
        .filter(|(prefix, _)| !claude || prefix.starts_with("claude-"))
        .map(|&(_, price)| price)
        .fold(Price::new(0.0, 0.0), |top, p| Price {
            input: top.input.max(p.input),
            output: top.output.max(p.output),
            cache_read: Some(top.cache_read_price().max(p.cache_read_price())),
            cache_write: Some(top.cache_write_price().max(p.cache_write_price())),
        })
}

/// The price table in force: built-in entries plus the user's overrides.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PriceTable {
    overrides: BTreeMap<String, Price>,
}

impl PriceTable {
    pub fn new(overrides: BTreeMap<String, Price>) -> Self {
        PriceTable { overrides }
    }

    /// The price of `model`, or `None` when neither the overrides nor the table know it.
    pub fn lookup(&self, model: &str) -> Option<Price> {
        self.overrides.get(model).copied().or_else(|| listed(model))
    }
}

/// The context window of a known model, in tokens.
pub fn context_window(model: &str) -> Option<u64> {
    const FIFTH_GENERATION: [&str; 4] = ["claude-haiku-5", "claude-sonnet-5", "claude-opus-5", "claude-fable-5"];
    if FIFTH_GENERATION.iter().any(|p| model.starts_with(p)) {
        Some(1_000_000)
    } else if model.starts_with("claude-") {
        Some(200_000)
    } else if model.starts_with("gpt-4.1") {
        Some(1_047_576)
    } else if model.starts_with("gpt-4o") {
        Some(128_000)
    } else if model.starts_with("gpt-5.4") || model.starts_with("gpt-5.5") {
        Some(1_000_000)
    } else if model.starts_with("gpt-5") {
        Some(400_000)
    } else if model.starts_with("o3") || model.starts_with("o4") {
        Some(200_000)
    } else {
        super::bundled_model::BundledModel::recognize(model).map(|m| m.context_window)
    }
}

/// Context window assumed for a model rlm does not know: chunks and summary groups are
/// sized for it, and the run says so (`--context-window` gives the real one). It never
/// blocks a unit: the server decides.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 32_000;

/// Anthropic's minimum cacheable prompt prefix, in tokens, by model-id prefix (longest
/// wins). A shorter prefix marked for caching is not cached (no error, no charge): the
/// marker would only waste one of the four breakpoints.
const MIN_CACHEABLE: &[(&str, u64)] = &[
    ("claude-opus-5", 512),
    ("claude-fable-5", 512),
    ("claude-sonnet-5", 1024),
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-7", 2048),
    ("claude-haiku-4", 4096),
    ("claude-haiku-3", 2048),
];

/// The smallest prompt prefix the model caches, in tokens. Unlisted models (Haiku 5.5,
/// whose page gives no figure, and any other id) get 1,024: a marker on a prefix below
/// the real minimum costs nothing, a missing one on a prefix above it costs the saving.
pub fn min_cacheable_tokens(model: &str) -> u64 {
    MIN_CACHEABLE
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(DEFAULT_MIN_CACHEABLE, |&(_, tokens)| tokens)
}

/// [`min_cacheable_tokens`] of a model the table does not list (also OpenAI's minimum).
pub const DEFAULT_MIN_CACHEABLE: u64 = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_resolve_and_others_pass_through() {
        assert_eq!(resolve_alias("sonnet"), "claude-sonnet-5-5");
        assert_eq!(resolve_alias("llama3:8b"), "llama3:8b");
    }

    #[test]
    fn longest_prefix_wins() {
        let table = PriceTable::default();
        assert_eq!(table.lookup("gpt-4.1-mini-2025").unwrap().input, 0.40);
        assert_eq!(table.lookup("gpt-4.1").unwrap().input, 2.0);
        assert_eq!(table.lookup("claude-opus-4-6").unwrap().input, 5.0);
        assert_eq!(table.lookup("claude-opus-4-1").unwrap().input, 15.0);
        assert!(table.lookup("smollm2").is_none());
        assert_eq!(table.lookup("gpt-5-mini").unwrap().input, 0.25);
        assert_eq!(table.lookup("gpt-5.4-mini").unwrap().input, 0.75);
        assert_eq!(table.lookup("gpt-5.5").unwrap().output, 30.0);
        assert_eq!(table.lookup("claude-opus-5-5").unwrap().input, 4.0);
        assert_eq!(table.lookup("claude-opus-5").unwrap().input, 5.0);
    }

    #[test]
    fn the_ceiling_is_the_priciest_entry_of_the_provider() {
        let claude = ceiling_for("claude-new");
        let max_claude = PRICES
            .iter()
            .filter(|(p, _)| p.starts_with("claude-"))
            .map(|(_, p)| p.output)
            .fold(0.0, f64::max);
        assert_eq!(claude.output, max_claude);
        assert_eq!((claude.input, claude.output), (15.0, 75.0));
        let any = ceiling_for("gpt-6");
        assert_eq!(any.output, PRICES.iter().map(|(_, p)| p.output).fold(0.0, f64::max));
        for (_, p) in PRICES {
            assert!(p.input <= any.input && p.cache_read_price() <= any.cache_read_price());
        }
    }

    #[test]
    fn overrides_win_and_default_their_cache_prices() {
        let mut o = BTreeMap::new();
        o.insert("gpt-4.1".to_string(), Price::new(1.0, 1.0));
        let price = PriceTable::new(o).lookup("gpt-4.1").unwrap();
        assert_eq!(price.input, 1.0);
        assert!((price.cache_read_price() - 0.1).abs() < 1e-12);
        assert!((price.cache_write_price() - 1.25).abs() < 1e-12);
        let bad = Price {
            cache_read: Some(-1.0),
            ..Price::new(2.0, 2.0)
        };
        assert!((bad.cache_read_price() - 0.2).abs() < 1e-12, "a bad override is unset");
        let parsed: Price = serde_json::from_str(r#"{"input":3,"output":4,"cache_read":0.5}"#).unwrap();
        assert_eq!((parsed.cache_read, parsed.cache_write), (Some(0.5), None));
    }

    #[test]
    fn cached_reads_are_billed_at_the_model_s_cache_price() {
        let table = PriceTable::default();
        let million = |input, cached| Usage {
            input_tokens: input,
            cached_input_tokens: cached,
            ..Usage::default()
        };
        // GPT-4.1: cached input at 0.25× ($0.50 of $2).
        let p = table.lookup("gpt-4.1").unwrap();
        assert!((p.cost_of(million(1_000_000, 1_000_000), PriceTier::Realtime) - 0.5).abs() < 1e-9);
        // GPT-4o: 0.5×; GPT-5: 0.1×.
        let p = table.lookup("gpt-4o").unwrap();
        assert!((p.cost_of(million(1_000_000, 1_000_000), PriceTier::Realtime) - 1.25).abs() < 1e-9);
        let p = table.lookup("gpt-5").unwrap();
        assert!((p.cost_of(million(1_000_000, 1_000_000), PriceTier::Realtime) - 0.125).abs() < 1e-9);
        // The three-argument form keeps its meaning: (input, cached, output).
        let p = Price::new(10.0, 20.0);
        let c = p.cost(1_000_000, 500_000, 1_000_000);
        assert!((c - (5.0 + 0.5 + 20.0)).abs() < 1e-9);
    }

    #[test]
    fn anthropic_writes_cost_a_quarter_more_and_reads_a_tenth() {
        let p = PriceTable::default().lookup("claude-sonnet-5-5").unwrap();
        let usage = Usage {
            input_tokens: 3_000_000,
            output_tokens: 1_000_000,
            cached_input_tokens: 1_000_000,
            cache_write_tokens: 1_000_000,
        };
        // 1M fresh at $2, 1M read at $0.20, 1M written at $2.50, 1M out at $10.
        let realtime = p.cost_of(usage, PriceTier::Realtime);
        assert!((realtime - (2.0 + 0.2 + 2.5 + 10.0)).abs() < 1e-9, "{realtime}");
        let batch = p.cost_of(usage, PriceTier::Batch);
        assert!((batch - realtime / 2.0).abs() < 1e-9, "batch is half of list");
        // Saved: the read (2.0 - 0.2) less the write premium (2.5 - 2.0).
        let saved = p.cache_savings(usage, PriceTier::Realtime);
        assert!((saved - (1.8 - 0.5)).abs() < 1e-9, "{saved}");
        assert!((p.cache_savings(usage, PriceTier::Batch) - saved / 2.0).abs() < 1e-9);
        let written_only = Usage {
            cached_input_tokens: 0,
            ..usage
        };
        assert!(
            p.cache_savings(written_only, PriceTier::Realtime) < 0.0,
            "a write never read costs"
        );
    }

    #[test]
    fn counts_beyond_the_input_never_go_negative() {
        // A malformed usage (more cached than input) is clamped, not underflowed.
        let p = Price::new(1.0, 1.0);
        let odd = Usage {
            input_tokens: 10,
            output_tokens: 0,
            cached_input_tokens: 30,
            cache_write_tokens: 5,
        };
        let c = p.cost_of(odd, PriceTier::Realtime);
        assert!((c - 10.0 * 0.1 / 1_000_000.0).abs() < 1e-15, "{c}");
    }

    #[test]
    fn context_windows_and_cache_minimums() {
        assert_eq!(context_window("claude-haiku-5-5"), Some(1_000_000));
        assert_eq!(context_window("claude-haiku-4-5"), Some(200_000));
        assert_eq!(context_window("gpt-5.4-mini"), Some(1_000_000));
        assert_eq!(context_window("gpt-5-mini"), Some(400_000));
        assert_eq!(min_cacheable_tokens("claude-haiku-4-5-20251001"), 4096);
        assert_eq!(min_cacheable_tokens("claude-opus-4-7"), 2048);
        assert_eq!(min_cacheable_tokens("claude-opus-4-1"), 1024);
        assert_eq!(min_cacheable_tokens("claude-opus-5-5"), 512);
        assert_eq!(min_cacheable_tokens("claude-sonnet-5-5"), 1024);
        assert_eq!(min_cacheable_tokens("mystery"), DEFAULT_MIN_CACHEABLE);
    }
}
