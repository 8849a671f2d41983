//! `--save-trajectory PATH`: one JSON line per model call (the prompt and schema exactly as
//! sent, response, model, tokens, duration, attempts, success), appended as calls end,
//! scrubbed of the key. A line that
//! cannot be written is said once and the run goes on.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde_json::json;

use crate::provider::{CompletionRequest, Usage};
use crate::secret::Redactor;

/// The open trajectory file.
#[derive(Debug)]
pub struct Trajectory {
    file: Mutex<fs_err::File>,
    redactor: Redactor,
    failed: AtomicBool,
}

/// One call as the trajectory records it.
pub struct CallRecord<'a> {
    pub unit: &'a str,
    pub label: &'a str,
    pub model: &'a str,
    pub request: &'a CompletionRequest,
    pub response: Option<&'a str>,
    pub error: Option<&'a str>,
    pub usage: Usage,
    pub duration_ms: u64,
    pub attempts: u32,
}

impl Trajectory {
    /// Opens PATH for appending (created if missing; the error names the path).
    pub fn open(path: &Path, redactor: Redactor) -> std::io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs_err::create_dir_all(dir)?;
        }
        let file = fs_err::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Trajectory {
            file: Mutex::new(file),
            redactor,
            failed: AtomicBool::new(false),
        })
    }

    /// Appends one call; returns an error message the first time a write fails.
    pub fn record(&self, call: &CallRecord<'_>) -> Option<String> {
        let line = json!({
            "at": jiff::Timestamp::now().to_string(),
            "unit": call.unit,
            "label": call.label,
            "model": call.model,
            // Exactly what was sent: the whole user message (the shared part included) and
            // the structured-output schema.
            "prompt": {"system": call.request.system, "user": call.request.user_text()},
            "schema": call.request.schema.as_deref(),
            "response": call.response,
            "error": call.error,
            "success": call.error.is_none(),
            "tokens_in": call.usage.input_tokens,
            "tokens_out": call.usage.output_tokens,
            "duration_ms": call.duration_ms,
            "attempts": call.attempts,
        });
        let mut text = self.redactor.scrub(&line.to_string()).into_owned();
        text.push('\n');
        let written = self
            .file
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))
            .and_then(|mut f| f.write_all(text.as_bytes()));
        match written {
            Ok(()) => None,
            Err(e) if !self.failed.swap(true, Ordering::Relaxed) => Some(format!("--save-trajectory: {e}")),
            Err(_) => None,
        }
    }
}
