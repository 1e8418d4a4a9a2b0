//! Signed installs: a detached [minisign] signature, checked against a public key the
//! user chose, of exactly what is installed, before it is (`zot ext install
//! --require-signature KEY`, or a signer `$ZOT_HOME/settings.json` names for the source;
//! an update requires the key its record names).
//!
//! * A component file is signed as it is: `<file>.minisig` beside it (what `minisign -S
//!   -m file.wasm` writes).
//! * A source tree (a folder, or a git repository at a ref) is signed through its
//!   *statement* ([`statement`]): the SHA-256 (or link text) of every file an install
//!   copies, by path, as JSON; its signature is `extension.minisig` in the extension's
//!   folder, which the statement leaves out. `zot ext sign` writes the statement and
//!   runs `minisign` on it.
//!
//! No network, no key server: a key is trusted because the user named it.
//!
//! [minisign]: https://jedisct1.github.io/minisign/

use crate::paths::ZotHome;
use crate::records::provenance::{self, Provenance, Signed, SignedOver};
use crate::records::settings::{Settings, SettingsError};
use minisign_verify::{PublicKey, Signature};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The signature of a source tree, in the extension's folder (never part of what it
/// signs).
pub const SIGNATURE_FILE: &str = "extension.minisig";
/// What a signature or key file may weigh: a minisign signature is about 300 bytes.
const MAX_FILE_BYTES: u64 = 16 << 10;
/// The first line of a statement, naming its format.
const STATEMENT_FORMAT: &str = "zot-tree-statement-v1";

/// A key an install must be signed with, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// The public key, base64 (the second line of a `minisign.pub`).
    pub key: String,
    pub from: SignerFrom,
}

/// Why a key is required.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignerFrom {
    /// `--require-signature`.
    Flag,
    /// The user's settings, for sources under this prefix.
    Setting(String),
    /// The install record: the key its installed version was signed with.
    Recorded,
}

impl Signer {
    /// `--require-signature KEY`: a public key (base64, `RW…`) or the path of a minisign
    /// public key file.
    pub fn parse(arg: &str) -> Result<Signer, SignatureError> {
        let bad = |why: String| SignatureError::BadKey {
            key: arg.to_string(),
            why,
        };
        let key = if looks_like_key(arg) {
            arg.to_string()
        } else {
            let path = Path::new(arg);
            let bytes = crate::util::tree::read_regular(path, MAX_FILE_BYTES)
                .map_err(|e| bad(format!("neither a public key nor a key file ({e})")))?;
            let text = String::from_utf8(bytes).map_err(|_| bad("not text".into()))?;
            let line = text
                .lines()
                .map(str::trim)
                .find(|l| looks_like_key(l))
                .ok_or_else(|| bad("no minisign public key in it".into()))?;
            line.to_string()
        };
        public_key(&key).map_err(bad)?;
        Ok(Signer {
            key,
            from: SignerFrom::Flag,
        })
    }
}

/// Whether `s` has the shape of a minisign public key: `RW` and 54 more base64
/// characters (42 bytes: algorithm, key id, key).
fn looks_like_key(s: &str) -> bool {
    s.len() == 56
        && s.starts_with("RW")
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

fn public_key(key: &str) -> Result<PublicKey, String> {
    PublicKey::from_base64(key).map_err(|e| format!("not a minisign public key ({e})"))
}

/// Why a signature was not accepted, or a key not taken.
#[derive(Debug)]
pub enum SignatureError {
    /// A key given (or in the settings) that is no minisign public key.
    BadKey { key: String, why: String },
    /// The settings cannot be read (never taken as "no signer").
    Settings(SettingsError),
    /// No signature where one is required.
    Missing { path: PathBuf, keys: Vec<String> },
    /// The signature file cannot be read, or is no minisign signature.
    Unreadable { path: PathBuf, why: String },
    /// Signed with another key than every one required.
    WrongKey { path: PathBuf, keys: Vec<String> },
    /// Signed with a required key, but not what is there: changed since it was signed.
    Mismatch { path: PathBuf, key: String },
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = |keys: &[String]| keys.join(" or ");
        match self {
            SignatureError::BadKey { key, why } => write!(f, "signing key {key:?}: {why}"),
            SignatureError::Settings(e) => write!(f, "cannot read the signers: {e}"),
            SignatureError::Missing { path, keys: k } => write!(
                f,
                "not signed: a signature by {} is required and there is no {}",
                keys(k),
                path.display()
            ),
            SignatureError::Unreadable { path, why } => write!(
                f,
                "{} is no usable minisign signature ({why})",
                path.display()
            ),
            SignatureError::WrongKey { path, keys: k } => write!(
                f,
                "{} is a signature by another key than the one required ({})",
                path.display(),
                keys(k)
            ),
            SignatureError::Mismatch { path, key } => write!(
                f,
                "{} is by key {key}, but not of what is there: changed since it was \
                 signed",
                path.display()
            ),
        }
    }
}

