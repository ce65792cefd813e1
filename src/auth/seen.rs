//! Tokens that checked out lately, so the same token on the next request
//! is not taken apart and verified again (a WebCrypto call that must wait):
//! the request is answered synchronously. Only a digest of each token is
//! kept, in memory, per isolate, with the caller it stood for, until the
//! token expires or the key set that verified it would be fetched again,
//! whichever is first (nothing else in its claims changes with time: `nbf`
//! had passed when it was checked).

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::Caller;

/// At most this many tokens are remembered (then the expired ones go, or
/// all of them).
const CAPACITY: usize = 4096;

/// Tokens that checked out, by digest: until when, for whom, and that
/// caller as the internal header carries it (serialized once, not per
/// request).
#[derive(Debug, Default)]
pub struct SeenTokens {
    until: HashMap<[u8; 32], (u64, Caller, String)>,
}

impl SeenTokens {
    /// The caller `token` stood for, if it checked out and still counts at
    /// `now_ms`.
    pub fn get(&self, token: &str, now_ms: u64) -> Option<(&Caller, &str)> {
        self.until
            .get(&digest(token))
            .filter(|(until, _, _)| now_ms < *until)
            .map(|(_, caller, header)| (caller, header.as_str()))
    }

    /// Records that `token` checked out as `caller`, counting until
    /// `until_ms` (the earlier of the token's expiry and the key set's age
    /// limit, so a key the issuer removed stops counting when the key set
    /// would be fetched again).
    pub fn remember(&mut self, token: &str, caller: Caller, until_ms: u64, now_ms: u64) {
        if self.until.len() >= CAPACITY {
            self.until.retain(|_, (until, _, _)| now_ms < *until);
            if self.until.len() >= CAPACITY {
                self.until.clear();
            }
        }
        let header = serde_json::to_string(&caller).unwrap_or_default();
        self.until.insert(digest(token), (until_ms, caller, header));
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verified_token_counts_until_its_limit_and_no_other_token_does() {
        let mut seen = SeenTokens::default();
        let ada = Caller::api_token("ada");
        assert!(seen.get("a.b.c", 0).is_none());
        seen.remember("a.b.c", ada.clone(), 1_000, 0);
        assert_eq!(seen.get("a.b.c", 999).map(|(c, _)| c), Some(&ada));
        let header = seen.get("a.b.c", 999).map(|(_, h)| h.to_string());
        assert_eq!(header, serde_json::to_string(&ada).ok());
        assert!(seen.get("a.b.c", 1_000).is_none());
        assert!(seen.get("a.b.d", 10).is_none());
        for i in 0..CAPACITY + 10 {
            seen.remember(&format!("t{i}"), ada.clone(), 5_000, 2_000);
        }
        assert!(seen.until.len() <= CAPACITY);
    }
}
