//! Where outgoing HTTP may go: the resolve-then-check rule behind `wasi:http`.
//!
//! A request is checked by [`check`], which
//!
//! 1. matches the request's scheme, host and port against the allow-list
//!    ([`HostPattern::allows`]); no entry → `HttpRequestDenied`;
//! 2. resolves the host **once** (`tokio::net::lookup_host`; an IP literal is not looked
//!    up) and drops every private, loopback, link-local, shared or unspecified address
//!    ([`restricted`]); nothing left → `DestinationIpProhibited`. Such an address is
//!    reached only by a request to the address itself, allowed by an entry that names it
//!    literally (`http://127.0.0.1:8080`): a host name never leads to one.
//!
//! The transport then connects to exactly the checked addresses (no second lookup
//! between the check and the connect, so DNS rebinding cannot swap the address).

use super::HostPattern;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;
use wasmtime_wasi_http::Error;

/// Connect (and DNS) timeout unless the guest's request options say otherwise.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a request may go: the checked addresses, nothing else.
#[derive(Debug)]
pub(crate) struct Target {
    /// The host as requested: lower-case, without brackets.
    pub host: String,
    /// `https`: TLS with the host's name.
    pub tls: bool,
    /// The addresses that passed the checks: the only ones to connect to.
    pub addrs: Vec<SocketAddr>,
    /// Addresses the name resolved to that were refused.
    pub skipped: Vec<(SocketAddr, &'static str)>,
}

/// A refused request: the host, why (for the log) and the guest's error code.
#[derive(Debug)]
pub(crate) struct Denied {
    pub host: String,
    pub why: String,
    pub code: Error,
}

/// Decides where the request to `uri` may connect, resolving its host once.
pub(crate) async fn check(
    allow: &[HostPattern],
    uri: &http::Uri,
    timeout: Duration,
) -> Result<Target, Denied> {
    let host = uri
        .host()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let deny = |why: String, code: Error| Denied {
        host: if host.is_empty() {
            "(no host)".into()
        } else {
            host.clone()
        },
        why,
        code,
    };
    let tls = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        other => {
            return Err(deny(
                format!("scheme {:?} is neither http nor https", other.unwrap_or("")),
                Error::HttpProtocolError,
            ))
        }
    };
    if host.is_empty() {
        return Err(deny(
            "the request names no host".into(),
            Error::HttpRequestUriInvalid,
        ));
    }
    let scheme = if tls { "https" } else { "http" };
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    if allow.is_empty() {
        return Err(deny(
            "no http permission is in force (none asked, or none granted)".into(),
            Error::HttpRequestDenied,
        ));
    }
    if !allow.iter().any(|p| p.allows(scheme, &host, port)) {
        let listed: Vec<String> = allow.iter().map(ToString::to_string).collect();
        return Err(deny(
            format!(
                "{scheme} port {port} of this host is not in the allow-list ({})",
                listed.join(", ")
            ),
            Error::HttpRequestDenied,
        ));
    }
    // An IP literal that an entry matched is named literally by that entry.
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Target {
            host,
            tls,
            addrs: vec![SocketAddr::new(ip, port)],
            skipped: Vec::new(),
        });
    }
    let resolved: Vec<SocketAddr> =
        match tokio::time::timeout(timeout, tokio::net::lookup_host((host.as_str(), port))).await {
            Err(_) => return Err(deny("the DNS lookup timed out".into(), Error::DnsTimeout)),
            Ok(Err(e)) => {
                return Err(deny(
                    format!("the DNS lookup failed: {e}"),
                    Error::DnsError {
                        rcode: Some(e.to_string()),
                        info_code: None,
                    },
                ))
            }
            Ok(Ok(addrs)) => addrs.collect(),
        };
    let mut addrs = Vec::new();
    let mut skipped = Vec::new();
    for addr in resolved {
        match restricted(addr.ip()) {
            Some(why) => skipped.push((addr, why)),
            None => addrs.push(addr),
        }
    }
    if addrs.is_empty() {
        let what: Vec<String> = skipped
            .iter()
            .map(|(a, why)| format!("{} ({why})", a.ip()))
            .collect();
        return Err(deny(
            if what.is_empty() {
                "the DNS lookup found no address".into()
            } else {
                format!(
                    "it resolves to {}: such an address is reached only by a request to \
                     the address itself, allowed by an entry naming it ({scheme}://{}:{port})",
                    what.join(", "),
                    match skipped[0].0 {
                        SocketAddr::V4(a) => a.ip().to_string(),
                        SocketAddr::V6(a) => format!("[{}]", a.ip()),
                    }
                )
            },
            Error::DestinationIpProhibited,
        ));
    }
    Ok(Target {
        host,
        tls,
        addrs,
        skipped,
    })
}

