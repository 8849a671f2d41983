//! `Chunker`: cuts encoded requests into submissions within a provider's limits.
//!
//! A submission is an envelope around the requests: Anthropic's body is
//! `{"requests":[r1,r2,…]}`, OpenAI's file is one line per request. The chunker counts the
//! exact bytes of the submission as it grows, so a chunk is never above the byte limit,
//! and hands a chunk over as soon as the next request would not fit: a caller that
//! submits each chunk as it comes holds at most one submission in memory.
//!
//! That one submission is kept well below the providers' byte limits (256 MB, 200 MB):
//! a chunk is closed at [`IN_MEMORY_BYTES`] and the requests go on in the next batch, so a
//! 100,000-request run never holds hundreds of megabytes of requests besides its plan. Its
//! buffer is allocated once, at that size (only the pages written are resident), so it never
//! doubles as it grows.

use std::collections::HashSet;

use super::{is_valid_custom_id, BatchError, BatchLimits};

/// The most bytes of one submission held in memory: a chunk is closed there even when the
/// provider would take more (a single request larger than this still gets a chunk of its
/// own, up to the provider's limit).
pub const IN_MEMORY_BYTES: u64 = 16_000_000;

/// Room kept in a chunk's buffer beyond its requests: OpenAI's multipart head and tail are
/// written around the file in place, without copying it.
const HEADROOM: usize = 1024;

/// The bytes around and between the requests of a submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    pub open: &'static [u8],
    pub separator: &'static [u8],
    pub close: &'static [u8],
}

impl Envelope {
    /// Anthropic: one JSON body holding the requests.
    pub const JSON_REQUESTS: Envelope = Envelope {
        open: b"{\"requests\":[",
        separator: b",",
        close: b"]}",
    };

    /// OpenAI: a JSONL file, each request on its own line.
    pub const JSONL: Envelope = Envelope {
        open: b"",
        separator: b"",
        close: b"",
    };

    /// What one more request adds beyond its own bytes: a separator, or (OpenAI) its
    /// newline.
    fn per_item(&self, first: bool) -> u64 {
        if *self == Envelope::JSONL {
            1
        } else if first {
            0
        } else {
            self.separator.len() as u64
        }
    }
}

/// The requests of one submission, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The custom ids, in order.
    pub custom_ids: Vec<String>,
    /// The whole submission: the envelope with every request in it.
    pub body: Vec<u8>,
}

impl Chunk {
    pub fn len(&self) -> usize {
        self.custom_ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.custom_ids.is_empty()
    }
}

/// Fills chunks with encoded requests, none above the limits.
#[derive(Debug)]
pub struct Chunker {
    envelope: Envelope,
    limits: BatchLimits,
    /// Where a chunk of several requests is closed: the byte limit, or
    /// [`IN_MEMORY_BYTES`] when that is lower.
    close_at: u64,
    custom_ids: Vec<String>,
    seen: HashSet<String>,
    body: Vec<u8>,
    /// The request that closed the last chunk: it starts the next one, whose buffer is
    /// allocated only when more comes, so that the closed chunk is sent (and freed) first
    /// and one buffer at most is held.
    pending: Option<(String, Vec<u8>)>,
}

impl Chunker {
    pub fn new(envelope: Envelope, limits: BatchLimits) -> Self {
        Chunker {
            envelope,
            limits,
            close_at: limits.max_bytes.min(IN_MEMORY_BYTES),
            custom_ids: Vec::new(),
            seen: HashSet::new(),
            body: Vec::new(),
            pending: None,
        }
    }

    /// At most `n` requests a chunk from now on (never more than the provider's limit).
    pub fn limit_requests(&mut self, n: usize) {
        self.limits.max_requests = self.limits.max_requests.min(n.max(1));
    }

    /// Adds one encoded request. Returns the chunk it closed when it did not fit in the
    /// current one (it starts the next). A request that fits no chunk, or whose custom id
    /// is invalid or already in this chunk, is refused and changes nothing.
    pub fn push(&mut self, custom_id: String, encoded: Vec<u8>) -> Result<Option<Chunk>, BatchError> {
        if !is_valid_custom_id(&custom_id) {
            return Err(BatchError::InvalidCustomId(custom_id));
        }
        let frame = (self.envelope.open.len() + self.envelope.close.len()) as u64;
        let alone = frame + self.envelope.per_item(true) + encoded.len() as u64;
        if alone > self.limits.max_bytes || self.limits.max_requests == 0 {
            return Err(BatchError::ItemTooLarge {
                custom_id,
                bytes: encoded.len() as u64,
                limit: self.limits.max_bytes,
            });
        }
        self.take_pending();
        let first = self.custom_ids.is_empty();
        let grown = self.body.len().max(self.envelope.open.len()) as u64
            + self.envelope.per_item(first)
            + encoded.len() as u64
            + self.envelope.close.len() as u64;
        let full = !first && (self.custom_ids.len() >= self.limits.max_requests || grown > self.close_at);
        if full {
            let closed = self.take();
            self.seen.insert(custom_id.clone());
            self.pending = Some((custom_id, encoded));
            return Ok(closed);
        }
        // Only within one chunk (a closed chunk forgets its ids): the same unit may be
        // retried in a later batch.
        if !self.seen.insert(custom_id.clone()) {
            return Err(BatchError::DuplicateCustomId(custom_id));
        }
        self.append(custom_id, &encoded);
        Ok(None)
    }

