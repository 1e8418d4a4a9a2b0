//! Which known word a mistyped one was meant to be: for "did you mean" hints.

/// The Levenshtein distance between `a` and `b`, in characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The one of `known` closest to `word`, if it is close enough to be a typo of it: at
/// most two edits, and at most half of `word`'s characters.
pub(crate) fn typo_of<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let most = 2.min(word.chars().count() / 2);
    known
        .into_iter()
        .map(|k| (edit_distance(word, k), k))
        .filter(|(d, _)| (1..=most).contains(d))
        .min()
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("exec", "exce"), 2);
        assert_eq!(edit_distance("enabled", "enabeld"), 2);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn typos_and_words_that_are_no_typo() {
        let known = ["exec", "wasm", "enabled", "args", "name"];
        assert_eq!(typo_of("exce", known), Some("exec"));
        assert_eq!(typo_of("enabeld", known), Some("enabled"));
        assert_eq!(typo_of("arg", known), Some("args"));
        assert_eq!(typo_of("exec", known), None, "a known word is no typo");
        assert_eq!(typo_of("id", known), None);
        assert_eq!(typo_of("homepage", known), None);
    }
}
