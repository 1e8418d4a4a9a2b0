//! The sandbox policy: the one place that decides what a component gets. A permission is
//! in force only when the manifest asks for it **and** the user granted it; everything
//! else is denied. [`Policy::wasi`] turns the decision into a WASI context that inherits
//! nothing from the host.

use crate::log::ExtLog;
use crate::manifest::{CwdAccess, Limits, Manifest, Permissions};
use crate::paths::ZotHome;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// Memory a component gets unless its manifest asks (and the user grants) more.
pub const DEFAULT_MEMORY_MB: u64 = 64;
/// Where a component sees its data directory.
pub const DATA_MOUNT: &str = "/data";
/// At most this many instances, tables and memories per component.
pub const MAX_INSTANCES: usize = 64;
/// At most this many elements in one table.
pub const MAX_TABLE_ELEMENTS: usize = 100_000;

/// What the user granted an extension, as stored by [`crate::grants`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// The component's SHA-256 when the grant was given.
    #[serde(default)]
    pub sha256: String,
    #[serde(default)]
    pub permissions: Permissions,
    /// Memory the user allowed beyond the default, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
}

/// What a component may use, decided once before it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Host directory mounted read-write at `/data`.
    pub data_dir: Option<PathBuf>,
    /// Host directory mounted read-only at the same path.
    pub cwd: Option<PathBuf>,
    /// Environment variables passed (names granted and set on the host).
    pub env: Vec<(String, String)>,
    /// Linear memory limit in bytes.
    pub memory_bytes: usize,
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
    limits: &Limits,
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
    let asked_mb = limits.memory_mb.unwrap_or(DEFAULT_MEMORY_MB);
    let allowed_mb = grant
        .memory_mb
        .unwrap_or(DEFAULT_MEMORY_MB)
        .max(DEFAULT_MEMORY_MB);
    if asked_mb > allowed_mb {
        withheld.push(format!("memory {asked_mb} MiB: {allowed_mb} MiB granted"));
    }
    Decision {
        policy: Policy {
            data_dir,
            cwd,
            env,
            memory_bytes: (asked_mb.min(allowed_mb) * 1024 * 1024) as usize,
            http,
        },
        withheld,
    }
}

/// The decision for the component of manifest `m`: its recorded grant, if any, and the
/// host's environment. What is withheld is logged.
pub fn for_manifest(
    home: &ZotHome,
    m: &Manifest,
    cwd: &Path,
    log: &ExtLog,
) -> (Decision, Option<Grant>) {
    let grant = crate::grants::load(home, &m.name).unwrap_or_else(|e| {
        log.warn(&format!("{e}: running with no grant"));
        None
    });
    let decision = decide(
        &m.permissions,
        &m.limits,
        grant.as_ref(),
        home.data_dir(&m.name),
        cwd,
        |name| std::env::var(name).ok(),
    );
    for withheld in &decision.withheld {
        log.warn(&format!("withheld: {withheld}"));
    }
    (decision, grant)
}

/// Logs when the component is not the one the grant was given for: it still runs with
/// the old grant (never more), and the user is told how to review it.
pub fn warn_if_changed(grant: Option<&Grant>, sha256: &str, name: &str, log: &ExtLog) {
    if let Some(g) = grant.filter(|g| g.sha256 != sha256) {
        let short = |s: &str| s.chars().take(12).collect::<String>();
        log.warn(&format!(
            "the component changed since permissions were granted (sha256 {} then, {} now): \
             running with the old grant; `zot ext grant {name}` to review",
            short(&g.sha256),
            short(sha256),
        ));
    }
}

