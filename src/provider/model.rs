//! The model a run uses, resolved at start-up: its id, context window and price.

use super::catalog::{self, Price, PriceTable, PriceTier};
use super::Usage;

/// Where the run's prices come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceBasis {
    /// The built-in table or `rlm.prices`.
    Listed,
    /// Not listed, on the provider's own API: counted at [`catalog::ceiling_for`].
    Ceiling,
    /// Not listed, on another server (usually local and free): costs count as 0.
    #[default]
    Unknown,
    /// A command-line agent (`--provider command`) bills its own use: rlm cannot count it.
    External,
}

impl PriceBasis {
    /// `listed`, `ceiling`, `unknown` or `external`.
    pub fn name(self) -> &'static str {
        match self {
            PriceBasis::Listed => "listed",
            PriceBasis::Ceiling => "ceiling",
            PriceBasis::Unknown => "unknown",
            PriceBasis::External => "external",
        }
    }

    /// The basis as reports and `--dry-run --json` say it: where the prices come from and,
    /// where a price was counted, whether it was the batch price — `listed_batch` (every
    /// call at the batch price, half of list), `listed_mixed` (some at it, some at list),
    /// `listed` (list price); the same for `ceiling`.
    pub fn shown(self, tier: PriceTier) -> String {
        match (self, tier) {
            (PriceBasis::Listed | PriceBasis::Ceiling, PriceTier::Batch) => format!("{}_batch", self.name()),
            (PriceBasis::Listed | PriceBasis::Ceiling, PriceTier::Mixed) => format!("{}_mixed", self.name()),
            _ => self.name().to_string(),
        }
    }
}

/// Everything rlm knows about the run's model.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelInfo {
    /// The id sent to the provider.
    pub id: String,
    /// `--context-window`, the catalog, or a default used only to size summarize groups.
    pub context_window: u64,
    /// Whether `context_window` is known (flag or catalog). An unknown window never blocks
    /// a file: the server decides, and a refusal is that file's failure.
    pub context_window_known: bool,
    pub price: Option<Price>,
    pub price_basis: PriceBasis,
}

impl ModelInfo {
    /// Resolves window and price for `id`; `official` says the endpoint is the provider's
    /// own API, where an unlisted model still costs money.
    pub fn resolve(id: String, context_window: Option<u64>, prices: &PriceTable, official: bool) -> Self {
        let known_window = context_window.or_else(|| catalog::context_window(&id));
        let (price, price_basis) = match prices.lookup(&id) {
            Some(p) => (Some(p), PriceBasis::Listed),
            None if official => (Some(catalog::ceiling_for(&id)), PriceBasis::Ceiling),
            None => (None, PriceBasis::Unknown),
        };
        ModelInfo {
            context_window: known_window.unwrap_or(catalog::DEFAULT_CONTEXT_WINDOW),
            context_window_known: known_window.is_some(),
            id,
            price,
            price_basis,
        }
    }

    /// What a realtime call with this usage cost (0 when no price is known).
    pub fn cost(&self, usage: Usage) -> f64 {
        self.cost_at(usage, PriceTier::Realtime)
    }

    /// What a call with this usage cost at this tier: cache reads and writes at the model's
    /// cache prices, a batch-API call at half (0 when no price is known).
    pub fn cost_at(&self, usage: Usage, tier: PriceTier) -> f64 {
        self.price.map_or(0.0, |p| p.cost_of(usage, tier))
    }

    /// The most a request of `prompt_bytes` can cost through a provider's batch API, which bills a batch
    /// whole whatever its answers are worth: its input at the upper bound of its tokens,
    /// its output at its `max_tokens`, at the batch price. `--max-cost` holds on the batch
    /// paths by sending only what fits at this price.
    pub fn worst_batch_cost(&self, prompt_bytes: u64, max_tokens: u32) -> f64 {
        let usage = Usage {
            input_tokens: crate::tokens::upper_bound(prompt_bytes),
            output_tokens: u64::from(max_tokens),
            ..Usage::default()
        };
        self.cost_at(usage, PriceTier::Batch)
    }

