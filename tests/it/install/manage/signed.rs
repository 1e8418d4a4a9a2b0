//! Signed installs (`--require-signature`, `zot ext signer`, `zot ext sign`), with keys
//! and signatures made by the standard `minisign` tool: what is signed by a required key
//! installs, and shows who signed it; anything unsigned, changed since it was signed or
//! signed by another key is refused before anything is installed, and an update of a
//! signed install to a version that is not is refused, the old files kept.

use super::*;

/// A minisign key pair without a password: its public key file, secret key file and
/// public key (base64).
struct Keys {
    public_file: PathBuf,
    secret_file: PathBuf,
    key: String,
}

fn keys(env: &Env, name: &str) -> Keys {
    let public_file = env.root().join(format!("{name}.pub"));
    let secret_file = env.root().join(format!("{name}.key"));
    let out = Command::new("minisign")
        .arg("-G")
        .arg("-W")
        .arg("-p")
        .arg(&public_file)
        .arg("-s")
        .arg(&secret_file)
        .output()
        .expect("minisign is installed (.ci/run installs it)");
    assert_ok(&out);
    let text = fs::read_to_string(&public_file).unwrap();
    let key = text.lines().nth(1).unwrap().trim().to_string();
    Keys {
        public_file,
        secret_file,
        key,
    }
}

impl Env {
    /// `zot ext sign <args> -s <keys' secret key>`, which must succeed.
    fn sign(&self, keys: &Keys, args: &[&str]) {
        let mut cmd = self.command(&["sign"]);
        cmd.args(args).arg("-s").arg(&keys.secret_file);
        let out = cmd.output().unwrap();
        assert_ok(&out);
    }

    /// `zot ext install <source> --yes --require-signature <keys' public key file>`.
    fn install_signed(&self, source: &str, keys: &Keys, more: &[&str]) -> Output {
        let mut cmd = self.command(&["install", source, "--yes", "--require-signature"]);
        cmd.arg(&keys.public_file).args(more);
        cmd.output().unwrap()
    }

    /// Nothing installed and no record: what a refusal leaves.
    #[track_caller]
    fn nothing_installed(&self) {
        assert_eq!(self.installed(), Vec::<String>::new());
        let records = self.home().join("provenance");
        let left = fs::read_dir(&records).map(|d| d.count()).unwrap_or(0);
        assert_eq!(left, 0, "a record in {}", records.display());
    }
}

#[test]
fn a_signed_component_installs_and_one_unsigned_changed_or_wrongly_keyed_does_not() {
    let env = Env::new("signed-wasm");
    let (a, b) = (keys(&env, "a"), keys(&env, "b"));
    let dir = env.root().join("dist");
    fs::create_dir_all(&dir).unwrap();
    let wasm = dir.join("hello.wasm");
    fs::write(&wasm, hello_wasm()).unwrap();
    let file = wasm.to_str().unwrap();

    let out = env.install_signed(file, &a, &[]);
    assert_fails_with(&out, "not signed: a signature by");
    assert!(
        stderr(&out).contains("hello.wasm.minisig"),
        "{}",
        stderr(&out)
    );
    env.nothing_installed();

    env.sign(&a, &[file, "-t", "hello 0.1.0 by A"]);
    assert!(dir.join("hello.wasm.minisig").is_file());
    assert_fails_with(
        &env.install_signed(file, &b, &[]),
        "is a signature by another key than the one required",
    );
    env.nothing_installed();

    // The same signature beside the file with one custom section more: still a valid
    // component, no longer what was signed.
    let tampered = dir.join("tampered.wasm");
    let mut bytes = hello_wasm();
    bytes.extend_from_slice(b"\x00\x04\x01xyz");
    fs::write(&tampered, bytes).unwrap();
    fs::copy(
        dir.join("hello.wasm.minisig"),
        dir.join("tampered.wasm.minisig"),
    )
    .unwrap();
    assert_fails_with(
        &env.install_signed(tampered.to_str().unwrap(), &a, &[]),
        "but not of what is there: changed since it was signed; nothing was installed",
    );
    env.nothing_installed();

    let out = env.install_signed(file, &a, &[]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains(&format!(
            "Signed by key {}: the component file, as it is (trusted comment: hello 0.1.0 by A)",
            a.key
        )),
        "{}",
        stdout(&out)
    );
    let info = env.zot(&["info", "hello", "--json"]);
    assert_ok(&info);
    let info: Value = serde_json::from_str(&stdout(&info)).unwrap();
    let signature = &info["provenance"]["signature"];
    assert_eq!(signature["key"], a.key.as_str(), "{info}");
    assert_eq!(signature["over"], "file", "{info}");
    assert_eq!(signature["trusted_comment"], "hello 0.1.0 by A", "{info}");
    let verify = env.zot(&["verify", "hello"]);
    assert_ok(&verify);
    assert!(
        stdout(&verify).contains(&format!("signature good: by key {}", a.key)),
        "{}",
        stdout(&verify)
    );
}

