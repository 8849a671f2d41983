//! How a command line that cannot run is said: clap's errors as one line that names the
//! (sub)command's help, and the hint for the most common mistake, a glob the shell expanded
//! because it was not quoted (`rlm batch src/*.py "…"`), and a flag's value clap took for
//! flags (`--deadline -5s`) named as that flag's value. Wording only: `commands` prints it.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::{BatchArgs, Cli};
use crate::error::RlmError;
use crate::settings::Environment;
use crate::{escape, input};

/// What to make of an error clap returned.
pub enum ClapError {
    /// `--help` or `--version`: clap prints it (exit 0).
    Shown,
    /// A usage error, as one line (exit 2).
    Usage(String),
}

/// clap's own errors, with a hint when the shell expanded an unquoted glob. The command
/// line is read as `OsString`s: an argument need not be UTF-8 (a file name), and reading it
/// as a `String` panicked (issue 17).
pub fn clap_error(e: &clap::Error) -> ClapError {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    // Only `rlm batch` takes a pattern: another command's stray file name is clap's to name
    // (`rlm index neighbors a.ts` wants `--node a.ts`).
    if e.kind() == ErrorKind::UnknownArgument && named_command(&args).0 == ["rlm", "batch"] {
        // `rlm batch src/*.py "Summarize {file}"` arrives as two files and a prompt: the
        // prompt is the argument clap calls unexpected, so look at the files before it.
        if let Some(files) = expanded_files(&args) {
            return ClapError::Usage(quote_the_pattern(&files));
        }
        if let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) {
            if Path::new(arg).exists() {
                return ClapError::Usage(quote_the_pattern(&[Path::new(arg)]));
            }
        }
    }
    if !e.use_stderr() {
        return ClapError::Shown;
    }
    let message = match e.kind() {
        ErrorKind::InvalidUtf8 => not_utf8_message(&args),
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => missing_subcommand_message(&args),
        ErrorKind::UnknownArgument => hyphen_value_message(e, &args).unwrap_or_else(|| clap_message(e)),
        _ => clap_message(e),
    };
    ClapError::Usage(format!("{message} (see {})", help_command(&args)))
}

/// clap's message on one line, without its prefix: its first paragraph, whose later lines
/// hold what the first announces (the names of the missing arguments, for one).
fn clap_message(e: &clap::Error) -> String {
    // `Display` of the rendering drops clap's styling.
    let text = e.render().to_string();
    let paragraph: Vec<&str> = text
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    let line = paragraph.join(" ");
    match line.strip_prefix("error: ") {
        Some(rest) => rest.to_string(),
        None if line.is_empty() => "invalid arguments".to_string(),
        None => line,
    }
}

