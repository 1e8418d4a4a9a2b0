//! Project trust and identity: a repository's own extensions do not run until trusted
//! as they are; what trust hashes; every way a repository could forge it fails closed.

mod fail_closed;
mod hashing;
mod project;
