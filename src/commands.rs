//! Command dispatch: the command line parsed (clap stays here and in [`crate::cli`]), each
//! command run, any error that ended it printed as one line (and, with `--json`, as one
//! error document on stdout), and the documented exit code returned.

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{self as cli, Cli, Command};
use crate::error::{
    error_document, ErrorKind, ExitStatus, FlagError, LockHolder, OutputFailure, RlmError, SystemFailure,
};
use crate::printer::Printer;
use crate::settings::{BatchSettings, Environment, RunKind};
use crate::{
    batch, citation, completions, escape, index, input, job, man_page, merge, printer, process, runs, secret, skill,
};

/// Parses the command line, runs it, prints any error as one line, and returns the
/// documented exit code.
pub fn run_cli() -> ExitCode {
    crate::memory::limit_arenas();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(usage_error(e)),
    };
    init_tracing(cli.verbose, cli.color);
    let env = match Environment::from_process() {
        Ok(env) => env,
        Err(e) => return ExitCode::from(report_error(&error_printer(), &e).code()),
    };
    let status = match cli.command {
        Command::Batch(args) => run_batch(*args, cli.color, &env),
        Command::Query(args) => run_query(*args, cli.color, &env),
        Command::Status(args) => simple(runs::status(args, &env, &Printer::plain())),
        Command::List(args) => simple(runs::list(args, &env, &Printer::plain())),
        Command::Resume(args) => match runs::resume(args, cli.color, &env) {
            Ok(settings) => run_settings(settings),
            Err(e) => report_error(&error_printer(), &e),
        },
        Command::Cancel(args) => match runs::cancel(args, cli.color, &env) {
            Ok(runs::Cancel::Collect(settings)) => run_settings(*settings),
            Ok(runs::Cancel::AtProvider {
                settings,
                run,
                batches,
                holder,
            }) => cancel_at_provider(&settings, run.as_str(), &batches, holder),
            Ok(runs::Cancel::Job {
                cwd,
                job,
                batches,
                base_url,
                quiet,
                json,
            }) => {
                let mut env = env.clone();
                env.cwd = cwd;
                job::cancel(
                    job::CancelJob {
                        job,
                        batches,
                        base_url,
                        quiet,
                        json,
                    },
                    cli.color.into(),
                    &env,
                )
            }
            Err(e) => report_error(&error_printer(), &e),
        },
        Command::Job(command) => job::run_command(command.into(), cli.color.into(), &env),
        Command::Merge(args) => run_merge(args, cli.color, &env),
        Command::Skill(action) => run_skill(action, &env),
        Command::Index(command) => run_index(command),
        Command::VerifyCitations(args) => run_verify_citations(args),
        Command::Completions(args) => print_data(&completions::completion_script(args.shell)),
        Command::Man(args) => match man_page::man_page(args.subcommand.as_deref()) {
            Ok(page) => print_data(&page),
            Err(e) => report_error(&error_printer(), &FlagError::UnknownSubcommand(e).into()),
        },
    };
    ExitCode::from(status.code())
}

/// clap's own errors: `--help` and `--version` printed (exit 0), anything else said as
/// one usage line (exit 2), worded by [`cli::usage`].
fn usage_error(e: clap::Error) -> u8 {
    match cli::usage::clap_error(&e) {
        cli::usage::ClapError::Shown => {
            let _ = e.print();
            ExitStatus::Success.code()
        }
        cli::usage::ClapError::Usage(message) => report_failure(&error_printer(), ErrorKind::Usage, &message).code(),
    }
}

/// `-v` / `RLM_LOG` turn on diagnostics on stderr, every line scrubbed of URL credentials
/// and of the secrets the process holds ([`secret::LogWriter`]): reqwest and hyper log
/// URLs rlm never sees.
fn init_tracing(verbose: u8, color: cli::ColorArg) {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    let filter = match std::env::var("RLM_LOG") {
        Ok(spec) if !spec.trim().is_empty() => spec.parse::<Targets>().unwrap_or_else(|_| Targets::new()),
        _ => match verbose {
            0 => return,
            1 => Targets::new().with_target("rlm", LevelFilter::DEBUG),
            _ => Targets::new().with_default(LevelFilter::TRACE),
        },
    };
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    // The same rule as the Printer: --color, then NO_COLOR and whether stderr is a terminal.
    let ansi = printer::PrinterMode::color_enabled(
        color.into(),
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").is_some(),
    );
    let vars: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
        .collect();
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let writer = secret::LogWriter::new(secret::process_secrets(&vars, &argv));
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .with_ansi(ansi)
                .with_target(true),
        )
        .with(filter)
        .try_init();
}

