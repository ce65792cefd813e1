//! The issuer's signing keys as a host caches them: which key a token
//! names, and which metadata names them. When the set is fetched again is
//! `refresh.rs`'s; the host fetches and verifies.

use serde_json::Value;

use super::OAuthConfig;

/// An unknown `kid` fetches the key set again at most this often, in ms: a
/// flood of tokens naming made-up keys costs one fetch, not one each.
pub const JWKS_REFETCH_MS: u64 = 30 * 1000;

/// What a host knows of the issuer's keys.
#[derive(Debug, Clone, Default)]
pub struct KeySet {
    /// Where the keys are (configured, or found in the issuer's metadata).
    pub url: Option<String>,
    /// The keys (`keys` of the JWKS).
    pub keys: Vec<Value>,
    /// When they were last fetched (`None`: never).
    pub fetched_ms: Option<u64>,
}

impl KeySet {
    /// The key that may verify a token signed with `alg` by key `kid`:
    /// its `kid` equal (or the only key, when the token names none), its
    /// type the algorithm's (RSA for RS256, EC P-256 for ES256), and not a
    /// key for encryption.
    pub fn find(&self, alg: &str, kid: Option<&str>) -> Option<&Value> {
        let fits = |k: &&Value| {
            let text = |f: &str| k.get(f).and_then(Value::as_str);
            let typed = match alg {
                "RS256" => text("kty") == Some("RSA"),
                "ES256" => text("kty") == Some("EC") && text("crv") == Some("P-256"),
                _ => false,
            };
            typed && text("use").is_none_or(|u| u == "sig") && text("alg").is_none_or(|a| a == alg)
        };
        let mut candidates = self.keys.iter().filter(fits);
        match kid {
            Some(kid) => candidates.find(|k| k.get("kid").and_then(Value::as_str) == Some(kid)),
            None => {
                let only = candidates.next();
                candidates.next().is_none().then_some(only).flatten()
            }
        }
    }

    /// Takes a fetched JWKS document.
    pub fn update(&mut self, jwks: &Value, now_ms: u64) {
        self.keys = jwks
            .get("keys")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        self.fetched_ms = Some(now_ms);
    }
}

/// The `jwks_uri` of an authorization server's metadata document, if the
/// document is the configured issuer's (RFC 8414 §3.3: its `issuer` must
/// be exactly the one asked about).
pub fn jwks_uri(config: &OAuthConfig, metadata: &Value) -> Option<String> {
    if metadata.get("issuer").and_then(Value::as_str) != Some(config.issuer.as_str()) {
        return None;
    }
    metadata
        .get("jwks_uri")
        .and_then(Value::as_str)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_token_finds_only_a_signing_key_of_its_id_and_type() {
        let mut set = KeySet::default();
        set.update(
            &json!({"keys": [
                {"kid": "r1", "kty": "RSA", "n": "x", "e": "AQAB"},
                {"kid": "e1", "kty": "EC", "crv": "P-256", "x": "a", "y": "b"},
                {"kid": "enc", "kty": "RSA", "use": "enc"},
            ]}),
            0,
        );
        assert!(set.find("RS256", Some("r1")).is_some());
        assert!(set.find("ES256", Some("e1")).is_some());
        assert!(
            set.find("ES256", Some("r1")).is_none(),
            "an RSA key for ES256"
        );
        assert!(
            set.find("RS256", Some("enc")).is_none(),
            "an encryption key"
        );
        assert!(set.find("RS256", Some("r9")).is_none());
        assert!(set.find("ES256", None).is_some(), "the one EC key");
        assert!(set.find("HS256", Some("r1")).is_none());
    }

    #[test]
    fn metadata_counts_only_when_it_names_the_configured_issuer() {
        let c = OAuthConfig {
            issuer: "https://id.example".into(),
            ..OAuthConfig::default()
        };
        let doc = |iss: &str| json!({"issuer": iss, "jwks_uri": "https://id.example/jwks"});
        assert_eq!(
            jwks_uri(&c, &doc("https://id.example")).as_deref(),
            Some("https://id.example/jwks")
        );
        assert_eq!(jwks_uri(&c, &doc("https://evil.example")), None);
    }
}
