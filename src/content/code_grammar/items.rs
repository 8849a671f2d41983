//! The items of a file by its syntax tree, in the shape the chunker packs
//! ([`crate::content::code_scan::Item`]): contiguous runs of lines, each a top-level node
//! with the comments, decorators and attributes directly above it (no blank line between),
//! and, for an item that may be cut inside, a [`Body`]: its header and its members.
//!
//! - A class (impl, module, namespace, interface, object literal) has its members: cut
//!   between them when it does not fit, its header repeated.
//! - A function (method, closure) has its top-level statements: cut between them only when
//!   it does not fit the budget, its signature repeated. A statement has members only when
//!   most of it is a function or class (a `describe("…", () => {…})` call, an IIFE,
//!   `module.exports = {…}`), found by following its largest child down.
//! - Two nodes on one line are one item: a cut falls only at a line where a node starts
//!   and none goes on.

use tree_sitter::{Node, Tree};

use super::{first_line, last_line, Grammar};
use crate::content::code_scan::{Body, BodyKind, Item};
use crate::content::line_range::LineRange;

/// How deep items are opened (a method of a class in a namespace in a `describe`…).
const MAX_NESTING: usize = 8;

/// How deep a statement is followed down to the function or class that makes most of it.
const MAX_DESCENT: usize = 8;

/// The items of the file, contiguous from line 1 to `lines`.
pub(crate) fn items(grammar: &Grammar, tree: &Tree, text: &str, lines: usize) -> Vec<Item> {
    if lines == 0 {
        return Vec::new();
    }
    let nodes = grammar.top_nodes(tree.root_node(), text);
    Finder { grammar, text }.items(&nodes, LineRange::new(1, lines), 0)
}

/// `no_cut[n]` is true when a cut before line `n` (1-based) would fall inside a string or a
/// comment that spans lines.
pub(crate) fn no_cut_lines(grammar: &Grammar, tree: &Tree, lines: usize) -> Vec<bool> {
    let mut no_cut = vec![false; lines + 2];
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        let (first, last) = (first_line(node), last_line(node));
        if first == last {
            continue;
        }
        let kind = node.kind();
        if grammar.is_comment(node) || kind.contains("string") || kind.contains("heredoc") || kind == "template_literal"
        {
            for flag in no_cut.iter_mut().take(last.min(lines) + 1).skip(first + 1) {
                *flag = true;
            }
            continue;
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    no_cut
}

struct Finder<'g, 't> {
    grammar: &'g Grammar,
    text: &'t str,
}

/// Nodes that start a new item together: attached ones (comments, decorators) directly
/// above one another, the node they belong to, and any node that starts on a line the group
/// already ends on.
struct Group<'t> {
    first: usize,
    last: usize,
    nodes: Vec<Node<'t>>,
    /// Only comments and decorators so far: what comes directly below joins them (kept as
    /// the nodes come, where asking of every node again made 20,000 comment lines take
    /// 14 s).
    attached_only: bool,
}

