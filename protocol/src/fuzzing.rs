//! The invariants of the line codec and of frame decoding, checked on any input: by the
//! fuzz targets (`fuzz/`, built with `--cfg fuzzing`) and by the property tests of the
//! normal test suite, with the same code. Each check panics when an invariant breaks.

use crate::codec::{leading_id, Line, LineDecoder};
use crate::frame::{decode, ExtFrame, HostFrame, EXT_FRAME_TYPES};
use serde_json::Value;

/// `stream` fed to a [`LineDecoder`] of cap `max`, cut into reads at `cuts` (offsets,
/// taken modulo the length), gives exactly the lines of the stream read whole: each
/// line without its `\n` (and a last one without it), less a final `\r`; blank lines
/// skipped; a line over `max` bytes as `Oversize` with its length and its first `max`
/// bytes. However the stream is cut.
pub fn line_codec(stream: &[u8], max: usize, cuts: &[usize]) {
    let max = max.max(1);
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    cuts.push(stream.len());
    cuts.sort_unstable();
    let mut decoder = LineDecoder::new(max);
    let mut got = Vec::new();
    let mut at = 0;
    for cut in cuts {
        let mut input = &stream[at..cut];
        while let Some(line) = decoder.decode(&mut input) {
            got.push(line);
        }
        at = cut;
    }
    got.extend(decoder.finish());
    assert_eq!(got, whole_lines(stream, max), "max {max}");
}

/// The lines of `stream` as [`line_codec`] says they must come.
fn whole_lines(stream: &[u8], max: usize) -> Vec<Line> {
    let mut segments: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    if stream.ends_with(b"\n") || stream.is_empty() {
        segments.pop();
    }
    segments
        .into_iter()
        .filter_map(|segment| {
            if segment.len() > max {
                return Some(Line::Oversize {
                    len: segment.len(),
                    head: segment[..max].to_vec(),
                });
            }
            let line = segment.strip_suffix(b"\r").unwrap_or(segment);
            (!line.iter().all(u8::is_ascii_whitespace)).then(|| Line::Frame(line.to_vec()))
        })
        .collect()
}

/// Of any JSON object, encoded, [`leading_id`] reads its `id` (or none without one), and
/// of every head of that text either that same `id` or nothing: never another value.
/// Of arbitrary bytes it returns without panicking.
pub fn leading_ids(bytes: &[u8]) {
    let _ = leading_id(bytes);
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    let text = serde_json::to_vec(&object).expect("a value encodes");
    let id = object.get("id").cloned();
    assert_eq!(leading_id(&text), id, "{}", String::from_utf8_lossy(&text));
    for cut in 0..text.len() {
        if let Some(found) = leading_id(&text[..cut]) {
            assert_eq!(
                Some(&found),
                id.as_ref(),
                "a head read another id: {}",
                String::from_utf8_lossy(&text[..cut])
            );
        }
    }
}

/// Any line decodes, as an extension's frame, to what serde's tagged enum reads (the
/// one-pass path of the replies changes nothing) or to its error; as a frame of either
/// side, a decoded frame encodes to a line that decodes to the same frame.
pub fn frames(line: &[u8]) {
    let one_pass = ExtFrame::decode(line);
    let tagged = decode::<ExtFrame>(line, EXT_FRAME_TYPES);
    assert_eq!(format!("{one_pass:?}"), format!("{tagged:?}"));
    if let Ok(frame) = one_pass {
        let again = crate::encode(&frame);
        assert_eq!(
            ExtFrame::decode(again.json().trim_end().as_bytes()),
            Ok(frame)
        );
    }
    if let Ok(frame) = HostFrame::decode(line) {
        let again = crate::encode(&frame);
        assert_eq!(
            HostFrame::decode(again.json().trim_end().as_bytes()),
            Ok(frame)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bytes near the protocol's: JSON punctuation, a few keys and values, newlines.
    fn frame_bytes() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(&b"{"[..]),
            Just(&b"}"[..]),
            Just(&b"\""[..]),
            Just(&b":"[..]),
            Just(&b","[..]),
            Just(&b"\n"[..]),
            Just(&b"\r\n"[..]),
            Just(&b"\"id\":"[..]),
            Just(&b"\"type\":"[..]),
            Just(&b"\"tool_result\""[..]),
            Just(&b"\"event_intercept_response\""[..]),
            Just(&b"\"content\":[]"[..]),
            Just(&b"12"[..]),
            Just(&b"null"[..]),
            Just(&b" "[..]),
        ];
        prop::collection::vec(
            prop_oneof![
                piece.prop_map(<[u8]>::to_vec),
                any::<u8>().prop_map(|b| vec![b])
            ],
            0..40,
        )
        .prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn lines_are_the_same_however_the_stream_is_cut(
            stream in frame_bytes(),
            max in 1usize..24,
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            line_codec(&stream, max, &cuts);
        }

        #[test]
        fn a_head_reads_the_objects_id_or_nothing(bytes in frame_bytes()) {
            leading_ids(&bytes);
        }

        #[test]
        fn any_line_decodes_as_the_tagged_enum_does(bytes in frame_bytes()) {
            frames(&bytes);
        }

        #[test]
        fn any_object_reads_its_id_from_every_head(id in any::<i64>(), pad in "[a-z]{0,6}") {
            let line = serde_json::json!({"id": id, "type": "tool_result", "pad": pad});
            leading_ids(line.to_string().as_bytes());
        }

        #[test]
        fn a_float_id_reads_back_as_itself(id in any::<f64>()) {
            let line = serde_json::json!({"id": id, "type": "ping"});
            leading_ids(line.to_string().as_bytes());
        }
    }
}
