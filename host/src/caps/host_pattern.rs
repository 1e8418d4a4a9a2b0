//! `permissions.http` entries: which scheme, host and port a request may go to.

use super::SandboxError;
use std::net::IpAddr;

/// One `permissions.http` entry: `host`, `*.domain`, either with `:port`, optionally
/// prefixed with `http://` (otherwise only `https` is allowed).
///
/// Matching ([`HostPattern::allows`]): the scheme must be the entry's; the port must be
/// the entry's, or with no port in the entry the scheme's default (443 or 80) only;
/// `host` matches that host exactly (IP literals compare as addresses), `*.domain`
/// matches any subdomain of `domain` at any depth but **not** `domain` itself (list both
/// to allow both). A private, loopback or link-local address is reached only by a request
/// to that address allowed by an entry naming it literally, never through a host name
/// (see `sandbox::network`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    pub scheme: &'static str,
    /// A host name, `*.domain`, or an IP literal.
    pub host: String,
    pub port: Option<u16>,
}

impl HostPattern {
    /// Parses an entry; the error says what is wrong with it.
    pub fn parse(entry: &str) -> Result<HostPattern, SandboxError> {
        let bad = |problem: String| SandboxError::HostPattern {
            entry: entry.into(),
            problem,
        };
        let (scheme, rest) = if let Some(rest) = entry.strip_prefix("http://") {
            ("http", rest)
        } else if let Some(rest) = entry.strip_prefix("https://") {
            ("https", rest)
        } else if entry.contains("://") {
            return Err(bad("only http:// and https:// are allowed".into()));
        } else {
            ("https", entry)
        };
        if rest.contains('/') || rest.contains('?') || rest.contains('@') {
            return Err(bad("name a host (and port), not a URL path or user".into()));
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
                        .map_err(|_| bad(format!("{p:?} is not a port")))?;
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
            return Err(bad("not a host name or IP address".into()));
        }
        let wildcard = host.starts_with("*.");
        let numeric = name
            .rsplit('.')
            .next()
            .is_some_and(|last| last.chars().all(|c| c.is_ascii_digit()));
        if wildcard && (name.contains(':') || numeric) {
            return Err(bad(
                "`*.` is for the subdomains of a domain name, not for IP addresses".into(),
            ));
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
            // A wildcard names domains: an IP literal is never one of its subdomains.
            if host.parse::<IpAddr>().is_ok() {
                return false;
            }
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
        for bad in [
            "ftp://x",
            "x.com/path",
            "a*.b",
            "",
            "x:port",
            "user@x",
            "*.0.0.1",
            "*.1",
            "http://*.0.1:8080",
            "*.[::1]",
            "*.ffff:7f00:1",
        ] {
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
        // An IP literal is never a subdomain, whatever the pattern's letters.
        let pattern = HostPattern {
            scheme: "https",
            host: "*.0.0.1".into(),
            port: None,
        };
        assert!(!pattern.allows("https", "127.0.0.1", 443));
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
}
