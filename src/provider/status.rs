//! What an HTTP error status means for the run: policy as data, readable at a glance.

use std::time::Duration;

use super::{anthropic, openai, CallError, ErrorKind, ProviderKind, RateWindow};

/// Turns an HTTP error status (and its body) into a [`CallError`].
pub fn classify_status(
    kind: ProviderKind,
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    window: Option<RateWindow>,
    model: &str,
) -> CallError {
    let detail = match kind {
        ProviderKind::Anthropic => anthropic::error_detail(body),
        ProviderKind::Openai | ProviderKind::Command => openai::error_detail(body),
    };
    let message = detail.message.clone().unwrap_or_else(|| short(body));
    let key = kind.key_var();
    let (error_kind, reason) = match status {
        429 if detail.quota_exhausted => (
            ErrorKind::Fatal,
            format!(
                "quota or spend limit reached (429): {message} — check the {} account's billing",
                kind.name()
            ),
        ),
        429 => (ErrorKind::RateLimited, format!("rate limited (429): {message}")),
        401 => (ErrorKind::Fatal, format!("authentication failed (401): check {key}")),
        403 => (
            ErrorKind::Fatal,
            format!("permission denied (403): {message} — check that {key} may use {model}"),
        ),
        404 => (
            ErrorKind::Fatal,
            format!("not found (404): {message} — check --model ({model}) and --base-url"),
        ),
        402 => (ErrorKind::Fatal, format!("payment required (402): {message}")),
        413 => (ErrorKind::Unit, format!("request too large (413): {message}")),
        400 if detail.context_exceeded => (ErrorKind::Unit, format!("input too long for {model} (400): {message}")),
        400 => (ErrorKind::Fatal, format!("request rejected (400): {message}")),
        503 | 529 => (
            ErrorKind::Overloaded,
            format!("provider overloaded ({status}): {message}"),
        ),
        408 | 409 | 425 | 500..=599 => (ErrorKind::Transient, format!("server error ({status}): {message}")),
        _ => (ErrorKind::Fatal, format!("unexpected status {status}: {message}")),
    };
    CallError {
        kind: error_kind,
        reason,
        retry_after,
        window: window.filter(|_| error_kind == ErrorKind::RateLimited),
        silent: false,
    }
}

/// The longest wait a header may ask for: a value beyond it is a server's mistake, and a
/// run can always be resumed.
const LONGEST_HINT: Duration = Duration::from_secs(3600);

/// The server's clock: its `date` header when it sent one (so a reset time is read against
/// the clock that wrote it, whatever our own clock says), else ours. A `date` has whole
/// seconds, so read alone it is up to a second behind, and every wait read from it up to a
/// second long: when our clock agrees with it — within the second it names — ours says
/// where in that second we are.
pub fn server_now(header: &dyn Fn(&str) -> Option<String>) -> jiff::Timestamp {
    let local = jiff::Timestamp::now();
    let Some(date) =
        header("date").and_then(|d| jiff::fmt::rfc2822::DateTimeParser::new().parse_timestamp(d.trim()).ok())
    else {
        return local;
    };
    let ahead_ms = local.as_millisecond() - date.as_millisecond();
    if (0..=1_000).contains(&ahead_ms) {
        local
    } else {
        date
    }
}

/// How long a refusal asks us to wait: `retry-after-ms` (OpenAI), else `retry-after` in
/// seconds or as an HTTP date.
pub fn retry_after(header: &dyn Fn(&str) -> Option<String>) -> Option<Duration> {
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0).min(LONGEST_HINT));
        }
    }
    let value = header("retry-after")?;
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(LONGEST_HINT.as_secs_f64())));
    }
    let at = jiff::fmt::rfc2822::DateTimeParser::new().parse_timestamp(value).ok()?;
    Some(until(server_now(header), at))
}

