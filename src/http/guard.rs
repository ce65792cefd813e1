//! DNS-rebinding protection: `Origin` and `Host` allow-lists.
//!
//! A web page on `evil.example` whose name resolves to 127.0.0.1 can make a
//! browser POST to a local MCP server. The browser still sends its own
//! `Origin` and `Host: evil.example`, so the server refuses both unless they
//! are listed. Entries are host names (`localhost`, matching any scheme and
//! port), full origins (`https://app.example:8443`), or `*`.

/// A list of allowed hosts or origins. Empty means "not configured".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList(Vec<String>);

impl AllowList {
    /// Parses a comma-separated list (`"localhost, 127.0.0.1, [::1]"`).
    pub fn parse(list: &str) -> Self {
        Self(
            list.split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect(),
        )
    }

    /// The loopback names: what a server under `wrangler dev` accepts.
    pub fn loopback() -> Self {
        Self::parse("localhost,127.0.0.1,[::1]")
    }

    /// True when nothing was configured.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `value` — a `Host` header or an `Origin` — is allowed.
    fn allows(&self, value: &str) -> bool {
        let value = value.trim().to_ascii_lowercase();
        let host = host_of(&value);
        self.0.iter().any(|entry| {
            entry == "*" || *entry == value || (!entry.contains("://") && entry == host)
        })
    }
}

/// The host name of a `Host` header (`localhost:8787`) or an origin
/// (`http://[::1]:8787`), without port or scheme.
fn host_of(value: &str) -> &str {
    let rest = value.split_once("://").map_or(value, |(_, r)| r);
    let rest = rest.split('/').next().unwrap_or(rest);
    if let Some(stripped) = rest.strip_prefix('[') {
        // IPv6 literal: keep the brackets, drop the port.
        return match stripped.find(']') {
            Some(end) => &rest[..end + 2],
            None => rest,
        };
    }
    rest.split(':').next().unwrap_or(rest)
}

/// Why a request was refused, for the error message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardRejection {
    /// The `Origin` header named a site that is not allowed.
    Origin,
    /// The `Host` header named a host that is not allowed.
    Host,
}

/// Checks `Origin` and `Host` against the allow-lists.
///
/// - `Host`: checked only when `hosts` is configured.
/// - `Origin`: absent is fine (not a browser). When `origins` is configured it
///   must be listed; otherwise it must be the same host the request came to.
pub fn check_origin_and_host(
    origin: Option<&str>,
    host: Option<&str>,
    origins: &AllowList,
    hosts: &AllowList,
) -> Result<(), GuardRejection> {
    if !hosts.is_empty() {
        match host {
            Some(h) if hosts.allows(h) => {}
            _ => return Err(GuardRejection::Host),
        }
    }
    if let Some(origin) = origin {
        if origin.trim() == "null" && origins.is_empty() {
            return Err(GuardRejection::Origin);
        }
        let ok = if origins.is_empty() {
            host.is_some_and(|h| {
                host_of(&h.to_ascii_lowercase()) == host_of(&origin.to_ascii_lowercase())
            })
        } else {
            origins.allows(origin)
        };
        if !ok {
            return Err(GuardRejection::Origin);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_with_any_port_are_allowed() {
        let l = AllowList::loopback();
        for h in ["localhost", "localhost:8787", "127.0.0.1:1", "[::1]:8787"] {
            assert!(check_origin_and_host(None, Some(h), &l, &l).is_ok(), "{h}");
        }
        assert!(check_origin_and_host(
            Some("http://localhost:3000"),
            Some("localhost:8787"),
            &l,
            &l
        )
        .is_ok());
    }

    #[test]
    fn a_foreign_origin_or_host_is_refused() {
        let l = AllowList::loopback();
        assert_eq!(
            check_origin_and_host(Some("http://evil.example"), Some("localhost:8787"), &l, &l),
            Err(GuardRejection::Origin)
        );
        assert_eq!(
            check_origin_and_host(None, Some("evil.example:8787"), &l, &l),
            Err(GuardRejection::Host)
        );
        assert_eq!(
            check_origin_and_host(None, None, &l, &l),
            Err(GuardRejection::Host)
        );
        assert_eq!(
            check_origin_and_host(
                Some("http://localhost.evil.example"),
                Some("localhost"),
                &l,
                &l
            ),
            Err(GuardRejection::Origin)
        );
    }

    #[test]
    fn unconfigured_lists_allow_same_origin_only() {
        let none = AllowList::default();
        assert!(check_origin_and_host(None, Some("mcp.example.com"), &none, &none).is_ok());
        assert!(check_origin_and_host(
            Some("https://mcp.example.com"),
            Some("mcp.example.com"),
            &none,
            &none
        )
        .is_ok());
        assert_eq!(
            check_origin_and_host(
                Some("https://evil.example"),
                Some("mcp.example.com"),
                &none,
                &none
            ),
            Err(GuardRejection::Origin)
        );
    }

    #[test]
    fn full_origins_and_wildcards_match() {
        let o = AllowList::parse("https://app.example:8443");
        let none = AllowList::default();
        assert!(
            check_origin_and_host(Some("https://app.example:8443"), Some("x"), &o, &none).is_ok()
        );
        assert!(check_origin_and_host(Some("https://app.example"), Some("x"), &o, &none).is_err());
        let any = AllowList::parse("*");
        assert!(check_origin_and_host(Some("https://a.b"), Some("c"), &any, &any).is_ok());
    }
}