impl Policy {
    /// A WASI context builder for this policy: no args, no inherited env or stdio, no
    /// sockets, no name lookups; the granted directories and variables only. The caller
    /// adds the stdio streams.
    pub fn wasi(&self) -> std::io::Result<WasiCtxBuilder> {
        let mut b = WasiCtxBuilder::new();
        b.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .socket_addr_check(|_, _| Box::pin(async { false }))
            // File operations run on the guest's own task instead of a `spawn_blocking`
            // round trip each: every one is a single syscall on a local file of at most
            // 64 KiB (wasmtime caps reads), and it cuts an SDK tool call that reads one
            // small file from ~205 µs to ~37 µs (benches/roundtrip.rs, examples/todo).
            .allow_blocking_current_thread(true);
        for (k, v) in &self.env {
            b.env(k, v);
        }
        if let Some(dir) = &self.data_dir {
            std::fs::create_dir_all(dir)?;
            b.preopened_dir(dir, DATA_MOUNT, FsPerms::ReadWrite)
                .map_err(std::io::Error::other)?;
        }
        if let Some(dir) = &self.cwd {
            b.preopened_dir(dir, dir.to_string_lossy(), FsPerms::ReadOnly)
                .map_err(std::io::Error::other)?;
        }
        Ok(b)
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

/// One `permissions.http` entry: `host`, `*.domain`, either with `:port`, optionally
/// prefixed with `http://` (otherwise only `https` is allowed).
///
/// Matching ([`HostPattern::allows`]): the scheme must be the entry's; the port must be
/// the entry's, or with no port in the entry the scheme's default (443 or 80) only;
/// `host` matches that host exactly (IP literals compare as addresses), `*.domain`
/// matches any subdomain of `domain` at any depth but **not** `domain` itself (list both
/// to allow both). A private, loopback or link-local address is reached only by a request
/// to that address allowed by an entry naming it literally, never through a host name
/// (see `transport::wasm::outgoing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    pub scheme: &'static str,
    /// A host name, `*.domain`, or an IP literal.
    pub host: String,
    pub port: Option<u16>,
}

impl HostPattern {
    /// Parses an entry; the error says what is wrong with it.
    pub fn parse(entry: &str) -> Result<HostPattern, String> {
        let (scheme, rest) = if let Some(rest) = entry.strip_prefix("http://") {
            ("http", rest)
        } else if let Some(rest) = entry.strip_prefix("https://") {
            ("https", rest)
        } else if entry.contains("://") {
            return Err(format!("{entry:?}: only http:// and https:// are allowed"));
        } else {
            ("https", entry)
        };
        if rest.contains('/') || rest.contains('?') || rest.contains('@') {
            return Err(format!(
                "{entry:?}: name a host (and port), not a URL path or user"
            ));
        }
        let bracketed = rest.starts_with('[') && rest.ends_with(']');
        let bare_ipv6 = rest.matches(':').count() > 1 && !rest.starts_with('[');
        let (host, port) = if bracketed || bare_ipv6 {
            (rest, None) // an IPv6 address without a port
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => {
                    let port = p
                        .parse::<u16>()
                        .map_err(|_| format!("{entry:?}: {p:?} is not a port"))?;
                    (h, Some(port))
                }
                None => (rest, None),
            }
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = host.strip_prefix("*.").unwrap_or(host);
        if name.is_empty()
            || name.contains('*')
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'))
        {
            return Err(format!("{entry:?}: not a host name or IP address"));
        }
        Ok(HostPattern {
            scheme,
            host: host.to_ascii_lowercase(),
            port,
        })
    }
}

impl HostPattern {
    /// The scheme's port when the entry names none.
    pub fn port_or_default(&self) -> u16 {
        self.port
            .unwrap_or(if self.scheme == "https" { 443 } else { 80 })
    }

    /// The address, when the entry is an IP literal.
    pub fn literal_ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }

