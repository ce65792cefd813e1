//! OAuth 2.1 resource server configuration: `OAUTH_ISSUER` turns it on.

/// Clock skew allowed on `exp` and `nbf` by default, in ms.
pub const SKEW_MS: u64 = 60_000;

/// A key set is fetched again after this long by default, so a key the
/// issuer removed stops verifying, in ms.
pub const JWKS_MAX_AGE_MS: u64 = 5 * 60 * 1000;

/// How this server checks OAuth access tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    /// The authorization server: a token's `iss` must equal it exactly,
    /// and it is the one `authorization_servers` entry of the metadata.
    pub issuer: String,
    /// What a token's `aud` must contain. `None`: this server's canonical
    /// resource URI (`https://<host>/mcp`), the RFC 8707 resource clients
    /// ask tokens for.
    pub audience: Option<String>,
    /// Where the issuer's signing keys are. `None`: found through the
    /// issuer's RFC 8414 (or OIDC) metadata.
    pub jwks_url: Option<String>,
    /// Scopes every request needs (each tool may need more).
    pub scopes: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`, in ms (`OAUTH_CLOCK_SKEW_SECONDS`,
    /// default 60 s).
    pub skew_ms: u64,
    /// Claims of the token a tool can read through `cx.caller().claims`
    /// (`OAUTH_CLAIMS`, comma-separated: `email,name`, say).
    pub claims: Vec<String>,
    /// How long fetched signing keys are used before the key set is fetched
    /// again, in ms (`OAUTH_JWKS_TTL_SECONDS`, default 300 s): the longest a
    /// key the issuer removed still verifies.
    pub jwks_max_age_ms: u64,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        Self {
            issuer: String::new(),
            audience: None,
            jwks_url: None,
            scopes: Vec::new(),
            claims: Vec::new(),
            skew_ms: SKEW_MS,
            jwks_max_age_ms: JWKS_MAX_AGE_MS,
        }
    }
}

impl OAuthConfig {
    /// Reads `OAUTH_ISSUER` (required to turn OAuth on), `OAUTH_AUDIENCE`,
    /// `OAUTH_JWKS_URL` and `OAUTH_SCOPES` (space- or comma-separated)
    /// from a lookup. `Ok(None)` when `OAUTH_ISSUER` is unset. A set but
    /// unusable value is an error: the server then refuses to serve.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        let Some(issuer) = get("OAUTH_ISSUER") else {
            for other in [
                "OAUTH_AUDIENCE",
                "OAUTH_JWKS_URL",
                "OAUTH_SCOPES",
                "OAUTH_CLAIMS",
                "OAUTH_CLOCK_SKEW_SECONDS",
                "OAUTH_JWKS_TTL_SECONDS",
            ] {
                if get(other).is_some() {
                    return Err(format!("{other} is set but OAUTH_ISSUER is not"));
                }
            }
            return Ok(None);
        };
        let issuer = issuer.trim().to_string();
        secure_url("OAUTH_ISSUER", &issuer)?;
        let jwks_url = get("OAUTH_JWKS_URL").map(|u| u.trim().to_string());
        if let Some(u) = &jwks_url {
            secure_url("OAUTH_JWKS_URL", u)?;
        }
        let audience = get("OAUTH_AUDIENCE")
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty());
        let scopes = get("OAUTH_SCOPES")
            .map(|s| parse_scopes(&s.replace(',', " ")))
            .unwrap_or_default();
        if scopes.iter().any(|s| s == "offline_access") {
            return Err("OAUTH_SCOPES must not name offline_access".into());
        }
        let seconds = |name: &str, default_ms: u64| -> Result<u64, String> {
            get(name).map_or(Ok(default_ms), |v| {
                v.trim()
                    .parse::<u64>()
                    .map(|s| s.saturating_mul(1000))
                    .map_err(|_| format!("{name} must be a whole number of seconds"))
            })
        };
        Ok(Some(Self {
            issuer,
            audience,
            jwks_url,
            scopes,
            claims: get("OAUTH_CLAIMS")
                .map(|s| parse_scopes(&s.replace(',', " ")))
                .unwrap_or_default(),
            skew_ms: seconds("OAUTH_CLOCK_SKEW_SECONDS", SKEW_MS)?,
            jwks_max_age_ms: seconds("OAUTH_JWKS_TTL_SECONDS", JWKS_MAX_AGE_MS)?,
        }))
    }

    /// Where the issuer's metadata is, in the order to try: RFC 8414's
    /// (the path of the issuer after the well-known segment), then OIDC's
    /// (both ways; one, for an issuer without a path).
    pub fn metadata_urls(&self) -> Vec<String> {
        let (origin, path) = split_origin(&self.issuer);
        let path = path.trim_end_matches('/');
        let mut urls = vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
        ];
        let appended = format!(
            "{}/.well-known/openid-configuration",
            self.issuer.trim_end_matches('/')
        );
        if !urls.contains(&appended) {
            urls.push(appended);
        }
        urls
    }
}

/// The scopes of a space-separated `scope` string.
pub fn parse_scopes(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// Whether the granted scopes cover `needed`. The hierarchy rule: a
/// granted scope covers itself and every scope below it, `a` covering
/// `a:b` and `a:b:c` (the colon is the separator).
pub fn covers(granted: &[String], needed: &str) -> bool {
    granted.iter().any(|g| {
        needed == g
            || needed
                .strip_prefix(g.as_str())
                .is_some_and(|rest| rest.starts_with(':'))
    })
}

/// `https://…`, or `http://` on a loopback host (local development only).
fn secure_url(name: &str, url: &str) -> Result<(), String> {
    if url.starts_with("https://") && url.len() > "https://".len() {
        return Ok(());
    }
    if let Some(rest) = url.strip_prefix("http://") {
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if is_loopback(host) {
            return Ok(());
        }
    }
    Err(format!(
        "{name} must be an https URL (http only on a loopback host, for local development)"
    ))
}