/// What the rate-limit headers of a refusal say: which budgets are spent and when they reset.
/// Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{remaining,reset}`
/// with RFC 3339 reset times; OpenAI: `x-ratelimit-remaining-{requests,tokens}` with
/// `x-ratelimit-reset-{requests,tokens}` as durations (`1s`, `6m0s`, `20ms`). `None` when the
/// server sent none of them (local servers, proxies); a negative `remaining` (Azure's `-1`)
/// means unknown.
pub fn rate_window(header: &dyn Fn(&str) -> Option<String>) -> Option<RateWindow> {
    let now = server_now(header);
    let mut seen = false;
    let mut window = RateWindow::default();
    let mut spent = |remaining: Option<String>, reset: Option<Duration>| {
        let Some(remaining) = remaining.and_then(|r| r.trim().parse::<i64>().ok()) else {
            return;
        };
        seen = true;
        if remaining == 0 {
            window.spent = true;
            if let Some(reset) = reset {
                window.resets_in = Some(window.resets_in.map_or(reset, |r| r.max(reset)));
            }
        }
    };
    for budget in ["requests", "tokens", "input-tokens", "output-tokens"] {
        let reset = header(&format!("anthropic-ratelimit-{budget}-reset"))
            .and_then(|r| r.trim().parse::<jiff::Timestamp>().ok())
            .map(|at| until(now, at));
        spent(header(&format!("anthropic-ratelimit-{budget}-remaining")), reset);
    }
    for budget in ["requests", "tokens"] {
        let reset = header(&format!("x-ratelimit-reset-{budget}")).and_then(|r| parse_go_duration(&r));
        spent(header(&format!("x-ratelimit-remaining-{budget}")), reset);
    }
    seen.then_some(window)
}

/// From `now` to `at`, never negative, never beyond [`LONGEST_HINT`].
fn until(now: jiff::Timestamp, at: jiff::Timestamp) -> Duration {
    let secs = (at.as_millisecond() - now.as_millisecond()) as f64 / 1000.0;
    Duration::from_secs_f64(secs.clamp(0.0, LONGEST_HINT.as_secs_f64()))
}

/// A Go-style duration as OpenAI writes its resets: `1s`, `6m0s`, `20ms`, `1h2m3.5s`, `250us`;
/// a bare number is seconds.
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(LONGEST_HINT.as_secs_f64())));
    }
    let mut total = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "h" => 3.6e12,
            "m" => 6e10,
            "s" => 1e9,
            "ms" => 1e6,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e3,
            "ns" => 1.0,
            _ => return None,
        };
        total += number * factor;
        rest = &rest[unit_len..];
    }
    // Counted in nanoseconds, so `20ms` is exactly 20 ms.
    (!s.is_empty() && total.is_finite())
        .then(|| Duration::from_nanos(total.round().min(LONGEST_HINT.as_nanos() as f64) as u64))
}

/// What the error bodies of both formats tell us, each read from the provider's own fields
/// (see `anthropic::error_detail`, `openai::error_detail`).
#[derive(Debug, Default)]
pub struct ErrorDetail {
    pub message: Option<String>,
    pub quota_exhausted: bool,
    /// The input does not fit the model's context window: this unit fails, not the run.
    pub context_exceeded: bool,
}

