//! Small helpers the features share, each with one job and no knowledge of extensions:
//! [`tree`] (hashing a folder, resolving a path's links beneath it), [`safe_write`]
//! (writing without following links), [`terminal_text`] (outside text made safe for a
//! terminal), [`nearest`] (the name nearest a typo), [`cut`] (text held to a size).

pub mod cpus;
pub mod nearest;
pub mod safe_write;
pub mod terminal_text;
pub mod tree;

/// Cuts `text` to at most `max` bytes at a character boundary, marked ` [cut]`, if it is
/// longer.
pub fn cut(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let at = (0..=max).rev().find(|&i| text.is_char_boundary(i));
    text.truncate(at.unwrap_or(0));
    text.push_str(" [cut]");
}

#[cfg(test)]
mod tests {
    #[test]
    fn cut_keeps_short_text_and_cuts_long_text_at_a_character() {
        let mut short = "héllo".to_string();
        super::cut(&mut short, 6);
        assert_eq!(short, "héllo");
        let mut long = "héllo".to_string();
        super::cut(&mut long, 2);
        assert_eq!(long, "h [cut]", "é is two bytes: not split");
    }
}
