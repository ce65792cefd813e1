//! JWT access tokens (RFC 9068): parsed and their claims decided here;
//! the signature is checked by a [`KeyVerifier`] (WebCrypto in the Worker,
//! a test twin natively), so no key material or RSA code is in the core.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{Map, Value};

#[cfg(test)]
use super::oauth::SKEW_MS;
use super::oauth::{parse_scopes, OAuthConfig};

/// The algorithms a token may be signed with. Never `none`, never an HMAC
/// (an HMAC "signed" with the issuer's public key is a known forgery).
pub const ALGORITHMS: [&str; 2] = ["RS256", "ES256"];

/// A token taken apart, not yet trusted.
#[derive(Debug, Clone)]
pub struct Jwt {
    /// `alg` of the header (one of [`ALGORITHMS`]).
    pub alg: String,
    /// `kid` of the header, if any.
    pub kid: Option<String>,
    /// The claims.
    pub claims: Map<String, Value>,
    /// `base64url(header).base64url(claims)`: what the signature covers.
    pub signing_input: String,
    /// The signature's bytes.
    pub signature: Vec<u8>,
}

/// Why a token was refused (never shown to the client beyond its class).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// Not a JWS compact serialization, or not JSON inside.
    Malformed,
    /// `alg` not in [`ALGORITHMS`], or a `typ` that is not an access token's.
    Algorithm,
    /// The signature does not verify with the issuer's key `kid`, or no
    /// key of the issuer has that id.
    Signature,
    /// `iss` is not the configured issuer.
    Issuer,
    /// `aud` does not name this resource.
    Audience,
    /// Past `exp` (or no `exp`).
    Expired,
    /// Before `nbf`.
    NotYetValid,
    /// No `sub`.
    Subject,
}

impl Jwt {
    /// Takes a compact JWS apart. Nothing in it is trusted yet.
    pub fn parse(token: &str) -> Result<Self, Invalid> {
        let mut parts = token.split('.');
        let (Some(h), Some(c), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Invalid::Malformed);
        };
        let decode = |p: &str| URL_SAFE_NO_PAD.decode(p).map_err(|_| Invalid::Malformed);
        // Read from text, as the rest of the server reads JSON objects (one
        // reader linked, not one for bytes too); malformed either way.
        let object = |bytes: Vec<u8>| -> Result<Map<String, Value>, Invalid> {
            let text = String::from_utf8(bytes).map_err(|_| Invalid::Malformed)?;
            crate::json::from_str(&text).map_err(|_| Invalid::Malformed)
        };
        let header = object(decode(h)?)?;
        let claims = object(decode(c)?)?;
        let signature = decode(s)?;
        let alg = header.get("alg").and_then(Value::as_str).unwrap_or("");
        if !ALGORITHMS.contains(&alg) || header.contains_key("crit") {
            return Err(Invalid::Algorithm);
        }
        // RFC 9068 asks for `at+jwt`; issuers that predate it send `JWT` or
        // nothing. Anything else (an ID token's type, say) is refused.
        let typ = header.get("typ").map(|t| t.as_str().unwrap_or("?"));
        if !typ.is_none_or(|t| {
            ["at+jwt", "application/at+jwt", "jwt"].contains(&t.to_ascii_lowercase().as_str())
        }) {
            return Err(Invalid::Algorithm);
        }
        Ok(Self {
            alg: alg.to_string(),
            kid: header
                .get("kid")
                .and_then(Value::as_str)
                .map(str::to_string),
            claims,
            signing_input: format!("{h}.{c}"),
            signature,
        })
    }

    /// Checks the claims (after the signature verified): `iss` exactly the
    /// issuer, `aud` naming `audience`, `exp`/`nbf` at `now_ms` with the
    /// configured skew, a `sub`. Returns who is calling.
    pub fn caller(
        &self,
        config: &OAuthConfig,
        audience: &str,
        now_ms: u64,
    ) -> Result<Caller, Invalid> {
        let c = &self.claims;
        let text = |k: &str| c.get(k).and_then(Value::as_str);
        if text("iss") != Some(config.issuer.as_str()) {
            return Err(Invalid::Issuer);
        }
        let aud_ok = match c.get("aud") {
            Some(Value::String(a)) => a == audience,
            Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(audience)),
            _ => false,
        };
        if !aud_ok {
            return Err(Invalid::Audience);
        }
        let seconds = |k: &str| {
            c.get(k)
                .and_then(Value::as_f64)
                .map(|s| (s * 1000.0) as u64)
        };
        match seconds("exp") {
            Some(exp) if now_ms < exp.saturating_add(config.skew_ms) => {}
            _ => return Err(Invalid::Expired),
        }
        if seconds("nbf").is_some_and(|nbf| now_ms.saturating_add(config.skew_ms) < nbf) {
            return Err(Invalid::NotYetValid);
        }
        let subject = text("sub")
            .filter(|s| !s.is_empty())
            .ok_or(Invalid::Subject)?;
        let scopes = match (c.get("scope"), c.get("scp")) {
            (Some(Value::String(s)), _) => parse_scopes(s),
            (_, Some(Value::Array(list))) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            (_, Some(Value::String(s))) => parse_scopes(s),
            _ => Vec::new(),
        };
        let client_id = text("client_id")
            .or_else(|| text("azp"))
            .map(str::to_string);
        let mut caller = Caller::new(
            config.issuer.clone(),
            subject.to_string(),
            client_id,
            scopes,
        );
        caller.claims = config
            .claims
            .iter()
            .filter_map(|k| c.get(k).map(|v| (k.clone(), v.clone())))
            .collect();
        Ok(caller)
    }
}

