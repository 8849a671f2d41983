//! 1-based inclusive line ranges and the two ways chunkers cut a file into them: fixed
//! windows with overlap, and greedy packing of consecutive segments up to a size limit.

use serde::{Deserialize, Serialize};

/// Lines `start..=end` of a file, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LineRange {
    pub start: usize,
    pub end: usize,
}

impl LineRange {
    /// Lines `start..=end`.
    pub fn new(start: usize, end: usize) -> LineRange {
        LineRange { start, end }
    }

    /// How many lines the range holds.
    pub fn len(self) -> usize {
        (self.end + 1).saturating_sub(self.start)
    }

    /// Whether the range holds no line.
    pub fn is_empty(self) -> bool {
        self.end < self.start
    }

    /// Whether line `n` is in the range.
    pub fn contains(self, n: usize) -> bool {
        self.start <= n && n <= self.end
    }
}

impl std::fmt::Display for LineRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}–{}", self.start, self.end)
    }
}

/// Windows of `size` lines over `range`, each starting `overlap` lines before the previous
/// one ended. `extend(line)` may say that a window must not end just before `line` (a stack
/// frame continuing an entry): the window then grows over such lines, at most `max_extend`.
pub(crate) fn windows(
    range: LineRange,
    size: usize,
    overlap: usize,
    max_extend: usize,
    extend: impl Fn(usize) -> bool,
) -> Vec<LineRange> {
    let size = size.max(1);
    // An overlap as large as the window would never advance.
    let overlap = overlap.min(size - 1);
    let mut out = Vec::with_capacity(range.len() / (size - overlap) + 1);
    let mut start = range.start;
    while start <= range.end {
        let mut end = (start + size - 1).min(range.end);
        let limit = (end + max_extend).min(range.end);
        while end < limit && extend(end + 1) {
            end += 1;
        }
        out.push(LineRange::new(start, end));
        if end == range.end {
            break;
        }
        start = end + 1 - overlap;
    }
    out
}

/// How [`pack`] is to treat a segment longer than the limit.
pub(crate) enum Split {
    /// Consecutive sub-segments (nested items), packed like the others; any still too long
    /// is split again.
    Segments(Vec<LineRange>),
    /// Final ranges (overlapping windows), kept as they are.
    Windows(Vec<LineRange>),
}

/// Joins consecutive `segments` (contiguous, in order) into ranges of at most `max` lines,
/// closing a range before the segment that would overflow it. A segment longer than `max`
/// is handed to `split`: nested segments join the packing in its place, windows are kept.
pub(crate) fn pack(segments: &[LineRange], max: usize, mut split: impl FnMut(LineRange) -> Split) -> Vec<LineRange> {
    let mut out = Vec::new();
    let mut current: Option<LineRange> = None;
    let mut pending: Vec<LineRange> = segments.iter().rev().copied().collect();
    while let Some(segment) = pending.pop() {
        if segment.len() > max {
            match split(segment) {
                Split::Segments(parts) if parts.len() > 1 => pending.extend(parts.into_iter().rev()),
                Split::Segments(parts) | Split::Windows(parts) => {
                    out.extend(current.take());
                    out.extend(parts);
                }
            }
            continue;
        }
        current = match current {
            Some(c) if c.len() + segment.len() <= max => Some(LineRange::new(c.start, segment.end)),
            Some(c) => {
                out.push(c);
                Some(segment)
            }
            None => Some(segment),
        };
    }
    out.extend(current);
    out
}

/// The segments between consecutive `boundaries` (sorted first lines of items) over `range`:
/// lines before the first boundary form a segment of their own.
pub(crate) fn segments_between(range: LineRange, boundaries: &[usize]) -> Vec<LineRange> {
    let mut out = Vec::with_capacity(boundaries.len() + 1);
    let mut start = range.start;
    for &b in boundaries {
        if b > start && b <= range.end {
            out.push(LineRange::new(start, b - 1));
            start = b;
        }
    }
    if start <= range.end {
        out.push(LineRange::new(start, range.end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: usize, end: usize) -> LineRange {
        LineRange::new(start, end)
    }

    #[test]
    fn windows_overlap_and_end_exactly() {
        let w = windows(r(1, 450), 200, 20, 0, |_| false);
        assert_eq!(w, vec![r(1, 200), r(181, 380), r(361, 450)]);
        assert_eq!(windows(r(1, 200), 200, 20, 0, |_| false), vec![r(1, 200)]);
        assert_eq!(windows(r(1, 5), 1, 3, 0, |_| false).len(), 5);
    }

    #[test]
    fn windows_grow_over_continuations_up_to_a_limit() {
        // Lines 201..=205 continue the entry that starts at 199.
        let w = windows(r(1, 400), 200, 20, 50, |n| (201..=205).contains(&n));
        assert_eq!(w[0], r(1, 205));
        assert_eq!(w[1].start, 186);
        let capped = windows(r(1, 400), 200, 20, 2, |n| n > 200);
        assert_eq!(capped[0], r(1, 202));
    }

    #[test]
    fn packing_keeps_segments_whole() {
        let segs = [r(1, 100), r(101, 250), r(251, 300), r(301, 900), r(901, 950)];
        let packed = pack(&segs, 300, |s| Split::Windows(vec![r(s.start, 600), r(581, s.end)]));
        assert_eq!(packed, vec![r(1, 300), r(301, 600), r(581, 900), r(901, 950)]);
    }

    #[test]
    fn nested_segments_join_the_packing() {
        // 101..=500 splits into 101..=150 (a header), 151..=400 and 401..=500.
        let segs = [r(1, 100), r(101, 500), r(501, 520)];
        let packed = pack(&segs, 300, |s| {
            assert_eq!(s, r(101, 500));
            Split::Segments(vec![r(101, 150), r(151, 400), r(401, 500)])
        });
        assert_eq!(packed, vec![r(1, 150), r(151, 400), r(401, 520)]);
    }

    #[test]
    fn segments_start_at_boundaries() {
        assert_eq!(segments_between(r(1, 10), &[1, 4, 8]), vec![r(1, 3), r(4, 7), r(8, 10)]);
        assert_eq!(segments_between(r(1, 10), &[]), vec![r(1, 10)]);
        assert_eq!(segments_between(r(5, 10), &[3, 7, 12]), vec![r(5, 6), r(7, 10)]);
    }
}
