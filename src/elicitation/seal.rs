//! What a URL-elicitation page records as secret (a third-party token),
//! sealed for the call's journal and opened only for the tool, and the
//! answers an admin export carries: in a Worker with the `page-secrets` or
//! `admin` feature.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use serde_json::{Map, Value};

use crate::token::KeyRing;

const SEAL_VERSION: &str = "s1";
const SEAL_DOMAIN: &[u8] = b"durable-mcp/page-seal-key/v1\0";

fn seal_key(ring: &KeyRing, kid: &str) -> Option<ChaCha20Poly1305> {
    let key = ring.tag(kid, SEAL_DOMAIN, &[])?;
    Some(ChaCha20Poly1305::new(Key::from_slice(&key[..32])))
}

/// Seals `secrets` for the call's journal: ChaCha20-Poly1305 under a key
/// derived from the current state key, with a fresh nonce (`random`).
pub fn seal(ring: &KeyRing, secrets: &Map<String, Value>, random: &[u8; 16]) -> Option<String> {
    let kid = ring.current()?.to_string();
    let cipher = seal_key(ring, &kid)?;
    let nonce = Nonce::from_slice(&random[..12]);
    let plain = serde_json::to_vec(secrets).ok()?;
    let sealed = cipher.encrypt(nonce, plain.as_slice()).ok()?;
    Some(format!(
        "{SEAL_VERSION}.{}.{}.{}",
        URL_SAFE_NO_PAD.encode(kid.as_bytes()),
        URL_SAFE_NO_PAD.encode(&random[..12]),
        URL_SAFE_NO_PAD.encode(sealed)
    ))
}

/// Opens what [`seal`] sealed (`None`: not sealed by these keys).
pub fn unseal(ring: &KeyRing, sealed: &str) -> Option<Map<String, Value>> {
    let mut parts = sealed.split('.');
    let (Some(SEAL_VERSION), Some(kid), Some(nonce), Some(body), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    let kid = String::from_utf8(URL_SAFE_NO_PAD.decode(kid).ok()?).ok()?;
    let nonce = URL_SAFE_NO_PAD.decode(nonce).ok()?;
    if nonce.len() != 12 {
        return None;
    }
    let body = URL_SAFE_NO_PAD.decode(body).ok()?;
    let plain = seal_key(ring, &kid)?
        .decrypt(Nonce::from_slice(&nonce), body.as_slice())
        .ok()?;
    crate::json::from_slice(&plain).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_secrets_open_only_with_the_keys() {
        let r = KeyRing::parse("k1:0123456789abcdef0123456789abcdef").expect("test value");
        let mut m = Map::new();
        m.insert("token".into(), Value::String("gho_very_secret".into()));
        let s = seal(&r, &m, &[7; 16]).expect("test value");
        assert!(!s.contains("gho_very_secret"));
        assert_eq!(unseal(&r, &s).expect("test value"), m);
        let other = KeyRing::parse("k1:ffffffffffffffffffffffffffffffff").expect("test value");
        assert!(unseal(&other, &s).is_none());
        let mut bad = s.clone();
        bad.push('A');
        assert!(unseal(&r, &bad).is_none());
    }
}
