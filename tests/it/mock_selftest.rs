//! Self-test of the mock LLM server in tests/it/support/mock_llm.rs, using only
//! std networking and hand-written HTTP/1.1 requests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::support::mock_llm::*;
use serde_json::{json, Value};

const ANTHROPIC: &str = "/v1/messages";
const OPENAI: &str = "/v1/chat/completions";

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("response is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// A keep-alive connection to the mock.
struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(mock: &MockLlm) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", mock.port())).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Conn {
            reader: BufReader::new(s),
        }
    }

    fn send_raw(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        let s = self.reader.get_mut();
        s.write_all(req.as_bytes()).unwrap();
        s.write_all(body).unwrap();
    }

    /// Read one response; Err if the connection ended before a full response.
    fn read_response(&mut self) -> std::io::Result<Resp> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if self.reader.read_line(&mut h)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').expect("header line");
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .map(|(_, v)| v.parse().unwrap())
            .expect("content-length");
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body)?;
        Ok(Resp { status, headers, body })
    }

    fn request(&mut self, path: &str, headers: &[(&str, &str)], body: &Value) -> Resp {
        self.send_raw("POST", path, headers, body.to_string().as_bytes());
        self.read_response().expect("response")
    }
}

fn post(mock: &MockLlm, path: &str, body: &Value) -> Resp {
    Conn::open(mock).request(path, &[], body)
}

fn anthropic_req(user: &str) -> Value {
    json!({"model": "claude-test", "max_tokens": 100, "messages": [{"role": "user", "content": user}]})
}

fn openai_req(user: &str) -> Value {
    json!({"model": "gpt-test", "messages": [{"role": "user", "content": user}]})
}

fn anthropic_text(v: &Value) -> &str {
    v["content"][0]["text"].as_str().unwrap()
}

fn openai_text(v: &Value) -> &str {
    v["choices"][0]["message"]["content"].as_str().unwrap()
}

#[test]
fn anthropic_shape_and_usage() {
    let mock = MockLlm::start();
    assert!(mock.url().starts_with("http://127.0.0.1:"));
    let system = "You are terse.";
    let user = "hello world, this is a file";
    let body = json!({
        "model": "claude-test",
        "max_tokens": 100,
        "system": [{"type": "text", "text": system}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": user}]}]
    });
    let r = post(&mock, ANTHROPIC, &body);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    let reply = format!("mock result {}", short_hash(user));
    assert_eq!(reply, reply_for(system, user));
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "claude-test");
    assert!(v["id"].as_str().unwrap().starts_with("msg_mock_"));
    assert_eq!(anthropic_text(&v), reply);
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(v["stop_sequence"], Value::Null);
    let input = (system.len() + user.len()).div_ceil(4) as u64;
    assert_eq!(v["usage"]["input_tokens"], input);
    assert_eq!(v["usage"]["output_tokens"], reply.len().div_ceil(4) as u64);
    assert_eq!(v["usage"]["cache_creation_input_tokens"], 0);
    assert_eq!(v["usage"]["cache_read_input_tokens"], 0);

    assert_eq!(mock.requests(), 1);
    let rec = mock.recorded();
    assert_eq!(rec.len(), 1);
    assert_eq!(rec[0].path, ANTHROPIC);
    assert_eq!(rec[0].body, body);
    assert_eq!(rec[0].fault, None);
    assert_eq!(rec[0].header("Host"), Some("127.0.0.1"));
    assert_eq!(rec[0].user_text(), user);
    assert_eq!(rec[0].system_text(), system);
}

#[test]
fn openai_shape_and_usage() {
    let mock = MockLlm::start();
    let system = "Be brief.";
    let user = "the user text";
    let body = json!({
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "earlier question"},
            {"role": "assistant", "content": "earlier answer"},
            {"role": "user", "content": [{"type": "text", "text": user}]}
        ]
    });
    let r = post(&mock, OPENAI, &body);
    assert_eq!(r.status, 200);
    let v = r.json();
    let reply = format!("mock result {}", short_hash(user));
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["created"], 0);
    assert_eq!(v["model"], "gpt-test");
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-mock-"));
    assert_eq!(v["choices"][0]["index"], 0);
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(openai_text(&v), reply);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let chars = system.len() + "earlier question".len() + "earlier answer".len() + user.len();
    let input = chars.div_ceil(4) as u64;
    let output = reply.len().div_ceil(4) as u64;
    assert_eq!(v["usage"]["prompt_tokens"], input);
    assert_eq!(v["usage"]["completion_tokens"], output);
    assert_eq!(v["usage"]["total_tokens"], input + output);
}

