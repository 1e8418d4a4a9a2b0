//! Where the SDKs are that `zot ext new` scaffolds depend on: `--sdk`, or `guest-sdk/`
//! of the sources this binary was built from (`zot --version` and `zot doctor` say it).

use std::path::{Path, PathBuf};

/// Which SDK a scaffold depends on.
#[derive(Clone, Copy)]
pub(crate) enum Sdk {
    /// zot-ext: guest-sdk/ itself (its Cargo.toml).
    Rust,
    /// @zot/ext: guest-sdk/ts (its package.json).
    Ts,
}

/// The SDK's folder: `--sdk` (guest-sdk/), or guest-sdk/ of the sources this binary was
/// built from; for `Sdk::Ts` its `ts/`.
pub(crate) fn sdk_dir(flag: Option<&Path>, which: Sdk) -> Result<PathBuf, String> {
    let (dir, hint) = match flag {
        Some(dir) => (dir.to_path_buf(), "the folder given with --sdk"),
        None => (
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guest-sdk"),
            "where it was when this zot was built; pass --sdk PATH to the guest-sdk/ folder \
             of the zot sources",
        ),
    };
    let (dir, file, marker, what) = match which {
        Sdk::Rust => (dir, "Cargo.toml", "name = \"zot-ext\"", "the zot-ext SDK"),
        Sdk::Ts => (
            dir.join("ts"),
            "package.json",
            "\"name\": \"@zot/ext\"",
            "the @zot/ext SDK",
        ),
    };
    let canonical = std::fs::canonicalize(&dir)
        .map_err(|e| format!("{what} is not at {} ({hint}): {e}", dir.display()))?;
    let is_sdk =
        std::fs::read_to_string(canonical.join(file)).is_ok_and(|text| text.contains(marker));
    if !is_sdk {
        return Err(format!(
            "{} is not {what} (no {file} of it there; {hint})",
            canonical.display()
        ));
    }
    Ok(canonical)
}
