//! JSON chunking: a root array is split into valid arrays of whole elements, a root object
//! by its top-level members, packed as large as the budget allows (at most
//! `json_elements` a chunk); a member (or element) too large for one chunk is split the
//! same way inside a copy of its parents (`{"events": [ …part… ]}`), so every chunk parses
//! and keeps its place in the document. Packing runs across those splits: the members
//! before and after a split one share chunks with its first and last parts, so no small
//! member (`{"version": 3}`) is a call of its own. Element texts are copied verbatim. Only
//! a value that is too large and cannot be split (a huge string) is cut as text, with a
//! note.
//!
//! A `.json` file that is really JSON Lines is chunked as JSONL; a file that is not JSON at
//! all falls back to line windows, and the chunks say why.

use super::chunk::{ChunkContext, ChunkOptions, ChunkStrategy, Content, Draft, WindowSize};
use super::json_schema::{type_of_text, SchemaSummary, SAMPLE_SIZE};
use super::jsonl_chunker::{chunk_jsonl, is_jsonl};
use super::line_index::LineIndex;
use super::line_range::LineRange;
use super::windows::{all_lines, budget_windows, cut_line_span, pieces_to_drafts, window_drafts};

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
    let packer = Packer::new(index, opts);
    let drafts = matches!(bytes.get(root), Some(b'[' | b'{'))
        .then(|| packer.run(root))
        .flatten();
    let Some(mut drafts) = drafts else {
        let lines = all_lines(index);
        if text.len() <= opts.max_bytes() {
            return vec![Draft::verbatim(index, lines, ChunkContext::new(ChunkStrategy::Whole))];
        }
        let note = "a JSON value that cannot be split into elements; cut into line windows";
        return window_drafts(index, lines, opts.fallback, Some(note), opts);
    };
    cover_all_lines(&mut drafts, index.len());
    drafts
}

/// A container (array or object) whose children are packed: the root, or a member too big
/// for one chunk.
struct Container {
    is_array: bool,
    /// The byte of its `[` or `{`.
    open: usize,
    /// What opens it in a chunk: its key when it is a member of an object, then its
    /// bracket (`"events": [` + newline).
    opening: String,
    parent: Option<usize>,
    path: String,
}

impl Container {
    fn closing(&self) -> &'static str {
        if self.is_array {
            "\n]"
        } else {
            "\n}"
        }
    }
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

/// What the walk over the document yields, in order.
enum Step {
    /// A child small enough to go into a chunk whole: `index`-th of `container`.
    Atom {
        container: usize,
        index: usize,
        child: Child,
    },
    /// A child too big for any chunk that cannot be split: its pieces.
    Cut(Vec<Draft>),
}

/// Packs the document's children, in order, into as few valid documents as the budget
/// allows: each chunk opens the containers its first child is in (copies of their keys and
/// brackets), closes and opens containers as its children's places change, and closes
/// them at the end. So the siblings before and after a split member share chunks with its
/// first and last parts, and no small member is sent alone.
struct Packer<'t, 'i> {
    text: &'t str,
    index: &'i LineIndex<'t>,
    opts: &'i ChunkOptions,
    containers: std::cell::RefCell<Vec<Container>>,
    /// Each container's schema, made once: every chunk of a container carries it, and a
    /// container of a million elements is not walked again for each of its chunks.
    schemas: std::cell::RefCell<std::collections::HashMap<usize, SchemaSummary>>,
}

impl<'t, 'i> Packer<'t, 'i> {
    fn new(index: &'i LineIndex<'t>, opts: &'i ChunkOptions) -> Self {
        Packer {
            text: index.text(),
            index,
            opts,
            containers: std::cell::RefCell::new(Vec::new()),
            schemas: std::cell::RefCell::new(std::collections::HashMap::new()),
        }
    }

    /// The drafts of the document whose root container opens at byte `root`; `None` when
    /// it has no children.
    fn run(&self, root: usize) -> Option<Vec<Draft>> {
        let bytes = self.text.as_bytes();
        if children(bytes, root).is_empty() {
            return None;
        }
        let is_array = bytes[root] == b'[';
        self.containers.borrow_mut().push(Container {
            is_array,
            open: root,
            opening: if is_array { "[\n" } else { "{\n" }.to_owned(),
            parent: None,
            path: "$".into(),
        });
        let mut steps = Vec::new();
        self.walk(0, 0, &mut steps);
        Some(self.pack(steps))
    }

    /// The containers from the root to `c`.
    fn chain(&self, c: usize) -> Vec<usize> {
        let containers = self.containers.borrow();
        let mut chain = vec![c];
        while let Some(p) = containers[*chain.last().unwrap_or(&0)].parent {
            chain.push(p);
        }
        chain.reverse();
        chain
    }