/// `rlm batch`: settings, a runtime, the run.
fn run_batch(args: cli::BatchArgs, color: cli::ColorArg, env: &Environment) -> ExitStatus {
    if let Some(e) = cli::usage::expanded_pattern_hint(&args, env) {
        return report_error(&error_printer(), &e);
    }
    match BatchSettings::resolve(args.into(), RunKind::Batch, color.into(), env) {
        Ok(settings) => run_settings(settings),
        Err(e) => report_error(&error_printer(), &e),
    }
}

/// `rlm query FILE PROMPT [batch flags]`: a batch over that one file, always read by the
/// analyst of its type in chunks, synthesized, and the answer printed on stdout.
fn run_query(args: cli::QueryArgs, color: cli::ColorArg, env: &Environment) -> ExitStatus {
    let plain = error_printer();
    let mut batch = args.batch;
    let file = batch.pattern.clone().unwrap_or_default();
    let path = env.cwd.join(&file);
    if !path.is_file() {
        let name = input::shown_name(&file);
        let name = escape::name(&name);
        let e = RlmError::Usage(if !path.exists() {
            format!("rlm query: {name} does not exist: name one file that does (use rlm batch for many)")
        } else if path.is_dir() {
            format!("rlm query: {name} is a directory, not a file: name one file (use rlm batch for many)")
        } else {
            format!("rlm query: {name} is not a regular file: name one file (use rlm batch for many)")
        });
        return report_error(&plain, &e);
    }
    // The file as a glob that matches only itself, read through its analyst and synthesized.
    // A name that is not UTF-8 is no glob: it is taken literally as it is.
    batch.pattern = Some(match file.to_str() {
        Some(text) => escape_glob(text).into(),
        None => file,
    });
    if batch.aggregate.is_none() {
        batch.aggregate = Some(cli::AggregateArg::Synthesize);
    }
    match BatchSettings::resolve(batch.into(), RunKind::Query, color.into(), env) {
        Ok(settings) => run_settings(settings),
        Err(e) => report_error(&plain, &e),
    }
}

/// A path as a glob that matches only itself.
fn escape_glob(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn run_settings(settings: BatchSettings) -> ExitStatus {
    let printer = Printer::new(settings.output.printer_mode(), settings.redactor());
    // A nested run (RLM_DEPTH > 0) yields the machine to the runs above it. Before the
    // runtime starts: on Linux the nice value is per thread, and threads inherit it.
    process::lower_for_depth(settings.provider.depth);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return report_error(&printer, &RlmError::from(SystemFailure::Runtime(e))),
    };
    let outcome = runtime.block_on(batch::run(settings, printer.clone()));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    outcome.unwrap_or_else(|e| report_error(&printer, &e))
}

/// `rlm cancel` of a run another rlm waits for: only the cancel, at the provider.
fn cancel_at_provider(settings: &BatchSettings, run: &str, batches: &[String], holder: LockHolder) -> ExitStatus {
    let printer = Printer::new(settings.output.printer_mode(), settings.redactor());
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return report_error(&printer, &RlmError::from(SystemFailure::Runtime(e))),
    };
    runtime
        .block_on(batch::cancel_at_provider(settings, run, batches, holder, &printer))
        .unwrap_or_else(|e| report_error(&printer, &e))
}

/// `rlm merge RUN_DIR… -o OUT`: the runs checked, then merged as one run.
fn run_merge(args: cli::MergeArgs, color: cli::ColorArg, env: &Environment) -> ExitStatus {
    let json = args.json;
    let plan = match merge_plan(args, color, env) {
        Ok(plan) => plan,
        Err(e) => {
            let printer = Printer::new(
                printer::PrinterMode {
                    json,
                    ..printer::PrinterMode::default()
                },
                secret::Redactor::default(),
            );
            return report_error(&printer, &e);
        }
    };
    let printer = Printer::new(plan.settings.output.printer_mode(), plan.settings.redactor());
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return report_error(&printer, &RlmError::from(SystemFailure::Runtime(e))),
    };
    let outcome = runtime.block_on(merge::run(plan, printer.clone()));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    outcome.unwrap_or_else(|e| report_error(&printer, &e))
}

/// Reads and checks the runs, and builds the merged run's settings from the first run's
/// recorded options and merge's own. Every refusal is a usage error (exit 2) before
/// anything is written.
fn merge_plan(args: cli::MergeArgs, color: cli::ColorArg, env: &Environment) -> Result<merge::MergePlan, RlmError> {
    // Every run's record must be readable, though the merge is built from the first's.
    let runs = args
        .runs
        .iter()
        .map(|dir| merge::read_run(dir, env))
        .collect::<Result<Vec<_>, RlmError>>()?;
    let output_dir = merge::check(&runs, &args.output_dir, env)?;
    // clap requires one run at least.
    let (options, prompt) = args.merged_options(&runs[0], output_dir)?;
    let settings = BatchSettings::resolve(options, RunKind::Merge, color.into(), env)?;
    merge::prepare(settings, runs, prompt)
}

