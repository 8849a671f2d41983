//! A review phase's `select`: which items it takes. `best_candidate` (the best of each
//! cluster of the reduce phase), `clustered` (a member of one of its clusters), or a filter
//! over the item's fields and the answers of earlier phases: `quick_verdict == "review"`,
//! `vision_alignment >= 7 and not spam`, `flags contains "off-vision"`,
//! `quality_signals.ci_passing`.
//!
//! Grammar: `expr := and ("or" and)*`, `and := unary ("and" unary)*`,
//! `unary := "not" unary | "(" expr ")" | FIELD [OP VALUE]`; a field alone means "truthy".

use std::fmt;

use serde_json::Value;

/// A parsed `select`.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    BestCandidate,
    Clustered,
    Truthy(String),
    Compare(String, Op, Value),
    Not(Box<Filter>),
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Contains,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Contains => "contains",
        })
    }
}

/// Where an item stands in the reduce phase's clusters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterPlace {
    /// A member of a cluster (of two or more).
    pub clustered: bool,
    /// Its cluster's best candidate.
    pub best: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Text(String),
    Number(f64),
    Op(Op),
    Open,
    Close,
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Word(w) => write!(f, "{w}"),
            Token::Text(t) => write!(f, "\"{t}\""),
            Token::Number(n) => write!(f, "{n}"),
            Token::Op(op) => write!(f, "{op}"),
            Token::Open => f.write_str("("),
            Token::Close => f.write_str(")"),
        }
    }
}

impl Filter {
    /// Parses a `select` expression; the error says what was expected where.
    pub fn parse(text: &str) -> Result<Filter, String> {
        let tokens = tokenize(text)?;
        if tokens.is_empty() {
            return Err("empty: write best_candidate or a filter such as quick_verdict == \"review\"".into());
        }
        let mut parser = Parser { tokens, at: 0 };
        let filter = parser.or()?;
        match parser.tokens.get(parser.at) {
            None => Ok(filter),
            Some(t) => Err(format!("unexpected '{t}' in '{text}'")),
        }
    }

    /// Whether it asks about the clusters (`best_candidate`, `clustered`).
    pub fn uses_clusters(&self) -> bool {
        match self {
            Filter::BestCandidate | Filter::Clustered => true,
            Filter::Truthy(_) | Filter::Compare(..) => false,
            Filter::Not(f) => f.uses_clusters(),
            Filter::And(a, b) | Filter::Or(a, b) => a.uses_clusters() || b.uses_clusters(),
        }
    }

    /// Whether `record`, standing at `place` in the clusters, is selected.
    pub fn matches(&self, record: &Value, place: ClusterPlace) -> bool {
        match self {
            Filter::BestCandidate => place.best,
            Filter::Clustered => place.clustered,
            Filter::Truthy(field) => truthy(lookup(record, field)),
            Filter::Compare(field, op, value) => compare(lookup(record, field), *op, value),
            Filter::Not(f) => !f.matches(record, place),
            Filter::And(a, b) => a.matches(record, place) && b.matches(record, place),
            Filter::Or(a, b) => a.matches(record, place) || b.matches(record, place),
        }
    }
}

/// `a.b.c` in `record`.
fn lookup<'a>(record: &'a Value, field: &str) -> Option<&'a Value> {
    field.split('.').try_fold(record, |v, key| v.get(key))
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|n| n != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

fn compare(left: Option<&Value>, op: Op, right: &Value) -> bool {
    let Some(left) = left else {
        return op == Op::Ne;
    };
    match op {
        Op::Contains => match left {
            Value::Array(items) => items.iter().any(|i| loose_eq(i, right)),
            Value::String(s) => right.as_str().is_some_and(|r| s.contains(r)),
            _ => false,
        },
        Op::Eq => loose_eq(left, right),
        Op::Ne => !loose_eq(left, right),
        Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let ordering = match (left.as_f64(), right.as_f64()) {
                (Some(l), Some(r)) => l.partial_cmp(&r),
                _ => match (left.as_str(), right.as_str()) {
                    (Some(l), Some(r)) => Some(l.cmp(r)),
                    _ => None,
                },
            };
            ordering.is_some_and(|o| match op {
                Op::Lt => o.is_lt(),
                Op::Le => o.is_le(),
                Op::Gt => o.is_gt(),
                _ => o.is_ge(),
            })
        }
    }
}

