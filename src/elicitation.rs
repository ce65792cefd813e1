//! URL-mode elicitation (SEP-1036) on the server's side: the ids that send
//! a page's answer to the paused call it belongs to, and the sealing of
//! what a page records as secret.
//!
//! An `elicitationId` is MAC'd with the state keys (`STATE_KEYS`) and names
//! where the call is kept (a durable call's id, a session's call, a task),
//! the key the body asked under, and a digest of the caller: the Worker
//! routes a page's request by it only when it verifies and the page's
//! caller is that caller, so a forged or foreign id opens no object. It is
//! the same for the same call and key on every replay, as a replayed
//! question must be.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::token::KeyRing;

// What a page records as secret and the answers an admin export carries,
// sealed at rest: in a Worker only with the `page-secrets` or `admin`
// feature (ChaCha20-Poly1305 is about 9 KB of wasm); natively always, for
// `replay::check`.
#[cfg(any(
    feature = "page-secrets",
    feature = "admin",
    not(target_arch = "wasm32")
))]
mod seal;
#[cfg(any(
    feature = "page-secrets",
    feature = "admin",
    not(target_arch = "wasm32")
))]
pub use seal::{seal, unseal};

const ID_VERSION: &str = "e1";
const ID_DOMAIN: &[u8] = b"durable-mcp/elicitation-id/v1\0";
const PASS_VERSION: &str = "p1";
const PASS_DOMAIN: &[u8] = b"durable-mcp/page-pass/v1\0";
/// The tag is cut to 128 bits: an id travels in URLs.
const TAG_BYTES: usize = 16;

/// Where a paused call is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Home {
    /// A durable call (2026-07-28 MRTR, the seed wires), by call id.
    #[serde(rename = "c")]
    Call(String),
    /// A call in a 2025-11-25 session: the session id and the call's id.
    #[serde(rename = "s")]
    Session(String, String),
    /// A task, by task id.
    #[serde(rename = "t")]
    Task(String),
}

/// What an `elicitationId` says, once it verifies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdClaims {
    #[serde(rename = "k")]
    kid: String,
    /// Where the call is kept.
    #[serde(rename = "h")]
    pub home: Home,
    /// The key the body asked under.
    #[serde(rename = "q")]
    pub key: String,
    /// A digest of the caller's principal ([`principal_digest`]).
    #[serde(rename = "p")]
    pub principal: String,
}

/// A short digest of a principal: the id names the caller without
/// carrying who they are.
pub fn principal_digest(principal: &str) -> String {
    let d = Sha256::new()
        .chain_update(b"durable-mcp/elicitation-principal\0")
        .chain_update(principal.as_bytes())
        .finalize();
    URL_SAFE_NO_PAD.encode(&d[..12])
}

/// The `elicitationId` of the request asked under `key` by the call kept at
/// `home` for `principal` (`None`: no state key configured).
pub fn id(ring: &KeyRing, home: &Home, key: &str, principal: &str) -> Option<String> {
    let kid = ring.current()?.to_string();
    let claims = IdClaims {
        kid: kid.clone(),
        home: home.clone(),
        key: key.to_string(),
        principal: principal_digest(principal),
    };
    sign(ring, &kid, ID_VERSION, ID_DOMAIN, &claims)
}

/// Opens an `elicitationId`: `None` unless it is one this server made.
/// Nothing in it is read before the tag verifies, except the key id.
pub fn open(ring: &KeyRing, id: &str) -> Option<IdClaims> {
    verify(ring, id, ID_VERSION, ID_DOMAIN, |c: &IdClaims| {
        c.kid.as_str()
    })
}