impl std::error::Error for SignatureError {}

/// The keys an install from `source` must be signed with: those `given`, and those the
/// user's settings name for it (`signers`: a source, or a prefix ending in `/`, to
/// keys). Empty: no signature is required.
pub fn required(
    home: &ZotHome,
    source: &str,
    given: &[Signer],
) -> Result<Vec<Signer>, SignatureError> {
    let settings = Settings::load(home).map_err(SignatureError::Settings)?;
    let mut keys = given.to_vec();
    for (prefix, listed) in &settings.signers {
        if !(source == prefix || prefix.ends_with('/') && source.starts_with(prefix.as_str())) {
            continue;
        }
        for key in listed {
            public_key(key).map_err(|why| SignatureError::BadKey {
                key: key.clone(),
                why: format!("{why}, in the settings' signers for {prefix}"),
            })?;
            keys.push(Signer {
                key: key.clone(),
                from: SignerFrom::Setting(prefix.clone()),
            });
        }
    }
    Ok(keys)
}

/// The source `arg` as the settings' signers name it: a git URL as given; a path made
/// absolute and real (it must exist), with its trailing `/` kept (a prefix).
pub fn signer_source(arg: &str) -> Result<String, SignatureError> {
    if let super::InstallSource::Git(url) = super::InstallSource::parse(arg) {
        if !Path::new(arg).exists() {
            return Ok(url);
        }
    }
    let real = Path::new(arg)
        .canonicalize()
        .map_err(|e| SignatureError::Unreadable {
            path: PathBuf::from(arg),
            why: e.to_string(),
        })?;
    let mut source = real.display().to_string();
    if arg.ends_with('/') && !source.ends_with('/') {
        source.push('/');
    }
    Ok(source)
}

/// Records in the user's settings that what is installed from `source` (see
/// [`signer_source`]) must be signed by `signer`'s key or another listed there. Whether
/// it was not listed yet.
pub fn add_signer(home: &ZotHome, source: &str, signer: &Signer) -> Result<bool, SignatureError> {
    let mut settings = Settings::load(home).map_err(SignatureError::Settings)?;
    let keys = settings.signers.entry(source.to_string()).or_default();
    if keys.contains(&signer.key) {
        return Ok(false);
    }
    keys.push(signer.key.clone());
    settings.save(home).map_err(SignatureError::Settings)?;
    Ok(true)
}

/// Removes `key` (every key without one) from the signers of `source`: how many were.
pub fn remove_signer(
    home: &ZotHome,
    source: &str,
    key: Option<&str>,
) -> Result<usize, SignatureError> {
    let mut settings = Settings::load(home).map_err(SignatureError::Settings)?;
    let Some(keys) = settings.signers.get_mut(source) else {
        return Ok(0);
    };
    let before = keys.len();
    keys.retain(|k| key.is_some_and(|key| k != key));
    let removed = before - keys.len();
    if keys.is_empty() {
        settings.signers.remove(source);
    }
    if removed > 0 {
        settings.save(home).map_err(SignatureError::Settings)?;
    }
    Ok(removed)
}