/// Equal, with numbers compared as numbers and strings without regard to case.
fn loose_eq(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(l), Value::Number(r)) => l.as_f64() == r.as_f64(),
        (Value::String(l), Value::String(r)) => l.eq_ignore_ascii_case(r),
        (l, r) => l == r,
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' || c == ')' {
            tokens.push(if c == '(' { Token::Open } else { Token::Close });
            i += 1;
        } else if c == '"' || c == '\'' {
            let end = chars[i + 1..]
                .iter()
                .position(|&d| d == c)
                .ok_or_else(|| format!("a string opened with {c} is not closed in '{text}'"))?;
            tokens.push(Token::Text(chars[i + 1..i + 1 + end].iter().collect()));
            i += end + 2;
        } else if "=!<>".contains(c) {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let (op, len) = match two.as_str() {
                "==" => (Op::Eq, 2),
                "!=" => (Op::Ne, 2),
                "<=" => (Op::Le, 2),
                ">=" => (Op::Ge, 2),
                _ if c == '<' => (Op::Lt, 1),
                _ if c == '>' => (Op::Gt, 1),
                _ if c == '=' => (Op::Eq, 1),
                _ => return Err(format!("'{c}' alone is not an operator in '{text}': use == or !=")),
            };
            tokens.push(Token::Op(op));
            i += len;
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !"()\"'=!<>".contains(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            match word.parse::<f64>() {
                Ok(n) if word.starts_with(|c: char| c.is_ascii_digit() || c == '-') => tokens.push(Token::Number(n)),
                _ if word == "contains" => tokens.push(Token::Op(Op::Contains)),
                _ => tokens.push(Token::Word(word)),
            }
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek_word(&self, word: &str) -> bool {
        matches!(self.tokens.get(self.at), Some(Token::Word(w)) if w == word)
    }

    fn or(&mut self) -> Result<Filter, String> {
        let mut left = self.and()?;
        while self.peek_word("or") {
            self.at += 1;
            left = Filter::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Filter, String> {
        let mut left = self.unary()?;
        while self.peek_word("and") {
            self.at += 1;
            left = Filter::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Filter, String> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        match token {
            Some(Token::Word(w)) if w == "not" => Ok(Filter::Not(Box::new(self.unary()?))),
            Some(Token::Open) => {
                let inner = self.or()?;
                match self.tokens.get(self.at) {
                    Some(Token::Close) => {
                        self.at += 1;
                        Ok(inner)
                    }
                    _ => Err("a '(' is not closed".into()),
                }
            }
            Some(Token::Word(w)) if w == "best_candidate" => Ok(Filter::BestCandidate),
            Some(Token::Word(w)) if w == "clustered" => Ok(Filter::Clustered),
            Some(Token::Word(field)) => {
                let Some(Token::Op(op)) = self.tokens.get(self.at).cloned() else {
                    return Ok(Filter::Truthy(field));
                };
                self.at += 1;
                let value = match self.tokens.get(self.at).cloned() {
                    Some(Token::Text(t)) => Value::String(t),
                    Some(Token::Number(n)) => serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number),
                    Some(Token::Word(w)) => match w.as_str() {
                        "true" => Value::Bool(true),
                        "false" => Value::Bool(false),
                        "null" => Value::Null,
                        _ => Value::String(w),
                    },
                    other => {
                        return Err(format!(
                            "expected a value after {field} {op}, found {}",
                            other.map_or("the end".to_string(), |t| format!("'{t}'"))
                        ))
                    }
                };
                self.at += 1;
                Ok(Filter::Compare(field, op, value))
            }
            other => Err(format!(
                "expected a field, best_candidate, clustered, not or '(', found {}",
                other.map_or("the end".to_string(), |t| format!("'{t}'"))
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filters_select_what_they_say() {
        let r = json!({"quick_verdict": "Review", "vision_alignment": 8, "flags": ["spam"], "q": {"ci": true}});
        let yes = |s: &str| Filter::parse(s).unwrap().matches(&r, ClusterPlace::default());
        assert!(yes("quick_verdict == \"review\""));
        assert!(yes("quick_verdict == review"));
        assert!(!yes("quick_verdict != 'review'"));
        assert!(yes("vision_alignment >= 7 and q.ci"));
        assert!(!yes("vision_alignment > 8"));
        assert!(yes("flags contains \"spam\""));
        assert!(yes("not missing and (best_candidate or vision_alignment == 8)"));
        assert!(!yes("best_candidate"));
        assert!(!yes("clustered"));
        let best = ClusterPlace {
            clustered: true,
            best: true,
        };
        let member = ClusterPlace {
            clustered: true,
            best: false,
        };
        let preset = Filter::parse("best_candidate or (not clustered and quick_verdict == \"review\")").unwrap();
        assert!(preset.matches(&r, best) && !preset.matches(&r, member) && yes("not clustered"));
        assert!(preset.matches(&r, ClusterPlace::default()));
        assert!(Filter::parse("best_candidate or x").unwrap().uses_clusters());
        assert!(Filter::parse("not clustered").unwrap().uses_clusters());
    }

    #[test]
    fn bad_filters_say_what_is_wrong() {
        assert!(Filter::parse("").unwrap_err().contains("empty"));
        assert!(Filter::parse("a ==")
            .unwrap_err()
            .contains("expected a value after a =="));
        assert!(Filter::parse("a == 1 >= 2").unwrap_err().contains("unexpected '>='"));
        assert!(Filter::parse("(a").unwrap_err().contains("not closed"));
        assert!(Filter::parse("a == 'x").unwrap_err().contains("not closed"));
        assert!(Filter::parse("a b").unwrap_err().contains("unexpected"));
    }
}
