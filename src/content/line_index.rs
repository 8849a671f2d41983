//! Line arithmetic over a file's text: where each line starts, what a 1-based inclusive
//! line range holds, and which line a byte offset falls on.
//!
//! A line ends at `\n`; a `\r` before it belongs to the line's terminator, so `\r\n` files
//! count the same as `\n` files. A last line without a final newline still counts; an empty
//! text has no lines. A lone `\r` (classic Mac OS) is not a line break.

/// The start offsets of every line of one text, built in one linear pass.
#[derive(Debug, Clone)]
pub struct LineIndex<'a> {
    text: &'a str,
    /// `starts[i]` is the byte offset of line `i + 1`.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Indexes `text`.
    pub fn new(text: &'a str) -> LineIndex<'a> {
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        if !text.is_empty() {
            starts.push(0);
        }
        // `match_indices` on a byte pattern runs on memchr: fast on large files.
        for (i, _) in text.match_indices('\n') {
            if i + 1 < text.len() {
                starts.push(i + 1);
            }
        }
        LineIndex { text, starts }
    }

    /// The whole text.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// How many lines the text has.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether the text has no lines (it is empty).
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The byte offset where 1-based line `n` starts; `len() + 1` gives the text's end.
    pub fn start_of(&self, n: usize) -> usize {
        match n {
            0 => 0,
            n if n <= self.starts.len() => self.starts[n - 1],
            _ => self.text.len(),
        }
    }

    /// Lines `first..=last` (1-based) with their terminators, exactly as in the text.
    /// Out-of-range bounds are clamped; an empty range gives `""`.
    pub fn slice(&self, first: usize, last: usize) -> &'a str {
        let first = first.max(1);
        let last = last.min(self.len());
        if first > last {
            return "";
        }
        &self.text[self.start_of(first)..self.start_of(last + 1)]
    }

    /// Line `n` (1-based) without its terminator (`\n` or `\r\n`); `""` when out of range.
    pub fn line(&self, n: usize) -> &'a str {
        strip_terminator(self.slice(n, n))
    }

    /// The 1-based line that byte `offset` falls on (the last line for offsets at the end).
    pub fn line_of_offset(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i.max(1),
        }
    }
}

/// The number of lines of `text`, by the rules in the module doc, without building an index.
pub fn count_lines(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The first `n` lines of `text` (with terminators): what [`crate::content::detect`] sniffs.
pub fn head_lines(text: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match text.match_indices('\n').nth(n - 1) {
        Some((i, _)) => &text[..=i],
        None => text,
    }
}

/// `line` without a trailing `\n` or `\r\n`.
pub fn strip_terminator(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_with_and_without_final_newline() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("\n"), 1);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\nb"), 2);
        assert_eq!(count_lines("a\nb\n"), 2);
        assert_eq!(count_lines("a\r\nb\r\n"), 2);
        assert_eq!(count_lines("a\rb"), 1);
        for text in ["", "\n", "a", "a\nb", "a\r\nb\r\n\r\n", "x\n\ny"] {
            assert_eq!(LineIndex::new(text).len(), count_lines(text), "{text:?}");
        }
    }

    #[test]
    fn slices_are_exact_and_clamped() {
        let idx = LineIndex::new("one\r\ntwo\nthree");
        assert_eq!(idx.slice(1, 1), "one\r\n");
        assert_eq!(idx.slice(2, 3), "two\nthree");
        assert_eq!(idx.slice(0, 99), "one\r\ntwo\nthree");
        assert_eq!(idx.slice(3, 2), "");
        assert_eq!(idx.line(1), "one");
        assert_eq!(idx.line(3), "three");
        assert_eq!(idx.line(4), "");
    }

    #[test]
    fn offsets_map_to_their_lines() {
        let idx = LineIndex::new("ab\ncd\nef\n");
        assert_eq!(idx.line_of_offset(0), 1);
        assert_eq!(idx.line_of_offset(2), 1);
        assert_eq!(idx.line_of_offset(3), 2);
        assert_eq!(idx.line_of_offset(8), 3);
    }

    #[test]
    fn head_takes_whole_lines() {
        assert_eq!(head_lines("a\nb\nc\n", 2), "a\nb\n");
        assert_eq!(head_lines("a\nb", 5), "a\nb");
        assert_eq!(head_lines("a\nb", 0), "");
    }
}
