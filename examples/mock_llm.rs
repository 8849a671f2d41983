//! Standalone mock LLM server (Anthropic + OpenAI wire formats) for benchmarks.
//!
//! Usage: cargo run --release --example mock_llm -- [--port P] [--latency-ms L]
//!   [--limit-concurrency N] [--rate-limit N/SECS [--count-refused] [--retry-after S|omit]
//!   [--rate-headers]] [--serial] [--stream-gap-ms G] [--batch-after-ms MS]
//!   [--fail-every N] [--hang-every N] [--malformed-every N]
//!
//! The fault flags are deterministic, so a run can be repeated: every Nth model request
//! (counted from the first) gets a 500, hangs (never answered), or gets a 200 whose body is
//! not JSON. They are the test server's own fault injection
//! (`MockLlm::fault_every`); of two due at the same request, the one given first wins.
//!
//! Prints the base URL (e.g. `http://127.0.0.1:40123`) as the only stdout
//! line, then serves until SIGTERM / Ctrl-C, and finally prints
//! `requests=N max_in_flight=M throttled=T` to stderr.

#![allow(clippy::pedantic)] // test tooling, held to the default lints as the tests are

#[path = "../tests/it/support/mock_llm.rs"]
mod mock_llm;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "usage: mock_llm [--port P] [--latency-ms L] [--limit-concurrency N] \
[--rate-limit N/SECS [--count-refused] [--retry-after S|omit] [--rate-headers]] [--serial] [--stream-gap-ms G] \
[--batch-after-ms MS] [--fail-every N] [--hang-every N] [--malformed-every N]

faults (deterministic: every Nth model request, counted from the first; of two due at the same
request, the one given first wins):
  --fail-every N        a 500 server error
  --hang-every N        the request is read and never answered (the connection stays open)
  --malformed-every N   a 200 whose body is not JSON";

#[derive(Default)]
struct Options {
    port: u16,
    latency_ms: u64,
    /// At most this many requests in flight; more get a 429 with no retry-after.
    limit_concurrency: Option<usize>,
    /// At most N requests per SECS seconds.
    rate_limit: Option<(usize, f64)>,
    /// Refused requests count against the window too.
    count_refused: bool,
    /// Every 429 of the window says this (`Some(None)`: no retry-after at all).
    retry_after: Option<Option<u64>>,
    rate_headers: bool,
    serial: bool,
    stream_gap_ms: u64,
    /// Each provider batch ends this long after it was created (default: at its first poll).
    batch_after_ms: Option<u64>,
    /// Every Nth model request gets this fault (of two due at once, the one given first).
    faults: Vec<(usize, mock_llm::Fault)>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        let bad = |name: &str, v: &str| format!("bad {name} {v:?}\n{USAGE}");
        match flag.as_str() {
            "--port" => {
                let v = value("--port")?;
                o.port = v.parse().map_err(|_| bad("--port", &v))?;
            }
            "--latency-ms" => {
                let v = value("--latency-ms")?;
                o.latency_ms = v.parse().map_err(|_| bad("--latency-ms", &v))?;
            }
            "--limit-concurrency" => {
                let v = value("--limit-concurrency")?;
                o.limit_concurrency = Some(v.parse().map_err(|_| bad("--limit-concurrency", &v))?);
            }
            "--rate-limit" => {
                let v = value("--rate-limit")?;
                let parsed = v
                    .split_once('/')
                    .and_then(|(n, secs)| Some((n.parse().ok()?, secs.parse().ok()?)))
                    .filter(|(n, secs): &(usize, f64)| *n > 0 && *secs > 0.0);
                o.rate_limit = Some(parsed.ok_or_else(|| bad("--rate-limit", &v))?);
            }
            "--count-refused" => o.count_refused = true,
            "--retry-after" => {
                let v = value("--retry-after")?;
                o.retry_after = Some(if v == "omit" {
                    None
                } else {
                    Some(v.parse().map_err(|_| bad("--retry-after", &v))?)
                });
            }
            "--rate-headers" => o.rate_headers = true,
            "--serial" => o.serial = true,
            "--stream-gap-ms" => {
                let v = value("--stream-gap-ms")?;
                o.stream_gap_ms = v.parse().map_err(|_| bad("--stream-gap-ms", &v))?;
            }
            "--batch-after-ms" => {
                let v = value("--batch-after-ms")?;
                o.batch_after_ms = Some(v.parse().map_err(|_| bad("--batch-after-ms", &v))?);
            }
            "--fail-every" | "--hang-every" | "--malformed-every" => {
                let v = value(&flag)?;
                let n: usize = v.parse().ok().filter(|&n| n > 0).ok_or_else(|| bad(&flag, &v))?;
                let fault = match flag.as_str() {
                    "--fail-every" => mock_llm::Fault::ServerError,
                    "--hang-every" => mock_llm::Fault::Hang,
                    _ => mock_llm::Fault::Malformed,
                };
                o.faults.push((n, fault));
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(o)
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(v) => v,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let server = match mock_llm::MockLlm::try_start_with(o.port, o.serial) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mock_llm: cannot listen on 127.0.0.1:{}: {e}", o.port);
            return ExitCode::FAILURE;
        }
    };
    server.set_latency(Duration::from_millis(o.latency_ms));
    server.set_stream_gap(Duration::from_millis(o.stream_gap_ms));
    if let Some(ms) = o.batch_after_ms {
        server.set_batch_progress(mock_llm::batch::BatchProgress::AfterTime(Duration::from_millis(ms)));
    }
    for (n, fault) in o.faults {
        server.fault_every(n, fault);
    }
    if let Some(n) = o.limit_concurrency {
        server.limit_concurrency(n, None);
    }
    if let Some((n, secs)) = o.rate_limit {
        server.limit_rate_with(mock_llm::RateLimit {
            per_window: n,
            window: Duration::from_secs_f64(secs),
            counts_refused: o.count_refused,
            retry_after: match o.retry_after {
                None => mock_llm::RetryAfter::Truth,
                Some(None) => mock_llm::RetryAfter::Omitted,
                Some(Some(secs)) => mock_llm::RetryAfter::Lie(secs),
            },
            headers: o.rate_headers,
        });
    }

    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{}", server.url());
    let _ = stdout.flush();
    drop(stdout);

    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mock_llm: cannot build runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(wait_for_signal());

    eprintln!(
        "requests={} max_in_flight={} throttled={} batch_submissions={} batch_requests={}",
        server.requests(),
        server.max_in_flight(),
        server.throttled(),
        server.batch_submissions(),
        server.batch_requests().len()
    );
    ExitCode::SUCCESS
}
