//! Standalone mock LLM server (Anthropic + OpenAI wire formats) for benchmarks.
//!
//! Usage: cargo run --release --example mock_llm -- [--port P] [--latency-ms L]
//!
//! Prints the base URL (e.g. `http://127.0.0.1:40123`) as the only stdout
//! line, then serves until SIGTERM / Ctrl-C, and finally prints
//! `requests=N max_in_flight=M` to stderr.

#[path = "../tests/it/support/mock_llm.rs"]
mod mock_llm;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "usage: mock_llm [--port P] [--latency-ms L]";

fn parse_args() -> Result<(u16, u64), String> {
    let mut port: u16 = 0;
    let mut latency_ms: u64 = 0;
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
        match flag.as_str() {
            "--port" => {
                let v = value("--port")?;
                port = v.parse().map_err(|_| format!("bad --port {v:?}\n{USAGE}"))?;
            }
            "--latency-ms" => {
                let v = value("--latency-ms")?;
                latency_ms = v.parse().map_err(|_| format!("bad --latency-ms {v:?}\n{USAGE}"))?;
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok((port, latency_ms))
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
    let (port, latency_ms) = match parse_args() {
        Ok(v) => v,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let server = match mock_llm::MockLlm::try_start_on(port) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mock_llm: cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    server.set_latency(Duration::from_millis(latency_ms));

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
        "requests={} max_in_flight={}",
        server.requests(),
        server.max_in_flight()
    );
    ExitCode::SUCCESS
}
