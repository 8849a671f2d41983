//! 1-based inclusive line ranges, and the greedy packing of consecutive segments (items,
//! sections) into ranges that fit. Windows are in [`super::windows::budget_windows`].

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

/// How [`pack`] is to treat a segment that does not fit alone.
pub(crate) enum Split<T> {
    /// Consecutive sub-segments (the members of a class, the subsections of a section),
    /// packed like the others; any that still does not fit is split again.
    Segments(Vec<LineRange>),
    /// Final pieces (windows, chunks the caller built), kept as they are.
    Final(Vec<T>),
}

/// What [`pack`] makes: ranges of whole segments, and the caller's pieces of the segments
/// it split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Packed<T> {
    Range(LineRange),
    Final(T),
}

/// Joins consecutive `segments` (contiguous, in order) into ranges that `fits`, closing a
/// range before the segment that would overflow it. A segment that does not fit alone is
/// handed to `split`: nested segments join the packing in its place, final pieces are kept.
pub(crate) fn pack<T>(
    segments: &[LineRange],
    fits: impl Fn(LineRange) -> bool,
    mut split: impl FnMut(LineRange) -> Split<T>,
) -> Vec<Packed<T>> {
    let mut out = Vec::new();
    let mut current: Option<LineRange> = None;
    let mut pending: Vec<LineRange> = segments.iter().rev().copied().collect();
    while let Some(segment) = pending.pop() {
        if !fits(segment) {
            match split(segment) {
                Split::Segments(parts) if parts.len() > 1 => pending.extend(parts.into_iter().rev()),
                Split::Segments(parts) => {
                    out.extend(current.take().map(Packed::Range));
                    out.extend(parts.into_iter().map(Packed::Range));
                }
                Split::Final(parts) => {
                    out.extend(current.take().map(Packed::Range));
                    out.extend(parts.into_iter().map(Packed::Final));
                }
            }
            continue;
        }
        current = match current {
            Some(c) if fits(LineRange::new(c.start, segment.end)) => Some(LineRange::new(c.start, segment.end)),
            Some(c) => {
                out.push(Packed::Range(c));
                Some(segment)
            }
            None => Some(segment),
        };
    }
    out.extend(current.map(Packed::Range));
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

    fn within(max: usize) -> impl Fn(LineRange) -> bool {
        move |r: LineRange| r.len() <= max
    }

    #[test]
    fn packing_keeps_segments_whole() {
        let segs = [r(1, 100), r(101, 250), r(251, 300), r(301, 900), r(901, 950)];
        let packed = pack(&segs, within(300), |s| {
            Split::Final(vec![r(s.start, 600), r(581, s.end)])
        });
        let expected = vec![
            Packed::Range(r(1, 300)),
            Packed::Final(r(301, 600)),
            Packed::Final(r(581, 900)),
            Packed::Range(r(901, 950)),
        ];
        assert_eq!(packed, expected);
    }

    #[test]
    fn nested_segments_join_the_packing() {
        // 101..=500 splits into 101..=150 (a header), 151..=400 and 401..=500.
        let segs = [r(1, 100), r(101, 500), r(501, 520)];
        let packed: Vec<Packed<()>> = pack(&segs, within(300), |s| {
            assert_eq!(s, r(101, 500));
            Split::Segments(vec![r(101, 150), r(151, 400), r(401, 500)])
        });
        let expected = vec![
            Packed::Range(r(1, 150)),
            Packed::Range(r(151, 400)),
            Packed::Range(r(401, 520)),
        ];
        assert_eq!(packed, expected);
    }

    #[test]
    fn segments_start_at_boundaries() {
        assert_eq!(segments_between(r(1, 10), &[1, 4, 8]), vec![r(1, 3), r(4, 7), r(8, 10)]);
        assert_eq!(segments_between(r(1, 10), &[]), vec![r(1, 10)]);
        assert_eq!(segments_between(r(5, 10), &[3, 7, 12]), vec![r(5, 6), r(7, 10)]);
    }
}
