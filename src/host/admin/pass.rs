//! How a person signs in to the console. A browser navigating to `/admin`
//! carries no bearer token, so an operator who has one (an admin token, or
//! an OAuth sign-in with the admin scope, as the CLI holds) asks the API
//! for a sign-in link (`POST /admin/api/console`, what `durable-mcp admin
//! <url> console` does). The link holds a pass valid five minutes and
//! good once: opening it marks its nonce spent in the hub (the first open
//! wins; any other gets the unknown-path 404), sets a cookie pass
//! (`HttpOnly`, `SameSite=Strict`, `Path=/admin`, eight hours) and
//! redirects to the console. Both are MACs under `STATE_KEYS` over the
//! operator's name, an expiry and what the operator signed in with (a MAC
//! of their `ADMIN_TOKENS` token, or their OAuth sign-in): every request
//! checks that against the configuration in force, so an operator removed
//! from `ADMIN_TOKENS` (or a token rotated) loses the console and any
//! unused link at once.
//!
//! Each console form carries a token made from the cookie (a MAC of it):
//! a page on another site can neither read it nor make it, so a forged
//! post fails even where a browser sends the cookie.

use serde::{Deserialize, Serialize};

use crate::auth::{self, ct_eq};
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
const TOKEN_DOMAIN: &[u8] = b"durable-mcp admin operator token";
const LINK: &str = "al2";
const CONSOLE: &str = "ac2";
/// [`Claims::by`] for an operator signed in with OAuth (the admin scope).
const BY_OAUTH: &str = "o";

#[derive(Serialize, Deserialize)]
struct Claims {
    kid: String,
    /// The operator's name.
    op: String,
    /// Good until (ms since the epoch).
    exp: u64,
    /// What the operator signed in with: `t` and a MAC of their
    /// `ADMIN_TOKENS` token, or [`BY_OAUTH`].
    by: String,
    /// A link's nonce, under which its one use is marked.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    n: String,
}

/// A sign-in link that opened: whose it is, and what marks its one use.
pub(super) struct Link {
    kid: String,
    op: String,
    by: String,
    /// Its nonce.
    pub(super) nonce: String,
    /// When it stops being good: its spent mark need not outlive that.
    pub(super) exp: u64,
}

/// The MAC of an operator's `ADMIN_TOKENS` token under key `kid`.
fn token_mark(server: &Server, kid: &str, token: &str) -> Option<String> {
    let tag = server
        .config
        .keys
        .tag(kid, TOKEN_DOMAIN, &[token.as_bytes()])?;
    Some(format!("t{}", hex(&tag[..16])))
}

/// What the operator of `req` signed in with, as a pass records it.
fn by_of(server: &Server, kid: &str, req: &HttpRequest) -> Option<String> {
    let config = &server.config;
    let authorization = req.header("authorization");
    if auth::authenticate_api_token(&config.admin_tokens, authorization).is_some() {
        return token_mark(server, kid, auth::bearer(authorization)?);
    }
    config.sign_in.oauth().map(|_| BY_OAUTH.to_string())
}

/// Whether what `c` records still makes its operator one: one of today's
/// `ADMIN_TOKENS` under that name, or OAuth sign-in still on.
fn still_holds(server: &Server, c: &Claims) -> bool {
    let config = &server.config;
    if c.by == BY_OAUTH {
        return config.sign_in.oauth().is_some();
    }
    config
        .admin_tokens
        .iter()
        .fold(false, |hit, (token, name)| {
            let mark = token_mark(server, &c.kid, token).unwrap_or_default();
            // Every entry is compared, so timing says nothing of which matched.
            let same = ct_eq(mark.as_bytes(), c.by.as_bytes());
            hit | (same && *name == c.op)
        })
}

fn make(server: &Server, version: &str, claims: Claims) -> Option<String> {
    sign(&server.config.keys, &claims.kid, version, DOMAIN, &claims)
}

fn open(server: &Server, version: &str, pass: &str, now_ms: u64) -> Option<Claims> {
    let c: Claims = verify(&server.config.keys, pass, version, DOMAIN, |c: &Claims| {
        c.kid.as_str()
    })?;
    (c.exp > now_ms && still_holds(server, &c)).then_some(c)
}

