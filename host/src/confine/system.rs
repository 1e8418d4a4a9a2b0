//! What of the system every confined extension may read: the program folders whole, and
//! of `/etc` only what programs need ([`ETC_ALLOWED`]). Landlock only allows, and a
//! process run by root owns the files that hold secrets (their modes do not keep it out,
//! with or without capabilities), so `/etc` is an allow-list, not the folder minus a
//! list of secrets: an entry nobody named here — a new tool's credentials — stays out.

use std::path::{Path, PathBuf};

/// The program and library folders, read whole.
const PROGRAMS: &[&str] = &["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/opt"];

/// The configuration folder, read entry by entry.
const ETC: &str = "/etc";

/// What of `/etc` a confined extension reads, relative to it (a folder whole); a `*`
/// matches any part of a name. The loader's cache and configuration; the certificates
/// and TLS configuration; the resolver's and the name service's files (users and groups
/// without their hashes, hosts, services, protocols); time zone and locale; and what
/// common interpreters and tools read at start (Debian's `python3.N` site files,
/// `alternatives`' links, terminfo, the MIME and magic databases, git's and ssh's client
/// configuration, fonts).
pub const ETC_ALLOWED: &[&str] = &[
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ld.so.preload",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ssl/cert.pem",
    "ca-certificates",
    "ca-certificates.conf",
    "pki/tls/certs",
    "pki/tls/cert.pem",
    "pki/tls/openssl.cnf",
    "pki/ca-trust/extracted",
    "crypto-policies",
    "resolv.conf",
    "hosts",
    "host.conf",
    "nsswitch.conf",
    "gai.conf",
    "services",
    "protocols",
    "networks",
    "rpc",
    "netconfig",
    "passwd",
    "group",
    "localtime",
    "timezone",
    "zoneinfo",
    "locale.alias",
    "locale.conf",
    "default/locale",
    "os-release",
    "lsb-release",
    "debian_version",
    "alternatives",
    "python3",
    "python3.*",
    "terminfo",
    "inputrc",
    "mime.types",
    "magic",
    "magic.mime",
    "gitconfig",
    "ssh/ssh_config",
    "ssh/ssh_config.d",
    "fonts",
];

/// The paths a confined extension reads of the system: the program folders, and what of
/// `/etc` is or leads to one of [`ETC_ALLOWED`]. A link in `/etc` is allowed where it
/// leads (the rule is on what it resolves to), unless that is in `/proc` or `/sys`.
pub fn paths() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = PROGRAMS.iter().map(PathBuf::from).collect();
    allowed_in(Path::new(ETC), "", &mut paths);
    paths
}

/// Adds to `out` what of `dir` (`rel` below `/etc`) may be read.
fn allowed_in(dir: &Path, rel: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue; // a name that is not UTF-8 cannot be matched: left out.
        };
        let rel = if rel.is_empty() {
            name.to_string()
        } else {
            format!("{rel}/{name}")
        };
        let path = entry.path();
        match classify(&rel) {
            Entry::Other => {}
            Entry::Leads => {
                // Only a real folder is entered: a link to one is left out.
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    allowed_in(&path, &rel, out);
                }
            }
            Entry::Allowed => {
                if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                    match std::fs::canonicalize(&path) {
                        Ok(to) if !to.starts_with("/proc") && !to.starts_with("/sys") => {
                            out.push(to)
                        }
                        Ok(_) | Err(_) => {}
                    }
                } else {
                    out.push(path);
                }
            }
        }
    }
}

/// What an entry of `/etc` is, by its path below it.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    /// One of [`ETC_ALLOWED`], or inside one: read whole.
    Allowed,
    /// A folder above one: its entries are looked at one by one.
    Leads,
    /// Anything else: left out.
    Other,
}

fn classify(rel: &str) -> Entry {
    let parts: Vec<&str> = rel.split('/').collect();
    let mut leads = false;
    for allowed in ETC_ALLOWED {
        let pattern: Vec<&str> = allowed.split('/').collect();
        let common = parts.len().min(pattern.len());
        if !(0..common).all(|i| matches(pattern[i], parts[i])) {
            continue;
        }
        if parts.len() >= pattern.len() {
            return Entry::Allowed;
        }
        leads = true;
    }
    if leads {
        Entry::Leads
    } else {
        Entry::Other
    }
}

/// `name` matches `pattern`, where a `*` matches any run of characters.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            name.len() >= head.len() + tail.len() && name.starts_with(head) && {
                let rest = &name[head.len()..];
                (0..=rest.len())
                    .filter(|&i| rest.is_char_boundary(i))
                    .any(|i| matches(tail, &rest[i..]))
            }
        }
    }
}

/// Whether `path`, an entry of `/etc`, is one a confined extension may read (for tests
/// and probes that check what a confined process could open).
pub fn etc_allows(path: &Path) -> bool {
    path.strip_prefix(ETC)
        .ok()
        .and_then(Path::to_str)
        .is_some_and(|rel| !rel.is_empty() && classify(rel) == Entry::Allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_programs_need_and_the_folders_above_it_are_told_from_the_rest() {
        assert_eq!(classify("passwd"), Entry::Allowed);
        assert_eq!(
            classify("ld.so.conf.d/x86_64-linux-gnu.conf"),
            Entry::Allowed
        );
        assert_eq!(classify("ssl"), Entry::Leads);
        assert_eq!(classify("ssl/certs"), Entry::Allowed);
        assert_eq!(classify("ssl/certs/ca-certificates.crt"), Entry::Allowed);
        assert_eq!(classify("ssl/private"), Entry::Other);
        assert_eq!(classify("ssh"), Entry::Leads);
        assert_eq!(classify("ssh/ssh_config"), Entry::Allowed);
        assert_eq!(classify("ssh/ssh_host_ed25519_key"), Entry::Other);
        assert_eq!(classify("python3.13/sitecustomize.py"), Entry::Allowed);
        assert_eq!(classify("pki/tls"), Entry::Leads);
        assert_eq!(classify("pki/tls/private"), Entry::Other);
        for left_out in [
            "shadow",
            "gshadow",
            "sudoers",
            "sudoers.d",
            "machine-id",
            "environment",
            "krb5.keytab",
            "passwd-",
            "some-new-tool",
        ] {
            assert_eq!(classify(left_out), Entry::Other, "{left_out}");
        }
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*c", "ab"));
        assert!(etc_allows(Path::new("/etc/hosts")));
        assert!(!etc_allows(Path::new("/etc/shadow")));
        assert!(!etc_allows(Path::new("/etc")));
    }

    #[test]
    fn etc_is_read_as_allowed_and_nothing_else() {
        let paths = paths();
        assert!(paths.contains(&PathBuf::from("/usr")));
        for left_out in [
            "/etc/shadow",
            "/etc/gshadow",
            "/etc/ssl/private",
            "/etc/ssl",
        ] {
            assert!(!paths.contains(&PathBuf::from(left_out)), "{left_out}");
        }
        if Path::new("/etc/passwd").exists() {
            assert!(paths.contains(&PathBuf::from("/etc/passwd")));
        }
        if Path::new("/etc/ssl/certs").is_dir() {
            assert!(paths.contains(&PathBuf::from("/etc/ssl/certs")));
        }
        for left_out in ["/etc/shadow", "/etc/sudoers", "/etc/machine-id"] {
            assert!(
                paths.iter().all(|p| !p.starts_with(left_out)),
                "{left_out} is readable"
            );
        }
        assert!(
            paths.iter().all(|p| !p.starts_with("/proc")),
            "/etc/mtab's /proc is left out"
        );
    }
}
