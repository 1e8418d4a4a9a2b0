//! Newline-delimited framing with a size cap.

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Serialize;
use serde_json::Value;

/// Default cap on one frame: 64 MiB.
pub const DEFAULT_MAX_FRAME: usize = 64 * 1024 * 1024;

/// One unit produced by [`LineDecoder`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line without its terminator (`\n` or `\r\n`).
    Frame(Vec<u8>),
    /// A line longer than the cap was discarded up to its newline; `len` is its length
    /// and `head` its first `max` bytes, all that was kept of it (to read its `id` from
    /// with [`leading_id`]).
    Oversize { len: usize, head: Vec<u8> },
}

/// Splits a byte stream into lines, holding at most `max` bytes of one line.
///
/// Of an oversize line the first `max` bytes are kept and the rest is dropped as it
/// arrives (never buffered); the decoder reports it once its newline is seen. Empty
/// lines are skipped.
#[derive(Debug)]
pub struct LineDecoder {
    /// The line so far; of an oversize line, its first `max` bytes.
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
                let room = self.max - self.buf.len();
                self.buf.extend_from_slice(&chunk[..room]);
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
            let head = std::mem::take(&mut self.buf);
            return Some(Line::Oversize { len, head });
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

/// The `"id"` of the JSON object that `head` begins, if it can be read there: `head` may
/// be cut short anywhere (the kept head of an oversize line), so the object's fields
/// are read in order until the `id`, the end of the object or the cut, whichever comes
/// first. `None` when `head` is no object or its `id` is not (whole) in it: a number
/// counts as whole only when the key after it, or the object's end, is in `head` too.
pub fn leading_id(head: &[u8]) -> Option<Value> {
    /// Reads the object's fields until `id`, which it leaves in `.0`.
    struct FindId<'a>(&'a mut Option<Value>);

    impl<'de> Visitor<'de> for FindId<'_> {
        type Value = ();

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "id" {
                    let id: Value = map.next_value()?;
                    // A number is whole only once what follows it is read: `{"id":12`
                    // may be the head of `{"id":123,…`. Anything else ends itself.
                    if !id.is_number() || map.next_key::<IgnoredAny>().is_ok() {
                        *self.0 = Some(id);
                    }
                    // Found: no need to read (or wait for) the rest.
                    return Err(serde::de::Error::custom("found"));
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }

    let mut id = None;
    let _ = serde_json::Deserializer::from_slice(head).deserialize_map(FindId(&mut id));
    id
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
    use serde_json::json;

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
                Line::Oversize {
                    len: 13,
                    head: b"12345678".to_vec()
                },
                frame("ok"),
                Line::Oversize {
                    len: 9,
                    head: b"12345678".to_vec()
                }
            ]
        );
    }

    #[test]
    fn oversize_line_keeps_its_head_whatever_the_chunks() {
        let line = br#"{"id":"big","type":"ping","pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}"#;
        for chunk in [1, 3, 7, 64, line.len()] {
            let mut dec = LineDecoder::new(30);
            let mut chunks: Vec<&[u8]> = line.chunks(chunk).collect();
            chunks.push(b"\n{}\n");
            let got = all(&mut dec, &chunks);
            assert_eq!(
                got,
                vec![
                    Line::Oversize {
                        len: line.len(),
                        head: line[..30].to_vec()
                    },
                    frame("{}")
                ],
                "chunks of {chunk}"
            );
        }
    }

    #[test]
    fn leading_id_reads_what_the_head_holds() {
        let id = |s: &str| leading_id(s.as_bytes());
        assert_eq!(
            id(r#"{"id":"big","type":"ping","pad":"xx"#),
            Some(json!("big"))
        );
        assert_eq!(
            id(r#"{"type":"x","a":{"id":1},"id":7,"pad":[1,"#),
            Some(json!(7))
        );
        assert_eq!(id(r#"{"type":"x","pad":"xxxx"#), None);
        assert_eq!(id(r#"{"id":{"deep":[1,2"#), None, "an id cut short");
        assert_eq!(id(r#"{"id":"ab"#), None);
        // `{"id":12` may be the head of `{"id":123}`: the sidecar would answer the
        // wrong request. A number counts once what follows it is there.
        assert_eq!(id(r#"{"id":12"#), None, "a number cut short");
        assert_eq!(id(r#"{"id":12}"#), Some(json!(12)));
        assert_eq!(id(r#"{"id":12,"type":"ping","pad":"xx"#), Some(json!(12)));
        assert_eq!(id(r#"{"i"#), None);
        assert_eq!(id(r#"["id","x"]"#), None);
        assert_eq!(id("not json"), None);
        assert_eq!(id(""), None);
        assert_eq!(id(r#"{"\u0069d":"escaped"}"#), Some(json!("escaped")));
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
