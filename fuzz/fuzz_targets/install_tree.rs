//! The install copy: whatever tree of names and links a source holds, a copy that
//! succeeds has every link inside it, and nothing beside it is written or changed
//! (`zot_host::fuzzing::install_tree`).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use zot_host::fuzzing::Entry;

/// A name of the tree, from a few that make folders nest and links lead anywhere.
#[derive(Arbitrary, Debug)]
enum Name {
    A,
    B,
    Up,
    Dot,
    Other(String),
}

impl Name {
    fn text(&self) -> &str {
        match self {
            Name::A => "a",
            Name::B => "b",
            Name::Up => "..",
            Name::Dot => ".",
            Name::Other(s) => s,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Kind {
    Dir,
    File,
    /// A link: its text's names, and whether it starts with `/`.
    Link(Vec<Name>, bool),
}

fn path(names: &[Name]) -> String {
    names.iter().map(Name::text).collect::<Vec<_>>().join("/")
}

fuzz_target!(|tree: Vec<(Vec<Name>, Kind)>| {
    let entries: Vec<Entry> = tree
        .iter()
        .take(12)
        .map(|(names, kind)| {
            let at = path(names);
            match kind {
                Kind::Dir => Entry::Dir(at),
                Kind::File => Entry::File(at),
                Kind::Link(target, absolute) => {
                    let root = if *absolute { "/" } else { "" };
                    Entry::Link(at, format!("{root}{}", path(target)))
                }
            }
        })
        .collect();
    zot_host::fuzzing::install_tree(&entries);
});
