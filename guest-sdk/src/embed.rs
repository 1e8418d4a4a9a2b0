//! `embed_manifest!`: a component that carries what it asks.

/// The name of the custom section holding an embedded manifest (docs/writing-extensions.md,
/// "Embedding the manifest"): a public contract between components and hosts.
pub const MANIFEST_SECTION: &str = "zot:manifest";

/// Embeds a manifest file (a path relative to the crate's `Cargo.toml`, usually
/// `"extension.json"`) in the `zot:manifest` custom section of the `.wasm` it builds, so
/// that a bare component file asks for its `permissions` and `limits` when installed
/// (`zot ext install weather.wasm`) or run (`--ext weather.wasm`). The host reads only
/// `name`, `version`, `permissions` and `limits` from it, and validates them as it
/// validates `extension.json`; every other field is ignored.
///
/// Write it once at the top level of the binary crate (beside `fn main`). In a native
/// build it embeds nothing: the file is only checked to exist, so one source still builds
/// both ways with no `cfg`.
///
/// ```ignore
/// zot_ext::embed_manifest!("extension.json");
///
/// fn main() {
///     zot_ext::Extension::new("weather", "0.1.0").run();
/// }
/// ```
#[macro_export]
macro_rules! embed_manifest {
    ($path:literal) => {
        #[cfg(target_family = "wasm")]
        #[used]
        #[link_section = "zot:manifest"]
        static ZOT_MANIFEST: [u8; include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $path))
            .len()] = *include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $path));
        #[cfg(not(target_family = "wasm"))]
        const _: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $path));
    };
}
