//! The bundled local model (issue 25): SmolLM2-135M-Instruct, which `scripts/local-model`
//! serves through llama-cpp-python's OpenAI-compatible server under the name `smollm2`.
//!
//! rlm knows it by the name the server reports for it (`GET /v1/models` lists `smollm2`,
//! the alias the script starts it with; without the alias, the GGUF file's name) or the
//! name given with `--model` — never by its port, which changes with every start. Known,
//! it gets the window the script serves (8,192 tokens, the model's trained maximum) and an
//! answer budget that suits it: at the general default of 4,096 tokens a 135M model
//! rambles for pages before it stops. And the run says, wherever its answers are read,
//! that they come from a toy: they show the pipeline working, not findings to act on.

/// What rlm knows of the bundled model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundledModel {
    /// Its full name, for people.
    pub name: &'static str,
    /// The context window `scripts/local-model` serves it with (`RLM_LOCAL_MODEL_CTX`'s
    /// default): prompt and answer together.
    pub context_window: u64,
    /// The `--max-tokens` it gets when none is given.
    pub max_tokens: u32,
}

/// The one model `scripts/local-model` serves.
pub const SMOLLM2_135M: BundledModel = BundledModel {
    name: "SmolLM2-135M-Instruct",
    context_window: 8192,
    max_tokens: 512,
};

/// The alias `scripts/local-model` gives the model (`--model_alias`).
const ALIAS: &str = "smollm2";

impl BundledModel {
    /// The bundled model, when `model_id` (as the server lists it, or as `--model` names it)
    /// is it: the script's alias, or the GGUF file's name a server started without it lists.
    pub fn recognize(model_id: &str) -> Option<BundledModel> {
        let id = model_id.to_ascii_lowercase();
        (id == ALIAS || id.contains("smollm2-135m-instruct")).then_some(SMOLLM2_135M)
    }

    /// One sentence for the report, the aggregate and the terminal: whose answers these are.
    pub fn caution(&self) -> String {
        format!(
            "These answers come from {}, the bundled local model: it has 135 million parameters, so it shows the \
             pipeline working, not answers to rely on (expect invented or missing items; its findings are written as \
             notes, never errors). For real answers use a real model (an API key, or --base-url to a larger local \
             model).",
            self.name
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_by_the_name_the_server_lists_or_is_given() {
        assert_eq!(BundledModel::recognize("smollm2"), Some(SMOLLM2_135M));
        assert_eq!(BundledModel::recognize("SmolLM2"), Some(SMOLLM2_135M));
        assert_eq!(
            BundledModel::recognize("/x/.local-model/models/SmolLM2-135M-Instruct.Q4_1.gguf"),
            Some(SMOLLM2_135M)
        );
        for other in ["smollm2:1.7b", "mock-model", "llama3.2", "claude-haiku-4-5"] {
            assert_eq!(BundledModel::recognize(other), None, "{other}");
        }
    }
}