    /// What the prompt cache saved on a call with this usage (see
    /// [`Price::cache_savings`]; negative when a written prefix was never read).
    pub fn cache_savings(&self, usage: Usage, tier: PriceTier) -> f64 {
        self.price.map_or(0.0, |p| p.cache_savings(usage, tier))
    }

    /// Whether the model runs for free as far as rlm knows (a local server, no price).
    pub fn is_free(&self) -> bool {
        matches!(self.price_basis, PriceBasis::Unknown | PriceBasis::External)
    }

    /// A command-line agent's "model": its cost is its own business.
    pub fn external(id: String, context_window: Option<u64>) -> Self {
        ModelInfo {
            context_window: context_window.unwrap_or(catalog::DEFAULT_CONTEXT_WINDOW),
            context_window_known: context_window.is_some(),
            id,
            price: None,
            price_basis: PriceBasis::External,
        }
    }

    /// A cost as the user reads it (see [`cost_text`]).
    pub fn cost_text(&self, usd: f64) -> String {
        cost_text(self.price_basis, &self.id, usd)
    }
}

/// A cost as the user reads it: dollars; an upper bound for an unlisted model on the
/// official API; and, once, `free` for a model on another server that has no price.
pub fn cost_text(basis: PriceBasis, model: &str, usd: f64) -> String {
    let ceiling = catalog::ceiling_for(model);
    match basis {
        PriceBasis::Unknown => "free (local model, no price listed)".to_string(),
        PriceBasis::External => "unknown (the command's agent bills its own use; rlm cannot count it)".to_string(),
        PriceBasis::Ceiling if usd > 0.0 => format!(
            "{} (an upper bound: no price listed for {model}, counted at ${}/${} per million tokens; \
             add its price under rlm.prices in .aiwg/aiwg.config)",
            crate::money::usd(usd),
            ceiling.input,
            ceiling.output
        ),
        PriceBasis::Listed | PriceBasis::Ceiling => crate::money::usd(usd),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn price_basis_by_listing_and_endpoint() {
        let table = PriceTable::default();
        let listed = ModelInfo::resolve("claude-haiku-5-5".into(), None, &table, true);
        assert_eq!(listed.price_basis, PriceBasis::Listed);
        assert!(listed.context_window_known);
        let ceiling = ModelInfo::resolve("claude-new".into(), None, &table, true);
        assert_eq!(ceiling.price_basis, PriceBasis::Ceiling);
        let local = ModelInfo::resolve("llama3.2".into(), None, &table, false);
        assert_eq!(local.price_basis, PriceBasis::Unknown);
        assert!(!local.context_window_known);
        // The bundled local model's window is known (the one scripts/local-model serves).
        let bundled = ModelInfo::resolve("smollm2".into(), None, &table, false);
        assert!(bundled.context_window_known && bundled.context_window == 8192);
        assert_eq!(bundled.price_basis, PriceBasis::Unknown);
        let usage = Usage {
            input_tokens: 9,
            output_tokens: 9,
            ..Usage::default()
        };
        assert_eq!(local.cost(usage), 0.0);
        assert_eq!(local.cost_at(usage, PriceTier::Batch), 0.0);
        assert!(local.cost_text(0.0).starts_with("free"));
        assert!(ceiling.cost_text(1.0).contains("$15/$75"), "{}", ceiling.cost_text(1.0));
    }

    #[test]
    fn batch_calls_cost_half_and_caching_saves_by_the_table() {
        let table = PriceTable::default();
        let haiku = ModelInfo::resolve("claude-haiku-5-5".into(), None, &table, true);
        let usage = Usage {
            input_tokens: 2_000_000,
            output_tokens: 1_000_000,
            cached_input_tokens: 1_000_000,
            cache_write_tokens: 0,
        };
        let realtime = haiku.cost(usage);
        // 1M fresh at $0.10, 1M read at $0.01, 1M out at $0.50.
        assert!((realtime - 0.61).abs() < 1e-9, "{realtime}");
        assert!((haiku.cost_at(usage, PriceTier::Batch) - 0.305).abs() < 1e-9);
        assert!((haiku.cache_savings(usage, PriceTier::Realtime) - 0.09).abs() < 1e-9);
    }
}
