//! JSON chunking: a root array is split into valid arrays of whole elements, a root object
//! by its top-level members, packed as large as the budget allows (at most
//! `json_elements` a chunk); a member (or element) too large for one chunk
//! is split the same way inside a copy of its parents (`{"events": [ …part… ]}`), so every
//! chunk parses and keeps its place in the document. Element texts are copied verbatim.
//! Only a value that is too large and cannot be split (a huge string) is cut as text,
//! with a note.
//!
//! A `.json` file that is really JSON Lines is chunked as JSONL; a file that is not JSON at
//! all falls back to line windows, and the chunks say why.

use super::chunk::{
    all_lines, budget_windows, cut_line_span, pieces_to_drafts, window_drafts, ChunkContext, ChunkOptions,
    ChunkStrategy, Content, Draft, WindowSize,
};
use super::json_schema::{type_of_text, SchemaSummary, SAMPLE_SIZE};
use super::jsonl_chunker::{chunk_jsonl, is_jsonl};
use super::line_index::LineIndex;
use super::line_range::LineRange;

/// Nesting levels the splitter descends into before it accepts an oversize chunk.
const MAX_DEPTH: usize = 8;

pub(crate) fn chunk_json(index: &LineIndex<'_>, opts: &ChunkOptions) -> Vec<Draft> {
    let text = index.text();
    let body_start = if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&text[body_start..]) {
        if is_jsonl(index) {
            return chunk_jsonl(index, opts)
                .into_iter()
                .map(|mut d| {
                    d.context.note = Some("the file holds one JSON value per line; split as JSON Lines".into());
                    d
                })
                .collect();
        }
        let note = format!("not valid JSON ({e}); cut into line windows");
        return window_drafts(index, all_lines(index), opts.fallback, Some(&note), opts);
    }
    let bytes = text.as_bytes();
    let root = skip_ws(bytes, body_start);
    let splitter = Splitter { text, index, opts };
    let mut drafts = Vec::new();
    let wrap = Wrap {
        prefix: String::new(),
        suffix: String::new(),
        path: "$".into(),
    };
    if !matches!(bytes.get(root), Some(b'[' | b'{')) || !splitter.split(root, &wrap, 0, &mut drafts) {
        let lines = all_lines(index);
        if text.len() <= opts.max_bytes() {
            return vec![Draft::verbatim(index, lines, ChunkContext::new(ChunkStrategy::Whole))];
        }
        let note = "a JSON value that cannot be split into elements; cut into line windows";
        return window_drafts(index, lines, opts.fallback, Some(note), opts);
    }
    cover_all_lines(&mut drafts, index.len());
    drafts
}

/// The text around a part: the copies of its parents' openings and closings, and its path.
struct Wrap {
    prefix: String,
    suffix: String,
    path: String,
}

/// One element of an array, or one member of an object.
#[derive(Debug, Clone, Copy)]
struct Child {
    /// From the element's first byte (a member's key) to its value's last byte, exclusive.
    start: usize,
    end: usize,
    /// Where the value starts (a member's value; an element's start).
    value: usize,
}

struct Splitter<'t, 'i> {
    text: &'t str,
    index: &'i LineIndex<'t>,
    opts: &'i ChunkOptions,
}

impl Splitter<'_, '_> {
    /// Splits the container at byte `open` into drafts; false when it has no children or
    /// its wrapping leaves no room.
    fn split(&self, open: usize, wrap: &Wrap, depth: usize, out: &mut Vec<Draft>) -> bool {
        let bytes = self.text.as_bytes();
        let is_array = bytes[open] == b'[';
        let children = children(bytes, open);
        let max_bytes = self.opts.max_bytes();
        // `{prefix}[\n` … `\n]{suffix}\n` around the children.
        let overhead = wrap.prefix.len() + wrap.suffix.len() + 5;
        if children.is_empty() || overhead > max_bytes / 2 {
            return false;
        }
        let room = max_bytes - overhead;
        let schema = self.schema(&children, is_array);
        // Groups as large as the budget allows, of at most `json_elements`.
        let per_group = self.opts.json_elements.max(1);
        let mut group: Vec<usize> = Vec::new();
        let mut group_bytes = 0;
        for (i, child) in children.iter().enumerate() {
            // The child and the `,\n` that joins it.
            let size = child.end - child.start + 2;
            if size > room {
                self.flush(&children, &mut group, wrap, is_array, &schema, out);
                group_bytes = 0;
                self.oversize(&children, i, wrap, is_array, depth, out);
                continue;
            }
            if !group.is_empty() && (group.len() >= per_group || group_bytes + size > room) {
                self.flush(&children, &mut group, wrap, is_array, &schema, out);
                group_bytes = 0;
            }
            group.push(i);
            group_bytes += size;
        }
        self.flush(&children, &mut group, wrap, is_array, &schema, out);
        true
    }

