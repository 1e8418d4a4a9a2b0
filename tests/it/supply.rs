//! The dependency policy (`deny.toml`, checked by `.ci/deny` with the pinned cargo-deny):
//! what it says it refuses, it refuses. Each check runs on a scratch crate that breaks one
//! rule, with dependencies from a local git repository and local paths (no network).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned cargo-deny, installed (into the target dir) by `.ci/deny` if it is not yet.
fn cargo_deny() -> PathBuf {
    let out = Command::new("bash")
        .arg(workspace().join(".ci/deny"))
        .arg("--path")
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "{}", text(&out));
    workspace().join(stdout(&out).trim())
}

/// A crate `name` at `version` under `licence` in `dir`.
fn lay_crate(dir: &Path, name: &str, version: &str, licence: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"{version}\"\nedition = \"2021\"\n\
             license = \"{licence}\"\n"
        ),
    )
    .unwrap();
}

/// `check <which>` of the scratch crate `probe` against the project's policy: the exit
/// code and what cargo-deny said.
fn check(deny: &Path, probe: &Path, which: &str) -> (Option<i32>, String) {
    let out = Command::new(deny)
        .arg("--manifest-path")
        .arg(probe.join("Cargo.toml"))
        .arg("--config")
        .arg(workspace().join("deny.toml"))
        .args(["check", which])
        .output()
        .expect("cargo-deny runs");
    (out.status.code(), text(&out))
}

/// A crate whose dependencies come from a git repository, carry a licence the policy does
/// not allow, come in two versions and include a banned crate: each check fails on its
/// own rule, naming the crate. The project itself passes all three.
#[test]
fn the_dependency_policy_refuses_another_source_a_licence_a_duplicate_and_a_ban() {
    let deny = cargo_deny();
    let scratch = TempDir::new("deny");
    let root = scratch.path();
    let repo = root.join("repo");
    lay_crate(&repo, "fromgit", "1.0.0", "MIT");
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "one"]);
    lay_crate(&root.join("gpl"), "gpl", "1.0.0", "GPL-3.0-only");
    lay_crate(&root.join("dup1"), "dup", "1.0.0", "MIT");
    lay_crate(&root.join("dup2"), "dup", "2.0.0", "MIT");
    lay_crate(&root.join("openssl-sys"), "openssl-sys", "0.9.0", "MIT");
    let probe = root.join("probe");
    lay_crate(&probe, "probe", "0.1.0", "MIT");
    let manifest = std::fs::read_to_string(probe.join("Cargo.toml")).unwrap();
    std::fs::write(
        probe.join("Cargo.toml"),
        format!(
            "{manifest}publish = false\n\n[dependencies]\n\
             fromgit = {{ git = \"file://{}\" }}\n\
             gpl = {{ path = \"../gpl\" }}\n\
             dup_a = {{ package = \"dup\", path = \"../dup1\" }}\n\
             dup_b = {{ package = \"dup\", path = \"../dup2\" }}\n\
             openssl-sys = {{ path = \"../openssl-sys\" }}\n\n[workspace]\n",
            repo.display()
        ),
    )
    .unwrap();
    let lock = Command::new("cargo")
        .arg("generate-lockfile")
        .current_dir(&probe)
        .output()
        .unwrap();
    assert!(lock.status.success(), "{}", text(&lock));

    let (code, said) = check(&deny, &probe, "sources");
    assert_ne!(code, Some(0), "{said}");
    assert!(
        said.contains("error[source-not-allowed]: detected 'git' source"),
        "{said}"
    );
    assert!(said.contains("fromgit"), "{said}");
    let (code, said) = check(&deny, &probe, "licenses");
    assert_ne!(code, Some(0), "{said}");
    assert!(said.contains("error[rejected]"), "{said}");
    assert!(said.contains("GPL-3.0-only"), "{said}");
    let (code, said) = check(&deny, &probe, "bans");
    assert_ne!(code, Some(0), "{said}");
    assert!(
        said.contains("error[duplicate]: found 2 duplicate entries for crate 'dup'"),
        "{said}"
    );
    assert!(
        said.contains("error[banned]: crate 'openssl-sys = 0.9.0' is explicitly banned"),
        "{said}"
    );

    for which in ["sources", "licenses", "bans"] {
        let (code, said) = check(&deny, &workspace(), which);
        assert_eq!(
            code,
            Some(0),
            "the project fails its own {which} policy: {said}"
        );
    }
}