/// At most 200 characters of a body, on one line.
fn short(body: &str) -> String {
    let line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        "(empty body)".to_string()
    } else if line.chars().count() > 200 {
        format!("{}…", line.chars().take(200).collect::<String>())
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(p: ProviderKind, status: u16, body: &str) -> ErrorKind {
        classify_status(p, status, body, None, None, "m").kind
    }

    fn headers<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn retry_after_forms() {
        let ra = |v: &str| retry_after(&headers(&[("retry-after", v)]));
        assert_eq!(ra("2"), Some(Duration::from_secs(2)));
        assert_eq!(ra("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(ra("0"), Some(Duration::ZERO));
        assert_eq!(ra(""), None);
        assert_eq!(ra("-3"), None);
        assert_eq!(ra("999999"), Some(LONGEST_HINT));
        // An HTTP date is read against the server's own clock.
        let dated = headers(&[
            ("retry-after", "Wed, 21 Oct 2026 07:28:30 GMT"),
            ("date", "Wed, 21 Oct 2026 07:28:00 GMT"),
        ]);
        assert_eq!(retry_after(&dated), Some(Duration::from_secs(30)));
        let ms = headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]);
        assert_eq!(retry_after(&ms), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(parse_go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(parse_go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(parse_go_duration("2m3.5s"), Some(Duration::from_millis(123_500)));
        assert_eq!(parse_go_duration("2h"), Some(LONGEST_HINT));
        assert_eq!(parse_go_duration("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_go_duration("soon"), None);
        assert_eq!(parse_go_duration("3x"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn rate_limit_headers_say_what_is_spent_and_when_it_resets() {
        let anthropic = headers(&[
            ("date", "Wed, 21 Oct 2026 07:28:00 GMT"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2026-10-21T07:28:40Z"),
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", "2026-10-21T07:28:10Z"),
            ("anthropic-ratelimit-input-tokens-remaining", "5000"),
            ("anthropic-ratelimit-input-tokens-reset", "2026-10-21T07:29:00Z"),
        ]);
        assert_eq!(
            rate_window(&anthropic),
            Some(RateWindow {
                spent: true,
                resets_in: Some(Duration::from_secs(40))
            })
        );
        let openai = headers(&[
            ("x-ratelimit-remaining-requests", "12"),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        assert_eq!(
            rate_window(&openai),
            Some(RateWindow {
                spent: true,
                resets_in: Some(Duration::from_secs(360))
            })
        );
        let room = headers(&[
            ("x-ratelimit-remaining-requests", "3"),
            ("x-ratelimit-remaining-tokens", "-1"),
        ]);
        assert_eq!(rate_window(&room), Some(RateWindow::default()));
        assert_eq!(rate_window(&headers(&[("retry-after", "1")])), None);
    }

    #[test]
    fn a_reset_is_read_against_our_clock_when_the_servers_whole_second_date_agrees_with_it() {
        let now = jiff::Timestamp::now();
        // The server's Date, cut to its second, and a reset 2.5 s from now.
        let date = jiff::fmt::rfc2822::DateTimePrinter::new()
            .timestamp_to_rfc9110_string(&now)
            .unwrap();
        let reset = (now + jiff::SignedDuration::from_millis(2_500)).to_string();
        let pairs = [
            ("date", date.as_str()),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", reset.as_str()),
        ];
        let window = rate_window(&headers(&pairs)).unwrap();
        let waits = window.resets_in.unwrap();
        assert!(
            waits > Duration::from_millis(2_300) && waits <= Duration::from_millis(2_500),
            "not up to a second long: {waits:?}"
        );
        // A server whose clock is far from ours: its own clock, as before.
        let dated = headers(&[
            ("date", "Wed, 21 Oct 2026 07:28:00 GMT"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2026-10-21T07:28:02.500Z"),
        ]);
        assert_eq!(
            rate_window(&dated).unwrap().resets_in,
            Some(Duration::from_millis(2_500))
        );
    }

    #[test]
    fn statuses_are_classified() {
        let a = ProviderKind::Anthropic;
        let auth = classify_status(a, 401, "{}", None, None, "m");
        assert_eq!(auth.kind, ErrorKind::Fatal);
        assert_eq!(auth.reason, "authentication failed (401): check ANTHROPIC_API_KEY");
        assert_eq!(kind_of(a, 529, "{}"), ErrorKind::Overloaded);
        assert_eq!(kind_of(a, 500, "{}"), ErrorKind::Transient);
        let limited = classify_status(a, 429, "{}", Some(Duration::from_secs(3)), None, "m");
        assert_eq!(
            (limited.kind, limited.retry_after),
            (ErrorKind::RateLimited, Some(Duration::from_secs(3)))
        );
        let spend = r#"{"type":"error","error":{"type":"rate_limit_error","message":"spend","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        assert_eq!(kind_of(a, 429, spend), ErrorKind::Fatal);
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert_eq!(kind_of(ProviderKind::Openai, 429, quota), ErrorKind::Fatal);
        assert_eq!(kind_of(a, 400, "{}"), ErrorKind::Fatal);
    }

    #[test]
    fn an_input_too_long_is_read_from_the_error_code_not_from_the_message() {
        let o = ProviderKind::Openai;
        let coded = r#"{"error":{"message":"This model's maximum context length is 4096 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert_eq!(kind_of(o, 400, coded), ErrorKind::Unit);
        let llama_cpp = r#"{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
        assert_eq!(kind_of(o, 400, llama_cpp), ErrorKind::Unit);
        // Words in a message decide nothing: this 400 is about something else.
        let worded = r#"{"error":{"message":"'max_tokens' exceeds the maximum for this model's context","type":"invalid_request_error","code":"invalid_value"}}"#;
        assert_eq!(kind_of(o, 400, worded), ErrorKind::Fatal);
        let a = ProviderKind::Anthropic;
        let too_long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000 maximum"}}"#;
        let reason = classify_status(a, 400, too_long, None, None, "m");
        assert_eq!(reason.kind, ErrorKind::Unit);
        assert!(
            reason
                .reason
                .starts_with("input too long for m (400): prompt is too long"),
            "{}",
            reason.reason
        );
        let other = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: exceeds the model's maximum context tokens"}}"#;
        assert_eq!(kind_of(a, 400, other), ErrorKind::Fatal);
    }
}
