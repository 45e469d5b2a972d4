//! SSRF guard for webhook URLs: a URL may only reach public addresses. It is checked when a
//! subscription is saved and again on every connection, through a DNS resolver that refuses
//! names resolving to anything non-public, so a name re-pointed after registration (DNS
//! rebinding) cannot reach the VPC, the metadata service or loopback.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;
use url::{Host, Url};

/// Longest accepted URL.
pub const MAX_URL_LEN: usize = 2048;
/// How long a registration-time lookup may take.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// What the guard lets through besides public https.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UrlPolicy {
    /// Local mode only, by explicit configuration: `http` and loopback addresses
    /// (127.0.0.0/8, `::1` and their IPv4-mapped form). Every other non-public range stays
    /// refused.
    pub allow_loopback: bool,
}

impl UrlPolicy {
    /// Whether a connection to `ip` is allowed.
    pub fn allows(self, ip: IpAddr) -> bool {
        is_public(ip) || (self.allow_loopback && is_loopback(ip))
    }
}

/// Whether `ip` is a public unicast address: not private, loopback, link-local, CGNAT,
/// multicast, documentation, benchmarking, reserved or unspecified, also when written as an
/// IPv4-mapped, IPv4-compatible, NAT64 or 6to4 IPv6 address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = a == 0 // "this network"
        || a == 10 // private
        || a == 127 // loopback
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64.0.0/10
        || (a == 169 && b == 254) // link-local, cloud metadata
        || (a == 172 && (16..32).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation TEST-NET-1
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168) // private
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // documentation TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // documentation TEST-NET-3
        || a >= 224; // multicast, reserved, broadcast
    !refused
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    // Only global unicast (2000::/3) is public: this refuses ::, ::1, fc00::/7 (unique
    // local), fe80::/10 (link-local), ff00::/8 (multicast), 64:ff9b:1::/48 and the rest.
    if s[0] & 0xe000 != 0x2000 {
        return false;
    }
    // 2001::/23 IETF assignments (Teredo, benchmarking, ...) and 2001:db8::/32 documentation
    let ietf = s[0] == 0x2001 && (s[1] < 0x0200 || s[1] == 0x0db8);
    // 3fff::/20 documentation
    let documentation = s[0] == 0x3fff && s[1] < 0x1000;
    let refused = ietf || documentation;
    !refused
}

/// The IPv4 address an IPv6 address stands for: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) or 6to4 (`2002:aabb:ccdd::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = || Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..5] == [0; 5] && s[5] == 0xffff {
        return Some(tail());
    }
    if s[..6] == [0; 6] && !(s[6] == 0 && s[7] <= 1) {
        return Some(tail());
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4] {
        return Some(tail());
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Parses and checks a webhook URL without network access: absolute, `https` (or `http`
/// when loopback is allowed), no credentials, a host, and a literal IP address only when
/// the policy allows it. Names are checked by [`check_resolved`] and at connect time.
pub fn parse(raw: &str, policy: UrlPolicy) -> Result<Url, String> {
    if raw.len() > MAX_URL_LEN {
        return Err(format!("url must be at most {MAX_URL_LEN} characters"));
    }
    let url = Url::parse(raw).map_err(|e| format!("url is not a valid absolute URL ({e})"))?;
    match url.scheme() {
        "https" => {}
        "http" if policy.allow_loopback => {}
        _ => return Err("url must use https".into()),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("url must not contain credentials".into());
    }
    match url.host() {
        None => return Err("url must name a host".into()),
        Some(Host::Ipv4(v4)) => check_ip(IpAddr::V4(v4), policy)?,
        Some(Host::Ipv6(v6)) => check_ip(IpAddr::V6(v6), policy)?,
        Some(Host::Domain(_)) => {}
    }
    Ok(url)
}

fn check_ip(ip: IpAddr, policy: UrlPolicy) -> Result<(), String> {
    if policy.allows(ip) {
        Ok(())
    } else {
        Err(format!(
            "url must point to a public address; {ip} is private, loopback, link-local or reserved"
        ))
    }
}

/// Resolves the URL's host (when it is a name) and checks every address it resolves to.
pub async fn check_resolved(url: &Url, policy: UrlPolicy) -> Result<(), String> {
    let Some(Host::Domain(name)) = url.host() else {
        return Ok(());
    };
    let addrs = tokio::time::timeout(LOOKUP_TIMEOUT, resolve(name, policy))
        .await
        .map_err(|_| {
            tracing::info!(host = %name, "webhook url host did not resolve in time");
            UNRESOLVED.to_string()
        })?;
    addrs.map(|_| ())
}

/// The one answer for a host name the guard refuses, whatever the reason (no address, a
/// slow lookup, a private address): saying which, or which address, would make the API a
/// DNS oracle for the network it runs in. The detail goes to the logs only.
pub const UNRESOLVED: &str =
    "url host must resolve, in time, to public addresses only (private, loopback, link-local and reserved addresses are refused)";

/// Looks `name` up; every address must be allowed (one bad address refuses the name).
async fn resolve(name: &str, policy: UrlPolicy) -> Result<Vec<SocketAddr>, String> {
    let refused = |why: String| {
        tracing::info!(host = %name, %why, "webhook url host refused");
        UNRESOLVED.to_string()
    };
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name, 0))
        .await
        .map_err(|e| refused(format!("lookup failed: {e}")))?
        .collect();
    if addrs.is_empty() {
        return Err(refused("no address".into()));
    }
    if let Some(bad) = addrs.iter().find(|a| !policy.allows(a.ip())) {
        return Err(refused(format!("resolves to {}", bad.ip())));
    }
    Ok(addrs)
}

