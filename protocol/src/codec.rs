//! Newline-delimited framing with a size cap.

use serde::Serialize;

/// Default cap on one frame: 64 MiB.
pub const DEFAULT_MAX_FRAME: usize = 64 * 1024 * 1024;

/// One unit produced by [`LineDecoder`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line without its terminator (`\n` or `\r\n`).
    Frame(Vec<u8>),
    /// A line longer than the cap was discarded up to its newline; `len` is its length.
    Oversize { len: usize },
}

/// Splits a byte stream into lines, holding at most `max` bytes of one line.
///
/// Bytes of an oversize line are dropped as they arrive (never buffered), and the
/// decoder reports it once its newline is seen. Empty lines are skipped.
#[derive(Debug)]
pub struct LineDecoder {
    buf: Vec<u8>,
    max: usize,
    /// Length so far of an oversize line being discarded.
    discarding: Option<usize>,
}

impl LineDecoder {
    /// A decoder that refuses lines longer than `max` bytes.
    pub fn new(max: usize) -> Self {
        LineDecoder {
            buf: Vec::new(),
            max,
            discarding: None,
        }
    }

    /// Takes bytes from the front of `input` until one line is complete and returns it;
    /// `None` once `input` is used up without completing a line (the partial line is kept).
    pub fn decode(&mut self, input: &mut &[u8]) -> Option<Line> {
        while !input.is_empty() {
            let newline = input.iter().position(|&b| b == b'\n');
            let take = newline.unwrap_or(input.len());
            let (chunk, rest) = input.split_at(take);
            *input = if newline.is_some() { &rest[1..] } else { rest };
            if let Some(len) = self.discarding.as_mut() {
                *len += chunk.len();
            } else if self.buf.len() + chunk.len() > self.max {
                self.discarding = Some(self.buf.len() + chunk.len());
                self.buf = Vec::new();
            } else {
                self.buf.extend_from_slice(chunk);
            }
            if newline.is_some() {
                if let Some(line) = self.take_line() {
                    return Some(line);
                }
            }
        }
        None
    }

    /// Ends the stream: returns a last line that had no terminator, if any.
    pub fn finish(&mut self) -> Option<Line> {
        self.take_line()
    }

    fn take_line(&mut self) -> Option<Line> {
        if let Some(len) = self.discarding.take() {
            return Some(Line::Oversize { len });
        }
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            return None;
        }
        Some(Line::Frame(line))
    }
}

/// One frame encoded as a single line of JSON text, newline included. Only [`encode`]
/// builds one, so whatever carries it (a pipe, a component's `handle(frame: string)`)
/// can rely on valid UTF-8 JSON with exactly one newline, at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded(String);

impl Encoded {
    /// The line, newline included.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// The JSON text, without the newline.
    pub fn json(&self) -> &str {
        &self.0[..self.0.len() - 1]
    }

    /// The line's bytes, newline included.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0.into_bytes()
    }

    /// The JSON text, without the newline.
    pub fn into_json(mut self) -> String {
        self.0.pop();
        self.0
    }
}

impl AsRef<[u8]> for Encoded {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// Serialises a frame as one line, newline included. JSON escapes control characters,
/// so the output never contains a newline before the terminator.
///
/// Panics only if `T`'s `Serialize` fails, which the frame types and `serde_json::Value`
/// never do (their map keys are strings): a programming error, not bad data.
pub fn encode<T: Serialize + ?Sized>(frame: &T) -> Encoded {
    let mut out = serde_json::to_string(frame).expect("frames serialise to JSON");
    out.push('\n');
    Encoded(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(dec: &mut LineDecoder, chunks: &[&[u8]]) -> Vec<Line> {
        let mut out = Vec::new();
        for chunk in chunks {
            let mut input = *chunk;
            while let Some(line) = dec.decode(&mut input) {
                out.push(line);
            }
        }
        out.extend(dec.finish());
        out
    }

    fn frame(s: &str) -> Line {
        Line::Frame(s.as_bytes().to_vec())
    }

    #[test]
    fn splits_across_chunks_and_strips_cr() {
        let mut dec = LineDecoder::new(100);
        let got = all(&mut dec, &[b"{\"a\":1}\r\n{\"b\"", b":2}\n\n  \n{\"c\":3}"]);
        assert_eq!(
            got,
            vec![frame("{\"a\":1}"), frame("{\"b\":2}"), frame("{\"c\":3}")]
        );
    }

    #[test]
    fn oversize_line_is_reported_and_the_next_delivered() {
        let mut dec = LineDecoder::new(8);
        let got = all(
            &mut dec,
            &[b"12345", b"67890", b"abc\nok\n", b"123456789\n"],
        );
        assert_eq!(
            got,
            vec![
                Line::Oversize { len: 13 },
                frame("ok"),
                Line::Oversize { len: 9 }
            ]
        );
    }

    #[test]
    fn line_of_exactly_the_cap_is_kept() {
        let mut dec = LineDecoder::new(4);
        assert_eq!(all(&mut dec, &[b"abcd\n"]), vec![frame("abcd")]);
    }

    #[test]
    fn encode_is_one_line() {
        let line = encode(&serde_json::json!({"text": "a\nb"}));
        let bytes = line.as_bytes();
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
        assert!(bytes.ends_with(b"\n"));
        assert_eq!(line.json(), r#"{"text":"a\nb"}"#);
        assert_eq!(line.clone().into_json(), line.json());
    }
}
