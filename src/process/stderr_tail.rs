//! `StderrTail`: the last few KiB of a program's stderr, for error messages. An agent may
//! log megabytes; only the end says why it failed.

/// Keeps the last `capacity` bytes written to it.
#[derive(Debug)]
pub struct StderrTail {
    bytes: Vec<u8>,
    capacity: usize,
}

impl StderrTail {
    /// An empty tail that keeps at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        StderrTail {
            bytes: Vec::with_capacity(capacity.min(64 * 1024)),
            capacity,
        }
    }

    /// Appends `chunk`, dropping the oldest bytes beyond the capacity.
    pub fn push(&mut self, chunk: &[u8]) {
        let chunk = &chunk[chunk.len().saturating_sub(self.capacity)..];
        let overflow = (self.bytes.len() + chunk.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend_from_slice(chunk);
    }

    /// The kept text (invalid UTF-8, such as a character cut in two, is replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_end() {
        let mut tail = StderrTail::new(8);
        tail.push(b"abc");
        assert_eq!(tail.text(), "abc");
        tail.push(b"defgh");
        assert_eq!(tail.text(), "abcdefgh");
        tail.push(b"ij");
        assert_eq!(tail.text(), "cdefghij");
        tail.push(b"0123456789XYZ");
        assert_eq!(tail.text(), "56789XYZ");
    }
}
