//! Sealed state tokens (`requestState`, `sagaToken`, streamless state).
//!
//! `v1.<base64url(payload JSON)>.<base64url(HMAC-SHA256)>`. The MAC covers a
//! domain label, the version and the payload, so a token minted for another
//! purpose or format never verifies. Keys come from a key ring: sign with the
//! newest, verify with any, so keys rotate without breaking calls in flight.
//! Every failure is one opaque `-32602` whose message names only the class.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::engine::Journal;
use crate::error::{ErrorKind, McpError};

const VERSION: &str = "v1";
const DOMAIN: &[u8] = b"durable-mcp/state-token/v1\0";

/// Named signing keys, newest first.
#[derive(Clone, Default)]
pub struct KeyRing {
    /// Each key id with its MAC already keyed: keying hashes the secret
    /// (two SHA-256 blocks), which every token sealed or opened would
    /// otherwise repeat; a clone of the keyed state is a copy.
    keys: Vec<(String, Hmac<Sha256>)>,
}

impl std::fmt::Debug for KeyRing {
    // Never print key material.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.keys.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("KeyRing").field("key_ids", &ids).finish()
    }
}

impl KeyRing {
    /// Parses `kid:secret,kid:secret,…` (newest first). A bare `secret` gets
    /// the id `k0`. Secrets shorter than 16 bytes are refused.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut keys = Vec::new();
        for (i, item) in spec
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .enumerate()
        {
            let (kid, secret) = match item.split_once(':') {
                Some((k, s)) => (k.trim().to_string(), s.trim()),
                None => (format!("k{i}"), item),
            };
            if secret.len() < 16 {
                return Err(format!("state key {kid:?} is shorter than 16 bytes"));
            }
            let mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
                .map_err(|e| format!("state key {kid:?}: {e}"))?;
            keys.push((kid, mac));
        }
        Ok(Self { keys })
    }

    /// True when there is no key: stateful calls must be refused.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn mac(&self, kid: &str) -> Option<Hmac<Sha256>> {
        let (_, mac) = self.keys.iter().find(|(k, _)| k == kid)?;
        Some(mac.clone())
    }

    /// The id of the key new things are sealed with (the first).
    pub(crate) fn current(&self) -> Option<&str> {
        self.keys.first().map(|(k, _)| k.as_str())
    }

    /// A MAC of `parts` under key `kid`, in the domain `domain` (each part
    /// length-prefixed, so no two lists of parts make the same input).
    pub(crate) fn tag(&self, kid: &str, domain: &[u8], parts: &[&[u8]]) -> Option<Vec<u8>> {
        let mut mac = self.mac(kid)?;
        mac.update(domain);
        for p in parts {
            mac.update(&(p.len() as u64).to_be_bytes());
            mac.update(p);
        }
        Some(mac.finalize().into_bytes().to_vec())
    }
}

/// What a token says. Everything is inside the MAC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    /// Key id that signed it.
    pub kid: String,
    /// The method the call runs under (`tools/call`, `prompts/get`, …).
    pub method: String,
    /// Tool or prompt name, or resource URI.
    pub target: String,
    /// SHA-256 of the canonical arguments.
    pub args: String,
    /// The caller's principal (`""` when unauthenticated).
    pub sub: String,
    /// Issued at, ms since the epoch.
    pub iat: u64,
    /// Expires at, ms since the epoch.
    pub exp: u64,
    /// Call id: names the Durable Object in durable mode.
    pub sid: String,
    /// The round this token continues from (the journal version in durable mode).
    pub round: u32,
    /// The journal, when it fits the size cap (durable mode keeps the master
    /// copy in the DO and uses this to rebuild a lost one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<Journal>,
    /// True when the call runs in durable mode.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub durable: bool,
    /// The call's arguments, for wires whose retries do not repeat them
    /// (`tools/resumeSaga`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
}

/// What a token must be bound to.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// The method of this request.
    pub method: &'a str,
    /// Tool/prompt name or resource URI of this request.
    pub target: &'a str,
    /// Digest of this request's arguments.
    pub args: &'a str,
    /// The caller's principal.
    pub sub: &'a str,
}

fn refused(what: &str) -> McpError {
    McpError::new(
        ErrorKind::InvalidState,
        format!("Invalid request state: {what}"),
    )
}

/// Seals `claims` with the newest key (its id is written into the claims).
pub fn seal(ring: &KeyRing, mut claims: Claims) -> Result<String, McpError> {
    let (kid, _) = ring.keys.first().ok_or_else(|| {
        McpError::internal("no state key is configured; stateful calls are disabled")
    })?;
    claims.kid = kid.clone();
    let payload = serde_json::to_vec(&claims).map_err(|e| McpError::internal(e.to_string()))?;
    let body = format!("{VERSION}.{}", URL_SAFE_NO_PAD.encode(payload));
    let mut mac = ring
        .mac(kid)
        .ok_or_else(|| McpError::internal("state key unusable"))?;
    mac.update(DOMAIN);
    mac.update(body.as_bytes());
    let tag = mac.finalize().into_bytes();
    Ok(format!("{body}.{}", URL_SAFE_NO_PAD.encode(tag)))
}