/// The receiver an HTTPS subscription's `url` names, for counting subscriptions per
/// receiver: its origin (scheme, host and port, the scheme's default port made explicit),
/// since one host serves every path, query string and fragment a subscriber could vary at
/// will. A URL that does not parse as HTTP(S) is its own endpoint.
pub fn endpoint(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {
            let host = u.host_str().unwrap_or_default();
            let port = u.port_or_known_default().unwrap_or_default();
            format!("{}://{}:{port}", u.scheme(), host.to_ascii_lowercase())
        }
        _ => url.to_string(),
    }
}

/// The resolver of the delivery client: connections only ever go to addresses the guard
/// allowed, looked up at connect time.
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver(pub UrlPolicy);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0;
        let name = name.as_str().to_string();
        Box::pin(async move {
            let addrs = resolve(&name, policy).await?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: UrlPolicy = UrlPolicy {
        allow_loopback: false,
    };
    const LOCAL: UrlPolicy = UrlPolicy {
        allow_loopback: true,
    };

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_endpoint_is_a_urls_origin() {
        for (a, b) in [
            ("https://h.example/hook?x=1", "https://h.example/hook"),
            ("https://H.example:443/hook#f", "https://h.example/hook"),
            ("https://h.example/hook?", "https://h.example/hook"),
            // one host serves every path
            ("https://h.example/a", "https://h.example/b/c"),
            ("http://h.example:80/a", "http://h.example/z"),
        ] {
            assert_eq!(endpoint(a), endpoint(b), "{a}");
        }
        assert_eq!(endpoint("https://h.example/a"), "https://h.example:443");
        assert_ne!(
            endpoint("https://h.example:8443/a"),
            endpoint("https://h.example/a")
        );
        assert_ne!(
            endpoint("http://h.example/a"),
            endpoint("https://h.example/a")
        );
    }

    #[test]
    fn non_public_addresses_are_refused() {
        for s in [
            "0.0.0.0",
            "10.1.2.3",
            "127.0.0.1",
            "127.255.0.9",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.1.1.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "3fff::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
            "64:ff9b:1::1",
        ] {
            assert!(!is_public(ip(s)), "{s} must be refused");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for s in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.215.14",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.0.1",
            "172.32.0.1",
            "198.20.0.1",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(is_public(ip(s)), "{s} must pass");
        }
    }

    #[test]
    fn loopback_only_relaxes_loopback() {
        for s in ["127.0.0.1", "::1", "::ffff:127.0.0.1"] {
            assert!(LOCAL.allows(ip(s)) && !STRICT.allows(ip(s)), "{s}");
        }
        for s in [
            "169.254.169.254",
            "10.0.0.1",
            "::ffff:169.254.169.254",
            "fe80::1",
        ] {
            assert!(!LOCAL.allows(ip(s)), "{s}");
        }
    }

    #[test]
    fn urls_are_parsed_and_checked() {
        assert!(parse("https://hooks.example.com/catalog?x=1", STRICT).is_ok());
        assert!(parse("https://93.184.215.14/hook", STRICT).is_ok());
        assert_eq!(
            parse("http://hooks.example.com/", STRICT).unwrap_err(),
            "url must use https"
        );
        assert_eq!(
            parse("ftp://example.com/", LOCAL).unwrap_err(),
            "url must use https"
        );
        assert!(parse("hooks.example.com/x", STRICT)
            .unwrap_err()
            .starts_with("url is not a valid"));
        assert_eq!(
            parse("https://u:p@example.com/", STRICT).unwrap_err(),
            "url must not contain credentials"
        );
        for bad in [
            "https://169.254.169.254/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:a9fe:a9fe]/latest",
            "https://127.1/",
            "https://2130706433/",
            "https://0x7f.0.0.1/",
            "https://[fe80::1]/",
            "https://10.0.0.1:8443/",
        ] {
            let err = parse(bad, STRICT).unwrap_err();
            assert!(
                err.starts_with("url must point to a public address"),
                "{bad}: {err}"
            );
        }
        assert!(parse("http://127.0.0.1:9999/hook", LOCAL).is_ok());
        assert!(parse("http://[::ffff:127.0.0.1]/", LOCAL).is_ok());
        assert!(parse("http://169.254.169.254/", LOCAL).is_err());
        assert!(parse(
            &format!("https://e.com/{}", "a".repeat(MAX_URL_LEN)),
            STRICT
        )
        .is_err());
    }

    #[tokio::test]
    async fn names_resolving_to_private_addresses_are_refused() {
        let url = parse("https://localhost/hook", STRICT).unwrap();
        // one fixed text: neither the address nor whether the name exists
        assert_eq!(check_resolved(&url, STRICT).await.unwrap_err(), UNRESOLVED);
        let url = parse("http://localhost:9/hook", LOCAL).unwrap();
        assert_eq!(check_resolved(&url, LOCAL).await, Ok(()));
        let url = parse("https://name.invalid/hook", STRICT).unwrap();
        assert_eq!(check_resolved(&url, STRICT).await.unwrap_err(), UNRESOLVED);
    }

    #[tokio::test]
    async fn the_connect_time_resolver_refuses_private_names() {
        use reqwest::dns::Resolve;
        let strict = GuardedResolver(STRICT);
        let err = match strict.resolve("localhost".parse().unwrap()).await {
            Err(e) => e.to_string(),
            Ok(_) => panic!("localhost must not resolve for delivery"),
        };
        assert!(
            err.contains(UNRESOLVED) && !err.contains("127.0.0.1"),
            "{err}"
        );
        let local = GuardedResolver(LOCAL);
        let addrs: Vec<_> = local
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()));
    }
}