    /// Replaces the request that closed the last chunk (the one [`Chunker::push`] returned)
    /// and starts the next: its custom id names the next submission, not the closed one's
    /// ([`super::stamped_custom_id`]). The caller keeps its size (a stamp is always as long).
    pub fn restamp_pending(&mut self, custom_id: String, encoded: Vec<u8>) {
        if let Some((old, _)) = self.pending.take() {
            self.seen.remove(&old);
        }
        self.seen.insert(custom_id.clone());
        self.pending = Some((custom_id, encoded));
    }

    /// Forgets the request that closed the last chunk (it could not be stamped for the next).
    pub fn drop_pending(&mut self) {
        if let Some((old, _)) = self.pending.take() {
            self.seen.remove(&old);
        }
    }

    /// The last, partly filled chunk (`None` when nothing is left).
    pub fn finish(mut self) -> Option<Chunk> {
        self.take_pending();
        self.take()
    }

    /// The request that closed the last chunk, into the new one.
    fn take_pending(&mut self) {
        if let Some((custom_id, encoded)) = self.pending.take() {
            self.append(custom_id, &encoded);
        }
    }

    fn append(&mut self, custom_id: String, encoded: &[u8]) {
        if self.custom_ids.is_empty() {
            // A new chunk: its buffer at its full size at once (see the module doc).
            let size = (self.close_at as usize).max(encoded.len() + self.envelope.open.len() + 8);
            self.body = Vec::with_capacity(size + HEADROOM);
            self.body.extend_from_slice(self.envelope.open);
        }
        if self.envelope == Envelope::JSONL {
            self.body.extend_from_slice(encoded);
            self.body.push(b'\n');
        } else {
            if !self.custom_ids.is_empty() {
                self.body.extend_from_slice(self.envelope.separator);
            }
            self.body.extend_from_slice(encoded);
        }
        self.custom_ids.push(custom_id);
    }

