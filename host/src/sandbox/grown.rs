//! Whether an updated manifest asks for more than the one the grant was given for.

use super::words::{header_words, in_words};
use super::Limit;
use crate::manifest::{Manifest, Permissions};

/// What `new` asks for that `old` did not, in plain words (a change of transport
/// counts); empty when it asks for nothing more.
pub fn grown_since(old: &Manifest, new: &Manifest) -> Vec<String> {
    match (old.asks_permissions(), new.asks_permissions()) {
        (true, false) => {
            return vec![
                "run as a classic program with your full user permissions (it was sandboxed)"
                    .into(),
            ]
        }
        (false, true) | (false, false) => return Vec::new(),
        (true, true) => {}
    }
    let (a, b) = (&old.permissions, &new.permissions);
    let added = Permissions {
        data_dir: b.data_dir && !a.data_dir,
        cwd: b.cwd.filter(|_| a.cwd.is_none()),
        env: b
            .env
            .iter()
            .filter(|n| !a.env.contains(n))
            .cloned()
            .collect(),
        http: b
            .http
            .iter()
            .filter(|h| !a.http.contains(h))
            .cloned()
            .collect(),
    };
    let more: Vec<(Limit, u64)> = Limit::ALL
        .into_iter()
        .map(|l| (l, l.asked(&new.limits.caps)))
        .filter(|(l, v)| *v > l.asked(&old.limits.caps).max(l.spec().default))
        .collect();
    let mut grown = in_words(&added, &more);
    // What a remote server's headers newly read of this machine.
    let sent = header_words(old);
    grown.extend(header_words(new).into_iter().filter(|w| !sent.contains(w)));
    grown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_server_whose_headers_read_more_asks_for_more() {
        let remote = |headers: &str| -> Manifest {
            serde_json::from_str(&format!(
                r#"{{"name":"r","mcp":{{"url":"https://mcp.example.com/mcp","headers":{headers}}}}}"#
            ))
            .unwrap()
        };
        let old = remote(r#"{"Authorization":"Bearer ${env:TOKEN}"}"#);
        assert!(grown_since(&old, &old).is_empty());
        assert!(
            grown_since(&old, &remote(r#"{"Authorization":"Token ${env:TOKEN}"}"#)).is_empty(),
            "the same variable sent: nothing more"
        );
        assert_eq!(
            grown_since(
                &old,
                &remote(
                    r#"{"Authorization":"Bearer ${env:TOKEN}","X-Key":"${file:~/.ssh/id_ed25519}"}"#
                )
            ),
            vec![
                "send it the contents of the file ~/.ssh/id_ed25519 (in its header X-Key)"
                    .to_string()
            ]
        );
    }

    fn component(limits: &str) -> Manifest {
        serde_json::from_str(&format!(
            r#"{{"name":"g","wasm":"g.wasm","limits":{limits}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_limit_asked_higher_is_growth_and_one_asked_lower_is_not() {
        let old = component(r#"{"disk_mb":512}"#);
        assert!(grown_since(&old, &component(r#"{"disk_mb":300}"#)).is_empty());
        assert!(grown_since(&old, &component(r#"{"resources":10}"#)).is_empty());
        assert_eq!(
            grown_since(&old, &component(r#"{"disk_mb":1024,"http_requests":32}"#)),
            vec![
                "store up to 1024 MiB in its data directory".to_string(),
                "make up to 32 HTTP requests at once".to_string(),
            ]
        );
        assert_eq!(
            grown_since(&old, &component(r#"{"disk_mb":512,"memory_mb":128}"#)),
            vec!["use up to 128 MiB of memory".to_string()]
        );
    }
}
