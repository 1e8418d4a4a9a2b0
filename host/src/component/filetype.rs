//! What a file is, when it should be a WebAssembly component and is not: named from its
//! first bytes, so an error can say "it is a core wasm module" or "it is a text file".

use super::MODULE_HEADER;

/// The first bytes of a component: `\0asm`, version 0x0d, layer 1.
const COMPONENT_HEADER: [u8; 8] = *b"\0asm\x0d\x00\x01\x00";

/// `None` for a file that starts like a component or a core module (or another wasm
/// encoding, left to the parser to explain: a core module runs if it is a WASI
/// preview-1 command), else what it is instead, e.g. `an ELF executable`.
pub fn not_a_component(bytes: &[u8]) -> Option<&'static str> {
    const MAGIC: [(&[u8], &str); 8] = [
        (b"\0asm", ""),
        (b"\x7fELF", "an ELF executable"),
        (b"MZ", "a Windows executable"),
        (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
        (b"\xca\xfe\xba\xbe", "a Mach-O or Java class file"),
        (b"PK\x03\x04", "a zip archive"),
        (b"\x1f\x8b", "a gzip archive"),
        (b"#!", "a script"),
    ];
    if bytes.starts_with(&COMPONENT_HEADER) || bytes.starts_with(&MODULE_HEADER) {
        return None;
    }
    if bytes.is_empty() {
        return Some("an empty file");
    }
    if let Some((_, what)) = MAGIC.iter().find(|(magic, _)| bytes.starts_with(magic)) {
        return Some(what).filter(|w| !w.is_empty()).copied();
    }
    let head = &bytes[..bytes.len().min(4096)];
    let text = match std::str::from_utf8(head) {
        Ok(text) => Some(text),
        // A multi-byte character cut at the end of the sample.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok(),
        Err(_) => None,
    };
    Some(match text {
        Some(t) if t.contains('\0') => "binary data",
        Some(t)
            if t.trim_start().starts_with("(module")
                || t.trim_start().starts_with("(component") =>
        {
            "WebAssembly text (.wat): compile it to a binary component first"
        }
        Some(_) => "a text file",
        None => "binary data",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_is_not_a_component() {
        assert_eq!(not_a_component(&COMPONENT_HEADER), None);
        assert_eq!(not_a_component(b"\0asm\x02\x00\x00\x00"), None);
        assert_eq!(not_a_component(&MODULE_HEADER), None);
        let cases: [(&[u8], &str); 5] = [
            (b"", "an empty file"),
            (b"\x7fELF\x02\x01", "an ELF executable"),
            (b"hello\nworld\n", "a text file"),
            (
                b"(module)",
                "WebAssembly text (.wat): compile it to a binary component first",
            ),
            (b"\xff\xfe\x00\x01", "binary data"),
        ];
        for (bytes, what) in cases {
            assert_eq!(not_a_component(bytes), Some(what), "{bytes:?}");
        }
    }
}
