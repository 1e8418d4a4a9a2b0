//! Permissions in plain words, for people deciding what to grant.

use super::{HostPattern, Limit};
use crate::manifest::{Manifest, Permissions};
use crate::records::Grant;
use crate::util::terminal_text::one_line;

/// What `m` asks for, in plain words: for a component, its memory and the other limits
/// it asks above their defaults; for a classic extension, what it gets once confined.
pub fn asked_words(m: &Manifest) -> Vec<String> {
    if !m.asks_permissions() {
        let asked = |l: Limit| m.limits.caps.get(l).unwrap_or(l.confined_default());
        return confined_words(&m.permissions, asked(Limit::Memory), asked(Limit::Disk));
    }
    let mut out = in_words(&m.permissions, &raised(|l| l.asked(&m.limits.caps)));
    out.extend(header_words(m));
    out
}

/// What a remote MCP server's headers send it of this machine, in plain words: each
/// variable and file a header reads (a secret leaves the machine this way).
pub fn header_words(m: &Manifest) -> Vec<String> {
    let Some(server) = m.mcp.as_ref().filter(|s| s.url.is_some()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, template) in &server.headers {
        let Ok(parts) = crate::manifest::template(template) else {
            continue;
        };
        for part in parts {
            match part {
                crate::manifest::Part::Text(_) => {}
                crate::manifest::Part::Env(var) => out.push(format!(
                    "send it your environment variable {} (in its header {})",
                    one_line(var),
                    one_line(name)
                )),
                crate::manifest::Part::File(path) => out.push(format!(
                    "send it the contents of the file {} (in its header {})",
                    one_line(path),
                    one_line(name)
                )),
            }
        }
    }
    out
}

/// What `grant` allows the extension of manifest `m`, in plain words: for a component,
/// the memory it runs with, and the other limits in force above their defaults (what it
/// asks, at most what is granted: a component asking 32 MiB runs with 32, whatever the
/// grant); for a classic extension, what it gets while confined.
pub fn granted_words(m: &Manifest, grant: &Grant) -> Vec<String> {
    if !m.asks_permissions() {
        let in_force = |l: Limit| l.in_force_confined(&m.limits.caps, &grant.caps);
        return confined_words(
            &grant.permissions,
            in_force(Limit::Memory),
            in_force(Limit::Disk),
        );
    }
    let mut out = in_words(
        &grant.permissions,
        &raised(|l| l.in_force(&m.limits.caps, &grant.caps)),
    );
    // A remote server's grant is bound to its headers (`grants::remote_binding`).
    out.extend(header_words(m));
    out
}

/// What a confined classic extension gets of `p`, with `memory_mb` and `disk_mb`.
fn confined_words(p: &Permissions, memory_mb: u64, disk_mb: u64) -> Vec<String> {
    let mut out = permission_words(p, Reader::Confined);
    out.push(format!(
        "use up to {memory_mb} MiB of data memory (RLIMIT_DATA)"
    ));
    out.push(Limit::Disk.words(disk_mb));
    out
}

/// Whom the words are for: a component in the sandbox, or a confined classic extension.
#[derive(Clone, Copy)]
enum Reader {
    Component,
    Confined,
}

/// Permissions in plain words, one line each (names from the manifest shown with
/// [`one_line`]). For a confined extension an HTTP entry is its port: the kernel
/// filters TCP by port, not by host name, and the words say so.
fn permission_words(p: &Permissions, reader: Reader) -> Vec<String> {
    let mut out = Vec::new();
    if p.data_dir {
        out.push(match reader {
            Reader::Component => "read and write its own data directory (seen as /data)".into(),
            Reader::Confined => "read and write its own data directory (its HOME)".into(),
        });
    }
    if p.cwd.is_some() {
        out.push("read (not write) the project directory".into());
    }
    out.extend(
        p.env
            .iter()
            .map(|name| format!("read the environment variable {}", one_line(name))),
    );
    out.extend(p.http.iter().map(|entry| match reader {
        Reader::Component => format!("make HTTP requests to {}", one_line(entry)),
        Reader::Confined => match HostPattern::parse(entry) {
            Ok(pattern) => format!(
                "open TCP connections to port {} (asked for {}: the kernel enforces the \
                 port, not the host name)",
                pattern.port_or_default(),
                one_line(entry)
            ),
            Err(e) => format!("nothing for {} ({e})", one_line(entry)),
        },
    }));
    out
}

/// Memory, and each other limit whose value is above its default.
fn raised(value: impl Fn(Limit) -> u64) -> Vec<(Limit, u64)> {
    Limit::ALL
        .into_iter()
        .map(|l| (l, value(l)))
        .filter(|(l, v)| *l == Limit::Memory || *v > l.spec().default)
        .collect()
}

/// Permissions in plain words for a component, then `limits`.
pub(super) fn in_words(p: &Permissions, limits: &[(Limit, u64)]) -> Vec<String> {
    let mut out = permission_words(p, Reader::Component);
    out.extend(limits.iter().map(|(l, v)| l.words(*v)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_classic_extension_is_told_what_it_gets_confined() {
        let m: Manifest = serde_json::from_str(
            r#"{"name":"c","exec":"./c","permissions":{"cwd":"read","env":["TOKEN"],
                "http":["api.example.com","http://127.0.0.1:8766"]},"limits":{"disk_mb":512}}"#,
        )
        .unwrap();
        assert_eq!(
            asked_words(&m),
            [
                "read and write its own data directory (its HOME)",
                "read (not write) the project directory",
                "read the environment variable TOKEN",
                "open TCP connections to port 443 (asked for api.example.com: the kernel \
                 enforces the port, not the host name)",
                "open TCP connections to port 8766 (asked for http://127.0.0.1:8766: the \
                 kernel enforces the port, not the host name)",
                "use up to 1024 MiB of data memory (RLIMIT_DATA)",
                "store up to 512 MiB in its data directory",
            ]
        );
        // Nothing granted: its data dir, the default memory, the default disk quota.
        assert_eq!(
            granted_words(&m, &Grant::default()),
            [
                "read and write its own data directory (its HOME)",
                "use up to 1024 MiB of data memory (RLIMIT_DATA)",
                "store up to 256 MiB in its data directory",
            ]
        );
    }
}