/// Why `ip` is off limits unless named literally: private, loopback, link-local, shared,
/// unspecified (and multicast/broadcast); `None` for an ordinary public address.
pub(crate) fn restricted(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => restricted_v4(v4),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            if v6.is_unspecified() {
                Some("unspecified")
            } else if v6.is_loopback() {
                Some("loopback")
            } else if let Some(v4) = v6.to_ipv4_mapped() {
                restricted_v4(v4)
            } else if s[..6] == [0, 0, 0, 0, 0, 0] || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                // IPv4-compatible (deprecated) and NAT64 addresses embed an IPv4 address.
                restricted_v4(Ipv4Addr::new(
                    (s[6] >> 8) as u8,
                    s[6] as u8,
                    (s[7] >> 8) as u8,
                    s[7] as u8,
                ))
            } else if s[0] & 0xfe00 == 0xfc00 {
                Some("unique local, fc00::/7")
            } else if s[0] & 0xffc0 == 0xfe80 {
                Some("link-local, fe80::/10")
            } else if v6.is_multicast() {
                Some("multicast")
            } else {
                None
            }
        }
    }
}

fn restricted_v4(ip: Ipv4Addr) -> Option<&'static str> {
    match ip.octets() {
        [0, ..] => Some("this network, 0.0.0.0/8"),
        [127, ..] => Some("loopback"),
        [10, ..] => Some("private, 10.0.0.0/8"),
        [172, b, ..] if (16..=31).contains(&b) => Some("private, 172.16.0.0/12"),
        [192, 168, ..] => Some("private, 192.168.0.0/16"),
        [169, 254, ..] => Some("link-local, 169.254.0.0/16"),
        [100, b, ..] if (64..=127).contains(&b) => Some("shared address space, 100.64.0.0/10"),
        _ if ip.is_multicast() || ip.is_broadcast() => Some("multicast or broadcast"),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::future::Future;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn restricted_ranges() {
        for r in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
        ] {
            assert!(restricted(ip(r)).is_some(), "{r} must be restricted");
        }
        for ok in [
            "8.8.8.8",
            "172.15.0.1",
            "172.32.0.1",
            "100.63.0.1",
            "100.128.0.1",
            "192.169.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(restricted(ip(ok)), None, "{ok} is public");
        }
    }

    pub(crate) fn patterns(entries: &[&str]) -> Vec<HostPattern> {
        entries
            .iter()
            .map(|e| HostPattern::parse(e).unwrap())
            .collect()
    }

    fn uri(s: &str) -> http::Uri {
        s.parse().unwrap()
    }

    pub(crate) fn run<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn literal_addresses_pass_without_dns_and_others_are_denied() {
        let allow = patterns(&["http://127.0.0.1:8080", "http://[::1]:8080"]);
        let t = run(check(
            &allow,
            &uri("http://127.0.0.1:8080/x"),
            CONNECT_TIMEOUT,
        ))
        .unwrap();
        assert_eq!(t.addrs, vec!["127.0.0.1:8080".parse().unwrap()]);
        let t = run(check(&allow, &uri("http://[::1]:8080/"), CONNECT_TIMEOUT)).unwrap();
        assert_eq!(t.addrs, vec!["[::1]:8080".parse().unwrap()]);
        for denied in [
            "http://127.0.0.1:8081/",
            "https://127.0.0.1:8080/",
            "http://127.0.0.2:8080/",
            "http://[::ffff:127.0.0.1]:8080/",
            "http://example.com/",
        ] {
            let d = run(check(&allow, &uri(denied), CONNECT_TIMEOUT)).unwrap_err();
            assert!(
                matches!(d.code, Error::HttpRequestDenied),
                "{denied}: {d:?}"
            );
        }
        let d = run(check(&[], &uri("https://example.com/"), CONNECT_TIMEOUT)).unwrap_err();
        assert_eq!(d.host, "example.com");
        assert!(d.why.contains("no http permission"), "{d:?}");
    }

    #[test]
    fn a_listed_name_resolving_to_loopback_is_refused_even_if_the_address_is_listed() {
        let d = run(check(
            &patterns(&["http://localhost:8080"]),
            &uri("http://localhost:8080/"),
            CONNECT_TIMEOUT,
        ))
        .unwrap_err();
        assert!(matches!(d.code, Error::DestinationIpProhibited), "{d:?}");
        assert!(d.why.contains("loopback"), "{d:?}");
        // Listing the address allows requests to the address, not to names for it.
        let d = run(check(
            &patterns(&[
                "http://localhost:8080",
                "http://127.0.0.1:8080",
                "http://[::1]:8080",
            ]),
            &uri("http://localhost:8080/"),
            CONNECT_TIMEOUT,
        ))
        .unwrap_err();
        assert!(matches!(d.code, Error::DestinationIpProhibited), "{d:?}");
    }
}