/// Opens a token: checks format, MAC (constant time), expiry at `now_ms`,
/// and the binding. Errors say only which class of problem it was.
pub fn open(
    ring: &KeyRing,
    token: &str,
    now_ms: u64,
    expect: Binding<'_>,
) -> Result<Claims, McpError> {
    let claims = open_unbound(ring, token, now_ms)?;
    if claims.method != expect.method || claims.target != expect.target {
        return Err(refused("issued for another request"));
    }
    if claims.args != expect.args {
        return Err(refused("issued for other arguments"));
    }
    if claims.sub != expect.sub {
        return Err(refused("issued to another principal"));
    }
    Ok(claims)
}

/// Opens a token checking format, MAC and expiry only: for wires whose
/// request names nothing but the token (`tools/resumeSaga`) and for
/// routing. The caller must still check the binding (or call [`open`]).
pub fn open_unbound(ring: &KeyRing, token: &str, now_ms: u64) -> Result<Claims, McpError> {
    let parts = split(ring, token)?;
    // Parsed before the MAC is checked (one pass, not a pass for the key id
    // and another for the rest), but nothing in it is used until the MAC
    // verifies except the key id, to pick the key.
    let claims: Claims = parts.json().ok_or_else(|| refused("malformed"))?;
    parts.verify(ring, &claims.kid)?;
    if now_ms >= claims.exp {
        return Err(refused("expired"));
    }
    if claims
        .journal
        .as_ref()
        .is_some_and(|j| j.readable().is_err())
    {
        return Err(refused("issued by a newer release"));
    }
    Ok(claims)
}

/// A token taken apart: its payload (base64 and decoded) and its tag.
struct Parts<'t> {
    payload_b64: &'t str,
    payload: Vec<u8>,
    tag: Vec<u8>,
}

fn split<'t>(ring: &KeyRing, token: &'t str) -> Result<Parts<'t>, McpError> {
    if ring.is_empty() {
        return Err(McpError::internal(
            "no state key is configured; stateful calls are disabled",
        ));
    }
    let mut parts = token.split('.');
    let (Some(VERSION), Some(payload_b64), Some(tag_b64), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(refused("malformed"));
    };
    let payload = URL_SAFE_NO_PAD
        .decode(payload_b64)
        .map_err(|_| refused("malformed"))?;
    let tag = URL_SAFE_NO_PAD
        .decode(tag_b64)
        .map_err(|_| refused("malformed"))?;
    Ok(Parts {
        payload_b64,
        payload,
        tag,
    })
}

impl Parts<'_> {
    /// The payload read as JSON, or `None`. Read from text (UTF-8 checked
    /// first), not bytes: the call stores read the journal a token carries
    /// from text, and one reader of each type is linked rather than two
    /// (a malformed payload is refused either way).
    fn json<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        crate::json::from_str(std::str::from_utf8(&self.payload).ok()?).ok()
    }

    /// Checks the tag with key `kid` (in constant time).
    fn verify(&self, ring: &KeyRing, kid: &str) -> Result<(), McpError> {
        let mut mac = ring
            .mac(kid)
            .ok_or_else(|| refused("signature does not verify"))?;
        mac.update(DOMAIN);
        mac.update(VERSION.as_bytes());
        mac.update(b".");
        mac.update(self.payload_b64.as_bytes());
        mac.verify_slice(&self.tag)
            .map_err(|_| refused("signature does not verify"))
    }
}

