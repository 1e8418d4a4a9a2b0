//! Signatures as the CLI takes and shows them: `--require-signature KEY` read into the
//! library's signers, and a checked signature in one line (`install`, `update`, `info`,
//! `verify`). The library checks; this shows.

use zot_host::manage::install::signature::Signer;
use zot_host::manage::records::provenance::{Signed, SignedOver};
use zot_host::terminal_text::one_line;

/// The keys of `--require-signature`, each read (a key or a key file) and checked.
pub(crate) fn parse(args: &[String]) -> Result<Vec<Signer>, String> {
    args.iter()
        .map(|arg| Signer::parse(arg).map_err(|e| e.to_string()))
        .collect()
}

/// What a checked signature vouches for, in one line.
pub(crate) fn signed_line(signed: &Signed) -> String {
    format!("Signed by key {}: {}", signed.key, vouches(signed))
}

/// What `signed` is of, and its trusted comment.
pub(crate) fn vouches(signed: &Signed) -> String {
    let what = match signed.over {
        SignedOver::File => "the component file, as it is".to_string(),
        SignedOver::Tree => format!("the source's {} files, as they are", signed.files.len()),
    };
    format!(
        "{what} (trusted comment: {})",
        one_line(&signed.trusted_comment)
    )
}