    fn take(&mut self) -> Option<Chunk> {
        if self.custom_ids.is_empty() {
            return None;
        }
        let mut body = std::mem::take(&mut self.body);
        body.extend_from_slice(self.envelope.close);
        self.seen.clear();
        Some(Chunk {
            custom_ids: std::mem::take(&mut self.custom_ids),
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_requests: usize, max_bytes: u64) -> BatchLimits {
        BatchLimits {
            max_requests,
            max_bytes,
        }
    }

    fn push_all(chunker: &mut Chunker, n: usize, size: usize) -> Vec<Chunk> {
        let mut chunks = Vec::new();
        for i in 0..n {
            let line = format!("\"{i:0width$}\"", width = size - 2).into_bytes();
            assert_eq!(line.len(), size);
            if let Some(c) = chunker.push(format!("r{i}"), line).unwrap() {
                chunks.push(c);
            }
        }
        chunks
    }

    #[test]
    fn splits_at_the_request_limit() {
        let mut chunker = Chunker::new(Envelope::JSONL, limits(3, 1_000_000));
        let mut chunks = push_all(&mut chunker, 7, 10);
        chunks.extend(chunker.finish());
        let sizes: Vec<usize> = chunks.iter().map(Chunk::len).collect();
        assert_eq!(sizes, [3, 3, 1]);
        assert_eq!(chunks[2].custom_ids, ["r6"]);
        let lines: Vec<&[u8]> = chunks[0].body.split(|b| *b == b'\n').collect();
        assert_eq!(lines.len(), 4, "three lines and the empty tail");
    }

    #[test]
    fn splits_at_the_byte_limit_counting_the_envelope_exactly() {
        // Each request 10 bytes; the Anthropic envelope is 15 bytes, a separator 1.
        // Three requests: 15 + 10*3 + 2 = 47 bytes.
        for (limit, expected) in [(47, vec![3, 3, 1]), (46, vec![2, 2, 2, 1]), (25, vec![1; 7])] {
            let mut chunker = Chunker::new(Envelope::JSON_REQUESTS, limits(100, limit));
            let mut chunks = push_all(&mut chunker, 7, 10);
            chunks.extend(chunker.finish());
            let sizes: Vec<usize> = chunks.iter().map(Chunk::len).collect();
            assert_eq!(sizes, expected, "limit {limit}");
            for c in &chunks {
                assert!(c.body.len() as u64 <= limit);
                let v: serde_json::Value = serde_json::from_slice(&c.body).unwrap();
                assert_eq!(v["requests"].as_array().unwrap().len(), c.len());
            }
        }
        // JSONL: 11 bytes a line.
        let mut chunker = Chunker::new(Envelope::JSONL, limits(100, 33));
        let mut chunks = push_all(&mut chunker, 4, 10);
        chunks.extend(chunker.finish());
        assert_eq!(chunks.iter().map(|c| c.body.len()).collect::<Vec<_>>(), [33, 11]);
    }

    #[test]
    fn refuses_what_fits_no_chunk_and_goes_on() {
        let mut chunker = Chunker::new(Envelope::JSON_REQUESTS, limits(100, 30));
        assert!(matches!(
            chunker.push("big".into(), vec![b'1'; 20]),
            Err(BatchError::ItemTooLarge {
                bytes: 20,
                limit: 30,
                ..
            })
        ));
        assert!(matches!(
            chunker.push("a/b".into(), b"1".to_vec()),
            Err(BatchError::InvalidCustomId(_))
        ));
        assert_eq!(chunker.push("ok".into(), b"1".to_vec()).unwrap(), None);
        assert!(matches!(
            chunker.push("ok".into(), b"2".to_vec()),
            Err(BatchError::DuplicateCustomId(_))
        ));
        let last = chunker.finish().unwrap();
        assert_eq!(last.custom_ids, ["ok"]);
        assert_eq!(last.body, b"{\"requests\":[1]}");
    }

    #[test]
    fn a_chunk_is_closed_at_the_in_memory_size_below_the_provider_limit() {
        // Requests of 1 MB against Anthropic's 256 MB: 15 to a chunk, not 255.
        let mut chunker = Chunker::new(Envelope::JSON_REQUESTS, BatchLimits::ANTHROPIC);
        let mut chunks = Vec::new();
        for i in 0..40 {
            chunks.extend(chunker.push(format!("r{i}"), vec![b'1'; 1_000_000]).unwrap());
        }
        chunks.extend(chunker.finish());
        let sizes: Vec<usize> = chunks.iter().map(Chunk::len).collect();
        assert_eq!(sizes, [15, 15, 10]);
        assert!(chunks.iter().all(|c| c.body.len() as u64 <= IN_MEMORY_BYTES));
        // The buffer was allocated once, never grown.
        assert!(chunks[0].body.capacity() >= chunks[0].body.len() + HEADROOM - 2);
        // A request larger than that, but within the provider's limit, has a chunk of its own.
        let mut chunker = Chunker::new(Envelope::JSONL, BatchLimits::OPENAI);
        assert_eq!(chunker.push("small".into(), b"1".to_vec()).unwrap(), None);
        let big = vec![b'2'; IN_MEMORY_BYTES as usize + 10];
        let first = chunker.push("big".into(), big).unwrap().unwrap();
        assert_eq!(first.custom_ids, ["small"]);
        assert_eq!(chunker.finish().unwrap().custom_ids, ["big"]);
    }

    #[test]
    fn the_requests_of_a_chunk_may_be_limited_further() {
        let mut chunker = Chunker::new(Envelope::JSONL, limits(3, 1_000_000));
        chunker.limit_requests(2);
        let mut chunks = push_all(&mut chunker, 5, 10);
        chunks.extend(chunker.finish());
        assert_eq!(chunks.iter().map(Chunk::len).collect::<Vec<_>>(), [2, 2, 1]);
        // Never above the provider's.
        let mut chunker = Chunker::new(Envelope::JSONL, limits(3, 1_000_000));
        chunker.limit_requests(10);
        let mut chunks = push_all(&mut chunker, 5, 10);
        chunks.extend(chunker.finish());
        assert_eq!(chunks.iter().map(Chunk::len).collect::<Vec<_>>(), [3, 2]);
    }

    #[test]
    fn the_same_id_may_come_again_in_a_later_chunk() {
        let mut chunker = Chunker::new(Envelope::JSONL, limits(1, 100));
        assert_eq!(chunker.push("a".into(), b"1".to_vec()).unwrap(), None);
        let first = chunker.push("a".into(), b"2".to_vec()).unwrap().unwrap();
        assert_eq!(first.body, b"1\n");
        assert_eq!(chunker.finish().unwrap().body, b"2\n");
    }
}
