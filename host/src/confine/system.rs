//! What of the system every confined extension may read: the program folders whole, and
//! `/etc` without what holds secrets. Landlock only allows, so `/etc` is allowed entry
//! by entry, each secret (and each folder holding one) left out by name: file modes
//! alone do not keep them from a process run by root.

use std::path::{Path, PathBuf};

/// The program and library folders, read whole.
const PROGRAMS: &[&str] = &["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/opt"];

/// The configuration folder, read entry by entry.
const ETC: &str = "/etc";

/// What of `/etc` a confined extension never reads, relative to it; a `*` matches any
/// part of a name. Password and group hashes, sudo rules, the host's SSH keys, private
/// TLS keys, Kerberos keytabs, VPN and Wi-Fi secrets, credentials of the container
/// engines.
pub const ETC_SECRETS: &[&str] = &[
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "security/opasswd",
    "sudoers",
    "sudoers.d",
    "ssh/ssh_host_*",
    "ssl/private",
    "pki/tls/private",
    "letsencrypt",
    "krb5.keytab",
    "ipsec.secrets",
    "ipsec.d/private",
    "ppp/chap-secrets",
    "ppp/pap-secrets",
    "wpa_supplicant",
    "NetworkManager/system-connections",
    "credstore",
    "credstore.encrypted",
    "docker/key.json",
    "containers/auth.json",
    "libvirt/secrets",
    "cups/ssl",
    "openvpn",
    "wireguard",
];

/// The paths a confined extension reads of the system: the program folders, and every
/// entry of `/etc` that is not, or does not hold, one of [`ETC_SECRETS`]. A link in
/// `/etc` is allowed where it leads (the rule is on what it resolves to), unless that is
/// in `/proc` or `/sys`.
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
            Entry::Secret => {}
            Entry::HoldsSecret => {
                // Only a real folder is entered: a link to one is left out.
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    allowed_in(&path, &rel, out);
                }
            }
            Entry::Plain => {
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
    /// One of [`ETC_SECRETS`]: left out.
    Secret,
    /// A folder above one: its entries are looked at one by one.
    HoldsSecret,
    /// Anything else: allowed whole.
    Plain,
}

fn classify(rel: &str) -> Entry {
    let parts: Vec<&str> = rel.split('/').collect();
    let mut holds = false;
    for secret in ETC_SECRETS {
        let pattern: Vec<&str> = secret.split('/').collect();
        let common = parts.len().min(pattern.len());
        if !(0..common).all(|i| matches(pattern[i], parts[i])) {
            continue;
        }
        if parts.len() >= pattern.len() {
            return Entry::Secret;
        }
        holds = true;
    }
    if holds {
        Entry::HoldsSecret
    } else {
        Entry::Plain
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_the_folders_above_them_are_told_apart() {
        assert_eq!(classify("shadow"), Entry::Secret);
        assert_eq!(classify("sudoers.d/admins"), Entry::Secret);
        assert_eq!(classify("ssh"), Entry::HoldsSecret);
        assert_eq!(classify("ssh/ssh_host_ed25519_key"), Entry::Secret);
        assert_eq!(classify("ssh/ssh_host_ed25519_key.pub"), Entry::Secret);
        assert_eq!(classify("ssh/ssh_config"), Entry::Plain);
        assert_eq!(classify("pki"), Entry::HoldsSecret);
        assert_eq!(classify("pki/tls"), Entry::HoldsSecret);
        assert_eq!(classify("pki/tls/certs"), Entry::Plain);
        assert_eq!(classify("passwd"), Entry::Plain);
        assert_eq!(classify("shadowsocks"), Entry::Plain);
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*c", "ab"));
    }

    #[test]
    fn etc_is_read_without_its_secrets() {
        let paths = paths();
        assert!(paths.contains(&PathBuf::from("/usr")));
        for secret in [
            "/etc/shadow",
            "/etc/gshadow",
            "/etc/ssl/private",
            "/etc/ssl",
        ] {
            assert!(!paths.contains(&PathBuf::from(secret)), "{secret}");
        }
        if Path::new("/etc/passwd").exists() {
            assert!(paths.contains(&PathBuf::from("/etc/passwd")));
        }
        if Path::new("/etc/ssl/certs").is_dir() {
            assert!(paths.contains(&PathBuf::from("/etc/ssl/certs")));
        }
        assert!(
            paths.iter().all(|p| !p.starts_with("/proc")),
            "/etc/mtab's /proc is left out"
        );
    }
}
