//! Where outgoing HTTP may go: the resolve-then-check rule behind `wasi:http`.
//!
//! A request is checked by [`check`], which
//!
//! 1. matches the request's scheme, host and port against the allow-list
//!    ([`HostPattern::allows`]); no entry → `HttpRequestDenied`;
//! 2. resolves the host **once** (`tokio::net::lookup_host`; an IP literal is not looked
//!    up) and drops every address in an IANA special-purpose range that is not globally
//!    reachable, multicast or reserved, directly or embedded in an IPv6 address
//!    ([`restricted`]); nothing left → `DestinationIpProhibited`. Such an address is
//!    reached only by a request to the address itself, allowed by an entry that names it
//!    literally (`http://127.0.0.1:8080`): a host name never leads to one.
//!
//! The transport then connects to exactly the checked addresses (no second lookup
//! between the check and the connect, so DNS rebinding cannot swap the address).

use super::HostPattern;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
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
        // Plain HTTP to what is granted for HTTPS: the pattern had no scheme.
        let https_only = !tls && allow.iter().any(|p| p.allows("https", &host, port));
        let why = match https_only {
            true => format!(
                "; it is granted for HTTPS only (a pattern without a scheme): grant \
                 http://{host}:{port} for plain HTTP"
            ),
            false => String::new(),
        };
        return Err(deny(
            format!(
                "{scheme} port {port} of this host is not in the allow-list ({}){why}",
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
    let (addrs, skipped) = resolve_public(&host, port, scheme, timeout)
        .await
        .map_err(|(why, code)| deny(why, code))?;
    Ok(Target {
        host,
        tls,
        addrs,
        skipped,
    })
}

/// The addresses `host` resolves to that a request may reach (`port` of `scheme`), and
/// those skipped with why; none reachable is why it is refused, with the error code.
async fn resolve_public(
    host: &str,
    port: u16,
    scheme: &str,
    timeout: Duration,
) -> Result<(Vec<SocketAddr>, Vec<(SocketAddr, &'static str)>), (String, Error)> {
    let resolved: Vec<SocketAddr> =
        match tokio::time::timeout(timeout, tokio::net::lookup_host((host, port))).await {
            Err(_) => return Err(("the DNS lookup timed out".into(), Error::DnsTimeout)),
            Ok(Err(e)) => {
                return Err((
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
        return Err((
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
    Ok((addrs, skipped))
}

/// IPv4 ranges refused unless named literally: the IANA IPv4 Special-Purpose Address
/// Registry's entries that are not globally reachable, plus multicast, the reserved
/// 240/4 and the deprecated 6to4 relay anycast. First match wins, so a range comes
/// before any wider one that holds it.
#[rustfmt::skip]
const V4_RANGES: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "this network, 0.0.0.0/8"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private, 10.0.0.0/8"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "shared address space, 100.64.0.0/10"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback, 127.0.0.0/8"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local, 169.254.0.0/16"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private, 172.16.0.0/12"),
    // The registry marks 192.0.0.9/32 and 192.0.0.10/32 (PCP and TURN anycast) globally
    // reachable; neither is an HTTP server, so the whole /24 is refused.
    (Ipv4Addr::new(192, 0, 0, 0), 24, "IETF protocol assignments, 192.0.0.0/24"),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "documentation (TEST-NET-1), 192.0.2.0/24"),
    (Ipv4Addr::new(192, 88, 99, 0), 24, "6to4 relay anycast (deprecated), 192.88.99.0/24"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private, 192.168.0.0/16"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking, 198.18.0.0/15"),
    (Ipv4Addr::new(198, 51, 100, 0), 24, "documentation (TEST-NET-2), 198.51.100.0/24"),
    (Ipv4Addr::new(203, 0, 113, 0), 24, "documentation (TEST-NET-3), 203.0.113.0/24"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast, 224.0.0.0/4"),
    (Ipv4Addr::new(255, 255, 255, 255), 32, "limited broadcast, 255.255.255.255/32"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved, 240.0.0.0/4"),
];

/// IPv6 ranges refused unless named literally: the IANA IPv6 Special-Purpose Address
/// Registry's entries that are not globally reachable, plus the deprecated site-local
/// and multicast. First match wins, so a range comes before any wider one that holds it.
#[rustfmt::skip]
const V6_RANGES: &[(Ipv6Addr, u8, &str)] = &[
    (Ipv6Addr::UNSPECIFIED, 128, "unspecified, ::/128"),
    (Ipv6Addr::LOCALHOST, 128, "loopback, ::1/128"),
    (Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48, "local-use NAT64, 64:ff9b:1::/48"),
    (Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64, "discard-only, 100::/64"),
    // Teredo is refused whole rather than decoded. It is reached over UDP, through a
    // relay or a Teredo interface on this machine, by way of the two IPv4 addresses it
    // embeds (server, bits 32..63; client, the inverted low 32 bits), so both would need
    // the check; and Teredo is all but unused today, so refusing it loses next to nothing.
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, "Teredo, 2001::/32"),
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, "documentation, 2001:db8::/32"),
    // The registry marks a few blocks in here globally reachable (PCP and TURN anycast,
    // AMT, AS112, ORCHIDv2, drone remote ID); none is an HTTP server, so the whole /23
    // is refused.
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23, "IETF protocol assignments, 2001::/23"),
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, "documentation, 3fff::/20"),
    (Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0), 16, "SRv6 SIDs, 5f00::/16"),
    (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, "unique local, fc00::/7"),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local, fe80::/10"),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "site-local (deprecated), fec0::/10"),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast, ff00::/8"),
];

/// IPv6 forms that embed an IPv4 address, checked after [`V6_RANGES`]: (network, prefix
/// length, how far the IPv4 address is shifted up from the low bits). The address is
/// refused when the IPv4 address it embeds is.
const V6_EMBEDDING: &[(Ipv6Addr, u8, u32)] = &[
    // IPv4-mapped, ::ffff:a.b.c.d.
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96, 0),
    // IPv4-compatible (deprecated), ::a.b.c.d (:: and ::1 are matched above).
    (Ipv6Addr::UNSPECIFIED, 96, 0),
    // NAT64 well-known prefix, 64:ff9b::a.b.c.d.
    (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96, 0),
    // 6to4, 2002:aabb:ccdd::/48 for a.b.c.d (bits 16..47).
    (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, 80),
];

/// Whether the top `len` bits of the `width`-bit numbers `addr` and `net` agree.
fn in_prefix(addr: u128, net: u128, len: u8, width: u32) -> bool {
    (addr ^ net)
        .checked_shr(width - u32::from(len))
        .unwrap_or(0)
        == 0
}

/// Why `ip` is off limits unless named literally (an IANA special-purpose range that is
/// not globally reachable, multicast, reserved, or an IPv6 form embedding such an IPv4
/// address); `None` for an ordinary global unicast address.
pub(crate) fn restricted(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => restricted_v4(v4),
        IpAddr::V6(v6) => {
            let bits = v6.to_bits();
            if let Some(&(_, _, why)) = V6_RANGES
                .iter()
                .find(|(net, len, _)| in_prefix(bits, net.to_bits(), *len, 128))
            {
                return Some(why);
            }
            V6_EMBEDDING
                .iter()
                .find(|(net, len, _)| in_prefix(bits, net.to_bits(), *len, 128))
                .and_then(|&(_, _, shift)| {
                    restricted_v4(Ipv4Addr::from_bits((bits >> shift) as u32))
                })
        }
    }
}