/// `<version>.<payload>.<tag>`: `claims` as base64url JSON, MAC'd under the
/// state key `kid` in `domain` (the tag cut to [`TAG_BYTES`]: it travels in
/// URLs and cookies).
pub(crate) fn sign<C: Serialize>(
    ring: &KeyRing,
    kid: &str,
    version: &str,
    domain: &[u8],
    claims: &C,
) -> Option<String> {
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).ok()?);
    let tag = ring.tag(kid, domain, &[version.as_bytes(), payload.as_bytes()])?;
    Some(format!(
        "{version}.{payload}.{}",
        URL_SAFE_NO_PAD.encode(&tag[..TAG_BYTES])
    ))
}

/// The claims of what [`sign`] made, if its tag verifies under the key
/// the claims name (`kid`); nothing else in them is trusted before that.
pub(crate) fn verify<C: for<'de> Deserialize<'de>>(
    ring: &KeyRing,
    signed: &str,
    version: &str,
    domain: &[u8],
    kid: impl Fn(&C) -> &str,
) -> Option<C> {
    let mut parts = signed.split('.');
    let (Some(v), Some(payload), Some(tag), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if v != version {
        return None;
    }
    // From text, as the stores read JSON (one reader linked, not two).
    let claims: C =
        crate::json::from_str(&String::from_utf8(URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?)
            .ok()?;
    let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
    let full = ring.tag(
        kid(&claims),
        domain,
        &[version.as_bytes(), payload.as_bytes()],
    )?;
    // Constant time over the cut tag.
    let same = tag.len() == TAG_BYTES
        && full[..TAG_BYTES]
            .iter()
            .zip(&tag)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    same.then_some(claims)
}

/// What a page pass says: the cookie a browser gets the first time it
/// opens an elicitation's link on a server with sign-in (a navigation
/// carries no `Authorization`). It stands for the call's user on that one
/// elicitation's page, until it expires: MAC'd with the state keys, bound
/// to a digest of the `elicitationId` and to the principal the id names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct PassClaims {
    #[serde(rename = "k")]
    kid: String,
    /// A digest of the `elicitationId` it opens.
    #[serde(rename = "e")]
    elicitation: String,
    /// The principal digest the id names ([`principal_digest`]).
    #[serde(rename = "p")]
    principal: String,
    /// Expiry, ms since the epoch.
    #[serde(rename = "x")]
    expires_ms: u64,
}

/// How long a page pass lasts: long enough to read a page and post its
/// form, short enough that a pass left in a browser soon opens nothing.
pub const PASS_TTL_MS: u64 = 15 * 60 * 1000;

fn id_digest(id: &str) -> String {
    let d = Sha256::new()
        .chain_update(b"durable-mcp/elicitation-pass-id\0")
        .chain_update(id.as_bytes())
        .finalize();
    URL_SAFE_NO_PAD.encode(&d[..16])
}

/// The name of the cookie holding the page pass for elicitation `id`: one
/// per link, so two approvals open in one browser keep their own.
pub fn pass_cookie_name(id: &str) -> String {
    format!("dmcp-pass-{}", &id_digest(id)[..12])
}

/// A page pass for the elicitation `id` (whose claims are `claims`), valid
/// until `now_ms` + [`PASS_TTL_MS`].
pub fn pass(ring: &KeyRing, id: &str, claims: &IdClaims, now_ms: u64) -> Option<String> {
    let kid = ring.current()?.to_string();
    let pass = PassClaims {
        kid: kid.clone(),
        elicitation: id_digest(id),
        principal: claims.principal.clone(),
        expires_ms: now_ms.saturating_add(PASS_TTL_MS),
    };
    sign(ring, &kid, PASS_VERSION, PASS_DOMAIN, &pass)
}

/// Whether `pass` is a live page pass for the elicitation `id`: the
/// principal digest it stands for, else `None`.
pub fn open_pass(ring: &KeyRing, pass: &str, id: &str, now_ms: u64) -> Option<String> {
    let claims = verify(ring, pass, PASS_VERSION, PASS_DOMAIN, |c: &PassClaims| {
        c.kid.as_str()
    })?;
    (claims.expires_ms > now_ms && claims.elicitation == id_digest(id)).then_some(claims.principal)
}

/// A Worker without the `page-secrets` and `admin` features seals
/// nothing: no page records a secret (`PageReply::secret` is not built)
/// and nothing is exported, so ChaCha20-Poly1305 is not linked.
#[cfg(not(any(
    feature = "page-secrets",
    feature = "admin",
    not(target_arch = "wasm32")
)))]
pub fn seal(
    _: &KeyRing,
    _: &serde_json::Map<String, serde_json::Value>,
    _: &[u8; 16],
) -> Option<String> {
    None
}