    fn opening_bytes(&self, chain: &[usize]) -> usize {
        let containers = self.containers.borrow();
        chain.iter().map(|&c| containers[c].opening.len()).sum()
    }

    fn closing_bytes(&self, chain: &[usize]) -> usize {
        let containers = self.containers.borrow();
        chain.iter().map(|&c| containers[c].closing().len()).sum()
    }

    /// The children of container `c`, in order: whole when one fits a chunk with the
    /// copies of its containers, else split inside (a container) or cut (a value).
    fn walk(&self, c: usize, depth: usize, steps: &mut Vec<Step>) {
        let bytes = self.text.as_bytes();
        let (open, is_array) = {
            let containers = self.containers.borrow();
            (containers[c].open, containers[c].is_array)
        };
        let chain = self.chain(c);
        let frame = self.opening_bytes(&chain) + self.closing_bytes(&chain) + 1;
        let max_bytes = self.opts.max_bytes();
        let kids = children(bytes, open);
        for (i, child) in kids.iter().enumerate() {
            if child.end - child.start + frame <= max_bytes {
                steps.push(Step::Atom {
                    container: c,
                    index: i,
                    child: *child,
                });
                continue;
            }
            let path = self.child_path(c, &kids, i, is_array);
            let nested = skip_ws(bytes, child.value);
            if depth < MAX_DEPTH && matches!(bytes.get(nested), Some(b'[' | b'{')) {
                let key = if is_array {
                    ""
                } else {
                    &self.text[child.start..child.value]
                };
                let inner_array = bytes[nested] == b'[';
                let opening = format!("{key}{}", if inner_array { "[\n" } else { "{\n" });
                let has_children = !children(bytes, nested).is_empty();
                if has_children && frame + opening.len() + 2 <= max_bytes / 2 {
                    self.containers.borrow_mut().push(Container {
                        is_array: inner_array,
                        open: nested,
                        opening,
                        parent: Some(c),
                        path,
                    });
                    let inner = self.containers.borrow().len() - 1;
                    self.walk(inner, depth + 1, steps);
                    continue;
                }
            }
            steps.push(Step::Cut(self.cut(child, &path)));
        }
    }

    /// A child too big for a chunk that cannot be split: cut by lines (or a line inside),
    /// no longer valid JSON, as the note says.
    fn cut(&self, child: &Child, path: &str) -> Vec<Draft> {
        let max_bytes = self.opts.max_bytes();
        let first = self.index.line_of_offset(child.start);
        let last = self.index.line_of_offset(child.end.saturating_sub(1));
        if first == last {
            let line_start = self.index.start_of(first);
            let span = child.start - line_start..child.end - line_start;
            let what = format!("{path} (on line {first})");
            return cut_line_span(self.index, first, span, max_bytes, &what);
        }
        let note = format!("{path} is too large for one chunk; cut into plain text, not valid JSON");
        let whole = WindowSize {
            lines: usize::MAX,
            overlap: 0,
        };
        let pieces = budget_windows(self.index, LineRange::new(first, last), whole, 0, |_| false, max_bytes);
        pieces_to_drafts(self.index, &pieces, Some(&note), max_bytes)
    }

    /// The steps packed into drafts, each as large as the budget allows and of at most
    /// `json_elements` children.
    fn pack(&self, steps: Vec<Step>) -> Vec<Draft> {
        let max_bytes = self.opts.max_bytes();
        let per_draft = self.opts.json_elements.max(1);
        let mut drafts = Vec::new();
        let mut current: Vec<(usize, usize, Child)> = Vec::new();
        // The draft's bytes without the closings of the containers still open.
        let mut body = 0;
        let mut open_chain: Vec<usize> = Vec::new();
        for step in steps {
            match step {
                Step::Cut(pieces) => {
                    drafts.extend(self.flush(&mut current));
                    drafts.extend(pieces);
                }
                Step::Atom {
                    container,
                    index,
                    child,
                } => {
                    let chain = self.chain(container);
                    let size = child.end - child.start;
                    let shared = shared_prefix(&open_chain, &chain);
                    let joined = body
                        + self.closing_bytes(&open_chain[shared..])
                        + 2
                        + self.opening_bytes(&chain[shared..])
                        + size;
                    // The closings, and the line end after them.
                    let fits = joined + self.closing_bytes(&chain) < max_bytes;
                    body = if !current.is_empty() && fits && current.len() < per_draft {
                        joined
                    } else {
                        drafts.extend(self.flush(&mut current));
                        self.opening_bytes(&chain) + size
                    };
                    current.push((container, index, child));
                    open_chain = chain;
                }
            }
        }
        drafts.extend(self.flush(&mut current));
        drafts
    }