#[test]
fn reply_marker_and_summary_rules() {
    let mock = MockLlm::start();
    let r = post(
        &mock,
        ANTHROPIC,
        &anthropic_req("prefix MOCK_REPLY<<line one\\nline two>>MOCK_REPLY suffix"),
    );
    assert_eq!(anthropic_text(&r.json()), "line one\nline two");
    let r = post(&mock, OPENAI, &openai_req(&format!("x {} y", reply_marker("a\nb"))));
    assert_eq!(openai_text(&r.json()), "a\nb");

    let user = "Summarize the following batch processing results:\n1. ok\n2. ok";
    let r = post(&mock, ANTHROPIC, &anthropic_req(user));
    assert_eq!(
        anthropic_text(&r.json()),
        format!("SUMMARY of {} chars", user.chars().count())
    );
    // The phrase may also come from the system prompt.
    let body = json!({"model": "m", "messages": [
        {"role": "developer", "content": "Summarize the following batch processing results"},
        {"role": "user", "content": "héllo"}
    ]});
    assert_eq!(openai_text(&post(&mock, OPENAI, &body).json()), "SUMMARY of 5 chars");
}

#[test]
fn require_key_gives_401() {
    let mock = MockLlm::start();
    mock.require_key("sk-good");
    let mut c = Conn::open(&mock);
    let r = c.request(ANTHROPIC, &[("x-api-key", "sk-bad")], &anthropic_req("a"));
    assert_eq!(r.status, 401);
    let v = r.json();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "authentication_error");
    let r = c.request(ANTHROPIC, &[("x-api-key", "sk-good")], &anthropic_req("a"));
    assert_eq!(r.status, 200);

    let r = c.request(OPENAI, &[], &openai_req("a"));
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["code"], "invalid_api_key");
    let r = c.request(OPENAI, &[("authorization", "Bearer sk-good")], &openai_req("a"));
    assert_eq!(r.status, 200);
    assert_eq!(mock.requests(), 4);
}

#[test]
fn rate_limited_and_other_faults() {
    let mock = MockLlm::start();
    mock.push_faults(vec![
        Fault::RateLimited { retry_after_secs: 7 },
        Fault::RateLimited { retry_after_secs: 3 },
    ]);
    let mut c = Conn::open(&mock);
    let r = c.request(ANTHROPIC, &[], &anthropic_req("a"));
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("7"));
    let v = r.json();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "rate_limit_error");
    assert!(v["error"]["message"].is_string());
    let r = c.request(OPENAI, &[], &openai_req("a"));
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("3"));
    let v = r.json();
    assert_eq!(v["error"]["type"], "rate_limit_error");
    assert_eq!(v["error"]["code"], "rate_limit_exceeded");
    assert_eq!(v["error"]["param"], Value::Null);
    // Queue drained: back to normal.
    assert_eq!(c.request(OPENAI, &[], &openai_req("a")).status, 200);

    mock.push_faults(vec![
        Fault::InsufficientQuota,
        Fault::InsufficientQuota,
        Fault::ServerError,
        Fault::Overloaded,
        Fault::Status(418, "teapot".into()),
        Fault::Truncated,
        Fault::Truncated,
    ]);
    let r = c.request(OPENAI, &[], &openai_req("a"));
    assert_eq!(r.status, 429);
    assert_eq!(r.json()["error"]["type"], "insufficient_quota");
    assert_eq!(r.json()["error"]["code"], "insufficient_quota");
    let r = c.request(ANTHROPIC, &[], &anthropic_req("a"));
    assert_eq!(r.status, 429);
    assert_eq!(
        r.json()["error"]["details"]["error_code"],
        "enforced_spend_limit_reached"
    );
    let r = c.request(ANTHROPIC, &[], &anthropic_req("a"));
    assert_eq!(r.status, 500);
    assert_eq!(r.json()["error"]["type"], "api_error");
    let r = c.request(ANTHROPIC, &[], &anthropic_req("a"));
    assert_eq!(r.status, 529);
    assert_eq!(r.json()["error"]["type"], "overloaded_error");
    let r = c.request(OPENAI, &[], &openai_req("a"));
    assert_eq!(r.status, 418);
    assert_eq!(r.json()["error"]["message"], "teapot");
    let r = c.request(ANTHROPIC, &[], &anthropic_req("a"));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["stop_reason"], "max_tokens");
    let r = c.request(OPENAI, &[], &openai_req("a"));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["choices"][0]["finish_reason"], "length");

    let faults: Vec<Option<String>> = mock.recorded().into_iter().map(|r| r.fault).collect();
    assert_eq!(faults[0].as_deref(), Some("RateLimited { retry_after_secs: 7 }"));
    assert_eq!(faults[2], None);
    assert_eq!(faults[3].as_deref(), Some("InsufficientQuota"));
    assert_eq!(mock.requests(), 10);
    assert_eq!(mock.pending_faults(), 0);
}