/// The statement of a tree whose files are `files` (from [`provenance::hash_tree`]):
/// what `extension.minisig` signs. Its own signature is left out.
pub fn statement(files: &BTreeMap<String, String>) -> Vec<u8> {
    let listed: BTreeMap<&str, &str> = files
        .iter()
        .filter(|(path, _)| path.as_str() != SIGNATURE_FILE)
        .map(|(p, h)| (p.as_str(), h.as_str()))
        .collect();
    let value = serde_json::json!({ "format": STATEMENT_FORMAT, "files": listed });
    let mut text = serde_json::to_vec_pretty(&value).expect("a statement serialises");
    text.push(b'\n');
    text
}

/// Checks the signature of the tree `tree` (its `extension.minisig`) against `keys`.
pub fn check_tree(tree: &Path, keys: &[Signer]) -> Result<Signed, SignatureError> {
    let files = provenance::hash_tree(tree).map_err(|e| SignatureError::Unreadable {
        path: tree.to_path_buf(),
        why: e.to_string(),
    })?;
    let path = tree.join(SIGNATURE_FILE);
    // Shown as the source names it: the staging folder is zot's business.
    let shown = PathBuf::from(SIGNATURE_FILE);
    let mut signed = check(&statement(&files), &path, &shown, keys)?;
    signed.over = SignedOver::Tree;
    signed.files = files
        .into_iter()
        .filter(|(p, _)| p != SIGNATURE_FILE)
        .collect();
    Ok(signed)
}

/// Where the signature of the component file `file` is: `<file>.minisig`.
pub fn signature_of(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_os_string();
    name.push(".minisig");
    PathBuf::from(name)
}

/// Checks the signature of the component file `file`, whose bytes are `bytes`, against
/// `keys`.
pub fn check_file(bytes: &[u8], file: &Path, keys: &[Signer]) -> Result<Signed, SignatureError> {
    let path = signature_of(file);
    check(bytes, &path, &path, keys)
}

/// Checks that the signature in `path` (named `shown` in messages) is one of `message`
/// by one of `keys`.
fn check(
    message: &[u8],
    path: &Path,
    shown: &Path,
    keys: &[Signer],
) -> Result<Signed, SignatureError> {
    let listed = || keys.iter().map(|k| k.key.clone()).collect::<Vec<_>>();
    let unreadable = |why: String| SignatureError::Unreadable {
        path: shown.to_path_buf(),
        why,
    };
    let bytes = match crate::util::tree::read_regular(path, MAX_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.cause.kind() == std::io::ErrorKind::NotFound => {
            return Err(SignatureError::Missing {
                path: shown.to_path_buf(),
                keys: listed(),
            })
        }
        Err(e) => return Err(unreadable(e.cause.to_string())),
    };
    let minisig = String::from_utf8(bytes).map_err(|_| unreadable("not text".into()))?;
    let signature = Signature::decode(&minisig).map_err(|e| unreadable(e.to_string()))?;
    for signer in keys {
        let key = public_key(&signer.key).map_err(|why| SignatureError::BadKey {
            key: signer.key.clone(),
            why,
        })?;
        match key.verify(message, &signature, true) {
            Ok(()) => {
                return Ok(Signed {
                    key: signer.key.clone(),
                    over: SignedOver::File,
                    trusted_comment: signature.trusted_comment().to_string(),
                    minisig,
                    files: BTreeMap::new(),
                })
            }
            Err(minisign_verify::Error::UnexpectedKeyId) => continue,
            Err(_) => {
                return Err(SignatureError::Mismatch {
                    path: shown.to_path_buf(),
                    key: signer.key.clone(),
                })
            }
        }
    }
    Err(SignatureError::WrongKey {
        path: shown.to_path_buf(),
        keys: listed(),
    })
}

/// What `zot ext verify` finds of an install's recorded signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reverified {
    /// The key it verifies with.
    pub key: String,
    pub over: SignedOver,
    /// Signed files the install itself changed since (its manifest for `--name`, what a
    /// build rewrote): they match the record, not the signature.
    pub changed_by_install: Vec<String>,
}