    /// A child too big for a chunk: split inside a copy of its parents when it is a
    /// container, else cut by lines (a line inside) — no longer valid JSON, as the note says.
    fn oversize(&self, children: &[Child], i: usize, wrap: &Wrap, is_array: bool, depth: usize, out: &mut Vec<Draft>) {
        let bytes = self.text.as_bytes();
        let child = children[i];
        let nested = skip_ws(bytes, child.value);
        let path = self.child_path(&wrap.path, children, i, is_array);
        if depth < MAX_DEPTH && matches!(bytes.get(nested), Some(b'[' | b'{')) {
            let (open_text, close_text) = if is_array { ("[\n", "\n]") } else { ("{\n", "\n}") };
            let key = &self.text[child.start..child.value];
            let inner = Wrap {
                prefix: format!("{}{open_text}{}", wrap.prefix, if is_array { "" } else { key }),
                suffix: format!("{close_text}{}", wrap.suffix),
                path: path.clone(),
            };
            if self.split(nested, &inner, depth + 1, out) {
                return;
            }
        }
        let max_bytes = self.opts.max_bytes();
        let first = self.index.line_of_offset(child.start);
        let last = self.index.line_of_offset(child.end.saturating_sub(1));
        let note = format!("{path} is too large for one chunk; cut into plain text, not valid JSON");
        if first == last {
            let line_start = self.index.start_of(first);
            let span = child.start - line_start..child.end - line_start;
            let what = format!("{path} (on line {first})");
            out.extend(cut_line_span(self.index, first, span, max_bytes, &what));
            return;
        }
        let whole = WindowSize {
            lines: usize::MAX,
            overlap: 0,
        };
        let pieces = budget_windows(self.index, LineRange::new(first, last), whole, 0, |_| false, max_bytes);
        out.extend(pieces_to_drafts(self.index, &pieces, Some(&note), max_bytes));
    }

    /// Emits the children in `group` (indices into `children`) as one draft.
    fn flush(
        &self,
        children: &[Child],
        group: &mut Vec<usize>,
        wrap: &Wrap,
        is_array: bool,
        schema: &SchemaSummary,
        out: &mut Vec<Draft>,
    ) {
        let (Some(&first), Some(&last)) = (group.first(), group.last()) else {
            return;
        };
        let (open_text, close_text) = if is_array { ("[\n", "\n]") } else { ("{\n", "\n}") };
        let mut content = Content::default();
        content.push(&wrap.prefix, None);
        content.push(open_text, None);
        for (n, &i) in group.iter().enumerate() {
            if n > 0 {
                content.push(",\n", None);
            }
            let child = children[i];
            content.push(
                &self.text[child.start..child.end],
                Some(self.index.line_of_offset(child.start)),
            );
        }
        content.push(close_text, None);
        content.push(&wrap.suffix, None);
        content.push("\n", None);
        let mut context = ChunkContext::new(ChunkStrategy::Elements);
        context.schema = Some(schema.clone());
        context.json_path = Some(if is_array {
            format!("{}[{first}..{last}]", wrap.path)
        } else {
            let names: Vec<String> = group.iter().map(|&i| self.key(&children[i])).collect();
            match names.as_slice() {
                [only] => format!("{}.{only}", wrap.path),
                [a, .., b] => format!("{}.{{{a} … {b}}} ({} members)", wrap.path, names.len()),
                [] => wrap.path.clone(),
            }
        });
        let lines = LineRange::new(
            self.index.line_of_offset(children[first].start),
            self.index.line_of_offset(children[last].end.saturating_sub(1)),
        );
        out.push(content.into_draft(lines, context));
        group.clear();
    }

    /// The schema of a container: the first five elements of an array, the members of an
    /// object (typed from their first character, so a huge object is not parsed again).
    fn schema(&self, children: &[Child], is_array: bool) -> SchemaSummary {
        if is_array {
            let sample: Vec<serde_json::Value> = children
                .iter()
                .take(SAMPLE_SIZE)
                .filter_map(|c| serde_json::from_str(&self.text[c.start..c.end]).ok())
                .collect();
            SchemaSummary::of_values(&sample)
        } else {
            let bytes = self.text.as_bytes();
            SchemaSummary::of_members(
                children
                    .iter()
                    .map(|c| (self.key(c), type_of_text(&self.text[skip_ws(bytes, c.value)..c.end]))),
            )
        }
    }

    /// A member's key, decoded.
    fn key(&self, child: &Child) -> String {
        let key_end = string_end(self.text.as_bytes(), child.start);
        serde_json::from_str(&self.text[child.start..key_end]).unwrap_or_default()
    }

    fn child_path(&self, path: &str, children: &[Child], i: usize, is_array: bool) -> String {
        if is_array {
            return format!("{path}[{i}]");
        }
        let key = self.key(&children[i]);
        if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            format!("{path}.{key}")
        } else {
            format!("{path}[{}]", serde_json::Value::String(key))
        }
    }
}

/// Makes the drafts' ranges cover every line: the lines between parts (brackets, the keys
/// of split parents) join the following part, and the first and last parts reach the
/// file's first and last lines.
fn cover_all_lines(drafts: &mut [Draft], lines: usize) {
    let mut covered = 0;
    for d in drafts.iter_mut() {
        d.lines.start = d.lines.start.min(covered + 1);
        d.lines.end = d.lines.end.max(d.lines.start);
        covered = covered.max(d.lines.end);
    }
    if let Some(last) = drafts.last_mut() {
        last.lines.end = lines;
    }
}

/// The children of the container opening at byte `open`. The text is known to be valid.
fn children(b: &[u8], open: usize) -> Vec<Child> {
    let is_array = b[open] == b'[';
    let close = if is_array { b']' } else { b'}' };
    let mut out = Vec::new();
    let mut i = skip_ws(b, open + 1);
    while i < b.len() && b[i] != close {
        let start = i;
        let value = if is_array {
            i
        } else {
            let colon = skip_ws(b, string_end(b, i));
            skip_ws(b, colon + 1)
        };
        let end = value_end(b, value);
        out.push(Child { start, end, value });
        i = skip_ws(b, end);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
    out
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The byte after the string opening at `i`.
fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The byte after the value starting at `i`.
fn value_end(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => string_end(b, i),
        Some(b'[' | b'{') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j);
                        continue;
                    }
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                j += 1;
            }
            j
        }
    }
}

#[cfg(test)]
#[path = "json_chunker_tests.rs"]
mod tests;
