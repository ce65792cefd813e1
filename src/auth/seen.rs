//! Tokens whose signature verified lately, so the same token on the next
//! request skips the signature check (a WebCrypto call that must wait) and
//! the request can be answered synchronously. Only a digest of each token
//! is kept, in memory, per isolate; its claims are checked again on every
//! request, as for a new token.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

/// At most this many tokens are remembered (then the expired ones go, or
/// all of them).
const CAPACITY: usize = 4096;

/// Signatures that verified, by token digest, each until when it counts.
#[derive(Debug, Default)]
pub struct SeenTokens {
    until: HashMap<[u8; 32], u64>,
}

impl SeenTokens {
    /// Whether `token`'s signature verified and still counts at `now_ms`.
    pub fn knows(&self, token: &str, now_ms: u64) -> bool {
        self.until
            .get(&digest(token))
            .is_some_and(|until| now_ms < *until)
    }

    /// Records that `token`'s signature verified, counting until `until_ms`
    /// (the caller passes the earlier of the token's expiry and the key
    /// set's age limit, so a key the issuer removed stops counting when the
    /// key set would be fetched again).
    pub fn remember(&mut self, token: &str, until_ms: u64, now_ms: u64) {
        if self.until.len() >= CAPACITY {
            self.until.retain(|_, until| now_ms < *until);
            if self.until.len() >= CAPACITY {
                self.until.clear();
            }
        }
        self.until.insert(digest(token), until_ms);
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
        assert!(!seen.knows("a.b.c", 0));
        seen.remember("a.b.c", 1_000, 0);
        assert!(seen.knows("a.b.c", 999));
        assert!(!seen.knows("a.b.c", 1_000));
        assert!(!seen.knows("a.b.d", 10));
        for i in 0..CAPACITY + 10 {
            seen.remember(&format!("t{i}"), 5_000, 2_000);
        }
        assert!(seen.until.len() <= CAPACITY);
    }
}