    /// Whether a request to `scheme://host:port` is allowed by this entry; `host` is
    /// lower-case, without brackets.
    pub fn allows(&self, scheme: &str, host: &str, port: u16) -> bool {
        if self.scheme != scheme || self.port_or_default() != port {
            return false;
        }
        if let Some(domain) = self.host.strip_prefix("*.") {
            return host
                .strip_suffix(domain)
                .and_then(|sub| sub.strip_suffix('.'))
                .is_some_and(|sub| !sub.is_empty() && !sub.ends_with('.'));
        }
        match (self.literal_ip(), host.parse::<IpAddr>()) {
            (Some(a), Ok(b)) => a == b,
            (Some(_), Err(_)) | (None, Ok(_)) => false,
            (None, Err(_)) => self.host == host,
        }
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(f, "{}://{host}", self.scheme)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            &Limits {
                memory_mb: Some(128),
                tool_timeout_ms: None,
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
            memory_mb: Some(256),
        };
        let d = decide(
            &asks(true, &["SET", "UNSET"], &[]),
            &Limits {
                memory_mb: Some(128),
                tool_timeout_ms: None,
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
            memory_mb: None,
        };
        let mut nothing = asks(false, &[], &[]);
        nothing.data_dir = false;
        let d = decide(
            &nothing,
            &Limits::default(),
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
    fn host_patterns() {
        let p = HostPattern::parse("api.example.com").unwrap();
        assert_eq!(
            (p.scheme, p.host.as_str(), p.port),
            ("https", "api.example.com", None)
        );
        let p = HostPattern::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            (p.scheme, p.host.as_str(), p.port),
            ("http", "127.0.0.1", Some(8080))
        );
        let p = HostPattern::parse("*.Example.com:443").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("*.example.com", Some(443)));
        let p = HostPattern::parse("[::1]:80").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("::1", Some(80)));
        let p = HostPattern::parse("[::1]").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("::1", None));
        for bad in ["ftp://x", "x.com/path", "a*.b", "", "x:port", "user@x"] {
            assert!(HostPattern::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn host_pattern_matching() {
        let p = |e: &str| HostPattern::parse(e).unwrap();
        let exact = p("api.example.com");
        assert!(exact.allows("https", "api.example.com", 443));
        assert!(!exact.allows("http", "api.example.com", 80), "https only");
        assert!(
            !exact.allows("https", "api.example.com", 8443),
            "default port only"
        );
        assert!(!exact.allows("https", "x.api.example.com", 443));
        assert!(!exact.allows("https", "api.example.com.evil.net", 443));
        let wild = p("*.example.com");
        assert!(wild.allows("https", "a.example.com", 443));
        assert!(wild.allows("https", "a.b.example.com", 443));
        assert!(
            !wild.allows("https", "example.com", 443),
            "not the bare domain"
        );
        assert!(!wild.allows("https", "badexample.com", 443));
        assert!(!wild.allows("https", ".example.com", 443));
        assert!(!wild.allows("https", "a..example.com", 443));
        let local = p("http://127.0.0.1:8080");
        assert!(local.allows("http", "127.0.0.1", 8080));
        assert!(!local.allows("http", "127.0.0.1", 80));
        assert!(!local.allows("http", "localhost", 8080));
        assert!(!local.allows("http", "::ffff:127.0.0.1", 8080));
        assert_eq!(local.literal_ip(), Some("127.0.0.1".parse().unwrap()));
        let v6 = p("http://[::1]:80");
        assert!(v6.allows("http", "::1", 80));
        assert!(v6.allows("http", "0:0:0:0:0:0:0:1", 80));
        assert_eq!(v6.to_string(), "http://[::1]:80");
        assert_eq!(p("*.Example.com").to_string(), "https://*.example.com");
    }

    #[test]
    fn granted_http_entries_are_in_the_policy() {
        let grant = Grant {
            sha256: String::new(),
            permissions: asks(false, &[], &["api.example.com", "http://127.0.0.1:8080"]),
            memory_mb: None,
        };
        let d = decide(
            &asks(false, &[], &["http://127.0.0.1:8080", "*.other.org"]),
            &Limits::default(),
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
            &Limits::default(),
            Some(&grant),
            "/d".into(),
            Path::new("/p"),
            host_env,
        );
        assert!(none.policy.http.is_empty(), "granted but not asked");
    }
}
