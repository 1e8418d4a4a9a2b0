//! Small helpers the features share, each with one job and no knowledge of extensions:
//! [`tree`] (hashing a folder, resolving a path's links beneath it), [`safe_write`]
//! (writing without following links), [`terminal_text`] (outside text made safe for a
//! terminal), [`nearest`] (the name nearest a typo).

pub mod nearest;
pub mod safe_write;
pub mod terminal_text;
pub mod tree;