/// Where a token's call lives — its call id, if it is a durable call's —
/// for routing: only a token whose MAC verifies and which has not expired
/// names one. Anything else is served where its error is made, and so a
/// forged id never makes the Worker open an object (each one a Durable
/// Object request, billed, that an attacker could pick by the thousand).
/// Reads only the key id, the call id, the flag and the expiry: the
/// call's object opens the token in full ([`open`]).
pub fn durable_call_id(ring: &KeyRing, token: &str, now_ms: u64) -> Option<String> {
    #[derive(Deserialize)]
    struct Route {
        kid: String,
        sid: String,
        exp: u64,
        #[serde(default)]
        durable: bool,
    }
    let parts = split(ring, token).ok()?;
    let route: Route = parts.json()?;
    parts.verify(ring, &route.kid).ok()?;
    (route.durable && now_ms < route.exp).then_some(route.sid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_route_hint_names_a_call_only_for_a_verified_unexpired_durable_token() {
        let r = ring("k1:0123456789abcdef0123456789abcdef");
        let durable = Claims {
            durable: true,
            ..claims()
        };
        let t = seal(&r, durable.clone()).expect("seal");
        assert_eq!(durable_call_id(&r, &t, 2_000).as_deref(), Some("s1"));
        // Not durable, not a token: no object to route to.
        let plain = seal(&r, claims()).expect("seal");
        assert_eq!(durable_call_id(&r, &plain, 2_000), None);
        assert_eq!(durable_call_id(&r, "v1.%%%.x", 2_000), None);
        assert_eq!(durable_call_id(&r, "garbage", 2_000), None);
        // A forged tag, a forged id under a real tag, an unknown key or an
        // expired token name no object: the Worker opens none for them.
        let forged = format!("{}.AAAA", t.rsplit_once('.').expect("dot").0);
        assert_eq!(durable_call_id(&r, &forged, 2_000), None);
        let other_id = Claims {
            sid: "s1-forged".into(),
            ..durable.clone()
        };
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&other_id).expect("json"));
        let tag = t.rsplit_once('.').expect("dot").1;
        assert_eq!(
            durable_call_id(&r, &format!("v1.{payload}.{tag}"), 2_000),
            None
        );
        let stranger = ring("k1:ffffffffffffffffffffffffffffffff");
        assert_eq!(durable_call_id(&stranger, &t, 2_000), None);
        assert_eq!(durable_call_id(&r, &t, 61_000), None);
        assert_eq!(durable_call_id(&KeyRing::default(), &t, 2_000), None);
    }

    fn ring(spec: &str) -> KeyRing {
        KeyRing::parse(spec).expect("valid ring")
    }

    fn claims() -> Claims {
        Claims {
            kid: String::new(),
            method: "tools/call".into(),
            target: "deploy".into(),
            args: "d1".into(),
            sub: "alice".into(),
            iat: 1_000,
            exp: 61_000,
            sid: "s1".into(),
            round: 1,
            journal: Some(Journal::new()),
            durable: false,
            arguments: None,
        }
    }

    fn bind() -> Binding<'static> {
        Binding {
            method: "tools/call",
            target: "deploy",
            args: "d1",
            sub: "alice",
        }
    }

    fn message(r: Result<Claims, McpError>) -> String {
        let e = r.expect_err("should be refused");
        assert_eq!(e.code(), -32602, "{e}");
        e.message
    }

    #[test]
    fn a_sealed_token_opens_with_the_same_claims() {
        let r = ring("new:0123456789abcdef0123");
        let t = seal(&r, claims()).expect("seals");
        assert!(t.starts_with("v1."));
        let c = open(&r, &t, 2_000, bind()).expect("opens");
        assert_eq!(c.kid, "new");
        assert_eq!(c.sid, "s1");
    }

    #[test]
    fn a_token_signed_with_the_previous_key_still_opens() {
        let old = ring("old:oldoldoldoldoldoldold");
        let t = seal(&old, claims()).expect("seals");
        let rotated = ring("new:newnewnewnewnewnewnew,old:oldoldoldoldoldoldold");
        assert!(open(&rotated, &t, 2_000, bind()).is_ok());
        let dropped = ring("new:newnewnewnewnewnewnew");
        assert!(message(open(&dropped, &t, 2_000, bind())).contains("verify"));
    }

    #[test]
    fn each_failure_class_is_an_opaque_invalid_params() {
        let r = ring("k:0123456789abcdef0123");
        let t = seal(&r, claims()).expect("seals");
        assert!(message(open(&r, "garbage", 2_000, bind())).contains("malformed"));
        assert!(message(open(&r, &format!("{t}x"), 2_000, bind())).contains("verify"));
        let (head, tag) = t.rsplit_once('.').expect("has tag");
        let mut other = claims();
        other.sub = "mallory".into();
        let forged_payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&other).expect("json"));
        let forged = format!("v1.{forged_payload}.{tag}");
        assert!(message(open(&r, &forged, 2_000, bind())).contains("verify"));
        assert!(head.starts_with("v1."));
        assert!(message(open(&r, &t, 61_000, bind())).contains("expired"));
        let b = Binding {
            target: "other",
            ..bind()
        };
        assert!(message(open(&r, &t, 2_000, b)).contains("another request"));
        let b = Binding {
            args: "d2",
            ..bind()
        };
        assert!(message(open(&r, &t, 2_000, b)).contains("other arguments"));
        let b = Binding {
            sub: "bob",
            ..bind()
        };
        assert!(message(open(&r, &t, 2_000, b)).contains("another principal"));
        let wrong = ring("k:ffffffffffffffffffffff");
        assert!(message(open(&wrong, &t, 2_000, bind())).contains("verify"));
    }

    #[test]
    fn errors_never_reveal_key_material() {
        let r = ring("k:supersecretsupersecret");
        let e = open(&r, "v1.e30.AAAA", 0, bind()).expect_err("refused");
        assert!(!e.message.contains("supersecret"));
        assert!(!format!("{r:?}").contains("supersecret"));
    }

    #[test]
    fn short_keys_are_refused() {
        assert!(KeyRing::parse("k:short").is_err());
        assert!(KeyRing::parse("").expect("empty is fine").is_empty());
    }
}
