//! An answer read as a markdown list, for `merge` (issue 25): its top-level items, each with
//! the lines nested under it (sub-items, continuation lines), so a nested item stays under
//! its parent instead of becoming an item of its own.
//!
//! An answer is a list when every line is a list item, a line indented under one, or blank —
//! after a lead-in of headings ("## Functions in bisect.py") and at most one paragraph that
//! ends with `:` ("Here are the functions:"), which the merged list with its sources
//! replaces. Anything else (prose, a table, code, headings between items, a list followed by
//! a closing sentence) is not a list, and `merge` keeps it whole: an answer is never cut
//! into fragments.

/// One top-level item of a list answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListItem {
    /// The item's own text, after its marker (`- `, `* `, `+ `, `1. `, `1) `).
    pub head: String,
    /// The lines under it (sub-items, continuations, blank lines between them), indented
    /// relative to the item, at least two spaces so they stay nested when rendered.
    pub body: Vec<String>,
}

impl ListItem {
    /// What two items must share to be merged: their text and everything nested under it.
    pub fn key(&self) -> String {
        let mut key = self.head.clone();
        for line in &self.body {
            key.push('\n');
            key.push_str(line.trim_end());
        }
        key
    }
}

/// Width of a line's leading whitespace (a tab counts four).
fn indent(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// The text of a list item line (`- x`, `* x`, `+ x`, `1. x`, `1) x`), if it is one.
pub fn item_text(line: &str) -> Option<&str> {
    let l = line.trim_start();
    let rest = if let Some(r) = l.strip_prefix(['-', '*', '+']) {
        r
    } else {
        let digits = l.len() - l.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return None;
        }
        l[digits..].strip_prefix(['.', ')'])?
    };
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let item = rest.trim();
    (!item.is_empty()).then_some(item)
}

/// The answer's top-level items, or `None` when the answer is not a list (see the module doc).
pub fn read(text: &str) -> Option<Vec<ListItem>> {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().position(|l| item_text(l).is_some())?;
    // The lead-in without its headings (and the blank lines around them).
    let lead_in: Vec<&str> = lines[..first]
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.starts_with('#'))
        .skip_while(|l| l.is_empty())
        .collect();
    let lead_in_ok = match lead_in.iter().rposition(|l| !l.is_empty()) {
        None => true,
        // One paragraph (no blank line inside it) that introduces the list.
        Some(last) => lead_in[last].ends_with(':') && lead_in[..last].iter().all(|l| !l.is_empty()),
    };
    if !lead_in_ok {
        return None;
    }
    let top = indent(lines[first]);
    let mut items: Vec<ListItem> = Vec::new();
    let mut blanks = 0;
    for line in &lines[first..] {
        if line.trim().is_empty() {
            blanks += 1;
            continue;
        }
        let depth = indent(line);
        if depth <= top {
            // Prose at the list's own level ends the list: the answer is more than a list.
            let head = item_text(line)?;
            items.push(ListItem {
                head: head.to_string(),
                body: Vec::new(),
            });
        } else {
            let item = items.last_mut()?;
            if !item.body.is_empty() {
                item.body.extend(std::iter::repeat_n(String::new(), blanks));
            }
            let relative = (depth - top).max(2);
            item.body.push(format!("{}{}", " ".repeat(relative), line.trim()));
        }
        blanks = 0;
    }
    Some(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heads(text: &str) -> Option<Vec<String>> {
        read(text).map(|items| items.into_iter().map(|i| i.head).collect())
    }

    #[test]
    fn item_syntax() {
        assert_eq!(
            heads("- x\n* y\n10) z\n3. w"),
            Some(vec!["x".into(), "y".into(), "z".into(), "w".into()])
        );
        assert_eq!(heads("-a\n**bold**"), None, "no item at all");
    }

    #[test]
    fn nested_items_stay_under_their_parent() {
        let items = read("- `insort(a, x)` inserts x\n  - keeps the list sorted\n\tcalled each time and other options.\n- `bisect`\n").unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].head, "`insort(a, x)` inserts x");
        assert_eq!(
            items[0].body,
            ["  - keeps the list sorted", "    called each time and other options."]
        );
        assert!(items[1].body.is_empty());
    }

    #[test]
    fn prose_is_not_a_list() {
        assert_eq!(
            heads("The module defines:\n\n- a\n- b\n\nThat is all."),
            None,
            "closing sentence"
        );
        assert_eq!(
            heads("Some prose.\n\n- a"),
            None,
            "a lead-in that does not introduce the list"
        );
        assert_eq!(heads("```\n- a\n```"), None, "code");
        assert_eq!(heads("- a\nwrapped lazily"), None, "lazy continuation");
        assert_eq!(
            heads("Here are the functions in\nbisect.py:\n\n- a\n\n- b\n"),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            heads("## Functions in bisect.py\n\nIt defines:\n- a\n"),
            Some(vec!["a".into()])
        );
        assert_eq!(
            heads("## Functions\n- a\n## Classes\n- B\n"),
            None,
            "a heading between items"
        );
    }
}
