//! The footer rlm writes at the end of each skill file, `<!-- rlm-skill 0.1.0 sha256:… -->`,
//! holding a checksum of everything above it. A file whose checksum still matches is exactly
//! what some rlm wrote and can be replaced; one whose checksum broke was edited by the user.

use crate::hash::sha256_hex;

const OPEN: &str = "<!-- rlm-skill ";
const CLOSE: &str = " -->";

/// `body` (ending in a newline) followed by its footer line.
pub fn with_footer(body: &str, version: &str) -> String {
    format!("{body}{OPEN}{version} sha256:{}{CLOSE}\n", sha256_hex(body.as_bytes()))
}

/// What the footer of an existing file says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FooterCheck {
    /// The checksum matches the text above it: rlm `version` wrote it and nobody changed it.
    Intact { version: String },
    /// The footer is missing or its checksum does not match: the file was edited (or is not
    /// rlm's).
    Broken,
}

/// Checks the footer of `text` (CRLF line endings count as LF, so an editor or git that
/// converts line endings does not make a file look edited).
pub fn check(text: &str) -> FooterCheck {
    let text = text.replace("\r\n", "\n");
    let trimmed = text.trim_end_matches('\n');
    let line_start = trimmed.rfind('\n').map_or(0, |i| i + 1);
    let (body, footer) = trimmed.split_at(line_start);
    let parsed = footer
        .strip_prefix(OPEN)
        .and_then(|rest| rest.strip_suffix(CLOSE))
        .and_then(|rest| rest.split_once(" sha256:"));
    match parsed {
        Some((version, sum)) if sum == sha256_hex(body.as_bytes()) => FooterCheck::Intact {
            version: version.to_string(),
        },
        _ => FooterCheck::Broken,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_file_is_intact_with_its_version() {
        let text = with_footer("# Title\n\nbody\n", "0.1.0");
        assert!(text.ends_with(" -->\n"));
        assert!(text.contains("<!-- rlm-skill 0.1.0 sha256:"));
        assert_eq!(
            check(&text),
            FooterCheck::Intact {
                version: "0.1.0".into()
            }
        );
    }

    #[test]
    fn line_ending_changes_are_not_edits() {
        let text = with_footer("a\nb\n", "0.2.0").replace('\n', "\r\n");
        assert_eq!(
            check(&text),
            FooterCheck::Intact {
                version: "0.2.0".into()
            }
        );
        let text = with_footer("a\n", "0.2.0") + "\n\n";
        assert_eq!(
            check(&text),
            FooterCheck::Intact {
                version: "0.2.0".into()
            }
        );
    }

    #[test]
    fn any_edit_or_a_missing_footer_breaks_it() {
        let text = with_footer("a\nb\n", "0.1.0");
        assert_eq!(check(&text.replace("b\n", "B\n")), FooterCheck::Broken);
        assert_eq!(check(&format!("extra\n{text}")), FooterCheck::Broken);
        assert_eq!(check(&format!("{text}added below\n")), FooterCheck::Broken);
        assert_eq!(check("a\nb\n"), FooterCheck::Broken);
        assert_eq!(check(""), FooterCheck::Broken);
        assert_eq!(check(&text.replace("sha256:", "sha256:0")), FooterCheck::Broken);
    }
}