fn restricted_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let bits = u128::from(ip.to_bits());
    V4_RANGES
        .iter()
        .find(|(net, len, _)| in_prefix(bits, u128::from(net.to_bits()), *len, 32))
        .map(|&(_, _, why)| why)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::future::Future;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// The last address of `net/len`, `width` bits wide.
    fn last(net: u128, len: u8, width: u32) -> u128 {
        net | (u128::MAX >> (128 - width))
            .checked_shr(u32::from(len))
            .unwrap_or(0)
    }

    #[test]
    fn range_tables_are_well_formed() {
        for &(net, len, why) in V4_RANGES {
            let net = u128::from(net.to_bits());
            assert!(
                len <= 32 && last(net, len, 32) - net == (1u128 << (32 - len)) - 1,
                "{why}"
            );
            assert!(why.ends_with(&format!("/{len}")), "{why}");
        }
        for &(net, len, why) in V6_RANGES {
            let net = net.to_bits();
            assert!(len <= 128 && net & (last(0, len, 128)) == 0, "{why}");
            assert!(why.ends_with(&format!("/{len}")), "{why}");
        }
    }

    #[test]
    fn restricted_ranges() {
        // Every range's first and last address is refused; the addresses just outside it
        // are not refused for its reason (they are allowed or in a neighbouring range).
        for &(net, len, why) in V4_RANGES {
            let first = net.to_bits();
            let end = last(u128::from(first), len, 32) as u32;
            for a in [first, end] {
                let a = IpAddr::V4(Ipv4Addr::from_bits(a));
                assert!(restricted(a).is_some(), "{a} must be refused ({why})");
            }
            for a in [first.checked_sub(1), end.checked_add(1)]
                .into_iter()
                .flatten()
            {
                let a = IpAddr::V4(Ipv4Addr::from_bits(a));
                assert_ne!(restricted(a), Some(why), "{a} is outside {why}");
            }
            // And so are its IPv4-mapped, IPv4-compatible, NAT64 and 6to4 forms.
            for a in [first, end] {
                for &(prefix, _, shift) in V6_EMBEDDING {
                    let v6 = Ipv6Addr::from_bits(prefix.to_bits() | u128::from(a) << shift);
                    assert!(restricted(IpAddr::V6(v6)).is_some(), "{v6} must be refused");
                }
            }
        }
        for &(net, len, why) in V6_RANGES {
            let first = net.to_bits();
            let end = last(first, len, 128);
            for a in [first, end] {
                let a = IpAddr::V6(Ipv6Addr::from_bits(a));
                assert!(restricted(a).is_some(), "{a} must be refused ({why})");
            }
            for a in [first.checked_sub(1), end.checked_add(1)]
                .into_iter()
                .flatten()
            {
                let a = IpAddr::V6(Ipv6Addr::from_bits(a));
                assert_ne!(restricted(a), Some(why), "{a} is outside {why}");
            }
        }

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
            "198.18.0.1",
            "198.19.255.255",
            "240.0.0.1",
            "224.0.0.1",
            "239.255.255.255",
            "192.0.0.9", // globally reachable per IANA, refused with its /24
            "192.0.2.1",
            "192.88.99.1",
            "198.51.100.1",
            "203.0.113.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "2001:db8::1",
            "3fff::1",
            "5f00::1",
            "2001:2::1",
            "64:ff9b:1::1",
            "64:ff9b:1:ffff::808:808",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "64:ff9b::a00:1",
            "2002:0a00:0001::1",
            "2002:7f00:1::",
            "2002:c058:6301::1", // 6to4 of the 6to4 relay anycast 192.88.99.1
            // Teredo is refused whole, even with a public server (8.8.8.8) and client
            // (1.1.1.1, stored inverted).
            "2001:0:808:808::fefe:fefe",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        ] {
            assert!(restricted(ip(r)).is_some(), "{r} must be restricted");
        }
        for ok in [
            "8.8.8.8",
            "1.1.1.1",
            "198.20.0.1",
            "198.17.255.255",
            "223.255.255.255",
            "172.15.0.1",
            "172.32.0.1",
            "100.63.0.1",
            "100.128.0.1",
            "192.169.0.1",
            "192.31.196.1", // AS112, globally reachable
            "192.52.193.1", // AMT, globally reachable
            "192.175.48.1", // AS112 direct delegation, globally reachable
            "2606:4700::1111",
            "2620:4f:8000::1",
            "2001:200::1",
            "::ffff:8.8.8.8",
            "::8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::1",
        ] {
            assert_eq!(restricted(ip(ok)), None, "{ok} is public");
        }
        assert_eq!(
            restricted(ip("2001:0:808:808::fefe:fefe")),
            Some("Teredo, 2001::/32")
        );
        assert_eq!(restricted(ip("2002:a00:1::1")), Some("private, 10.0.0.0/8"));
        assert_eq!(restricted(ip("127.0.0.1")), Some("loopback, 127.0.0.0/8"));
        assert_eq!(
            restricted(ip("255.255.255.255")),
            Some("limited broadcast, 255.255.255.255/32")
        );
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
