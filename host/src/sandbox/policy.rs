//! What a component may use: what its manifest asks ∩ what the user granted, decided
//! once before it starts.

use super::Caps;
use super::{HostPattern, InForce, Limit, RunGrant, DATA_MOUNT};
use crate::identity::Identity;
use crate::log::ExtLog;
use crate::manifest::{CwdAccess, Manifest, Permissions};
use crate::paths::ZotHome;
use crate::records::{grants, Grant};
use std::path::{Path, PathBuf};

/// What a component may use, decided once before it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Host directory mounted read-write at `/data`.
    pub data_dir: Option<PathBuf>,
    /// Host directory mounted read-only at the same path.
    pub cwd: Option<PathBuf>,
    /// Environment variables passed (names granted and set on the host).
    pub env: Vec<(String, String)>,
    /// Linear memory limit in bytes (`limits.memory_mb`).
    pub memory_bytes: usize,
    /// Every host-side cap in force.
    pub limits: InForce,
    /// Where outgoing HTTP may go (the granted `permissions.http` entries); empty: nowhere.
    pub http: Vec<HostPattern>,
}

/// A decision and what was withheld from the manifest's asks, in words for the log.
#[derive(Debug, Clone)]
pub struct Decision {
    pub policy: Policy,
    pub withheld: Vec<String>,
}

/// Decides what a component gets: `asked` ∩ `granted` (no grant: the data dir and the
/// default memory only). `env_var` reads the host's environment.
pub fn decide(
    asked: &Permissions,
    caps: &Caps,
    granted: Option<&Grant>,
    data_dir: PathBuf,
    cwd: &Path,
    env_var: impl Fn(&str) -> Option<String>,
) -> Decision {
    let default_grant = Grant::default();
    let grant = granted.unwrap_or(&default_grant);
    let mut withheld = Vec::new();

    let data_dir = match (asked.data_dir, grant.permissions.data_dir) {
        (true, true) => Some(data_dir),
        (true, false) => {
            withheld.push("data_dir: not granted".into());
            None
        }
        (false, _) => None,
    };
    let cwd = match (asked.cwd, grant.permissions.cwd) {
        (Some(CwdAccess::Read), Some(CwdAccess::Read)) => Some(cwd.to_path_buf()),
        (Some(CwdAccess::Read), None) => {
            withheld.push("cwd: read: not granted".into());
            None
        }
        (None, _) => None,
    };
    let mut env = Vec::new();
    for name in &asked.env {
        if !grant.permissions.env.contains(name) {
            withheld.push(format!("env {name}: not granted"));
        } else if let Some(value) = env_var(name) {
            env.push((name.clone(), value));
        }
    }
    let mut http = Vec::new();
    for entry in &asked.http {
        if !grant.permissions.http.contains(entry) {
            withheld.push(format!("http {entry}: not granted"));
            continue;
        }
        match HostPattern::parse(entry) {
            Ok(pattern) => http.push(pattern),
            Err(e) => withheld.push(format!("http {entry}: {e}")),
        }
    }
    for limit in Limit::ALL {
        let (asked, allowed) = (limit.asked(caps), limit.granted(&grant.caps));
        if asked > allowed {
            let (name, unit) = (limit.spec().permission, limit.spec().unit);
            withheld.push(format!("{name} {asked} {unit}: {allowed} {unit} granted"));
        }
    }
    let in_force = InForce::decide(caps, &grant.caps);
    Decision {
        policy: Policy {
            data_dir,
            cwd,
            env,
            memory_bytes: (in_force.memory_mb << 20) as usize,
            limits: in_force,
            http,
        },
        withheld,
    }
}

/// The user's grant as it applies to the component now on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantState {
    /// No grant recorded (or it cannot be read): the data dir and the default memory.
    None,
    /// Recorded for this very component: in force.
    Applied(Grant),
    /// Recorded for another build of the component (its SHA-256 differs): not applied,
    /// the component runs with the defaults only until the user reviews it.
    Stale(Grant),
}

impl GrantState {
    /// The grant in force, if any.
    pub fn applied(&self) -> Option<&Grant> {
        match self {
            GrantState::Applied(g) => Some(g),
            _ => None,
        }
    }
}

