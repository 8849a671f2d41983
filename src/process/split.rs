//! `split_command`: turns `--command 'claude -p --model haiku'` into argv the way a POSIX
//! shell splits words — quotes and backslashes — without running a shell, so nothing in
//! the string is ever expanded or executed.

/// Why a command string cannot be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// Nothing but blanks.
    #[error("the command is empty; give the program to run, e.g. --command 'claude -p'")]
    Empty,
    /// A quote was opened and never closed.
    #[error("unbalanced {quote} quote in the command (opened at character {at}); close it")]
    UnbalancedQuote { quote: char, at: usize },
    /// The command ends in a backslash that escapes nothing.
    #[error("the command ends with a lone backslash; remove it or escape it as \\\\")]
    TrailingBackslash,
    /// Shell syntax a shell would act on; no shell runs here, so it would reach the program
    /// as a literal argument instead.
    #[error(
        "`{syntax}` in the command is shell syntax, but the command runs without a shell; \
         quote it to pass it literally, or put the pipeline in a script and give its path"
    )]
    ShellSyntax { syntax: char },
}

/// Characters a shell would treat as operators, expansions or substitutions when unquoted.
const SHELL_SYNTAX: &[char] = &['|', '&', ';', '<', '>', '`', '$'];

/// Splits `command` into words: blanks separate words; `'…'` keeps everything literally;
/// `"…"` keeps everything but `\"`, `\\`, `\$` and `` \` ``, which drop the backslash; an
/// unquoted backslash takes the next character literally; backslash-newline joins lines.
pub fn split_command(command: &str) -> Result<Vec<String>, SplitError> {
    let mut words = Vec::new();
    let mut word = String::new();
    // A word exists once anything (even an empty pair of quotes) was seen for it.
    let mut in_word = false;
    let mut chars = command.chars().enumerate().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, c)) => word.push(c),
                        None => {
                            return Err(SplitError::UnbalancedQuote {
                                quote: '\'',
                                at: at + 1,
                            })
                        }
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.peek() {
                            Some(&(_, next @ ('"' | '\\' | '$' | '`'))) => {
                                word.push(next);
                                chars.next();
                            }
                            Some(&(_, '\n')) => {
                                chars.next();
                            }
                            _ => word.push('\\'),
                        },
                        Some((_, c)) => word.push(c),
                        None => return Err(SplitError::UnbalancedQuote { quote: '"', at: at + 1 }),
                    }
                }
            }
            '\\' => match chars.next() {
                Some((_, '\n')) => {}
                Some((_, next)) => {
                    in_word = true;
                    word.push(next);
                }
                None => return Err(SplitError::TrailingBackslash),
            },
            c if SHELL_SYNTAX.contains(&c) => return Err(SplitError::ShellSyntax { syntax: c }),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(SplitError::Empty);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<String> {
        split_command(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn splits_like_a_shell_would() {
        assert_eq!(split("claude -p --model haiku"), ["claude", "-p", "--model", "haiku"]);
        assert_eq!(split("  codex\texec  \n "), ["codex", "exec"]);
        assert_eq!(
            split("llm -m 'gpt 4o' --system \"be brief\""),
            ["llm", "-m", "gpt 4o", "--system", "be brief"]
        );
        assert_eq!(split(r"agent --name it\'s a\ b"), ["agent", "--name", "it's", "a b"]);
        assert_eq!(split(r#"x "say \"hi\" \\ \n""#), ["x", r#"say "hi" \ \n"#]);
        assert_eq!(split("x 'a \\ \"b\"'"), ["x", "a \\ \"b\""]);
        assert_eq!(split("x '' \"\""), ["x", "", ""]);
        assert_eq!(split("x pre'fix'\"ed\"post"), ["x", "prefixedpost"]);
        assert_eq!(split("x \\\n y"), ["x", "y"]);
        assert_eq!(split("x '$HOME' \"a|b\" \\;"), ["x", "$HOME", "a|b", ";"]);
        assert_eq!(
            split("/opt/my agent/bin".replace(' ', "\\ ").as_str()),
            ["/opt/my agent/bin"]
        );
        assert_eq!(split("tool --glob '*.rs' ~/x"), ["tool", "--glob", "*.rs", "~/x"]);
    }

    #[test]
    fn refuses_what_it_cannot_split_with_clear_errors() {
        assert_eq!(split_command(""), Err(SplitError::Empty));
        assert_eq!(split_command(" \t\n"), Err(SplitError::Empty));
        assert_eq!(
            split_command("claude -p 'oops"),
            Err(SplitError::UnbalancedQuote { quote: '\'', at: 11 })
        );
        assert_eq!(
            split_command("x \"a"),
            Err(SplitError::UnbalancedQuote { quote: '"', at: 3 })
        );
        assert_eq!(
            split_command("x \"a\\\""),
            Err(SplitError::UnbalancedQuote { quote: '"', at: 3 })
        );
        assert_eq!(split_command("claude \\"), Err(SplitError::TrailingBackslash));
        for (command, syntax) in [
            ("claude -p | jq .", '|'),
            ("a && b", '&'),
            ("a; b", ';'),
            ("a > out", '>'),
            ("a --model $MODEL", '$'),
            ("a `b`", '`'),
        ] {
            assert_eq!(
                split_command(command),
                Err(SplitError::ShellSyntax { syntax }),
                "{command}"
            );
        }
        let message = split_command("claude -p 'oops").unwrap_err().to_string();
        assert_eq!(
            message,
            "unbalanced ' quote in the command (opened at character 11); close it"
        );
        let message = split_command("a | b").unwrap_err().to_string();
        assert!(message.starts_with("`|` in the command is shell syntax"), "{message}");
    }
}
