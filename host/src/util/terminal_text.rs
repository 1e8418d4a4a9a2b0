//! Text from outside (a manifest, a frame, a tool result, a file name, a log) made safe
//! to show on a terminal: nothing in it can move the cursor, rewrite or erase a line,
//! open a link, or reorder or hide what is shown.
//!
//! Every character that could drive a terminal or disguise text ([`is_hidden`]) is shown
//! as an escape, never sent and never dropped: `\xNN` (two lowercase hex digits) for one
//! below U+0080 (the C0 controls with ESC, CR and BS, and DEL), `\u{N}` (lowercase hex)
//! for any other (the C1 controls U+0080–U+009F with CSI U+009B, bidi embeddings,
//! overrides, isolates and marks, zero-width and other invisible format characters, the
//! line and paragraph separators). So `ESC [ 2 K` is shown as `\x1b[2K` and a right-to-left
//! override as `\u{202e}`. Everything else, a backslash included, is shown as it is.

use std::borrow::Cow;

/// `text` for one line (a record, a cell of a column): every hidden character escaped, a
/// newline (`\x0a`) and a tab (`\x09`) too, so one line stays one line and its columns stay
/// where they are.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escape(text, &[])
}

/// `text` that may span lines (a message, a tool result, a note): every hidden character
/// escaped but newline and tab, which are kept.
pub fn multi_line(text: &str) -> Cow<'_, str> {
    escape(text, &['\t', '\n'])
}

/// `word` for a POSIX shell, exactly: a plain word (ASCII letters and digits and
/// `/._-+,:=@`) as it is, any other in single quotes (a `'` in it as `'\''`), and every
/// hidden character in it, tab and newline included, escaped as the module says (inside
/// the quotes, such an escape stands for that one character).
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:=@".contains(c));
    if plain {
        return word.to_string();
    }
    let quoted = format!("'{}'", word.replace('\'', r"'\''"));
    escape(&quoted, &[]).into_owned()
}

/// A command line (program, then its arguments) as [`shell_word`]s separated by spaces:
/// what runs, shown exactly.
pub fn command_line<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    words
        .into_iter()
        .map(shell_word)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `c` is shown escaped: a control character (C0, DEL, C1), a bidi control
/// (U+061C, U+200E/U+200F, U+202A–U+202E, U+2066–U+2069), a zero-width or other invisible
/// format character (U+00AD, U+034F, U+115F/U+1160, U+17B4/U+17B5, U+180E, U+200B–U+200D,
/// U+2060–U+2065, U+206A–U+206F, U+3164, U+FEFF, U+FFA0, U+FFF9–U+FFFB, U+1D173–U+1D17A,
/// the tags U+E0000–U+E007F), or a line or paragraph separator (U+2028/U+2029).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c as u32,
            0xAD | 0x34F
                | 0x61C
                | 0x115F
                | 0x1160
                | 0x17B4
                | 0x17B5
                | 0x180E
                | 0x200B..=0x200F
                | 0x2028..=0x202E
                | 0x2060..=0x206F
                | 0x3164
                | 0xFEFF
                | 0xFFA0
                | 0xFFF9..=0xFFFB
                | 0x1D173..=0x1D17A
                | 0xE0000..=0xE007F
        )
}

/// `text` with every hidden character but those in `keep` escaped.
fn escape<'a>(text: &'a str, keep: &[char]) -> Cow<'a, str> {
    let escaped = |c: char| is_hidden(c) && !keep.contains(&c);
    if !text.contains(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c as u32 {
            _ if !escaped(c) => out.push(c),
            n @ 0..=0x7f => out.push_str(&format!("\\x{n:02x}")),
            n => out.push_str(&format!("\\u{{{n:x}}}")),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_sequences_are_shown_not_sent() {
        let attack =
            "ok\x1b[2K\r\x1b]8;;https://x.example/\x07hi\x1b]8;;\x07\x1b[1A\x08\x7f\u{9b}2J";
        assert_eq!(
            one_line(attack),
            r"ok\x1b[2K\x0d\x1b]8;;https://x.example/\x07hi\x1b]8;;\x07\x1b[1A\x08\x7f\u{9b}2J"
        );
        assert_eq!(one_line("a\nb\tc"), "a\\x0ab\\x09c");
        assert_eq!(multi_line("a\nb\tc\r\n"), "a\nb\tc\\x0d\n");
        assert_eq!(one_line("\0\u{1}\u{80}\u{9f}"), r"\x00\x01\u{80}\u{9f}");
    }

    #[test]
    fn bidi_and_invisible_characters_are_shown() {
        let hidden = [
            '\u{202a}',
            '\u{202b}',
            '\u{202c}',
            '\u{202d}',
            '\u{202e}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{200e}',
            '\u{200f}',
            '\u{61c}',
            '\u{200b}',
            '\u{200c}',
            '\u{200d}',
            '\u{feff}',
            '\u{2028}',
            '\u{2029}',
            '\u{ad}',
            '\u{2060}',
            '\u{e0041}',
        ];
        for c in hidden {
            let shown = multi_line(&format!("a{c}b")).into_owned();
            assert_eq!(shown, format!("a\\u{{{:x}}}b", c as u32));
        }
        assert_eq!(one_line("exe.\u{202e}txt"), r"exe.\u{202e}txt");
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for text in ["plain", "C:\\dir\\x1b", "naïve café — 日本語 🙂", ""] {
            assert!(
                matches!(one_line(text), Cow::Borrowed(t) if t == text),
                "{text}"
            );
        }
        // Showing twice changes nothing more.
        let once = one_line("\x1b[2K\u{202e}").into_owned();
        assert_eq!(one_line(&once), once);
    }

    #[test]
    fn shell_words_are_quoted_exactly() {
        assert_eq!(shell_word("python3"), "python3");
        assert_eq!(shell_word("./main.py"), "./main.py");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$HOME;rm"), "'$HOME;rm'");
        assert_eq!(shell_word("x\r\x1b[2Ky"), r"'x\x0d\x1b[2Ky'");
        assert_eq!(shell_word("a\tb\nc"), r"'a\x09b\x0ac'");
        assert_eq!(shell_word("\u{202e}"), r"'\u{202e}'");
        assert_eq!(
            command_line(["sh", "-c", "curl x | sh", "it's"]),
            r"sh -c 'curl x | sh' 'it'\''s'"
        );
    }
}