impl<'t> Finder<'_, 't> {
    /// `nodes` (in order) as items covering `range`.
    fn items(&self, nodes: &[Node<'t>], range: LineRange, nesting: usize) -> Vec<Item> {
        let groups = self.groups(nodes);
        let mut items = Vec::with_capacity(groups.len());
        for (i, group) in groups.iter().enumerate() {
            let start = if i == 0 { range.start } else { group.first };
            let end = groups.get(i + 1).map_or(range.end, |next| next.first - 1);
            if start > end {
                continue;
            }
            let lines = LineRange::new(start, end);
            let lead = if start == group.first { self.lead(group) } else { 0 };
            let mains: Vec<Node<'t>> = group
                .nodes
                .iter()
                .copied()
                .filter(|n| !self.grammar.is_attached(*n))
                .collect();
            let body = match mains.as_slice() {
                [main] if nesting < MAX_NESTING => self.body(*main, lines, nesting),
                _ => None,
            };
            items.push(Item { lines, lead, body });
        }
        if items.is_empty() && !range.is_empty() {
            items.push(Item {
                lines: range,
                lead: 0,
                body: None,
            });
        }
        items
    }

    fn groups(&self, nodes: &[Node<'t>]) -> Vec<Group<'t>> {
        let mut groups: Vec<Group<'t>> = Vec::new();
        for &node in nodes {
            let (first, last) = (first_line(node), last_line(node));
            if let Some(group) = groups.last_mut() {
                // On a line the group already holds: the same item. Directly below
                // comments or decorators only: the item they belong to.
                if first <= group.last || (group.attached_only && first == group.last + 1) {
                    group.last = group.last.max(last);
                    group.attached_only &= self.grammar.is_attached(node);
                    group.nodes.push(node);
                    continue;
                }
            }
            groups.push(Group {
                first,
                last,
                attached_only: self.grammar.is_attached(node),
                nodes: vec![node],
            });
        }
        groups
    }

    /// How many comment lines open `group` before its first other node (none when the
    /// group is only comments: there is no code to detach them from).
    fn lead(&self, group: &Group<'t>) -> usize {
        match group.nodes.iter().find(|n| !self.grammar.is_comment(**n)) {
            Some(code) => first_line(*code) - group.first,
            None => 0,
        }
    }

    /// The header and members of the item `lines` whose code is `main`, when it can be
    /// cut inside.
    fn body(&self, main: Node<'t>, lines: LineRange, nesting: usize) -> Option<Body> {
        let (container, kind) = self.container(main)?;
        let compound = self.grammar.is_compound(container);
        let body = if compound {
            // The first block; the clauses after it are members too.
            let mut cursor = container.walk();
            let first_block = container.named_children(&mut cursor).find(|c| c.kind() == "block");
            first_block?
        } else {
            match container.child_by_field_name("body") {
                Some(body) => body,
                None if kind == BodyKind::Class => container,
                None => return None,
            }
        };
        if kind == BodyKind::Block && !is_block_like(body) {
            return None;
        }
        // The header ends on the line opening the body (`{`), or the line above a body
        // that opens with its first statement (Python, Ruby).
        let opens_with_delimiter = body.child(0).is_some_and(|c| !c.is_named());
        let body_first = first_line(body);
        let header_end = if opens_with_delimiter || body == container {
            body_first
        } else {
            // The line of the `:` (Python) or of the name (Ruby) before the body: comments
            // between it and the first statement are the first member's.
            let mut before = body.prev_sibling();
            while let Some(node) = before.filter(|n| self.grammar.is_comment(*n)) {
                before = node.prev_sibling();
            }
            before.map_or(body_first.saturating_sub(1), last_line)
        };
        let header_start = self.code_start(main, container).max(lines.start);
        let header_end = header_end.max(header_start);
        if header_end >= lines.end {
            return None;
        }
        let mut members = Vec::new();
        self.grammar.flatten_into(body, self.text, &mut members);
        if compound {
            let mut cursor = container.walk();
            members.extend(
                container
                    .named_children(&mut cursor)
                    .filter(|c| c.start_byte() >= body.end_byte()),
            );
        }
        if body == container {
            // An object literal or a Ruby class without a body field: its members are the
            // children below the header line.
            members.retain(|m| first_line(*m) > header_end);
        }
        // A member that starts on the header's lines makes the header a member: not cut.
        if members.iter().any(|m| first_line(*m) <= header_end) || members.is_empty() {
            return None;
        }
        let range = LineRange::new(header_end + 1, lines.end);
        let members = self.items(&members, range, nesting + 1);
        Some(Body {
            header: LineRange::new(header_start, header_end),
            kind,
            members,
        })
    }

    /// Whether a compound statement holds a function or class in one of its blocks or
    /// clauses.
    fn holds_definitions(&self, node: Node<'t>) -> bool {
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        children.into_iter().any(|child| {
            if self.grammar.is_compound(child) {
                return self.holds_definitions(child);
            }
            if child.kind() != "block" {
                return false;
            }
            let mut cursor = child.walk();
            let found = child.named_children(&mut cursor).any(|s| {
                self.grammar.is_function(s)
                    || self.grammar.is_class(s)
                    || s.kind() == "decorated_definition"
                    || (self.grammar.is_compound(s) && self.holds_definitions(s))
            });
            found
        })
    }

    /// The first line of the header of `main`, whose code is `container`: past the
    /// decorators and annotations above a class or function, so the header starts at the
    /// line naming it (they stay in the first chunk of the item).
    fn code_start(&self, main: Node<'t>, container: Node<'t>) -> usize {
        let decorations = [
            "decorator",
            "attribute_list",
            "attribute_item",
            "annotation",
            "marker_annotation",
        ];
        let on_path = |n: Node<'t>| n.start_byte() <= container.start_byte() && container.end_byte() <= n.end_byte();
        let mut node = main;
        'down: loop {
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                if decorations.contains(&child.kind()) || self.grammar.is_comment(child) {
                    continue;
                }
                if child.kind() == "modifiers" {
                    // Java: `@Override public void run()`, the annotations in the modifiers.
                    let mut inner = child.walk();
                    let first_modifier = child
                        .children(&mut inner)
                        .find(|m| !decorations.contains(&m.kind()) && !self.grammar.is_comment(*m));
                    if let Some(modifier) = first_modifier {
                        return first_line(modifier);
                    }
                    continue;
                }
                if child.child_count() > 0 && (on_path(child) || child.kind() == "decorated_definition") {
                    node = child;
                    continue 'down;
                }
                return first_line(child);
            }
            return first_line(node);
        }
    }

    /// The function or class that `node` is, or that most of it is (following its largest
    /// child down: `export class`, `describe("…", () => {…})`, `module.exports = {…}`).
    fn container(&self, node: Node<'t>) -> Option<(Node<'t>, BodyKind)> {
        let rows = |n: Node<'_>| last_line(n) + 1 - first_line(n);
        let whole = rows(node);
        let mut current = node;
        for _ in 0..MAX_DESCENT {
            if self.grammar.is_function(current) {
                match current.child_by_field_name("body") {
                    // `cls => class extends cls {…}`: the class is the body.
                    Some(body) if !is_block_like(body) => {
                        current = body;
                        continue;
                    }
                    _ => return Some((current, BodyKind::Block)),
                }
            }
            if self.grammar.is_class(current) {
                return Some((current, BodyKind::Class));
            }
            if self.grammar.is_compound(current) {
                return self.holds_definitions(current).then_some((current, BodyKind::Block));
            }
            let mut cursor = current.walk();
            let largest = current
                .named_children(&mut cursor)
                .filter(|c| !self.grammar.is_comment(*c))
                .max_by_key(|c| (rows(*c), c.start_byte()))?;
            // A function in a corner of a long statement is no header's body.
            if rows(largest) * 2 < whole || rows(largest) < 3 {
                return None;
            }
            current = largest;
        }
        None
    }
}

/// Whether `body` is a block of statements (not an expression body: `x => x + 1`).
fn is_block_like(body: Node<'_>) -> bool {
    ["block", "body", "compound_statement", "declaration_list"]
        .iter()
        .any(|b| body.kind().contains(b))
}