/// A flag's value that starts with `-` and a digit but is no number (`--deadline -5s`,
/// `--timeout -1m`): clap reads it as short flags and says only "unexpected argument '-5'
/// found", naming neither the flag nor what it takes. Read again as `--deadline=-5s`, the
/// flag's own parser says what is wrong with the value, as it does for `--deadline -5`.
fn hyphen_value_message(e: &clap::Error, args: &[OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    use clap::Parser as _;
    let Some(ContextValue::String(unexpected)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let rest = unexpected.strip_prefix('-')?;
    if !rest.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let at = args
        .iter()
        .position(|a| a.to_str().is_some_and(|a| a.starts_with(unexpected.as_str())))?;
    let flag = args.get(at.checked_sub(1)?)?.to_str()?;
    let (_, command) = named_command(&args[..at]);
    let takes_value = command.get_arguments().find(|a| {
        flag.strip_prefix("--").is_some_and(|long| a.get_long() == Some(long))
            || flag
                .strip_prefix('-')
                .and_then(|short| short.parse::<char>().ok())
                .is_some_and(|short| a.get_short() == Some(short))
    })?;
    if !takes_value.get_action().takes_values() {
        return None;
    }
    let long = takes_value.get_long()?;
    let value = args[at].to_str()?;
    let mut joined: Vec<OsString> = vec!["rlm".into()];
    joined.extend(args[..at - 1].iter().cloned());
    joined.push(format!("--{long}={value}").into());
    joined.extend(args[at + 1..].iter().cloned());
    match Cli::try_parse_from(joined) {
        Err(again)
            if again.kind() == clap::error::ErrorKind::ValueValidation
                && matches!(again.get(ContextKind::InvalidArg),
                    Some(ContextValue::String(named)) if named.starts_with(&format!("--{long} "))) =>
        {
            Some(clap_message(&again))
        }
        // Taken as the value, it is one: `--{long}=VALUE` says so.
        _ => Some(format!(
            "'{value}' was read as a flag, not as the value of {flag}: write --{long}={value}"
        )),
    }
}

/// Which argument is not UTF-8, where only a file or directory name may be: clap says only
/// that one is.
fn not_utf8_message(args: &[OsString]) -> String {
    match args.iter().find(|a| a.to_str().is_none()) {
        Some(arg) => format!(
            "the argument '{}' is not valid UTF-8: only the names of files and directories may hold such bytes",
            escape::name(&input::display_path(Path::new(arg)))
        ),
        None => "invalid UTF-8 was detected in one or more arguments".to_string(),
    }
}

/// `rlm query --help`, `rlm job run --help`: the (sub)commands the line names.
fn help_command(args: &[OsString]) -> String {
    format!("{} --help", named_command(args).0.join(" "))
}

/// The (sub)commands the line names (`["rlm", "job", "run"]`) and the last one's
/// definition, found among its arguments (global flags may come first: `rlm --color never
/// batch …`).
fn named_command(args: &[OsString]) -> (Vec<String>, clap::Command) {
    use clap::CommandFactory;
    let mut command = Cli::command();
    let mut names = vec!["rlm".to_string()];
    for arg in args {
        let Some(arg) = arg.to_str() else { continue };
        if arg == "--" {
            break;
        }
        if arg.starts_with('-') {
            continue;
        }
        if let Some(sub) = command.find_subcommand(arg).cloned() {
            names.push(sub.get_name().to_string());
            command = sub;
        }
    }
    (names, command)
}

/// `rlm job` alone: clap shows the help, whose first line is no message.
fn missing_subcommand_message(args: &[OsString]) -> String {
    let (names, command) = named_command(args);
    let subcommands: Vec<&str> = command
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(clap::Command::get_name)
        .collect();
    format!("'{}' needs a subcommand: {}", names.join(" "), subcommands.join(", "))
}

/// The files an unquoted pattern became: the longest run, two or more long, of consecutive
/// `rlm batch` arguments that name existing paths (the shell sorts what it expands, and
/// nothing else on a batch line is a file name twice in a row).
fn expanded_files(args: &[OsString]) -> Option<Vec<&Path>> {
    let after = args.iter().position(|a| a == "batch")? + 1;
    let mut best: Vec<&Path> = Vec::new();
    let mut run: Vec<&Path> = Vec::new();
    for arg in &args[after..] {
        let path = Path::new(arg);
        if !arg.as_encoded_bytes().starts_with(b"-") && path.exists() {
            run.push(path);
        } else {
            run.clear();
        }
        if run.len() > best.len() {
            best = run.clone();
        }
    }
    (best.len() >= 2).then_some(best)
}

/// "the shell expanded an unquoted pattern into 3 files (src/a.py, …): quote the pattern",
/// with a pattern the files suggest.
fn quote_the_pattern(files: &[&Path]) -> String {
    let shown: Vec<String> = files
        .iter()
        .take(3)
        .map(|f| escape::name(&input::display_path(f)).into_owned())
        .collect();
    let more = if files.len() > 3 { ", …" } else { "" };
    let what = if files.len() == 1 {
        format!("'{}', which is a file", shown.join(""))
    } else {
        format!("{} files ({}{more})", files.len(), shown.join(", "))
    };
    format!(
        "the shell expanded an unquoted pattern into {what}: quote the pattern, as in: \
         rlm batch \"{}\" \"your prompt\"",
        escape::name(&suggested_pattern(files))
    )
}

/// A glob that matches what the shell expanded: the files' shared directory (`src/*`), or
/// their nearest common one and everything below it (`src/**/*`); then their shared
/// extension (`*.py`), their extensions (`*.{py,ts}`), or any name (`*`, when one of them
/// has none or is a directory).
fn suggested_pattern(files: &[&Path]) -> String {
    let parents: Vec<&Path> = files.iter().map(|f| f.parent().unwrap_or(Path::new(""))).collect();
    let same_parent = parents.windows(2).all(|w| w[0] == w[1]);
    let mut common: PathBuf = parents.first().map(|p| p.to_path_buf()).unwrap_or_default();
    for parent in &parents {
        while !parent.starts_with(&common) {
            if !common.pop() {
                break;
            }
        }
    }
    let mut extensions: Vec<String> = Vec::new();
    let mut every_file_has_one = true;
    for file in files {
        match file.extension().filter(|_| !file.is_dir()) {
            Some(ext) => extensions.push(ext.to_string_lossy().into_owned()),
            None => every_file_has_one = false,
        }
    }
    extensions.sort();
    extensions.dedup();
    let name = match extensions.as_slice() {
        [one] if every_file_has_one => format!("*.{one}"),
        [_, _, ..] if every_file_has_one => format!("*.{{{}}}", extensions.join(",")),
        _ => "*".to_string(),
    };
    let dir = input::display_path(&common);
    match (dir.is_empty(), same_parent) {
        (true, true) => name,
        (true, false) => format!("**/{name}"),
        (false, true) => format!("{dir}/{name}"),
        (false, false) => format!("{dir}/**/{name}"),
    }
}

/// `rlm batch a.ts b.ts` parses (two positionals) but means an expanded pattern with the
/// prompt forgotten: a prompt that names an existing file is refused with the hint, as is
/// a lone file with no prompt at all.
pub fn expanded_pattern_hint(args: &BatchArgs, env: &Environment) -> Option<RlmError> {
    let exists = |s: &OsStr| s.to_str().is_none_or(|s| !s.trim().is_empty()) && env.cwd.join(s).exists();
    let pattern = args.pattern.as_deref()?;
    let shown = || escape::name(&input::shown_name(pattern)).into_owned();
    match args.sub_prompt.as_deref() {
        Some(prompt) if exists(prompt.as_ref()) && exists(pattern) => Some(RlmError::Usage(quote_the_pattern(&[
            Path::new(pattern),
            Path::new(prompt),
        ]))),
        Some(prompt) if exists(prompt.as_ref()) => Some(RlmError::Usage(format!(
            "the prompt '{}' is the name of a file: give the prompt itself (if the shell expanded an \
             unquoted pattern, quote the pattern, as in: rlm batch \"src/**/*.ts\" \"your prompt\")",
            escape::name(prompt)
        ))),
        None if args.prompt_file.is_none() && has_no_input_flag(args) && env.cwd.join(pattern).is_file() => {
            Some(RlmError::Usage(format!(
                "no prompt: pass it after the pattern (if the shell expanded an unquoted pattern into '{}', \
                 quote the pattern, as in: rlm batch \"{}\" \"your prompt\")",
                shown(),
                escape::name(&suggested_pattern(&[Path::new(pattern)]))
            )))
        }
        _ => None,
    }
}

/// No input flag that makes the one positional argument the prompt.
fn has_no_input_flag(args: &BatchArgs) -> bool {
    args.files_from.is_none() && args.changed_since.is_none() && args.neighbors_of.is_none()
}
