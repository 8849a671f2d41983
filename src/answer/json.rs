//! Finding the JSON in a model's answer — the one place it is done.
//!
//! Models wrap JSON in prose or code fences however they are asked not to. A value is
//! found, in this order: the whole answer; every fenced block whose info string is empty
//! or names JSON; else the outermost `{…}` or `[…]` span.

use serde_json::Value;

/// Every JSON value the answer holds, by the rules of the module doc (several only when
/// several fenced blocks hold JSON).
pub fn json_values(answer: &str) -> Vec<Value> {
    let t = answer.trim();
    if let Ok(v) = serde_json::from_str::<Value>(t) {
        return vec![v];
    }
    let fenced: Vec<Value> = fenced_blocks(t)
        .filter_map(|b| serde_json::from_str::<Value>(b.trim()).ok())
        .collect();
    if !fenced.is_empty() {
        return fenced;
    }
    for (open, close) in [('{', '}'), ('[', ']')] {
        if let (Some(start), Some(end)) = (t.find(open), t.rfind(close)) {
            if start < end {
                if let Ok(v) = serde_json::from_str::<Value>(&t[start..=end]) {
                    return vec![v];
                }
            }
        }
    }
    Vec::new()
}

/// Why an answer holds no JSON value: the parser's message for the whole answer, which
/// the model is shown when it is asked again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoJson(String);

/// The answer's JSON value (the first, when several fenced blocks hold one), or why the
/// answer is not JSON.
pub fn find_json(answer: &str) -> Result<Value, NoJson> {
    match json_values(answer).into_iter().next() {
        Some(v) => Ok(v),
        None => Err(NoJson(
            serde_json::from_str::<Value>(answer.trim())
                .err()
                .map_or_else(|| "no JSON value".to_string(), |e| e.to_string()),
        )),
    }
}

/// The bodies of the fenced code blocks whose info string is empty or names JSON.
fn fenced_blocks(answer: &str) -> impl Iterator<Item = &str> {
    let mut blocks = Vec::new();
    let mut rest = answer;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let Some(line_end) = after.find('\n') else { break };
        let info = after[..line_end].trim().to_ascii_lowercase();
        let body = &after[line_end + 1..];
        let Some(close) = body.find("```") else { break };
        if info.is_empty() || info == "json" || info == "jsonc" || info == "json5" {
            blocks.push(&body[..close]);
        }
        rest = &body[close + 3..];
    }
    blocks.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_document_wherever_it_is() {
        assert_eq!(find_json("```\n[1]\n```").unwrap(), serde_json::json!([1]));
        assert_eq!(
            find_json("Result: {\"a\": 1}. Done").unwrap(),
            serde_json::json!({"a": 1})
        );
        assert_eq!(find_json("  {\"a\": 1}  ").unwrap(), serde_json::json!({"a": 1}));
        assert!(find_json("no json").is_err());
        assert!(find_json("```json\n{\"a\": [\n```").is_err());
    }

    #[test]
    fn every_fenced_json_block_is_a_value() {
        let answer = "```json\n{\"a\":1}\n```\ntext\n```\n[2]\n```\n```ts\nconst x = [{}];\n```";
        assert_eq!(
            json_values(answer),
            vec![serde_json::json!({"a": 1}), serde_json::json!([2])]
        );
    }
}