/// The issuer a [`Caller::from_props`] names: the built-in authorization
/// server in front of this Worker.
pub const PROPS_ISSUER: &str = "workers-oauth-provider";

/// Who is calling, as a verified token (or an `API_TOKENS` entry) says.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Caller {
    /// What paused state, sessions and tasks are bound to: the issuer,
    /// subject and client id of a token (so a refreshed token is the same
    /// caller, another user or another client is not), or the name of an
    /// `API_TOKENS` entry.
    pub principal: String,
    /// The token's issuer (`""` for an API token).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub issuer: String,
    /// The token's `sub` (the API token's name).
    pub subject: String,
    /// The token's `client_id` (or `azp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The scopes the token grants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The token's claims the server was told to pass on (`OAUTH_CLAIMS`:
    /// `email`, `name` …), as the token has them.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub claims: Map<String, Value>,
}

impl Caller {
    /// The caller an `API_TOKENS` entry named `name` stands for.
    pub fn api_token(name: &str) -> Self {
        Self {
            principal: name.to_string(),
            subject: name.to_string(),
            ..Self::default()
        }
    }

    /// The caller `@cloudflare/workers-oauth-provider` hands the Worker
    /// (`ctx.props`, JSON `{sub, client_id?, scopes?}`, as the login stored
    /// it), or `None` when there is no `sub`.
    pub fn from_props(props: &str) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_str(props).ok()?;
        let sub = v.get("sub")?.as_str().filter(|s| !s.is_empty())?;
        let client = v
            .get("client_id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let scopes = v
            .get("scopes")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Some(Self::new(PROPS_ISSUER.into(), sub.into(), client, scopes))
    }

    /// A token's caller.
    pub fn new(
        issuer: String,
        subject: String,
        client_id: Option<String>,
        scopes: Vec<String>,
    ) -> Self {
        // Each part is JSON-quoted, so no issuer, subject or client id can
        // be made to read as another's.
        let principal = serde_json::to_string(&(&issuer, &subject, &client_id)).unwrap_or_default();
        Self {
            principal: format!("oauth:{principal}"),
            issuer,
            subject,
            client_id,
            scopes,
            claims: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn token(header: Value, claims: Value, sig: &[u8]) -> String {
        let e = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).expect("json"));
        format!(
            "{}.{}.{}",
            e(&header),
            e(&claims),
            URL_SAFE_NO_PAD.encode(sig)
        )
    }

