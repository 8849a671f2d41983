//! `ResultStream`: a batch's results, read line by line as they arrive over the wire.
//!
//! A results file can hold 100,000 lines of answers: the stream keeps one network chunk
//! and the line being read, never the file. Lines come in any order; each names its
//! custom id. A malformed line is reported as an error and the stream goes on; a
//! connection that breaks ends the stream with an error (opening the results again reads
//! them from the start: the caller keeps what it already has, by custom id).

use std::collections::VecDeque;
use std::sync::Arc;

use super::transport::{retry_after, Missing, Transport};
use super::{BatchError, ItemResult};

/// Reads one result line (already scrubbed of the key) into an [`ItemResult`].
pub(super) type LineParser = fn(&Transport, &str) -> Result<ItemResult, String>;

/// The longest line the stream accepts: an answer can be long, but not this long.
const MAX_LINE: usize = 256 * 1024 * 1024;

/// The results of one batch, in the order the provider sends them.
#[derive(Debug)]
pub struct ResultStream {
    transport: Arc<Transport>,
    batch_id: String,
    /// The files still to read (URLs on the endpoint's server).
    sources: VecDeque<String>,
    response: Option<reqwest::Response>,
    buffer: Vec<u8>,
    /// Where the unread part of `buffer` starts.
    start: usize,
    parse: LineParser,
    lines: u64,
}

impl ResultStream {
    pub(super) fn new(transport: Arc<Transport>, batch_id: &str, sources: Vec<String>, parse: LineParser) -> Self {
        ResultStream {
            transport,
            batch_id: batch_id.to_string(),
            sources: sources.into(),
            response: None,
            buffer: Vec::new(),
            start: 0,
            parse,
            lines: 0,
        }
    }

    /// The next result; `None` at the end. A malformed line is an `Err` and the stream
    /// goes on; a failed transfer is an `Err` and the stream ends.
    pub async fn next(&mut self) -> Option<Result<ItemResult, BatchError>> {
        loop {
            if let Some(end) = self.buffer[self.start..].iter().position(|b| *b == b'\n') {
                let line_start = self.start;
                self.start += end + 1;
                match self.line(line_start, line_start + end) {
                    Some(result) => return Some(result),
                    None => continue,
                }
            }
            let Some(response) = self.response.as_mut() else {
                let url = self.sources.pop_front()?;
                match self.open(&url).await {
                    Ok(response) => self.response = Some(response),
                    Err(e) => {
                        self.sources.clear();
                        return Some(Err(e));
                    }
                }
                continue;
            };
            let timeout = self.transport.timeouts.transfer;
            match response.chunk().await {
                Ok(Some(bytes)) => {
                    if self.start > 0 {
                        self.buffer.drain(..self.start);
                        self.start = 0;
                    }
                    if self.buffer.len() + bytes.len() > MAX_LINE {
                        self.stop();
                        let reason = format!("a result line of batch {} is over {MAX_LINE} bytes", self.batch_id);
                        return Some(Err(self.transport.malformed("reading results", reason)));
                    }
                    self.buffer.extend_from_slice(&bytes);
                }
                Ok(None) => {
                    // The end of this file: a last line may lack its newline.
                    self.response = None;
                    let (start, end) = (self.start, self.buffer.len());
                    let last = if start < end { self.line(start, end) } else { None };
                    self.buffer.clear();
                    self.start = 0;
                    if let Some(result) = last {
                        return Some(result);
                    }
                }
                Err(e) => {
                    self.stop();
                    return Some(Err(self.transport.transport_error(&e, "reading results", timeout)));
                }
            }
        }
    }

    /// Result lines read so far (malformed ones included).
    pub fn lines_read(&self) -> u64 {
        self.lines
    }

    async fn open(&self, url: &str) -> Result<reqwest::Response, BatchError> {
        let during = "fetching results";
        let timeout = self.transport.timeouts.transfer;
        let builder = self.transport.request(reqwest::Method::GET, url);
        let response = self.transport.send(builder, during, timeout).await?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let retry_after = retry_after(&response);
        let mut response = response;
        let body = crate::provider::http::read_error_head(&mut response).await;
        Err(self
            .transport
            .refusal(status, &body, retry_after, during, Missing::Batch(&self.batch_id)))
    }

    /// The result of the line at `start..end` of the buffer (`None` for a blank line).
    fn line(&mut self, start: usize, end: usize) -> Option<Result<ItemResult, BatchError>> {
        let raw = String::from_utf8_lossy(&self.buffer[start..end]);
        if raw.trim().is_empty() {
            return None;
        }
        self.lines += 1;
        // A reply can echo the key (it was in an input file): scrubbed before anything
        // reads it, so it reaches no result file, cache or log.
        let clean = self.transport.redactor.scrub(&raw);
        Some((self.parse)(&self.transport, &clean).map_err(|reason| {
            let reason = format!("result line {} of batch {}: {reason}", self.lines, self.batch_id);
            self.transport.malformed("reading results", reason)
        }))
    }

