//! The analyst and synthesizer prompt templates: embedded from `prompts/` at build time,
//! each replaceable by a file of the same name (the engine reads `.aiwg/rlm/prompts/`).
//!
//! A template may hold sections, each opened by a line `<!-- section: NAME -->`; the text
//! before the first marker is the `main` section. Analyst templates put the findings schema
//! in a `findings-schema` section (sent only when the user asked for no format of their
//! own); synthesis templates put the user message in a `user` section, with `{query}`,
//! `{content_type}`, `{results}` and `{summaries}` filled in by one pass (text substituted
//! in is never scanned again, so braces in results are safe).

use std::borrow::Cow;

/// Every template, by the file name it is embedded from and overridden by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TemplateName {
    AnalystCode,
    AnalystData,
    AnalystJson,
    AnalystGeneral,
    AnalystOwnFormat,
    FocusSecurity,
    FocusArchitecture,
    FocusPerformance,
    BatchFiles,
    BatchGeneric,
    SynthesizeType,
    SynthesizeCross,
}

impl TemplateName {
    /// All templates, in a fixed order.
    pub const ALL: [TemplateName; 12] = [
        TemplateName::AnalystCode,
        TemplateName::AnalystData,
        TemplateName::AnalystJson,
        TemplateName::AnalystGeneral,
        TemplateName::AnalystOwnFormat,
        TemplateName::FocusSecurity,
        TemplateName::FocusArchitecture,
        TemplateName::FocusPerformance,
        TemplateName::BatchFiles,
        TemplateName::BatchGeneric,
        TemplateName::SynthesizeType,
        TemplateName::SynthesizeCross,
    ];

    /// The file name under `prompts/` (and under an override directory).
    pub fn file_name(self) -> &'static str {
        match self {
            TemplateName::AnalystCode => "analyst-code.md",
            TemplateName::AnalystData => "analyst-data.md",
            TemplateName::AnalystJson => "analyst-json.md",
            TemplateName::AnalystGeneral => "analyst-general.md",
            TemplateName::AnalystOwnFormat => "analyst-own-format.md",
            TemplateName::FocusSecurity => "focus-security.md",
            TemplateName::FocusArchitecture => "focus-architecture.md",
            TemplateName::FocusPerformance => "focus-performance.md",
            TemplateName::BatchFiles => "batch-files.md",
            TemplateName::BatchGeneric => "batch-generic.md",
            TemplateName::SynthesizeType => "synthesize-type.md",
            TemplateName::SynthesizeCross => "synthesize-cross.md",
        }
    }

    /// The template a file name names, if any.
    pub fn from_file_name(name: &str) -> Option<TemplateName> {
        TemplateName::ALL.into_iter().find(|t| t.file_name() == name)
    }

    fn embedded(self) -> &'static str {
        match self {
            TemplateName::AnalystCode => include_str!("../../prompts/analyst-code.md"),
            TemplateName::AnalystData => include_str!("../../prompts/analyst-data.md"),
            TemplateName::AnalystJson => include_str!("../../prompts/analyst-json.md"),
            TemplateName::AnalystGeneral => include_str!("../../prompts/analyst-general.md"),
            TemplateName::AnalystOwnFormat => include_str!("../../prompts/analyst-own-format.md"),
            TemplateName::FocusSecurity => include_str!("../../prompts/focus-security.md"),
            TemplateName::FocusArchitecture => include_str!("../../prompts/focus-architecture.md"),
            TemplateName::FocusPerformance => include_str!("../../prompts/focus-performance.md"),
            TemplateName::BatchFiles => include_str!("../../prompts/batch-files.md"),
            TemplateName::BatchGeneric => include_str!("../../prompts/batch-generic.md"),
            TemplateName::SynthesizeType => include_str!("../../prompts/synthesize-type.md"),
            TemplateName::SynthesizeCross => include_str!("../../prompts/synthesize-cross.md"),
        }
    }
}

/// An override named a template that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("no prompt template is named {name}; rename the file to one of: {known}")]
pub struct UnknownTemplate {
    pub name: String,
    known: String,
}

/// The set of templates in use: the embedded ones, with any overrides applied.
#[derive(Debug, Clone)]
pub struct Templates {
    texts: Vec<Cow<'static, str>>,
}

impl Default for Templates {
    fn default() -> Templates {
        Templates::embedded()
    }
}

impl Templates {
    /// The templates embedded in the binary.
    pub fn embedded() -> Templates {
        Templates {
            texts: TemplateName::ALL.iter().map(|t| Cow::Borrowed(t.embedded())).collect(),
        }
    }

    /// Replaces the template stored as `file_name` (e.g. `analyst-code.md`) with `text`.
    pub fn set(&mut self, file_name: &str, text: String) -> Result<(), UnknownTemplate> {
        let Some(name) = TemplateName::from_file_name(file_name) else {
            let known: Vec<&str> = TemplateName::ALL.iter().map(|t| t.file_name()).collect();
            return Err(UnknownTemplate {
                name: file_name.to_owned(),
                known: known.join(", "),
            });
        };
        self.texts[Self::slot(name)] = Cow::Owned(text);
        Ok(())
    }

