//! How a person signs in to the console. A browser navigating to `/admin`
//! carries no bearer token, so an operator who has one (an admin token, or
//! an OAuth sign-in with the admin scope, as the CLI holds) asks the API
//! for a sign-in link (`POST /admin/api/console`, what `durable-mcp admin
//! <url> console` does). The link holds a pass valid five minutes; opening
//! it sets a cookie pass (`HttpOnly`, `SameSite=Strict`, `Path=/admin`,
//! eight hours) and redirects to the console. Both are MACs under
//! `STATE_KEYS` over the operator's name and an expiry: nothing is stored.
//!
//! Each console form carries a token made from the cookie (a MAC of it):
//! a page on another site can neither read it nor make it, so a forged
//! post fails even where a browser sends the cookie.

use serde::{Deserialize, Serialize};

use crate::elicitation::{sign, verify};
use crate::engine::hex;
use crate::http::HttpRequest;
use crate::server::Server;

/// The console's cookie.
pub(super) const COOKIE: &str = "dmcp-admin";
/// How long a sign-in link is good for.
pub(super) const LINK_TTL_MS: u64 = 5 * 60 * 1000;
/// How long a console sign-in lasts.
pub(super) const COOKIE_TTL_MS: u64 = 8 * 60 * 60 * 1000;

const DOMAIN: &[u8] = b"durable-mcp admin pass";
const CSRF_DOMAIN: &[u8] = b"durable-mcp admin form";
const LINK: &str = "al1";
const CONSOLE: &str = "ac1";

#[derive(Serialize, Deserialize)]
struct Claims {
    kid: String,
    /// The operator's name.
    op: String,
    /// Good until (ms since the epoch).
    exp: u64,
}

fn make(server: &Server, version: &str, operator: &str, exp: u64) -> Option<String> {
    let ring = &server.config.keys;
    let kid = ring.current()?.to_string();
    let claims = Claims {
        kid: kid.clone(),
        op: operator.to_string(),
        exp,
    };
    sign(ring, &kid, version, DOMAIN, &claims)
}

fn open(server: &Server, version: &str, pass: &str, now_ms: u64) -> Option<String> {
    let c: Claims = verify(&server.config.keys, pass, version, DOMAIN, |c: &Claims| {
        c.kid.as_str()
    })?;
    (c.exp > now_ms).then_some(c.op)
}

/// A sign-in link's pass for `operator`.
pub(super) fn link(server: &Server, operator: &str, now_ms: u64) -> Option<String> {
    make(server, LINK, operator, now_ms.saturating_add(LINK_TTL_MS))
}

/// The operator a sign-in link's pass stands for, while it is good.
pub(super) fn open_link(server: &Server, pass: &str, now_ms: u64) -> Option<String> {
    open(server, LINK, pass, now_ms)
}

/// A console cookie's value for `operator`.
pub(super) fn console(server: &Server, operator: &str, now_ms: u64) -> Option<String> {
    make(
        server,
        CONSOLE,
        operator,
        now_ms.saturating_add(COOKIE_TTL_MS),
    )
}

/// The console cookie a request carries, if any.
pub(super) fn cookie(req: &HttpRequest) -> Option<&str> {
    req.header("cookie")?
        .split(';')
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.trim())
}

/// The operator the request's console cookie stands for.
pub(super) fn from_cookie(server: &Server, req: &HttpRequest, now_ms: u64) -> Option<String> {
    open(server, CONSOLE, cookie(req)?, now_ms)
}

/// The form token of a console page served with `cookie`.
pub(super) fn form_token(server: &Server, cookie: &str) -> String {
    let ring = &server.config.keys;
    ring.current()
        .and_then(|kid| ring.tag(kid, CSRF_DOMAIN, &[cookie.as_bytes()]))
        .map(|t| hex(&t[..16]))
        .unwrap_or_default()
}

/// The `Set-Cookie` of a console sign-in.
pub(super) fn set_cookie(value: &str, secure: bool) -> String {
    let mut c = format!(
        "{COOKIE}={value}; Path=/admin; HttpOnly; SameSite=Strict; Max-Age={}",
        COOKIE_TTL_MS / 1000
    );
    if secure {
        c.push_str("; Secure");
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Registry;
    use crate::server::Config;
    use crate::token::KeyRing;

    fn server(key: &str) -> Server {
        Server::new(
            Config {
                keys: KeyRing::parse(key).expect("in a test"),
                ..Config::default()
            },
            Registry::new(),
        )
    }

    #[test]
    fn passes_open_only_for_their_kind_key_and_time() {
        let s = server("k:0123456789abcdef0123456789abcdef");
        let l = link(&s, "ops", 1_000).expect("in a test");
        assert_eq!(
            open_link(&s, &l, 1_000 + LINK_TTL_MS - 1).as_deref(),
            Some("ops")
        );
        assert_eq!(open_link(&s, &l, 1_000 + LINK_TTL_MS), None, "expired");
        // A link is not a console cookie, and the reverse.
        assert_eq!(open(&s, CONSOLE, &l, 1_000), None);
        let c = console(&s, "ops", 1_000).expect("in a test");
        assert_eq!(open_link(&s, &c, 1_000), None);
        // Another server's key opens nothing.
        let other = server("k:ffffffffffffffffffffffffffffffff");
        assert_eq!(open_link(&other, &l, 1_000), None);
        // A forged operator name breaks the MAC.
        let forged = l.replacen('.', ".x", 1);
        assert_eq!(open_link(&s, &forged, 1_000), None);
        // The form token depends on the cookie.
        assert_ne!(form_token(&s, &c), form_token(&s, "other"));
        assert_eq!(form_token(&s, &c).len(), 32);
    }
}