    /// The children in `current` as one valid document, with their schema and place.
    fn flush(&self, current: &mut Vec<(usize, usize, Child)>) -> Option<Draft> {
        let (&(first_container, _, first), &(_, _, last)) = (current.first()?, current.last()?);
        let containers = self.containers.borrow();
        let mut content = Content::default();
        let mut open_chain: Vec<usize> = Vec::new();
        for (n, &(c, _, child)) in current.iter().enumerate() {
            let chain = self.chain(c);
            let shared = shared_prefix(&open_chain, &chain);
            if n > 0 {
                for &k in open_chain[shared..].iter().rev() {
                    content.push(containers[k].closing(), None);
                }
                content.push(",\n", None);
            }
            for &k in &chain[shared..] {
                content.push(&containers[k].opening, None);
            }
            content.push(
                &self.text[child.start..child.end],
                Some(self.index.line_of_offset(child.start)),
            );
            open_chain = chain;
        }
        for &k in open_chain.iter().rev() {
            content.push(containers[k].closing(), None);
        }
        content.push("\n", None);
        let mut context = ChunkContext::new(ChunkStrategy::Elements);
        context.schema = Some(self.schema_of(&containers, first_container));
        context.json_path = Some(self.place(&containers, current));
        let lines = LineRange::new(
            self.index.line_of_offset(first.start),
            self.index.line_of_offset(last.end.saturating_sub(1)),
        );
        current.clear();
        Some(content.into_draft(lines, context))
    }

    /// Where a chunk's children are: for each run of children of one container, its path
    /// and the elements' indices (`$.events[0..349]`) or the members' names
    /// (`$.{meta … totals} (3 members)`), the runs joined by ", then ".
    fn place(&self, containers: &[Container], current: &[(usize, usize, Child)]) -> String {
        let mut runs: Vec<String> = Vec::new();
        let mut k = 0;
        while k < current.len() {
            let c = current[k].0;
            let run: Vec<&(usize, usize, Child)> = current[k..].iter().take_while(|a| a.0 == c).collect();
            k += run.len();
            let container = &containers[c];
            let (first, last) = (run[0], run[run.len() - 1]);
            runs.push(if container.is_array {
                format!("{}[{}..{}]", container.path, first.1, last.1)
            } else {
                let names: Vec<String> = run.iter().map(|a| short_key(&self.key(&a.2))).collect();
                match names.as_slice() {
                    [only] => format!("{}.{only}", container.path),
                    [a, .., b] => format!("{}.{{{a} … {b}}} ({} members)", container.path, names.len()),
                    [] => container.path.clone(),
                }
            });
        }
        runs.join(", then ")
    }

    /// The schema of container `c` (see [`Packer::schema`]), made once.
    fn schema_of(&self, containers: &[Container], c: usize) -> SchemaSummary {
        if let Some(known) = self.schemas.borrow().get(&c) {
            return known.clone();
        }
        let schema = self.schema(&containers[c]);
        self.schemas.borrow_mut().insert(c, schema.clone());
        schema
    }

    /// The schema of a container: the first five elements of an array, the members of an
    /// object (typed from their first character, so a huge object is not parsed again).
    fn schema(&self, container: &Container) -> SchemaSummary {
        let bytes = self.text.as_bytes();
        let kids = children(bytes, container.open);
        if container.is_array {
            let sample: Vec<serde_json::Value> = kids
                .iter()
                .take(SAMPLE_SIZE)
                .filter_map(|c| serde_json::from_str(&self.text[c.start..c.end]).ok())
                .collect();
            SchemaSummary::of_values(&sample)
        } else {
            SchemaSummary::of_members(
                kids.iter()
                    .map(|c| (self.key(c), type_of_text(&self.text[skip_ws(bytes, c.value)..c.end]))),
            )
        }
    }

    /// A member's key, decoded.
    fn key(&self, child: &Child) -> String {
        let key_end = string_end(self.text.as_bytes(), child.start);
        serde_json::from_str(&self.text[child.start..key_end]).unwrap_or_default()
    }

    fn child_path(&self, c: usize, children: &[Child], i: usize, is_array: bool) -> String {
        let path = self.containers.borrow()[c].path.clone();
        if is_array {
            return format!("{path}[{i}]");
        }
        let key = self.key(&children[i]);
        if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            format!("{path}.{}", short_key(&key))
        } else {
            format!("{path}[{}]", serde_json::Value::String(short_key(&key)))
        }
    }
}

/// How many containers two chains share from the root.
fn shared_prefix(a: &[usize], b: &[usize]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A key as a place names it: cut to 60 bytes (at a character boundary, ending in `…`).
fn short_key(key: &str) -> String {
    const MAX: usize = 60;
    if key.len() <= MAX {
        return key.to_owned();
    }
    let mut end = MAX - '…'.len_utf8();
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &key[..end])
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
