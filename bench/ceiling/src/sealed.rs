//! The state `/do-shard-state` hands out and takes back: `v1.`, a
//! base64url payload naming the call, `.`, and the payload's
//! HMAC-SHA256 tag — as long as an MRTR round's sealed state (610
//! characters). The least a server that keeps a paused call behind a
//! client-held state must do with it: sign it when it pauses, check the
//! signature before the state names an object.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

/// The ceiling's own key (it shares nothing with durable-mcp's).
const KEY: &[u8] = b"bench-ceiling-state-key-0123456789abcdef";

/// The payload's padding: brings a state to 610 characters.
const PAD: usize = 407;

/// The MAC over a payload. (HMAC takes a key of any length: never `None`.)
fn mac() -> Option<Hmac<Sha256>> {
    Hmac::<Sha256>::new_from_slice(KEY).ok()
}

/// A state naming `call`.
pub fn seal(call: &str) -> Option<String> {
    let payload = json!({"c": call, "p": "x".repeat(PAD.saturating_sub(call.len()))}).to_string();
    let payload = URL_SAFE_NO_PAD.encode(payload);
    let mut m = mac()?;
    m.update(payload.as_bytes());
    let tag = URL_SAFE_NO_PAD.encode(m.finalize().into_bytes());
    Some(format!("v1.{payload}.{tag}"))
}

/// The call a state names, if its tag verifies.
pub fn open(state: &str) -> Option<String> {
    let mut parts = state.split('.');
    let (Some("v1"), Some(payload), Some(tag), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
    let mut m = mac()?;
    m.update(payload.as_bytes());
    m.verify_slice(&tag).ok()?;
    let payload: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    payload["c"].as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_state_opens_to_its_call_and_a_changed_one_does_not() {
        let state = seal("0123456789abcdef0123456789abcdef").expect("an HMAC key of any length");
        assert_eq!(state.len(), 610, "{state}");
        assert_eq!(
            open(&state).as_deref(),
            Some("0123456789abcdef0123456789abcdef")
        );
        let mut forged = state.clone().into_bytes();
        forged[10] = if forged[10] == b'A' { b'B' } else { b'A' };
        assert_eq!(open(&String::from_utf8(forged).expect("ascii")), None);
        assert_eq!(open("v1.e30.AAAA"), None);
        assert_eq!(open("nonsense"), None);
    }
}
