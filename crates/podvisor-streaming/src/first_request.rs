//! Whether an HTTP/2 client has sent a request yet, read off the bytes it sends: the
//! connection preface, then frames (a 9-byte header: length, type, flags, stream), until
//! the first HEADERS frame opens a stream. A client that only answers pings and settings
//! holds a connection without asking anything; the listener closes it (`front.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`.
const PREFACE: usize = 24;
const FRAME_HEADER: usize = 9;
const HEADERS: u8 = 0x1;

/// Follows the frames a client sends until one opens a stream.
#[derive(Debug)]
pub struct FirstRequest {
    /// Preface bytes still to pass.
    preface: usize,
    /// The frame header being read.
    header: [u8; FRAME_HEADER],
    have: usize,
    /// Payload bytes of the current frame still to pass.
    skip: usize,
    seen: Arc<AtomicBool>,
}

impl FirstRequest {
    pub fn new() -> (FirstRequest, Seen) {
        let seen = Arc::new(AtomicBool::new(false));
        let watch = FirstRequest {
            preface: PREFACE,
            header: [0; FRAME_HEADER],
            have: 0,
            skip: 0,
            seen: seen.clone(),
        };
        (watch, Seen(seen))
    }

    /// Reads `data`, the next bytes from the client. True once a request was seen (then
    /// nothing more need be fed).
    pub fn feed(&mut self, mut data: &[u8]) -> bool {
        while !data.is_empty() && !self.done() {
            let n = if self.preface > 0 {
                let n = self.preface.min(data.len());
                self.preface -= n;
                n
            } else if self.skip > 0 {
                let n = self.skip.min(data.len());
                self.skip -= n;
                n
            } else {
                self.header_bytes(data)
            };
            data = &data[n..];
        }
        self.done()
    }

    fn header_bytes(&mut self, data: &[u8]) -> usize {
        let n = (FRAME_HEADER - self.have).min(data.len());
        self.header[self.have..self.have + n].copy_from_slice(&data[..n]);
        self.have += n;
        if self.have == FRAME_HEADER {
            self.have = 0;
            let h = &self.header;
            self.skip = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
            if h[3] == HEADERS {
                self.seen.store(true, Ordering::Relaxed);
            }
        }
        n
    }

    fn done(&self) -> bool {
        self.seen.load(Ordering::Relaxed)
    }
}

/// The listener's view: whether the client has asked anything yet.
#[derive(Debug, Clone)]
pub struct Seen(Arc<AtomicBool>);

impl Seen {
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, len: usize) -> Vec<u8> {
        let mut f = vec![
            (len >> 16) as u8,
            (len >> 8) as u8,
            len as u8,
            kind,
            0,
            0,
            0,
            0,
            1,
        ];
        f.extend(std::iter::repeat_n(0xAA, len));
        f
    }

    #[test]
    fn settings_and_pings_are_no_request_a_headers_frame_is() {
        let (mut w, seen) = FirstRequest::new();
        let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        bytes.extend(frame(0x4, 18)); // SETTINGS
        for _ in 0..50 {
            bytes.extend(frame(0x6, 8)); // PING
        }
        // Fed a byte at a time: frame headers split anywhere.
        for b in &bytes {
            assert!(!w.feed(std::slice::from_ref(b)));
        }
        assert!(!seen.get());
        // A HEADERS frame header whose type byte is 0x1; a payload byte of 0x1 is not one.
        assert!(!w.feed(&frame(0x0, 3)[..10]));
        let mut rest = frame(0x0, 3)[10..].to_vec();
        rest.extend(frame(HEADERS, 20));
        assert!(w.feed(&rest));
        assert!(seen.get());
    }
}