    fn stop(&mut self) {
        self.response = None;
        self.sources.clear();
        self.buffer.clear();
        self.start = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::batch_api::{BatchLimits, BatchTimeouts, ItemOutcome};
    use crate::provider::{HttpConfig, ProviderKind};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Serves one HTTP response whose chunked body is `chunks`, then closes.
    async fn serve_once(chunks: Vec<&'static str>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 4096];
            let _ = socket.read(&mut request).await;
            let mut response = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_vec();
            for chunk in chunks {
                response.extend_from_slice(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes());
            }
            response.extend_from_slice(b"0\r\n\r\n");
            socket.write_all(&response).await.unwrap();
        });
        url
    }

    fn parse(_: &Transport, line: &str) -> Result<ItemResult, String> {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        Ok(ItemResult {
            custom_id: v["id"].as_str().ok_or("no id")?.to_string(),
            outcome: ItemOutcome::Expired,
        })
    }

    #[test]
    fn lines_split_across_chunks_blank_lines_and_a_last_line_without_newline() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ids = runtime.block_on(async {
            let url = serve_once(vec![
                "{\"id\":\"a\"}\n{\"i",
                "d\":\"b\"}\n\n",
                "not json\n{\"id\":\"c\"}",
            ])
            .await;
            let config = HttpConfig {
                kind: ProviderKind::Openai,
                base_url: url.clone(),
                api_key: None,
                model: "m".into(),
                temperature: None,
                timeout: std::time::Duration::from_secs(5),
                connect_timeout: crate::provider::DEFAULT_CONNECT_TIMEOUT,
            };
            let transport = Transport::new(&config, BatchLimits::OPENAI, BatchTimeouts::default()).unwrap();
            let mut stream = ResultStream::new(Arc::new(transport), "batch_1", vec![format!("{url}/results")], parse);
            let mut ids = Vec::new();
            while let Some(result) = stream.next().await {
                ids.push(result.map(|r| r.custom_id).map_err(|e| e.to_string()));
            }
            assert_eq!(stream.lines_read(), 4);
            ids
        });
        assert_eq!(ids[..2], [Ok("a".to_string()), Ok("b".to_string())]);
        assert!(
            ids[2]
                .as_ref()
                .is_err_and(|e| e.contains("result line 3 of batch batch_1")),
            "{ids:?}"
        );
        assert_eq!(ids[3], Ok("c".to_string()));
        assert_eq!(ids.len(), 4);
    }
}

/// How often a batch's results are opened before a reader gives up on them for now (a
/// later resume reads them: they are at the provider, paid for).
pub const RESULT_ATTEMPTS: u32 = 3;

/// Why a [`Results`] reader stopped before the end of the results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultsEnd {
    /// The provider refused the whole batch (its input did not validate): why.
    Refused(String),
    /// The results cannot be read now (after [`RESULT_ATTEMPTS`]): why.
    Unread(String),
}

/// An ended batch's results, read the one way every path reads them (`rlm batch` and `rlm
/// job`, with or without `--batch-api` on): a malformed line is skipped (its request, never
/// seen, is asked again by the caller); a transfer that breaks, or results that cannot be
/// opened for a fault that may pass (after a pause), are read again from the start, up to
/// [`RESULT_ATTEMPTS`] times, and a result seen before is not given twice.
pub struct Results<'a> {
    state: &'a super::BatchState,
    stream: Option<ResultStream>,
    attempt: u32,
    seen: std::collections::HashSet<String>,
}

impl<'a> Results<'a> {
    pub fn new(state: &'a super::BatchState) -> Self {
        Results {
            state,
            stream: None,
            attempt: 0,
            seen: std::collections::HashSet::new(),
        }
    }

    /// The next result not given before, read through `api`; `None` at the end of the
    /// results; `Err` when the results cannot be read (then the reader is done).
    pub async fn next(&mut self, api: &dyn super::BatchApi) -> Option<Result<ItemResult, ResultsEnd>> {
        loop {
            let stream = match self.stream.as_mut() {
                Some(stream) => stream,
                None => {
                    self.attempt += 1;
                    match api.results(self.state).await {
                        Ok(stream) => self.stream.insert(stream),
                        Err(BatchError::Failed { reason, .. }) => return Some(Err(ResultsEnd::Refused(reason))),
                        Err(e) if e.is_retryable() && self.attempt < RESULT_ATTEMPTS => {
                            self.pause(&e).await;
                            continue;
                        }
                        Err(e) => return Some(Err(ResultsEnd::Unread(e.to_string()))),
                    }
                }
            };
            match stream.next().await? {
                Ok(result) => {
                    if self.seen.insert(result.custom_id.clone()) {
                        return Some(Ok(result));
                    }
                }
                Err(BatchError::Malformed { reason, .. }) => {
                    tracing::debug!(batch = %self.state.batch_id, "a malformed result line: {reason}");
                }
                Err(e) if self.attempt < RESULT_ATTEMPTS => {
                    // The download failed or broke: read them again, skipping what was given.
                    tracing::debug!(batch = %self.state.batch_id, "reading the results again: {e}");
                    self.stream = None;
                    self.pause(&e).await;
                }
                Err(e) => return Some(Err(ResultsEnd::Unread(e.to_string()))),
            }
        }
    }

    /// The pause before the results are read again: the provider's `retry-after` when it
    /// names one, else half a second more at each attempt.
    async fn pause(&self, e: &BatchError) {
        let pause = e
            .retry_after()
            .unwrap_or(std::time::Duration::from_millis(500 * u64::from(self.attempt)));
        // Short: Ctrl-C is not heard during it.
        tokio::time::sleep(pause.min(std::time::Duration::from_secs(5))).await;
    }
}