#[test]
fn fault_when_only_hits_matching_bodies() {
    let mock = MockLlm::start();
    mock.fault_when("poison.txt", vec![Fault::ServerError, Fault::ServerError]);
    mock.push_faults(vec![Fault::Overloaded]);
    let mut c = Conn::open(&mock);
    // Matching body pops from the needle queue first, not the global one.
    assert_eq!(c.request(ANTHROPIC, &[], &anthropic_req("file poison.txt")).status, 500);
    // Non-matching body gets the global fault.
    assert_eq!(c.request(ANTHROPIC, &[], &anthropic_req("file clean.txt")).status, 529);
    assert_eq!(c.request(ANTHROPIC, &[], &anthropic_req("file clean.txt")).status, 200);
    assert_eq!(c.request(OPENAI, &[], &openai_req("file poison.txt")).status, 500);
    // Needle queue drained.
    assert_eq!(c.request(OPENAI, &[], &openai_req("file poison.txt")).status, 200);
    assert_eq!(mock.requests(), 5);

    // Needles with characters JSON escapes still match the string content.
    mock.fault_when("say \"hi\"\nnow", vec![Fault::Overloaded]);
    assert_eq!(
        c.request(OPENAI, &[], &openai_req("please say \"hi\"\nnow")).status,
        529
    );
}

#[test]
fn malformed_and_reset() {
    let mock = MockLlm::start();
    mock.push_faults(vec![Fault::Malformed, Fault::Reset]);
    let mut c = Conn::open(&mock);
    let r = c.request(ANTHROPIC, &[], &anthropic_req("a"));
    assert_eq!(r.status, 200);
    assert!(serde_json::from_slice::<Value>(&r.body).is_err());
    // Same connection is still usable after a malformed reply; this one is reset.
    c.send_raw("POST", OPENAI, &[], openai_req("a").to_string().as_bytes());
    assert!(c.read_response().is_err(), "reset must give no response");
    // Server is still fine.
    assert_eq!(post(&mock, OPENAI, &openai_req("a")).status, 200);
    assert_eq!(mock.requests(), 3);
    assert!(mock.wait_idle(Duration::from_secs(2)));
}

/// `fault_every` (the faults of `examples/mock_llm.rs --fail-every N` and the like): every
/// Nth request by its number, after the queues; of two due at once, the first registered.
#[test]
fn fault_every_nth_request_after_the_queues() {
    let mock = MockLlm::start();
    mock.fault_every(3, Fault::ServerError);
    mock.fault_every(4, Fault::Malformed);
    mock.push_faults(vec![Fault::Overloaded]);
    let mut c = Conn::open(&mock);
    let mut seen = Vec::new();
    for _ in 0..12 {
        let r = c.request(ANTHROPIC, &[], &anthropic_req("a"));
        seen.push(match (r.status, serde_json::from_slice::<Value>(&r.body).is_ok()) {
            (200, true) => "ok",
            (200, false) => "malformed",
            (500, _) => "500",
            (529, _) => "529",
            (s, _) => panic!("unexpected status {s}"),
        });
    }
    assert_eq!(
        seen,
        [
            "529",
            "ok",
            "500",
            "malformed",
            "ok",
            "500",
            "ok",
            "malformed",
            "500",
            "ok",
            "ok",
            "500"
        ]
    );
    assert_eq!(mock.pending_faults(), 0);

    // A hang every other request: the first is answered, the second is not.
    let mock = MockLlm::start();
    mock.fault_every(2, Fault::Hang);
    assert_eq!(post(&mock, OPENAI, &openai_req("a")).status, 200);
    let mut c = Conn::open(&mock);
    c.reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    c.send_raw("POST", OPENAI, &[], openai_req("a").to_string().as_bytes());
    assert!(c.read_response().is_err(), "the second request hangs");
    drop(c);
    assert!(mock.wait_idle(Duration::from_secs(2)), "hang leaked");
    mock.clear_faults();
    assert_eq!(post(&mock, OPENAI, &openai_req("a")).status, 200, "cleared");
}