/// A repository signed at a tag with `zot ext sign --ref HEAD`: installed from the tag;
/// a folder unsigned, changed after signing, or signed by another key is not. Its update
/// to a tag whose files changed without a new signature, or whose signature was removed,
/// is refused and the install stays as it was; to one signed again, it goes through.
#[test]
fn a_signed_source_tree_installs_and_updates_only_as_signed() {
    let env = Env::new("signed-tree");
    let (a, b) = (keys(&env, "a"), keys(&env, "b"));
    let repo = env.source("repo", &manifest("signed"));
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    let repo_path = repo.to_str().unwrap();
    env.sign(&a, &[repo_path, "--ref", "HEAD"]);
    git(&repo, &["add", "extension.minisig"]);
    git(&repo, &["commit", "-q", "-m", "signed"]);
    git(&repo, &["tag", "v1"]);
    let url = file_url(&repo);

    // Signed by A: B's key does not take it.
    assert_fails_with(
        &env.install_signed(&url, &b, &["--ref", "v1"]),
        "is a signature by another key",
    );
    env.nothing_installed();
    // A folder never signed.
    let unsigned = env.source("unsigned", &manifest("unsigned"));
    assert_fails_with(
        &env.install_signed(unsigned.to_str().unwrap(), &a, &[]),
        "not signed: a signature by",
    );
    env.nothing_installed();
    // A folder changed after it was signed.
    let changed = env.source("changed", &manifest("changed"));
    env.sign(&a, &[changed.to_str().unwrap()]);
    fs::write(changed.join("run.sh"), "#!/bin/sh\necho changed\n").unwrap();
    assert_fails_with(
        &env.install_signed(changed.to_str().unwrap(), &a, &[]),
        "but not of what is there",
    );
    env.nothing_installed();

    let out = env.install_signed(&url, &a, &["--ref", "v1"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("the source's 2 files, as they are"),
        "{}",
        stdout(&out)
    );
    let installed = env.extensions().join("signed");
    let run = || fs::read_to_string(installed.join("run.sh")).unwrap();
    assert_eq!(run(), "#!/bin/sh\n");

    // v2 changes run.sh and keeps v1's signature: refused, the install as it was.
    fs::write(repo.join("run.sh"), "#!/bin/sh\necho v2\n").unwrap();
    git(&repo, &["commit", "-q", "-am", "two"]);
    git(&repo, &["tag", "v2"]);
    assert_fails_with(
        &env.zot(&["update", "signed", "--ref", "v2", "--yes"]),
        "but not of what is there",
    );
    // v3 removes the signature: refused too.
    git(&repo, &["rm", "-q", "extension.minisig"]);
    git(&repo, &["commit", "-q", "-m", "three"]);
    git(&repo, &["tag", "v3"]);
    assert_fails_with(
        &env.zot(&["update", "signed", "--ref", "v3", "--yes"]),
        "not signed: a signature by",
    );
    assert_eq!(run(), "#!/bin/sh\n");
    assert_ok(&env.zot(&["verify", "signed"]));

    // v4 is signed again by A: updated, the signature recorded again.
    env.sign(&a, &[repo_path, "--ref", "HEAD"]);
    git(&repo, &["add", "extension.minisig"]);
    git(&repo, &["commit", "-q", "-m", "four"]);
    git(&repo, &["tag", "v4"]);
    assert_ok(&env.zot(&["update", "signed", "--ref", "v4", "--yes"]));
    assert_eq!(run(), "#!/bin/sh\necho v2\n");
    let info = env.zot(&["info", "signed"]);
    assert!(
        stdout(&info).contains(&format!("signature    by key {}", a.key)),
        "{}",
        stdout(&info)
    );

    // Installed under another name, its manifest is the install's own: `verify` says so
    // and the signature still holds.
    let out = env.install_signed(&url, &a, &["--ref", "v4", "--name", "renamed"]);
    assert_ok(&out);
    let verify = env.zot(&["verify", "renamed"]);
    assert_ok(&verify);
    assert!(
        stdout(&verify).contains("extension.json was changed by the install itself"),
        "{}",
        stdout(&verify)
    );
    // A record whose signed statement was edited no longer verifies.
    let record = env.home().join("provenance/renamed.json");
    let text = fs::read_to_string(&record).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    value["signature"]["files"]["run.sh"] = Value::from("0".repeat(64));
    fs::write(&record, value.to_string()).unwrap();
    assert_fails_with(&env.zot(&["verify", "renamed"]), "but not of what is there");
}

/// A signer the settings name for a prefix of sources applies to every install from
/// under it, without the flag; elsewhere, nothing is required.
#[test]
fn a_signer_named_for_a_prefix_is_required_of_every_install_under_it() {
    let env = Env::new("signed-setting");
    let a = keys(&env, "a");
    let vendor = env.root().join("vendor");
    fs::create_dir_all(&vendor).unwrap();
    let prefix = format!("{}/", vendor.display());
    let out = env.zot(&["signer", "add", &prefix, a.public_file.to_str().unwrap()]);
    assert_ok(&out);
    let list = env.zot(&["signer", "list", "--json"]);
    let list: Value = serde_json::from_str(&stdout(&list)).unwrap();
    let real = format!("{}/", vendor.canonicalize().unwrap().display());
    assert_eq!(list[&real][0], a.key.as_str(), "{list}");

    let tool = env.source("vendor/tool", &manifest("tool"));
    assert_fails_with(
        &env.install(tool.to_str().unwrap()),
        "not signed: a signature by",
    );
    env.nothing_installed();
    env.sign(&a, &[tool.to_str().unwrap()]);
    assert_ok(&env.install(tool.to_str().unwrap()));
    // Outside the prefix, no signature is asked for.
    let other = env.source("elsewhere", &manifest("other"));
    assert_ok(&env.install(other.to_str().unwrap()));
    assert_ok(&env.zot(&["signer", "remove", &prefix]));
    let list = env.zot(&["signer", "list", "--json"]);
    assert_eq!(stdout(&list).trim(), "{}");
}

/// `zot ext sign --statement` prints what a tree's signature signs (every file but the
/// signature, by path, as JSON), the same bytes `minisign` is run on; without `minisign`
/// on `PATH`, `sign` says how to sign otherwise and writes nothing.
#[test]
fn sign_prints_the_statement_and_says_what_to_do_without_minisign() {
    let env = Env::new("sign-statement");
    let src = env.source("tool", &manifest("tool"));
    fs::write(src.join("extension.minisig"), "not part of it").unwrap();
    let out = env.zot(&["sign", src.to_str().unwrap(), "--statement"]);
    assert_ok(&out);
    let statement: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(statement["format"], "zot-tree-statement-v1", "{statement}");
    let files: Vec<&String> = statement["files"].as_object().unwrap().keys().collect();
    assert_eq!(files, ["extension.json", "run.sh"], "{statement}");
    assert_eq!(
        statement["files"]["run.sh"],
        sha256_hex(b"#!/bin/sh\n"),
        "{statement}"
    );

    fs::remove_file(src.join("extension.minisig")).unwrap();
    let mut cmd = env.command(&["sign", src.to_str().unwrap()]);
    cmd.env("PATH", env.root().join("empty-path"));
    let out = cmd.output().unwrap();
    assert_fails_with(&out, "minisign is not installed");
    assert!(stderr(&out).contains("--statement"), "{}", stderr(&out));
    assert!(!src.join("extension.minisig").exists());
}

fn sha256_hex(bytes: &[u8]) -> String {
    let out = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(bytes)?;
            child.wait_with_output()
        })
        .unwrap();
    stdout(&out).split_whitespace().next().unwrap().to_string()
}
