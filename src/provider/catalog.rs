//! What rlm knows about models: the Claude aliases, context windows and prices.
//!
//! Prices are USD per million tokens, as published in November 2026 (see
//! `../shared/PROVIDERS.md`). They change: `.aiwg/aiwg.config` can override or add entries
//! (`rlm.prices`). A model missing from the table is counted at [`CEILING_PRICE`] on the
//! provider's own API (so the cost thresholds still protect the user) and at $0 elsewhere
//! (local servers).

use std::collections::BTreeMap;

/// The date the built-in price table was last checked against the providers' pages.
pub const PRICES_CHECKED: &str = "2026-11";

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

/// Input and output price, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

impl Price {
    /// Cost of a call with these token counts; cached input is billed at a tenth.
    pub fn cost(&self, input_tokens: u64, cached_input_tokens: u64, output_tokens: u64) -> f64 {
        let fresh = input_tokens.saturating_sub(cached_input_tokens) as f64;
        (fresh * self.input + cached_input_tokens as f64 * self.input * 0.1 + output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// Built-in prices, matched by model-id prefix (longest prefix wins).
const PRICES: &[(&str, f64, f64)] = &[
    ("claude-haiku-5", 0.10, 0.50),
    ("claude-sonnet-5", 2.0, 10.0),
    ("claude-opus-5", 4.0, 20.0),
    ("claude-haiku-4", 1.0, 5.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-opus-4", 15.0, 75.0),
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-opus-4-6", 5.0, 25.0),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4o", 2.5, 10.0),
    // List prices of 2025, not re-checked in 2026-11: override them in rlm.prices.
    ("gpt-5", 1.25, 10.0),
    ("gpt-5-mini", 0.25, 2.0),
    ("gpt-5-nano", 0.05, 0.40),
    ("o3", 2.0, 8.0),
    ("o4-mini", 1.10, 4.40),
];

/// What an unlisted model costs on the provider's own API, as far as rlm's estimates and
/// limits are concerned: the priciest entry of the table, so an estimate is never low.
pub const CEILING_PRICE: Price = Price {
    input: 15.0,
    output: 75.0,
};

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
        if let Some(price) = self.overrides.get(model) {
            return Some(*price);
        }
        PRICES
            .iter()
            .filter(|(prefix, _, _)| model.starts_with(prefix))
            .max_by_key(|(prefix, _, _)| prefix.len())
            .map(|&(_, input, output)| Price { input, output })
    }
}

/// The context window of a known model, in tokens.
pub fn context_window(model: &str) -> Option<u64> {
    if model.starts_with("claude-") {
        Some(200_000)
    } else if model.starts_with("gpt-4.1") {
        Some(1_047_576)
    } else if model.starts_with("gpt-4o") {
        Some(128_000)
    } else if model.starts_with("gpt-5") {
        Some(400_000)
    } else if model.starts_with("o3") || model.starts_with("o4") {
        Some(200_000)
    } else {
        None
    }
}

/// Context window assumed for a model rlm does not know: chunks and summary groups are
/// sized for it, and the run says so (`--context-window` gives the real one). It never
/// blocks a unit: the server decides.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 32_000;

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
        assert!(table.lookup("smollm2").is_none());
        assert_eq!(table.lookup("gpt-5-mini").unwrap().input, 0.25);
        let max_listed = PRICES.iter().map(|p| p.2).fold(0.0, f64::max);
        assert_eq!(CEILING_PRICE.output, max_listed, "the ceiling is the priciest entry");
    }

    #[test]
    fn overrides_win() {
        let mut o = BTreeMap::new();
        o.insert(
            "gpt-4.1".to_string(),
            Price {
                input: 1.0,
                output: 1.0,
            },
        );
        assert_eq!(PriceTable::new(o).lookup("gpt-4.1").unwrap().input, 1.0);
    }

    #[test]
    fn cost_bills_cached_input_at_a_tenth() {
        let p = Price {
            input: 10.0,
            output: 20.0,
        };
        let c = p.cost(1_000_000, 500_000, 1_000_000);
        assert!((c - (5.0 + 0.5 + 20.0)).abs() < 1e-9);
    }
}