/// A sign-in link's pass for `operator`, who sent `req`; `nonce` marks
/// its one use.
pub(super) fn link(
    server: &Server,
    req: &HttpRequest,
    operator: &str,
    nonce: String,
    now_ms: u64,
) -> Option<String> {
    let kid = server.config.keys.current()?.to_string();
    let by = by_of(server, &kid, req)?;
    let claims = Claims {
        kid,
        op: operator.to_string(),
        exp: now_ms.saturating_add(LINK_TTL_MS),
        by,
        n: nonce,
    };
    make(server, LINK, claims)
}

/// The link a sign-in link's pass stands for, while it is good and its
/// operator is one.
pub(super) fn open_link(server: &Server, pass: &str, now_ms: u64) -> Option<Link> {
    let c = open(server, LINK, pass, now_ms).filter(|c| !c.n.is_empty())?;
    Some(Link {
        kid: c.kid,
        op: c.op,
        by: c.by,
        nonce: c.n,
        exp: c.exp,
    })
}

/// A console cookie's value for the operator of `link`: under the link's
/// key (which its token's MAC was made with, and which still verifies).
pub(super) fn console(server: &Server, link: &Link, now_ms: u64) -> Option<String> {
    let claims = Claims {
        kid: link.kid.clone(),
        op: link.op.clone(),
        exp: now_ms.saturating_add(COOKIE_TTL_MS),
        by: link.by.clone(),
        n: String::new(),
    };
    make(server, CONSOLE, claims)
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
    open(server, CONSOLE, cookie(req)?, now_ms).map(|c| c.op)
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

    fn server(key: &str, tokens: &str) -> Server {
        Server::new(
            Config {
                keys: KeyRing::parse(key).expect("in a test"),
                admin_tokens: auth::parse_api_tokens(tokens).expect("in a test"),
                ..Config::default()
            },
            Registry::new(),
        )
    }

    fn from(token: &str) -> HttpRequest {
        HttpRequest::post(
            "/admin/api/console",
            &[("authorization", &format!("Bearer {token}"))],
            "",
        )
    }

    const KEY: &str = "k:0123456789abcdef0123456789abcdef";

    #[test]
    fn passes_open_only_for_their_kind_key_time_and_a_current_operator() {
        let s = server(KEY, "ops:tok-1,eve:tok-2");
        let l = link(&s, &from("tok-1"), "ops", "n1".into(), 1_000).expect("in a test");
        let opened = open_link(&s, &l, 1_000 + LINK_TTL_MS - 1).expect("good until it expires");
        assert_eq!((opened.op.as_str(), opened.nonce.as_str()), ("ops", "n1"));
        assert!(open_link(&s, &l, 1_000 + LINK_TTL_MS).is_none(), "expired");
        // A link is not a console cookie, and the reverse.
        assert!(open(&s, CONSOLE, &l, 1_000).is_none());
        let c = console(&s, &opened, 1_000).expect("in a test");
        assert!(open_link(&s, &c, 1_000).is_none());
        let with = |c: &str| HttpRequest {
            method: "GET".into(),
            ..HttpRequest::post("/admin", &[("cookie", &format!("{COOKIE}={c}"))], "")
        };
        assert_eq!(from_cookie(&s, &with(&c), 2_000).as_deref(), Some("ops"));
        // Another server's key opens nothing.
        let other = server("k:ffffffffffffffffffffffffffffffff", "ops:tok-1");
        assert!(open_link(&other, &l, 1_000).is_none());
        // A forged operator name breaks the MAC.
        let forged = l.replacen('.', ".x", 1);
        assert!(open_link(&s, &forged, 1_000).is_none());
        // The operator removed from ADMIN_TOKENS, or their token rotated:
        // neither the link nor the cookie opens any more.
        for tokens in ["eve:tok-2", "ops:tok-3", "eve:tok-1"] {
            let after = server(KEY, tokens);
            assert!(open_link(&after, &l, 1_000).is_none(), "{tokens}");
            assert_eq!(from_cookie(&after, &with(&c), 2_000), None, "{tokens}");
        }
        // The form token depends on the cookie.
        assert_ne!(form_token(&s, &c), form_token(&s, "other"));
        assert_eq!(form_token(&s, &c).len(), 32);
    }
}
