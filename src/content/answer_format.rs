//! Whether the user's sub-prompt asks for its own output format. When it does, that format
//! wins: the analyst prompt adds only the content-type context, not the findings schema,
//! and a batch of small files is answered in JSON or Markdown sections to match.

use serde::Serialize;

/// The shape an analyst's answer should take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerFormat {
    /// The user asked for no format: the seed's findings JSON.
    Findings,
    /// The user asked for JSON of their own shape.
    OwnJson,
    /// The user asked for another format: a list, a table, yes/no, a number…
    OwnText,
}

impl AnswerFormat {
    /// The format `sub_prompt` asks for.
    pub fn of(sub_prompt: &str) -> AnswerFormat {
        let p = format!(" {} ", sub_prompt.to_lowercase());
        let p = p.as_str();
        // A JSON example in the prompt (`Return {"count": N}`) is a format of its own.
        if p.contains("{\"") || p.contains("{'") || JSON_PHRASES.iter().any(|phrase| p.contains(phrase)) {
            AnswerFormat::OwnJson
        } else if TEXT_PHRASES.iter().any(|phrase| p.contains(phrase)) {
            AnswerFormat::OwnText
        } else {
            AnswerFormat::Findings
        }
    }

    /// Whether the answer must be JSON (and can be parsed as such).
    pub fn is_json(self) -> bool {
        self != AnswerFormat::OwnText
    }
}

/// What one answer (one file's answer, in a batch) must be: the format the user's prompt
/// asks for, or — under `--schema` — the user's schema, which wins over everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// The analyst's findings JSON.
    Findings,
    /// JSON of the user's own shape (their prompt shows or names it).
    OwnJson,
    /// Another format of the user's: a list, a table, a number…
    OwnText,
    /// `--schema`.
    Schema,
}

impl Shape {
    /// The shape of the answers to `sub_prompt`, with or without `--schema`.
    pub fn of(sub_prompt: &str, schema: bool) -> Shape {
        if schema {
            return Shape::Schema;
        }
        match AnswerFormat::of(sub_prompt) {
            AnswerFormat::Findings => Shape::Findings,
            AnswerFormat::OwnJson => Shape::OwnJson,
            AnswerFormat::OwnText => Shape::OwnText,
        }
    }
}

/// Whether `sub_prompt` asks for its own output format (JSON, a list, yes/no, a table…).
pub fn asks_for_format(sub_prompt: &str) -> bool {
    AnswerFormat::of(sub_prompt) != AnswerFormat::Findings
}

// Phrases, not bare words: "find anomalies in this JSON" names the input, not the output.
const JSON_PHRASES: &[&str] = &[
    "as json",
    "in json",
    "json object",
    "json array",
    "json list",
    "return json",
    "output json",
    "json format",
    "json output",
    "valid json",
    "json only",
    "only json",
    "json with",
    "json:",
    "as jsonl",
    "reply in json",
    "json schema",
];

const TEXT_PHRASES: &[&str] = &[
    " list ",
    " list:",
    "as a list",
    "bullet",
    "numbered",
    "checklist",
    "as a table",
    "a table",
    "markdown table",
    "table with",
    "yes or no",
    "yes/no",
    "true or false",
    "true/false",
    "one word",
    "single word",
    "one line",
    "one sentence",
    "single sentence",
    "single number",
    "just the number",
    "only the number",
    "a number",
    " as csv",
    " in csv",
    "csv format",
    "as yaml",
    "in yaml",
    "yaml format",
    "output format",
    "in the format",
    "format:",
    "respond with",
    "reply with",
    "answer with",
    "return only",
    "output only",
    "respond only",
    "answer only",
    "enumerate",
    "as markdown",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_questions_get_the_findings_schema() {
        for p in [
            "Review this module for security issues and code quality",
            "What errors occurred and are there any patterns in the failures?",
            "Analyze customer distribution by region and identify anomalies",
            "Find schema inconsistencies in this JSON",
            "Check this CSV export for data quality problems",
            "Is the listener closed on shutdown?",
        ] {
            assert_eq!(AnswerFormat::of(p), AnswerFormat::Findings, "{p}");
            assert!(!asks_for_format(p));
        }
    }

    #[test]
    fn json_requests_and_examples() {
        for p in [
            "Count TODOs in {file}. Return {\"count\": N}",
            "Summarize the module as JSON with keys name and purpose",
            "Return a JSON array of exported functions",
            "Give the result in JSON format",
        ] {
            assert_eq!(AnswerFormat::of(p), AnswerFormat::OwnJson, "{p}");
            assert!(AnswerFormat::of(p).is_json());
        }
    }

    #[test]
    fn other_formats() {
        for p in [
            "List exports in {file}",
            "Answer yes or no: does this file use unsafe?",
            "Give a markdown table of functions and their callers",
            "Reply with a single number: the count of TODO comments",
            "Summarize in one sentence",
            "Bullet points of the main risks",
        ] {
            assert_eq!(AnswerFormat::of(p), AnswerFormat::OwnText, "{p}");
            assert!(!AnswerFormat::of(p).is_json());
        }
    }
}
