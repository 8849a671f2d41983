//! Content-type detection, the content-aware seed's two stages: the extension first (with
//! the seed's confidence), then sniffing the first 50 lines when the extension is unknown or
//! only of medium confidence; anything still unknown is prose.

use serde::{Deserialize, Serialize};

use super::content_type::{ContentType, Language};
use super::sniff::sniff;

/// How many lines of a file [`detect`] wants to see.
pub const SNIFF_LINES: usize = 50;

/// Which stage decided a file's type; recorded per file in plans and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectedBy {
    Extension,
    Sniffing,
    /// Nothing matched: treated as prose.
    Default,
}

/// How much a detection can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

/// What one file is, and how that was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Detection {
    pub content_type: ContentType,
    /// Set for source code when the extension or a shebang names the language, or the
    /// sniffed keywords point to one.
    pub language: Option<Language>,
    pub detected_by: DetectedBy,
    pub confidence: Confidence,
}

impl Detection {
    /// A detection made by the caller (a `--type` override, say): trusted fully.
    pub fn given(content_type: ContentType, language: Option<Language>) -> Detection {
        Detection {
            content_type,
            language,
            detected_by: DetectedBy::Extension,
            confidence: Confidence::High,
        }
    }
}

/// Detects the content type of the file at `path` (only its name is used) whose first
/// lines are `head` — pass the first [`SNIFF_LINES`] lines (see
/// [`super::line_index::head_lines`]); fewer weakens sniffing. Capping the head by bytes
/// too (say 64 KiB, for minified files) is fine: a last line cut short is tolerated.
pub fn detect(path: &str, head: &str) -> Detection {
    let by_extension = by_name(path);
    if let Some(d) = by_extension.filter(|d| d.confidence == Confidence::High) {
        return d;
    }
    let signal = sniff(head);
    match (by_extension, signal) {
        // A medium-confidence extension (.txt, .md, .yaml, .html…) gives way only to
        // structural evidence: a `# comment` in YAML is not a markdown heading.
        (Some(d), Some(s)) if s.strong && s.content_type != d.content_type => Detection {
            content_type: s.content_type,
            language: s.language,
            detected_by: DetectedBy::Sniffing,
            confidence: Confidence::Medium,
        },
        (Some(d), _) => d,
        (None, Some(s)) => Detection {
            content_type: s.content_type,
            language: s.language,
            detected_by: DetectedBy::Sniffing,
            confidence: Confidence::Medium,
        },
        (None, None) => Detection {
            content_type: ContentType::Prose,
            language: None,
            detected_by: DetectedBy::Default,
            confidence: Confidence::Low,
        },
    }
}

/// Stage 1: the seed's extension table, plus a few well-known file names.
fn by_name(path: &str) -> Option<Detection> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path).to_ascii_lowercase();
    let by_ext = |content_type, language, confidence| Detection {
        content_type,
        language,
        detected_by: DetectedBy::Extension,
        confidence,
    };
    match name.as_str() {
        "makefile" | "gnumakefile" | "dockerfile" | "containerfile" | "requirements.txt" | "cmakelists.txt"
        | ".gitignore" | ".dockerignore" | ".editorconfig" | ".env" => {
            return Some(by_ext(ContentType::Config, None, Confidence::Medium));
        }
        "gemfile" | "rakefile" => return Some(by_ext(ContentType::SourceCode, Some(Language::Ruby), Confidence::High)),
        _ => {}
    }
    // A leading dot is a hidden file's name, not an extension.
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() {
        return None;
    }
    if let Some(language) = Language::from_extension(ext) {
        return Some(by_ext(ContentType::SourceCode, Some(language), Confidence::High));
    }
    let (content_type, confidence) = match ext {
        "csv" | "tsv" => (ContentType::StructuredData, Confidence::High),
        "json" => (ContentType::Json, Confidence::High),
        "jsonl" | "ndjson" => (ContentType::Jsonl, Confidence::High),
        "log" => (ContentType::Log, Confidence::High),
        "md" | "markdown" | "rst" | "txt" | "adoc" => (ContentType::Prose, Confidence::Medium),
        "xml" | "html" | "htm" | "xhtml" | "svg" => (ContentType::Markup, Confidence::Medium),
        "yaml" | "yml" | "toml" | "ini" | "conf" | "cfg" | "properties" => (ContentType::Config, Confidence::Medium),
        _ => return None,
    };
    Some(by_ext(content_type, None, confidence))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_of_high_confidence_decide_alone() {
        let d = detect("src/data_pipeline.py", "this is not python at all");
        assert_eq!(d, Detection::given(ContentType::SourceCode, Some(Language::Python)));
        assert_eq!(detect("a/B.TSX", "").language, Some(Language::TypeScript));
        assert_eq!(detect("x.csv", "").content_type, ContentType::StructuredData);
        assert_eq!(detect("x.ndjson", "").content_type, ContentType::Jsonl);
        assert_eq!(detect("api-server.log", "").content_type, ContentType::Log);
        assert_eq!(detect(r"C:\x\main.rs", "").language, Some(Language::Rust));
        assert_eq!(detect("Rakefile", "").language, Some(Language::Ruby));
    }

    #[test]
    fn medium_extensions_yield_only_to_structural_evidence() {
        let d = detect(
            "notes.txt",
            "2026-02-11 01:30:00 ERROR boom\n2026-02-11 01:30:01 INFO ok\n",
        );
        assert_eq!(
            (d.content_type, d.detected_by),
            (ContentType::Log, DetectedBy::Sniffing)
        );
        let d = detect("export.txt", "id,name\n1,a\n2,b\n");
        assert_eq!(d.content_type, ContentType::StructuredData);
        // A YAML comment looks like a markdown heading; the extension stands.
        let d = detect("ci.yaml", "# Build\non: push\n");
        assert_eq!(
            (d.content_type, d.detected_by, d.confidence),
            (ContentType::Config, DetectedBy::Extension, Confidence::Medium)
        );
        let d = detect("README.md", "# Title\n\nimport this\nclass of its own\n");
        assert_eq!(d.content_type, ContentType::Prose);
        assert_eq!(
            detect("requirements.txt", "flask==3.0\n").content_type,
            ContentType::Config
        );
    }

    #[test]
    fn unknown_extensions_are_sniffed_then_default_to_prose() {
        let d = detect("bin/deploy", "#!/usr/bin/env bash\nset -eu\n");
        assert_eq!(
            (d.content_type, d.language, d.detected_by),
            (ContentType::SourceCode, Some(Language::Shell), DetectedBy::Sniffing)
        );
        let d = detect("events.dat", "{\"a\":1}\n{\"a\":2}\n");
        assert_eq!(d.content_type, ContentType::Jsonl);
        let d = detect("LICENSE", "Permission is hereby granted, free of charge\n");
        assert_eq!(
            (d.content_type, d.detected_by, d.confidence),
            (ContentType::Prose, DetectedBy::Default, Confidence::Low)
        );
        assert_eq!(detect(".bashrc", "").detected_by, DetectedBy::Default);
    }

    #[test]
    fn detection_serializes_with_snake_case_names() {
        let d = detect("x.py", "");
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(
            json,
            r#"{"content_type":"source_code","language":"python","detected_by":"extension","confidence":"high"}"#
        );
    }
}