    fn config() -> OAuthConfig {
        OAuthConfig {
            issuer: "https://id.example".into(),
            ..OAuthConfig::default()
        }
    }

    fn claims() -> Value {
        json!({"iss": "https://id.example", "sub": "ada", "aud": "https://mcp.example/mcp",
               "exp": 2_000, "iat": 1_000, "client_id": "c1", "scope": "mcp:read deploy:write"})
    }

    fn caller(claims: Value, now_ms: u64) -> Result<Caller, Invalid> {
        let jwt = Jwt::parse(&token(json!({"alg": "RS256", "kid": "k1"}), claims, b"s"))?;
        jwt.caller(&config(), "https://mcp.example/mcp", now_ms)
    }

    #[test]
    fn only_rs256_and_es256_access_tokens_parse() {
        let c = claims();
        for alg in ["none", "HS256", "RS512", ""] {
            let t = token(json!({"alg": alg}), c.clone(), b"s");
            assert_eq!(Jwt::parse(&t).err(), Some(Invalid::Algorithm), "{alg}");
        }
        let id_token = token(json!({"alg": "RS256", "typ": "id+jwt"}), c.clone(), b"s");
        assert_eq!(Jwt::parse(&id_token).err(), Some(Invalid::Algorithm));
        for typ in ["at+jwt", "application/at+jwt", "JWT"] {
            let t = token(json!({"alg": "ES256", "typ": typ}), c.clone(), b"s");
            assert!(Jwt::parse(&t).is_ok(), "{typ}");
        }
        for bad in ["", "a.b", "a.b.c.d", "!!.e30.e30", "e30.e30.%%"] {
            assert_eq!(Jwt::parse(bad).err(), Some(Invalid::Malformed), "{bad}");
        }
    }

    #[test]
    fn claims_are_held_to_issuer_audience_and_time() {
        let ok = caller(claims(), 1_500_000).expect("valid");
        assert_eq!(ok.subject, "ada");
        assert_eq!(ok.client_id.as_deref(), Some("c1"));
        assert_eq!(ok.scopes, ["mcp:read", "deploy:write"]);
        assert!(ok.principal.starts_with("oauth:"));
        let with = |k: &str, v: Value| {
            let mut c = claims();
            c[k] = v;
            c
        };
        assert_eq!(
            caller(with("iss", json!("https://id.example/")), 1_500_000),
            Err(Invalid::Issuer)
        );
        assert_eq!(
            caller(with("aud", json!("https://other/mcp")), 1_500_000),
            Err(Invalid::Audience)
        );
        assert!(caller(
            with("aud", json!(["x", "https://mcp.example/mcp"])),
            1_500_000
        )
        .is_ok());
        assert_eq!(caller(claims(), 2_000_000 + SKEW_MS), Err(Invalid::Expired));
        assert_eq!(
            caller(
                with("nbf", json!((1_500_000 + SKEW_MS) / 1000 + 10)),
                1_500_000
            ),
            Err(Invalid::NotYetValid)
        );
        assert_eq!(
            caller(with("sub", json!("")), 1_500_000),
            Err(Invalid::Subject)
        );
        let scp = with("scp", json!(["a", "b"]));
        let mut scp = scp;
        scp.as_object_mut().expect("object").remove("scope");
        assert_eq!(caller(scp, 1_500_000).expect("valid").scopes, ["a", "b"]);
    }

    #[test]
    fn a_refreshed_token_is_the_same_principal_and_another_user_or_client_is_not() {
        let a = caller(claims(), 1_500_000).expect("valid");
        let mut refreshed = claims();
        refreshed["exp"] = json!(9_000);
        refreshed["scope"] = json!("mcp:read");
        assert_eq!(
            caller(refreshed, 1_500_000).expect("valid").principal,
            a.principal
        );
        let mut bob = claims();
        bob["sub"] = json!("bob");
        assert_ne!(
            caller(bob, 1_500_000).expect("valid").principal,
            a.principal
        );
        let mut other_client = claims();
        other_client["client_id"] = json!("c2");
        assert_ne!(
            caller(other_client, 1_500_000).expect("valid").principal,
            a.principal
        );
    }
}