/// Whether `host` (with or without a port) names this machine: the name
/// `localhost`, an IPv4 address in `127.0.0.0/8`, or `[::1]`. Parsed, not
/// matched by prefix: `127.0.0.1.nip.io` is a public name.
pub fn is_loopback(host: &str) -> bool {
    if let Some(v6) = host.strip_prefix('[') {
        let Some((addr, rest)) = v6.split_once(']') else {
            return false;
        };
        let port_ok = rest.is_empty() || rest.strip_prefix(':').is_some_and(is_port);
        return port_ok
            && addr
                .parse::<std::net::Ipv6Addr>()
                .is_ok_and(|a| a.is_loopback());
    }
    let (name, port_ok) = match host.rsplit_once(':') {
        Some((name, port)) => (name, is_port(port)),
        None => (host, true),
    };
    port_ok
        && (name.eq_ignore_ascii_case("localhost")
            || name
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|a| a.is_loopback()))
}

fn is_port(port: &str) -> bool {
    port.parse::<u16>().is_ok()
}

/// `(scheme://host[:port], /path)` of an absolute URL.
fn split_origin(url: &str) -> (&str, &str) {
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find('/') {
        Some(i) => url.split_at(after + i),
        None => (url, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Option<OAuthConfig>, String> {
        OAuthConfig::from_lookup(|k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn loopback_is_parsed_not_matched_by_prefix() {
        for host in [
            "127.0.0.1",
            "127.0.0.2:8080",
            "127.255.1.9",
            "localhost",
            "LOCALHOST:8787",
            "[::1]",
            "[::1]:8787",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "127.0.0.1.nip.io",
            "127.example.com",
            "127.attacker.example:80",
            "localhost.example",
            "128.0.0.1",
            "[::2]",
            "[::1].evil",
            "127.0.0.1:notaport",
            "",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
        let ok = |url: &str| secure_url("OAUTH_ISSUER", url).is_ok();
        assert!(!ok("http://127.0.0.1.nip.io"));
        assert!(!ok("http://127.example.com/"));
        assert!(ok("http://127.0.0.2:8080"));
        assert!(ok("http://[::1]"));
        assert!(ok("http://[::1]:9000/issuer"));
    }

    #[test]
    fn an_issuer_turns_oauth_on_and_must_be_https_except_on_loopback() {
        assert_eq!(config(&[]), Ok(None));
        let c = config(&[
            ("OAUTH_ISSUER", "https://id.example.com/tenant"),
            ("OAUTH_SCOPES", "mcp:read, deploy:write"),
        ])
        .expect("valid")
        .expect("on");
        assert_eq!(c.scopes, ["mcp:read", "deploy:write"]);
        assert_eq!(
            c.metadata_urls(),
            [
                "https://id.example.com/.well-known/oauth-authorization-server/tenant",
                "https://id.example.com/.well-known/openid-configuration/tenant",
                "https://id.example.com/tenant/.well-known/openid-configuration",
            ]
        );
        let bare = config(&[("OAUTH_ISSUER", "https://id.example.com/")]);
        assert_eq!(
            bare.expect("valid").expect("on").metadata_urls(),
            [
                "https://id.example.com/.well-known/oauth-authorization-server",
                "https://id.example.com/.well-known/openid-configuration",
            ]
        );
        assert!(config(&[("OAUTH_ISSUER", "http://127.0.0.1:9000")]).is_ok());
        assert!(config(&[("OAUTH_ISSUER", "http://localhost")]).is_ok());
        for bad in ["http://id.example.com", "id.example.com", "https://"] {
            assert!(config(&[("OAUTH_ISSUER", bad)]).is_err(), "{bad}");
        }
        assert!(config(&[("OAUTH_SCOPES", "a")]).is_err(), "scopes alone");
        assert!(config(&[
            ("OAUTH_ISSUER", "https://i"),
            ("OAUTH_SCOPES", "offline_access")
        ])
        .is_err());
    }

    #[test]
    fn a_granted_scope_covers_itself_and_the_scopes_below_it() {
        let granted = vec!["deploy".to_string(), "mcp:read".to_string()];
        assert!(covers(&granted, "deploy"));
        assert!(covers(&granted, "deploy:write"));
        assert!(covers(&granted, "mcp:read"));
        assert!(!covers(&granted, "deployer"));
        assert!(!covers(&granted, "mcp"));
        assert!(!covers(&granted, "mcp:write"));
    }
}