/// The decision for the component of manifest `m` installed as `id`, whose SHA-256 is
/// `sha256`: its grant if it was given for this component, widened by `run` (what the
/// user granted for this run only, never stored), and the host's environment. What is
/// withheld, what the run grants, and a stale grant are logged.
pub fn for_manifest(
    home: &ZotHome,
    id: &Identity,
    m: &Manifest,
    cwd: &Path,
    sha256: &str,
    run: Option<&RunGrant>,
    log: &ExtLog,
) -> (Decision, GrantState) {
    let state = match grants::load(home, id) {
        Err(e) => {
            log.warn(&format!("{e}: running with no grant"));
            GrantState::None
        }
        Ok(None) => GrantState::None,
        Ok(Some(g)) if g.sha256 == sha256 => GrantState::Applied(g),
        Ok(Some(g)) => {
            let short = |s: &str| s.chars().take(12).collect::<String>();
            log.warn(&format!(
                "grant stale: the component changed since permissions were granted \
                 (sha256 {} then, {} now): running with the defaults only",
                short(&g.sha256),
                short(sha256),
            ));
            GrantState::Stale(g)
        }
    };
    let widened = run.filter(|r| !r.is_empty()).map(|run| {
        log.info(&format!("this run grants: {}", run.granted_words()));
        run.widen(m, state.applied())
    });
    let (m, granted) = match &widened {
        Some((asked, grant)) => (asked, Some(grant)),
        None => (m, state.applied()),
    };
    let decision = decide(
        &m.permissions,
        &m.limits.caps,
        granted,
        home.data_dir(id),
        cwd,
        |name| std::env::var(name).ok(),
    );
    for withheld in &decision.withheld {
        log.warn(&format!("withheld: {withheld}"));
    }
    (decision, state)
}

/// What list, check and `host_ready` say of a stale grant: `grant stale — `zot ext
/// grant NAME` to review` (the folder instead of the name for an extension that is not
/// installed).
pub fn stale_warning(name: &str, id: &Identity, dir: &Path) -> String {
    let target = match id {
        Identity::Path { .. } => format!("'{}'", dir.display()),
        _ => name.to_string(),
    };
    format!("grant stale — `zot ext grant {target}` to review")
}

impl Policy {
    /// Nothing granted: no data dir, no project directory, no environment, no network,
    /// the default memory.
    pub fn nothing_granted() -> Policy {
        Policy {
            data_dir: None,
            cwd: None,
            env: Vec::new(),
            memory_bytes: (super::DEFAULT_MEMORY_MB as usize) << 20,
            limits: InForce::defaults(),
            http: Vec::new(),
        }
    }

