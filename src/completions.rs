//! `rlm completions SHELL`: a completion script generated from the same clap definitions
//! as the parser, so it can never list a flag that does not exist.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, ShellArg};

/// The completion script for `shell`.
pub fn completion_script(shell: ShellArg) -> Vec<u8> {
    let shell = match shell {
        ShellArg::Bash => Shell::Bash,
        ShellArg::Zsh => Shell::Zsh,
        ShellArg::Fish => Shell::Fish,
        ShellArg::Powershell => Shell::PowerShell,
    };
    // Into a buffer, not stdout: clap_complete panics on a write error, and a closed pipe
    // (`rlm completions bash | head`) is not an error.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "rlm", &mut script);
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_gets_a_script_that_knows_the_subcommands_and_flags() {
        for (shell, marker) in [
            (ShellArg::Bash, "complete -F"),
            (ShellArg::Zsh, "#compdef rlm"),
            (ShellArg::Fish, "complete -c rlm"),
            (ShellArg::Powershell, "Register-ArgumentCompleter"),
        ] {
            let script = String::from_utf8(completion_script(shell)).expect("UTF-8");
            for needle in [marker, "batch", "aggregate", "dry-run", "skill", "completions"] {
                assert!(script.contains(needle), "{shell:?} script lacks `{needle}`");
            }
        }
    }
}
