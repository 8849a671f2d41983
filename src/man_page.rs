//! `rlm man [SUBCOMMAND]`: the man page (roff), generated from the clap definitions.

use clap::CommandFactory;

use crate::cli::Cli;

/// The subcommand asked for does not exist.
#[derive(Debug, thiserror::Error)]
#[error("rlm has no subcommand `{0}`; `rlm man` without one shows them all")]
pub struct UnknownSubcommand(pub String);

/// The man page of rlm, or of `rlm SUBCOMMAND` (titled `rlm-SUBCOMMAND`).
pub fn man_page(subcommand: Option<&str>) -> Result<Vec<u8>, UnknownSubcommand> {
    let mut cli = Cli::command();
    // Propagates the version and global settings into the subcommands, as parsing would.
    cli.build();
    let page = match subcommand {
        None => cli,
        Some(name) => {
            let sub = cli
                .find_subcommand(name)
                .ok_or_else(|| UnknownSubcommand(name.to_string()))?
                .clone();
            let title = format!("rlm-{}", sub.get_name());
            sub.display_name(title)
        }
    };
    let man = clap_mangen::Man::new(page)
        .source(format!("rlm {}", crate::cli::VERSION))
        .manual("rlm manual");
    let mut roff = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = man.render(&mut roff);
    Ok(roff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_lists_the_subcommands_and_the_version() {
        let page = String::from_utf8(man_page(None).unwrap()).unwrap();
        assert!(page.starts_with(".ie") || page.contains(".TH rlm 1"), "{page}");
        for needle in [".TH rlm 1", "batch", "skill", "completions", env!("CARGO_PKG_VERSION")] {
            assert!(page.contains(needle), "man page lacks `{needle}`");
        }
    }

    #[test]
    fn a_subcommand_has_its_own_page_with_its_flags() {
        let page = String::from_utf8(man_page(Some("batch")).unwrap()).unwrap();
        assert!(
            page.contains(".TH rlm\\-batch 1") || page.contains(".TH rlm-batch 1"),
            "{page}"
        );
        assert!(page.contains("aggregate"));
        assert!(page.contains("Exit codes"));
        let err = man_page(Some("nope")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "rlm has no subcommand `nope`; `rlm man` without one shows them all"
        );
    }
}
