//! What `--dry-run --json` shows of each file and unit beyond the plan: the content type and
//! how it was found, the analyst, each input's 1-based inclusive line range, the exact
//! content the model reads and the whole prompt, so a unit can be inspected before paying.

use serde_json::{json, Value};

use crate::content::{self, head_lines, Analyst, Detection, SNIFF_LINES};
use crate::input::InputFile;
use crate::prompt::{self, Delimiter};
use crate::schema::OutputSchema;
use crate::unit::WorkUnit;

/// A file of the manifest, with its detected content type.
pub fn file(file: &InputFile) -> Value {
    let mut value = serde_json::to_value(file).unwrap_or_default();
    let detection = detect(file);
    value["content_type"] = json!(detection.content_type);
    value["detected_by"] = json!(detection.detected_by);
    value["language"] = json!(detection.language);
    value
}

/// The content-aware fields of a unit (merged into its plan entry).
pub fn unit(
    unit: &WorkUnit,
    files: &std::collections::HashMap<&str, &InputFile>,
    sub_prompt: &str,
    delimiter: &Delimiter,
    schema: Option<&OutputSchema>,
) -> Value {
    let with_schema = |system: &str| match schema {
        Some(s) => format!("{system}{}", s.instruction()),
        None => system.to_string(),
    };
    let inputs: Vec<Value> = unit
        .inputs
        .iter()
        .map(|i| {
            let lines = files.get(i.display.as_str()).map_or(0, |f| f.lines);
            let (start, end) = i.span.map_or((1, lines.max(1)), |s| (s.start, s.end));
            json!({"path": i.display, "start_line": start, "end_line": end, "content_hash": i.content_hash})
        })
        .collect();
    match &unit.content {
        Some(c) => json!({
            "content_type": c.content_type,
            "analyst": c.analyst.as_str(),
            "inputs": inputs,
            "content": c.content,
            "prompt": {"system": with_schema(&c.system), "user": c.user},
        }),
        None => {
            // A whole file, sent with the generic prompt.
            let input = &unit.inputs[0];
            let text = std::fs::read(&input.path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let detection = content::detect(&input.display, head_lines(&text, SNIFF_LINES));
            let user = prompt::render_file_message(sub_prompt, &input.display, &text, delimiter);
            json!({
                "content_type": detection.content_type,
                "analyst": "generic",
                "analyst_for_type": Analyst::for_content(detection.content_type).as_str(),
                "inputs": inputs,
                "content": text,
                "prompt": {"system": with_schema(prompt::BATCH_SYSTEM), "user": user},
            })
        }
    }
}

fn detect(file: &InputFile) -> Detection {
    let text = std::fs::read(&file.path)
        .map(|b| String::from_utf8_lossy(&b[..b.len().min(64 * 1024)]).into_owned())
        .unwrap_or_default();
    content::detect(&file.display, head_lines(&text, SNIFF_LINES))
}
