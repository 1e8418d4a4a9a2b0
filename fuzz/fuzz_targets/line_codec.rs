//! The line codec: any stream, cut into reads anywhere, under any cap, gives the lines
//! of the stream read whole (`zot_protocol::fuzzing::line_codec`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u8, Vec<u16>, &[u8])| {
    let (max, cuts, stream) = input;
    let cuts: Vec<usize> = cuts.into_iter().map(usize::from).collect();
    zot_protocol::fuzzing::line_codec(stream, usize::from(max), &cuts);
});