/// A command that prints and succeeds, or fails with one error.
fn simple(result: Result<(), RlmError>) -> ExitStatus {
    match result {
        Ok(()) => ExitStatus::Success,
        Err(e) => report_error(&error_printer(), &e),
    }
}

/// Prints an error that ended a command and returns its exit code.
fn report_error(printer: &Printer, e: &RlmError) -> ExitStatus {
    report_failure(printer, e.kind(), &e.to_string())
}

/// Prints an error that ended a command — one line on stderr (the seed's multi-line "no
/// match" message as it is) and, under `--json`, the one JSON document on stdout, unless
/// the command already wrote its own — and returns the exit code.
fn report_failure(printer: &Printer, kind: ErrorKind, message: &str) -> ExitStatus {
    if kind == ErrorKind::NoMatch {
        printer.important(message);
    } else {
        printer.error(message);
    }
    if printer.mode().json && !printer.json_written() {
        printer.json(&error_document(kind, message));
    }
    kind.exit_status()
}

/// Whether the command line asks for one JSON document on stdout: `--json` anywhere before
/// a `--` (also in `rlm query`'s batch flags, and when clap refuses the line).
fn json_requested() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// The printer for an error before a run's settings exist: plain, in JSON mode when the
/// command line asks for it.
fn error_printer() -> Printer {
    Printer::new(
        printer::PrinterMode {
            json: json_requested(),
            ..printer::PrinterMode::default()
        },
        secret::Redactor::default(),
    )
}

/// `rlm skill install|show`: the status lines of install go to stderr, `show`'s files to stdout.
fn run_skill(action: cli::SkillAction, env: &Environment) -> ExitStatus {
    let scope = |user: bool| -> Result<skill::Scope, RlmError> {
        if user {
            let home = env
                .var("HOME")
                .or_else(|| env.var("USERPROFILE"))
                .ok_or(SystemFailure::NoHome(skill::SkillError::NoHome))?;
            Ok(skill::Scope::User(home.into()))
        } else {
            Ok(skill::Scope::Project(env.cwd.clone()))
        }
    };
    let printer = error_printer();
    let outcome = match action {
        cli::SkillAction::Install { user, force } => scope(user).and_then(|scope| {
            let outcomes = skill::install(&scope, force).map_err(|e| match e {
                skill::SkillError::Io(e) => RlmError::File(e),
                other => OutputFailure::Skill(other).into(),
            })?;
            let mut text = Vec::new();
            let _ = skill::write_outcomes(&mut text, &outcomes);
            printer.important(String::from_utf8_lossy(&text).trim_end());
            Ok(ExitStatus::Success)
        }),
        cli::SkillAction::Show { user } => scope(user).map(|scope| {
            let mut text = Vec::new();
            let _ = skill::show(&scope, &mut text);
            print_data(&text)
        }),
    };
    outcome.unwrap_or_else(|e| report_error(&printer, &e))
}

/// Writes generated data to stdout; a closed pipe (`| head`) is not an error.
fn print_data(bytes: &[u8]) -> ExitStatus {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            report_error(&error_printer(), &RlmError::io("<stdout>", e))
        }
        _ => ExitStatus::Success,
    }
}

/// `rlm index …`: data on stdout; a notice (index built first) or the error on stderr.
fn run_index(command: cli::IndexCommand) -> ExitStatus {
    let ran = index::command::IndexAction::try_from(command)
        .and_then(|action| index::command::run(&action, &mut std::io::stdout().lock()));
    match ran {
        Ok(outcome) => {
            if let Some(notice) = outcome.notice {
                Printer::plain().important(&format!("rlm: {notice}"));
            }
            ExitStatus::Success
        }
        // A closed pipe (`| head`) is not an error.
        Err(index::IndexError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitStatus::Success,
        Err(e) => report_failure(&error_printer(), e.kind(), &e.to_string()),
    }
}

/// `rlm verify-citations …`: the report on stdout; 1 when a citation fails, 2 on bad input.
fn run_verify_citations(args: cli::VerifyCitationsArgs) -> ExitStatus {
    match citation::command::run(&args.into(), &mut std::io::stdout().lock()) {
        Ok(status) => status,
        Err(citation::CitationError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitStatus::Success,
        Err(e) => report_failure(&error_printer(), e.kind(), &e.to_string()),
    }
}