#[test]
fn hang_holds_until_client_leaves() {
    let mock = MockLlm::start();
    mock.push_faults(vec![Fault::Hang]);
    let mut c = Conn::open(&mock);
    c.reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    c.send_raw("POST", ANTHROPIC, &[], anthropic_req("a").to_string().as_bytes());
    let err = c.read_response().err().expect("hang must not answer");
    assert!(matches!(
        err.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    ));
    assert_eq!(mock.in_flight(), 1);
    drop(c);
    assert!(mock.wait_idle(Duration::from_secs(2)), "hang leaked");
    assert_eq!(mock.max_in_flight(), 1);
}

#[test]
fn counts_concurrent_requests() {
    let mock = Arc::new(MockLlm::start());
    mock.set_latency(Duration::from_millis(200));
    let n = 5;
    let barrier = Arc::new(Barrier::new(n));
    let started = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let mock = mock.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut c = Conn::open(&mock);
                barrier.wait();
                let r = c.request(ANTHROPIC, &[], &anthropic_req(&format!("req {i}")));
                assert_eq!(r.status, 200);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // The latency is served: no answer came before it (a lower bound, which load cannot
    // break); that they overlapped is what max_in_flight shows, not a wall-clock bound.
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(mock.requests(), n);
    assert_eq!(mock.max_in_flight(), n);
    // The server decrements right after writing, which may race the client.
    assert!(mock.wait_idle(Duration::from_secs(1)));

    mock.reset_counts();
    assert_eq!(mock.requests(), 0);
    assert_eq!(mock.max_in_flight(), 0);
    assert!(mock.recorded().is_empty());
    mock.set_latency(Duration::ZERO);
    assert_eq!(post(&mock, OPENAI, &openai_req("x")).status, 200);
    assert_eq!(mock.requests(), 1);
    assert_eq!(mock.max_in_flight(), 1);
}

#[test]
fn keep_alive_and_connection_close() {
    let mock = MockLlm::start();
    let mut c = Conn::open(&mock);
    let a = c.request(ANTHROPIC, &[], &anthropic_req("one"));
    let b = c.request(OPENAI, &[], &openai_req("two"));
    assert_eq!((a.status, b.status), (200, 200));
    assert_eq!(a.header("connection"), Some("keep-alive"));
    assert_eq!(anthropic_text(&a.json()), format!("mock result {}", short_hash("one")));
    assert_eq!(openai_text(&b.json()), format!("mock result {}", short_hash("two")));
    // Connection: close => response then EOF.
    let r = c.request(ANTHROPIC, &[("connection", "close")], &anthropic_req("3"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("connection"), Some("close"));
    let mut rest = Vec::new();
    assert_eq!(c.reader.read_to_end(&mut rest).unwrap(), 0);
    assert_eq!(mock.requests(), 3);
}

#[test]
fn health_404_400_and_shutdown() {
    let mock = MockLlm::start();
    let mut c = Conn::open(&mock);
    c.send_raw("GET", "/health", &[], b"");
    let r = c.read_response().unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"ok": true}));
    c.send_raw("POST", "/messages", &[], b"{}");
    let r = c.read_response().unwrap();
    assert_eq!(r.status, 404);
    assert!(r.json()["error"]["message"].is_string());
    c.send_raw("POST", ANTHROPIC, &[], b"{not json");
    let r = c.read_response().unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    c.send_raw("POST", OPENAI, &[], b"");
    let r = c.read_response().unwrap();
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["message"].is_string());
    // Only the two model requests are counted; the bad body is recorded as null.
    assert_eq!(mock.requests(), 2);
    assert_eq!(mock.recorded()[0].body, Value::Null);

    // A client that disconnects mid-request does not hurt the server.
    let mut half = TcpStream::connect(("127.0.0.1", mock.port())).unwrap();
    half.write_all(b"POST /v1/messages HTTP/1.1\r\ncontent-length: 100\r\n\r\n{\"mo")
        .unwrap();
    drop(half);
    assert_eq!(post(&mock, ANTHROPIC, &anthropic_req("a")).status, 200);

    let port = mock.port();
    drop(c);
    drop(mock);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}