/// A Worker without the `page-secrets` and `admin` features opens nothing
/// (nor seals anything: see [`seal`]).
#[cfg(not(any(
    feature = "page-secrets",
    feature = "admin",
    not(target_arch = "wasm32")
)))]
pub fn unseal(_: &KeyRing, _: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> KeyRing {
        KeyRing::parse("k1:0123456789abcdef0123456789abcdef").expect("test value")
    }

    #[test]
    fn ids_are_stable_and_unforgeable() {
        let r = ring();
        let home = Home::Call("s3-abc".into());
        let a = id(&r, &home, "approve", "alice").expect("test value");
        assert_eq!(a, id(&r, &home, "approve", "alice").expect("test value"));
        assert_ne!(a, id(&r, &home, "approve", "bob").expect("test value"));
        let c = open(&r, &a).expect("test value");
        assert_eq!(c.home, home);
        assert_eq!(c.key, "approve");
        assert_eq!(c.principal, principal_digest("alice"));
        // Another call named in the payload, the tag kept: refused.
        let other = serde_json::json!({"k": "k1", "h": {"c": "s3-other"}, "q": "approve",
            "p": principal_digest("alice")});
        let forged_payload = URL_SAFE_NO_PAD.encode(other.to_string());
        let tag = a.rsplit('.').next().expect("test value");
        assert!(open(&r, &format!("e1.{forged_payload}.{tag}")).is_none());
        assert!(open(&r, "e1.x.y").is_none());
        assert!(open(&r, "").is_none());
        let other_keys = KeyRing::parse("k1:ffffffffffffffffffffffffffffffff").expect("test value");
        assert!(open(&other_keys, &a).is_none());
    }

    #[test]
    fn a_page_pass_opens_one_elicitation_for_its_principal_until_it_expires() {
        let r = ring();
        let home = Home::Call("s3-abc".into());
        let a = id(&r, &home, "approve", "alice").expect("test value");
        let b = id(&r, &home, "other", "alice").expect("test value");
        let claims = open(&r, &a).expect("test value");
        let p = pass(&r, &a, &claims, 1_000).expect("test value");
        assert_eq!(
            open_pass(&r, &p, &a, 2_000),
            Some(principal_digest("alice"))
        );
        // Another elicitation, expired, other keys, tampered: nothing.
        assert!(open_pass(&r, &p, &b, 2_000).is_none());
        assert!(open_pass(&r, &p, &a, 1_000 + PASS_TTL_MS).is_none());
        let other = KeyRing::parse("k1:ffffffffffffffffffffffffffffffff").expect("test value");
        assert!(open_pass(&other, &p, &a, 2_000).is_none());
        let mut forged = PassClaims {
            kid: "k1".into(),
            elicitation: id_digest(&a),
            principal: principal_digest("mallory"),
            expires_ms: u64::MAX,
        };
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).expect("json"));
        let tag = p.rsplit('.').next().expect("test value");
        assert!(open_pass(&r, &format!("p1.{payload}.{tag}"), &a, 2_000).is_none());
        forged.expires_ms = 0;
        assert!(open_pass(&r, "p1.x.y", &a, 2_000).is_none());
        // An elicitation id is not a pass.
        assert!(open_pass(&r, &a, &a, 2_000).is_none());
    }
}
