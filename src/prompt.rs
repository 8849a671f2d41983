//! Prompt rendering. The templates live in `prompts/` and are embedded in the binary.

/// The system prompt of every per-file call.
pub const BATCH_SYSTEM: &str = include_str!("../prompts/batch-system.md");

/// The seed's summarization prompt; `{all results}` is replaced by the results.
pub const SUMMARIZE: &str = include_str!("../prompts/summarize.md");

/// The system prompt of summarization calls.
pub const SUMMARIZE_SYSTEM: &str = include_str!("../prompts/summarize-system.md");

/// Replaces `{file}` in the user's sub-prompt. Other braces (JSON examples) are left alone.
pub fn render_sub_prompt(sub_prompt: &str, file: &str) -> String {
    sub_prompt.replace("{file}", file)
}

/// The user message of a per-file call: the file between unambiguous delimiters, then the
/// instruction (long content first, the question last).
pub fn render_file_message(sub_prompt: &str, file: &str, content: &str) -> String {
    let instruction = render_sub_prompt(sub_prompt, file);
    let newline = if content.ends_with('\n') { "" } else { "\n" };
    format!(
        "File: {file}\n\n<file_content path=\"{file}\">\n{content}{newline}</file_content>\n\nInstruction: {instruction}\n"
    )
}

/// The user message of a summarization call.
pub fn render_summarize(all_results: &str) -> String {
    SUMMARIZE.replace("{all results}", all_results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_placeholder_is_replaced_and_json_braces_kept() {
        let p = render_sub_prompt("Count TODOs in {file}. Return {\"count\": N}", "src/a.ts");
        assert_eq!(p, "Count TODOs in src/a.ts. Return {\"count\": N}");
    }

    #[test]
    fn message_delimits_content() {
        let m = render_file_message("List exports in {file}", "a.ts", "export const x = 1;");
        assert!(m.contains("<file_content path=\"a.ts\">\nexport const x = 1;\n</file_content>"));
        assert!(m.ends_with("Instruction: List exports in a.ts\n"));
    }

    #[test]
    fn summarize_prompt_is_the_seeds() {
        let m = render_summarize("R");
        assert!(m.starts_with("Summarize the following batch processing results into a concise report:\n\nR\n"));
    }
}
