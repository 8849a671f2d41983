//! `Transport`: one batch-API endpoint's HTTP plumbing, shared by both providers: the
//! client, the credentials, the realtime [`Wire`] rendering, and the reading of a reply
//! into JSON or a [`BatchError`] that names the server.

use std::time::Duration;

use serde_json::Value;

use super::{BatchError, BatchLimits, BatchTimeouts};
use crate::provider::http::{
    authorized, client, read_capped, read_error_head, root_cause, versioned_base, BodyError, Wire, CONTROL_BODY_CAP,
};
use crate::provider::status::classify_status;
use crate::provider::{CallError, ErrorKind, HttpConfig, ProviderKind};
use crate::secret::{ApiKey, Redactor};

/// What a 404 (or 405, 501) means for a call.
#[derive(Debug, Clone, Copy)]
pub(super) enum Missing<'a> {
    /// The endpoint itself is missing: the server has no batch API.
    Endpoint(&'a str),
    /// The batch (or file) is not known.
    Batch(&'a str),
}

#[derive(Debug)]
pub(super) struct Transport {
    pub kind: ProviderKind,
    pub http: reqwest::Client,
    /// `{base}/v1`, without a trailing slash.
    pub base: String,
    /// The base URL as it may be shown.
    pub server: String,
    pub api_key: Option<ApiKey>,
    pub redactor: Redactor,
    pub wire: Wire,
    pub timeouts: BatchTimeouts,
    pub limits: BatchLimits,
}

impl Transport {
    pub fn new(config: &HttpConfig, limits: BatchLimits, timeouts: BatchTimeouts) -> Result<Self, BatchError> {
        Ok(Transport {
            kind: config.kind,
            http: client(&config.base_url).map_err(BatchError::Setup)?,
            base: versioned_base(&config.base_url),
            server: super::server_name(&config.base_url),
            api_key: config.api_key.clone(),
            redactor: Redactor::new(config.api_key.iter()),
            wire: Wire::new(config),
            timeouts,
            limits,
        })
    }

    /// `{base}/v1{path}`; `path` starts with `/`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A request with the provider's credentials.
    pub fn request(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        authorized(self.kind, self.http.request(method, url), self.api_key.as_ref())
    }

    /// Whether `url` is on this endpoint's server (so the key may be sent to it).
    pub fn same_origin(&self, url: &str) -> bool {
        origin(url) == origin(&self.base)
    }

    /// Sends `builder` and reads a JSON reply; an error status becomes a [`BatchError`].
    pub async fn json(
        &self,
        builder: reqwest::RequestBuilder,
        during: &'static str,
        timeout: Duration,
        missing: Missing<'_>,
    ) -> Result<Value, BatchError> {
        let mut response = self.send(builder, during, timeout).await?;
        let status = response.status().as_u16();
        let retry_after = retry_after(&response);
        if !(200..300).contains(&status) {
            let head = read_error_head(&mut response).await;
            return Err(self.refusal(status, &head, retry_after, during, missing));
        }
        let bytes = match read_capped(&mut response, CONTROL_BODY_CAP).await {
            Ok(bytes) => bytes,
            Err(BodyError::Transport(e)) => return Err(self.transport_error(&e, during, timeout)),
            Err(BodyError::TooLarge(cap)) => {
                return Err(self.malformed(during, format!("the reply is over {} MB", cap / (1024 * 1024))))
            }
        };
        serde_json::from_slice(&bytes).map_err(|e| self.malformed(during, format!("not JSON: {e}")))
    }

    /// Sends `builder`; a connection failure becomes a [`BatchError`], any status is
    /// returned as it is.
    pub async fn send(
        &self,
        builder: reqwest::RequestBuilder,
        during: &'static str,
        timeout: Duration,
    ) -> Result<reqwest::Response, BatchError> {
        tracing::debug!(server = %self.server, during, "batch API call");
        builder
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| self.transport_error(&e, during, timeout))
    }

    /// The error an error status stands for (the body scrubbed of the key).
    pub fn refusal(
        &self,
        status: u16,
        body: &[u8],
        retry_after: Option<Duration>,
        during: &'static str,
        missing: Missing<'_>,
    ) -> BatchError {
        let server = self.server.clone();
        match (status, missing) {
            (404 | 405 | 501, Missing::Endpoint(path)) => BatchError::Unsupported {
                server,
                path: path.to_string(),
                status,
            },
            (404, Missing::Batch(batch_id)) => BatchError::UnknownBatch {
                server,
                batch_id: batch_id.to_string(),
                status,
            },
            _ => {
                let body = self.redactor.scrub(&String::from_utf8_lossy(body)).into_owned();
                BatchError::Call {
                    server,
                    during,
                    error: classify_status(self.kind, status, &body, retry_after, None, &self.wire.model),
                }
            }
        }
    }

    /// One page of the listing of batches at `path` (newest first, `limit` a page), after
    /// the cursor `after` given as the query parameter `after_param`: both providers answer
    /// `{data: […], has_more, last_id}`; `listed` reads one entry of `data`.
    pub async fn list_page(
        &self,
        path: &str,
        after_param: &str,
        after: Option<&str>,
        limit: usize,
        listed: impl Fn(&Value) -> Result<super::ListedBatch, String>,
    ) -> Result<super::BatchPage, BatchError> {
        const LISTING: &str = "listing batches";
        let mut url = format!("{}?limit={limit}", self.url(path));
        if let Some(after) = after {
            url.push_str(&format!("&{after_param}={}", query_value(after)));
        }
        let builder = self.request(reqwest::Method::GET, &url);
        let endpoint = format!("/v1{path}");
        let reply = self
            .json(builder, LISTING, self.timeouts.control, Missing::Endpoint(&endpoint))
            .await?;
        let data = reply
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| self.malformed(LISTING, "no `data` list".into()))?;
        let batches = data
            .iter()
            .map(|batch| listed(batch).map_err(|reason| self.malformed(LISTING, reason)))
            .collect::<Result<Vec<_>, _>>()?;
        let more = reply.get("has_more").and_then(Value::as_bool).unwrap_or(false);
        let next = text(&reply, "last_id")
            .map(str::to_string)
            .or_else(|| batches.last().map(|b| b.state.batch_id.clone()))
            .filter(|_| more);
        Ok(super::BatchPage { batches, next })
    }

    pub fn malformed(&self, during: &'static str, reason: String) -> BatchError {
        BatchError::Malformed {
            server: self.server.clone(),
            during,
            reason,
        }
    }

    pub fn transport_error(&self, e: &reqwest::Error, during: &'static str, timeout: Duration) -> BatchError {
        let error = if e.is_timeout() {
            CallError::new(
                ErrorKind::Timeout,
                format!("no reply within {}s (timeout)", timeout.as_secs_f64()),
            )
        } else if e.is_connect() {
            CallError::new(ErrorKind::Unreachable, format!("cannot connect: {}", root_cause(e)))
        } else {
            CallError::new(ErrorKind::Transient, format!("connection failed: {}", root_cause(e)))
        };
        BatchError::Call {
            server: self.server.clone(),
            during,
            error,
        }
    }
}

/// The server's `retry-after`, if it sent one.
pub(super) fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let headers = response.headers();
    crate::provider::status::retry_after(&|name: &str| {
        headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
    })
}

/// `scheme://host:port` of a URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| after_scheme + i);
    &url[..end]
}

/// A batch id as a query value: ids are `[A-Za-z0-9_-]`, anything else is escaped.
pub(super) fn query_value(id: &str) -> String {
    id.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.' {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A string field of a JSON object.
pub(super) fn text<'v>(value: &'v Value, field: &str) -> Option<&'v str> {
    value.get(field).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert_eq!(
            origin("https://api.anthropic.com/v1/messages"),
            "https://api.anthropic.com"
        );
        assert_eq!(origin("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(origin("http://127.0.0.1:8080?x"), "http://127.0.0.1:8080");
        assert_ne!(
            origin("https://evil.example/v1"),
            origin("https://api.anthropic.com/v1")
        );
    }
}
