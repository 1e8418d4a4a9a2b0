//! Permissions given on the command line for one run (`--allow-env NAME`, `--allow-http
//! PATTERN`, `--allow-read-cwd`, `--memory MB`), as `extism call --allow-host` gives
//! them: never stored, and applied only to the components the user named for that run
//! (see [`RunGrant::applies_to`]).
//!
//! A per-run grant is one more widening of the same decision: for that run, the user
//! both asks for each permission (as if the manifest did: [`Permission::ask_in`]) and
//! grants it ([`Grant::add_parsed`]); [`super::policy`] then decides asked ∩ granted as
//! always. So a bare `.wasm` that asks nothing can be tried with network.

use super::{Limit, SandboxError};
use crate::discovery::Source;
use crate::manifest::Manifest;
use crate::records::{Grant, Permission};

/// What the user grants for one run; empty: nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunGrant {
    permissions: Vec<Permission>,
}

impl RunGrant {
    /// Nothing granted for the run.
    pub fn is_empty(&self) -> bool {
        self.permissions.is_empty()
    }

    /// Adds `permission` for the run: only what the run flags can name (the
    /// environment, HTTP, reading the project directory, memory).
    pub fn add(&mut self, permission: Permission) -> Result<(), SandboxError> {
        match &permission {
            Permission::Env(name) if name.is_empty() || name.contains(['=', '\0']) => {
                return Err(SandboxError::UnknownPermission(permission.to_string()))
            }
            Permission::Env(_)
            | Permission::Http(_)
            | Permission::Cwd
            | Permission::Limit(Limit::Memory, _) => {}
            Permission::DataDir | Permission::Limit(..) => {
                return Err(SandboxError::UnknownPermission(permission.to_string()))
            }
        }
        // A later `--memory` replaces an earlier one; the others are kept once.
        self.permissions.retain(|p| match (p, &permission) {
            (Permission::Limit(a, _), Permission::Limit(b, _)) => a != b,
            _ => p != &permission,
        });
        self.permissions.push(permission);
        Ok(())
    }

    /// The permissions, in the order given (as `zot ext grant -p` names them).
    pub fn permissions(&self) -> &[Permission] {
        &self.permissions
    }

    /// The permissions as `zot ext grant -p` names them: `env:API_KEY, http:api.example.com`.
    pub fn words(&self) -> String {
        let words: Vec<String> = self.permissions.iter().map(Permission::to_string).collect();
        words.join(", ")
    }

    /// [`RunGrant::words`] where they are granted, with what a word does not say: an
    /// `http:` pattern without a scheme is HTTPS only.
    pub fn granted_words(&self) -> String {
        let words: Vec<String> = self
            .permissions
            .iter()
            .map(|p| match p {
                Permission::Http(host) if !host.contains("://") => {
                    format!("{p} (HTTPS only: http://{host} for plain HTTP)")
                }
                _ => p.to_string(),
            })
            .collect();
        words.join(", ")
    }

    /// Whether a per-run grant applies to an extension found at `source`: only to what
    /// the user named on the command line (`--ext`, the target of `call`/`invoke`/`dev`,
    /// the component of `run`), never to installed extensions that load beside it — a
    /// flag meant for the component under test must not widen every installed guard.
    pub fn applies_to(source: Source) -> bool {
        match source {
            Source::Explicit => true,
            Source::Project | Source::Global => false,
        }
    }

    /// The manifest and grant that decide this run: `m` also asking for each permission
    /// of the run, and `stored` (or no grant) also granting it.
    pub fn widen(&self, m: &Manifest, stored: Option<&Grant>) -> (Manifest, Grant) {
        let mut asked = m.clone();
        let mut grant = stored.cloned().unwrap_or_default();
        for permission in &self.permissions {
            permission.ask_in(&mut asked);
            grant
                .add_parsed(&asked, permission.clone())
                .expect("a permission the manifest was just made to ask for is asked");
        }
        (asked, grant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::policy::decide;
    use std::path::Path;

    fn run(perms: &[&str]) -> RunGrant {
        let mut run = RunGrant::default();
        for p in perms {
            run.add(p.parse().unwrap()).unwrap();
        }
        run
    }

    #[test]
    fn a_run_grant_asks_and_grants_for_that_run() {
        let bare: Manifest = serde_json::from_str(r#"{"name":"g","wasm":"g.wasm"}"#).unwrap();
        let run = run(&["env:SET", "http:127.0.0.1:8080", "cwd", "memory:32"]);
        let (m, grant) = run.widen(&bare, None);
        let d = decide(
            &m.permissions,
            &m.limits.caps,
            Some(&grant),
            "/d".into(),
            Path::new("/p"),
            |n| (n == "SET").then(|| "v".to_string()),
        );
        assert_eq!(d.policy.env, vec![("SET".into(), "v".into())]);
        assert_eq!(d.policy.cwd, Some("/p".into()));
        assert_eq!(d.policy.http.len(), 1);
        assert_eq!(d.policy.memory_bytes, 32 << 20, "--memory lowers too");
        assert!(d.withheld.is_empty(), "{:?}", d.withheld);
        assert_eq!(
            run.words(),
            "env:SET, http:127.0.0.1:8080, cwd, memory:32",
            "as grant -p names them"
        );
        assert_eq!(
            run.granted_words(),
            "env:SET, http:127.0.0.1:8080 (HTTPS only: http://127.0.0.1:8080 for plain HTTP), \
             cwd, memory:32",
            "where granted, what a scheme-less pattern means"
        );
        // Nothing of the run is stored in the manifest's own asks.
        assert!(bare.permissions.env.is_empty());
    }

    #[test]
    fn only_the_run_flags_and_only_for_what_was_named() {
        let mut r = RunGrant::default();
        assert!(r.add("disk:1024".parse().unwrap()).is_err());
        assert!(r.add("data_dir".parse().unwrap()).is_err());
        assert!(r.add(Permission::Env("A=B".into())).is_err());
        r.add("memory:100".parse().unwrap()).unwrap();
        r.add("memory:200".parse().unwrap()).unwrap();
        assert_eq!(r.words(), "memory:200");
        assert!(RunGrant::applies_to(Source::Explicit));
        assert!(!RunGrant::applies_to(Source::Global));
        assert!(!RunGrant::applies_to(Source::Project));
    }
}