/// Checks again the signature recorded for the install in `dir`: of its component file,
/// or of the statement it recorded, whose files must still be as signed unless the
/// install changed them. `None` when none was recorded.
pub fn reverify(dir: &Path, record: &Provenance) -> Result<Option<Reverified>, SignatureError> {
    let Some(signed) = &record.signature else {
        return Ok(None);
    };
    let signer = [Signer {
        key: signed.key.clone(),
        from: SignerFrom::Recorded,
    }];
    let recorded = Path::new("the install record");
    let mismatch = |path: &Path| SignatureError::Mismatch {
        path: path.to_path_buf(),
        key: signed.key.clone(),
    };
    let message = match signed.over {
        SignedOver::File => {
            let manifest =
                crate::manifest::Manifest::read(dir).map_err(|e| SignatureError::Unreadable {
                    path: dir.join(crate::manifest::MANIFEST_FILE),
                    why: e.to_string(),
                })?;
            let crate::manifest::Launch::Wasm(file) = manifest.launch(dir) else {
                return Err(mismatch(Path::new(crate::manifest::MANIFEST_FILE)));
            };
            crate::util::tree::read_regular(
                &file,
                crate::component::inspect::MAX_COMPONENT_BYTES as u64,
            )
            .map_err(|e| SignatureError::Unreadable {
                path: file.clone(),
                why: e.cause.to_string(),
            })?
        }
        SignedOver::Tree => statement(&signed.files),
    };
    let signature = Signature::decode(&signed.minisig).map_err(|e| SignatureError::Unreadable {
        path: recorded.to_path_buf(),
        why: e.to_string(),
    })?;
    let key = public_key(&signer[0].key).map_err(|why| SignatureError::BadKey {
        key: signed.key.clone(),
        why,
    })?;
    key.verify(&message, &signature, true)
        .map_err(|_| mismatch(recorded))?;
    let now = provenance::hash_tree(dir).map_err(|e| SignatureError::Unreadable {
        path: dir.to_path_buf(),
        why: e.to_string(),
    })?;
    let changed_by_install = signed
        .files
        .iter()
        .filter(|(path, hash)| {
            let installed = now.get(*path);
            installed != Some(*hash) && installed == record.files.get(*path)
        })
        .map(|(path, _)| path.clone())
        .collect();
    Ok(Some(Reverified {
        key: signed.key.clone(),
        over: signed.over,
        changed_by_install,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signature of `message` by the secret key of the test pair, made with the
    /// standard `minisign` tool, and that pair's public key (base64).
    const PUBLIC: &str = "RWSQiM9OHurhi8dzOVT+3QMxyfG6x5/5i2ILhoMfOUeZ24oBd81L+G00";
    const SIGNATURE: &str = "untrusted comment: signature from minisign secret key
RUSQiM9OHurhizkVOgE7i5MrjHsIqnf8tf2bMi4I1PbcgJB+XPyop5aocV52d3mtQREEU2XpD0D0okAXcsJooAqt/0orPuS0Qg8=
trusted comment: zot test
zuxwkzPjSaVUKkD+q46ImQxOS2F8G1ZRuSecfQB7xh5gR3svQwGmstEGJSkvx4XvaoeV+50DYIsIgZQGAZl7CQ==
";

    fn flag(key: &str) -> Signer {
        Signer {
            key: key.into(),
            from: SignerFrom::Flag,
        }
    }

    /// The file `hello\n` signed by the test key: accepted by it, with its trusted
    /// comment; refused changed, unsigned, or against another key.
    #[test]
    fn a_file_is_accepted_only_as_signed_by_a_required_key() {
        let dir = zot_test_fixtures::fresh_dir("sig-file");
        let file = dir.join("f");
        std::fs::write(signature_of(&file), SIGNATURE).unwrap();
        let signed = check_file(b"hello\n", &file, &[flag(PUBLIC)]).unwrap();
        assert_eq!(signed.trusted_comment, "zot test");
        assert_eq!(signed.key, PUBLIC);
        let e = check_file(b"hellO\n", &file, &[flag(PUBLIC)]).unwrap_err();
        assert!(matches!(e, SignatureError::Mismatch { .. }), "{e}");
        // Another key (the test key with another id): not the signer.
        let other = "RWSQiN9OHurhi8dzOVT+3QMxyfG6x5/5i2ILhoMfOUeZ24oBd81L+G00";
        let e = check_file(b"hello\n", &file, &[flag(other)]).unwrap_err();
        assert!(matches!(e, SignatureError::WrongKey { .. }), "{e}");
        // The right id with another key: a forgery, refused.
        let forged = "RWSQiM9OHurhi8dzOVT+3QMxyfG6x5/5i2ILhoMfOUeZ24oBd81L+G01";
        let e = check_file(b"hello\n", &file, &[flag(forged)]).unwrap_err();
        assert!(matches!(e, SignatureError::Mismatch { .. }), "{e}");
        std::fs::remove_file(signature_of(&file)).unwrap();
        let e = check_file(b"hello\n", &file, &[flag(PUBLIC)]).unwrap_err();
        assert!(matches!(e, SignatureError::Missing { .. }), "{e}");
        std::fs::write(signature_of(&file), "untrusted comment: x\nnot base64\n").unwrap();
        let e = check_file(b"hello\n", &file, &[flag(PUBLIC)]).unwrap_err();
        assert!(matches!(e, SignatureError::Unreadable { .. }), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A key is taken as given, or from a `minisign.pub` file; anything else is refused
    /// naming it.
    #[test]
    fn a_key_is_a_base64_key_or_a_key_file() {
        assert_eq!(Signer::parse(PUBLIC).unwrap().key, PUBLIC);
        let dir = zot_test_fixtures::fresh_dir("sig-key");
        let file = dir.join("minisign.pub");
        std::fs::write(
            &file,
            format!("untrusted comment: minisign public key 8BE1EA1E4ECF8890\n{PUBLIC}\n"),
        )
        .unwrap();
        assert_eq!(Signer::parse(file.to_str().unwrap()).unwrap().key, PUBLIC);
        for bad in ["RWxyz", "/nonexistent/key.pub", ""] {
            let e = Signer::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("signing key"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The statement lists every file but the signature, sorted, and changes with any
    /// file.
    #[test]
    fn the_statement_lists_every_file_but_its_signature() {
        let files: BTreeMap<String, String> = [
            ("b", "2"),
            ("a", "1"),
            (SIGNATURE_FILE, "x"),
            ("l", "symlink:a"),
        ]
        .into_iter()
        .map(|(p, h)| (p.to_string(), h.to_string()))
        .collect();
        let text = String::from_utf8(statement(&files)).unwrap();
        assert_eq!(
            text,
            "{\n  \"format\": \"zot-tree-statement-v1\",\n  \"files\": {\n    \"a\": \"1\",\n    \
             \"b\": \"2\",\n    \"l\": \"symlink:a\"\n  }\n}\n"
        );
        let mut changed = files.clone();
        changed.insert("a".into(), "9".into());
        assert_ne!(statement(&changed), statement(&files));
    }

    /// Settings name signers by source or by a prefix ending in `/`, never by a bare
    /// prefix of another name; a bad key there is an error, not "no signer".
    #[test]
    fn settings_name_signers_by_source_or_folder_prefix() {
        let dir = zot_test_fixtures::fresh_dir("sig-settings");
        let home = ZotHome::new(&dir);
        std::fs::write(
            home.settings_path(),
            format!(
                r#"{{"signers": {{"https://example.com/acme/": ["{PUBLIC}"],
                    "/src/one": ["{PUBLIC}"]}}}}"#
            ),
        )
        .unwrap();
        let keys = |source: &str| required(&home, source, &[]).unwrap().len();
        assert_eq!(keys("https://example.com/acme/tool.git"), 1);
        assert_eq!(keys("https://example.com/acme-evil/tool.git"), 0);
        assert_eq!(keys("/src/one"), 1);
        assert_eq!(keys("/src/one-more"), 0);
        assert_eq!(required(&home, "/x", &[flag(PUBLIC)]).unwrap().len(), 1);
        std::fs::write(
            home.settings_path(),
            r#"{"signers": {"/src/": ["RWnot-a-key"]}}"#,
        )
        .unwrap();
        assert!(required(&home, "/src/x", &[]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