    /// The whole text of a template.
    pub fn get(&self, name: TemplateName) -> &str {
        &self.texts[Self::slot(name)]
    }

    /// One section of a template (`main` is the text before the first marker); `None` when
    /// the template has no such section.
    pub fn section(&self, name: TemplateName, section: &str) -> Option<&str> {
        sections(self.get(name))
            .find(|(n, _)| *n == section)
            .map(|(_, text)| text.trim())
    }

    /// An upper bound on the bytes of an analyst's system message (or a generic batch's): the
    /// longest analyst template, the longest focus fragment, and the batch and format
    /// instructions.
    pub fn longest_analyst_system(&self) -> usize {
        use TemplateName as T;
        let longest = |names: &[TemplateName]| names.iter().map(|n| self.get(*n).len()).max().unwrap_or(0);
        longest(&[
            T::AnalystCode,
            T::AnalystData,
            T::AnalystJson,
            T::AnalystGeneral,
            T::BatchGeneric,
        ]) + longest(&[T::FocusSecurity, T::FocusArchitecture, T::FocusPerformance])
            + self.get(T::BatchFiles).len()
            + self.get(T::AnalystOwnFormat).len()
            + 256
    }

    fn slot(name: TemplateName) -> usize {
        TemplateName::ALL.iter().position(|t| *t == name).unwrap_or(0)
    }
}

const MARKER_OPEN: &str = "<!-- section:";

/// The sections of `text`: `(name, body)` in order, `main` first.
fn sections(text: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut rest = Some(("main", text));
    std::iter::from_fn(move || {
        let (name, body) = rest.take()?;
        // A marker counts only at the start of a line.
        let found = body
            .match_indices(MARKER_OPEN)
            .find(|(i, _)| *i == 0 || body.as_bytes()[i - 1] == b'\n');
        match found {
            Some((i, _)) => {
                let after = &body[i + MARKER_OPEN.len()..];
                let (marker, next) = after.split_once('\n').unwrap_or((after, ""));
                let next_name = marker.trim().trim_end_matches("-->").trim();
                rest = Some((next_name, next));
                Some((name, &body[..i]))
            }
            None => Some((name, body)),
        }
    })
}

/// Replaces `{name}` for each `(name, value)` in one pass; other braces are left alone.
pub(crate) fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let extra: usize = values.iter().map(|(_, v)| v.len()).sum();
    let mut out = String::with_capacity(template.len() + extra);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let hit = values
            .iter()
            .find(|(name, _)| after.strip_prefix(name).is_some_and(|t| t.starts_with('}')));
        match hit {
            Some((name, value)) => {
                out.push_str(value);
                rest = &after[name.len() + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_template_is_there_and_analysts_have_a_schema_section() {
        let t = Templates::embedded();
        for name in TemplateName::ALL {
            assert!(!t.get(name).trim().is_empty(), "{}", name.file_name());
            assert_eq!(TemplateName::from_file_name(name.file_name()), Some(name));
        }
        for name in [
            TemplateName::AnalystCode,
            TemplateName::AnalystData,
            TemplateName::AnalystJson,
            TemplateName::AnalystGeneral,
        ] {
            let schema = t.section(name, "findings-schema").unwrap();
            for field in [
                "\"findings\"",
                "\"type\"",
                "\"summary\"",
                "\"evidence\"",
                "\"line\"",
                "\"severity\"",
                "\"content_type\"",
                "\"key_topics\"",
            ] {
                assert!(schema.contains(field), "{} lacks {field}", name.file_name());
            }
            assert!(!t.section(name, "main").unwrap().contains("section:"));
        }
        let cross = t.section(TemplateName::SynthesizeCross, "user").unwrap();
        for heading in ["## Per-File Findings", "## Cross-File Analysis", "## Recommendations"] {
            assert!(cross.contains(heading));
        }
    }

    #[test]
    fn overrides_replace_by_file_name() {
        let mut t = Templates::embedded();
        t.set("focus-security.md", "Be paranoid.".into()).unwrap();
        assert_eq!(t.get(TemplateName::FocusSecurity), "Be paranoid.");
        assert_eq!(t.section(TemplateName::FocusSecurity, "findings-schema"), None);
        let err = t.set("analyst-cobol.md", String::new()).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("no prompt template is named analyst-cobol.md; rename the file to one of: analyst-code.md"));
    }

    #[test]
    fn sections_split_only_at_line_starting_markers() {
        let text = "intro <!-- section: no -->\n<!-- section: a -->\nA body\n<!-- section: b -->\nB";
        let found: Vec<_> = sections(text).collect();
        assert_eq!(
            found,
            vec![("main", "intro <!-- section: no -->\n"), ("a", "A body\n"), ("b", "B")]
        );
    }

    #[test]
    fn fill_is_one_pass() {
        let out = fill(
            "Q: {query}\n{results}\n{other} {",
            &[("query", "{results}"), ("results", "R {\"a\": 1}")],
        );
        assert_eq!(out, "Q: {results}\nR {\"a\": 1}\n{other} {");
    }
}