    /// What the component is told in `hello_ack.data_dir`.
    pub fn data_mount(&self) -> &'static str {
        if self.data_dir.is_some() {
            DATA_MOUNT
        } else {
            ""
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::Identity;
    use crate::paths::ZotHome;

    const MAX_MEMORY_MB: u64 = Limit::Memory.spec().max;

    /// A damaged or hand-edited grant file is an error naming the file, or a grant that
    /// still gives no more than the manifest asks; never a panic.
    #[test]
    fn an_odd_grant_file_is_an_error_or_no_more_than_asked() {
        let root = std::env::temp_dir().join(format!("zot-grants-{}", std::process::id()));
        let home = ZotHome::new(&root);
        let id = Identity::Global {
            dir_name: "odd".into(),
        };
        let asked = Permissions {
            data_dir: true,
            cwd: Some(CwdAccess::Read),
            env: vec!["HOME".into()],
            http: vec!["api.example.com".into()],
        };
        let limits = Caps {
            memory_mb: Some(MAX_MEMORY_MB),
            ..Caps::default()
        };
        let odd: [&[u8]; 8] = [
            b"",
            b"\xff\xfe not UTF-8",
            b"[]",
            b"null",
            br#"{"permissions": 5}"#,
            br#"{"memory_mb": -1}"#,
            br#"{"memory_mb": 18446744073709551615, "sha256": "\u00e9\u00e9"}"#,
            br#"{"permissions": {"http": ["", "*", "[::1", "http://"], "env": [""]}}"#,
        ];
        for bytes in odd {
            std::fs::create_dir_all(root.join("grants")).unwrap();
            std::fs::write(home.grant_path(&id), bytes).unwrap();
            match crate::records::grants::load(&home, &id) {
                Err(e) => assert!(e.to_string().contains("odd.json"), "{e}"),
                Ok(grant) => {
                    let d = decide(
                        &asked,
                        &limits,
                        grant.as_ref(),
                        "/d".into(),
                        Path::new("/p"),
                        |_| None,
                    );
                    assert!(d.policy.memory_bytes <= (MAX_MEMORY_MB as usize) << 20);
                    assert!(d.policy.http.is_empty(), "{:?}", d.policy.http);
                }
            }
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    fn asks(cwd: bool, env: &[&str], http: &[&str]) -> Permissions {
        Permissions {
            data_dir: true,
            cwd: cwd.then_some(CwdAccess::Read),
            env: env.iter().map(|s| s.to_string()).collect(),
            http: http.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn host_env(name: &str) -> Option<String> {
        (name == "SET").then(|| "value".to_string())
    }

    #[test]
    fn without_a_grant_only_the_data_dir() {
        let d = decide(
            &asks(true, &["SET"], &["api.example.com"]),
            &Caps {
                memory_mb: Some(128),
                ..Caps::default()
            },
            None,
            "/d".into(),
            Path::new("/p"),
            host_env,
        );
        assert_eq!(d.policy.data_dir, Some("/d".into()));
        assert_eq!(d.policy.cwd, None);
        assert!(d.policy.env.is_empty());
        assert_eq!(d.policy.memory_bytes, 64 << 20);
        assert_eq!(d.withheld.len(), 4, "{:?}", d.withheld);
    }

    #[test]
    fn granted_and_asked_intersect() {
        let grant = Grant {
            sha256: String::new(),
            permissions: asks(true, &["SET", "UNSET", "OTHER"], &[]),
            caps: Caps {
                memory_mb: Some(256),
                ..Caps::default()
            },
            ..Grant::default()
        };
        let d = decide(
            &asks(true, &["SET", "UNSET"], &[]),
            &Caps {
                memory_mb: Some(128),
                ..Caps::default()
            },
            Some(&grant),
            "/d".into(),
            Path::new("/p"),
            host_env,
        );
        assert_eq!(d.policy.cwd, Some("/p".into()));
        assert_eq!(d.policy.env, vec![("SET".into(), "value".into())]);
        assert_eq!(d.policy.memory_bytes, 128 << 20);
        assert!(d.withheld.is_empty(), "{:?}", d.withheld);
    }

    #[test]
    fn a_grant_does_not_add_what_was_not_asked() {
        let grant = Grant {
            sha256: String::new(),
            permissions: asks(true, &["SET"], &[]),
            ..Grant::default()
        };
        let mut nothing = asks(false, &[], &[]);
        nothing.data_dir = false;
        let d = decide(
            &nothing,
            &Caps::default(),
            Some(&grant),
            "/d".into(),
            Path::new("/p"),
            host_env,
        );
        assert_eq!(d.policy.data_dir, None);
        assert_eq!(d.policy.cwd, None);
        assert!(d.policy.env.is_empty());
    }

    #[test]
    fn granted_http_entries_are_in_the_policy() {
        let grant = Grant {
            sha256: String::new(),
            permissions: asks(false, &[], &["api.example.com", "http://127.0.0.1:8080"]),
            ..Grant::default()
        };
        let d = decide(
            &asks(false, &[], &["http://127.0.0.1:8080", "*.other.org"]),
            &Caps::default(),
            Some(&grant),
            "/d".into(),
            Path::new("/p"),
            host_env,
        );
        assert_eq!(
            d.policy.http,
            vec![HostPattern::parse("http://127.0.0.1:8080").unwrap()]
        );
        assert_eq!(
            d.withheld,
            vec!["http *.other.org: not granted".to_string()]
        );
        let none = decide(
            &asks(false, &[], &[]),
            &Caps::default(),
            Some(&grant),
            "/d".into(),
            Path::new("/p"),
            host_env,
        );
        assert!(none.policy.http.is_empty(), "granted but not asked");
    }
}
