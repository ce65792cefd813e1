//! The Worker's [`KeyVerifier`]: the issuer's JWKS, fetched and cached per
//! isolate by the rules of [`KeySet`], and signatures verified by the
//! runtime's WebCrypto (`crypto.subtle`: native and constant-time; RSA in
//! wasm would be slow and carries an advisory). Translation only: which
//! key, and when to fetch, is decided in `crate::auth`.

use std::cell::RefCell;

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen_futures::JsFuture;

use crate::auth::{jwks_uri, Jwt, KeyError, KeySet, KeyVerifier, OAuthConfig, VerifyFuture};

#[wasm_bindgen(inline_js = r#"
export async function fetch_json(url) {
  const r = await fetch(url, { headers: { accept: "application/json" } });
  if (!r.ok) throw new Error(`${url} answered ${r.status}`);
  return await r.text();
}

// Imported keys by their JWK text: importing is the costly part.
const imported = new Map();

export async function verify_signature(jwk, alg, data, signature) {
  let key = imported.get(jwk);
  if (key === undefined) {
    const params = alg === "ES256"
      ? { name: "ECDSA", namedCurve: "P-256" }
      : { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
    const parsed = JSON.parse(jwk);
    delete parsed.alg; delete parsed.use; delete parsed.key_ops;
    key = await crypto.subtle.importKey("jwk", parsed, params, false, ["verify"]);
    if (imported.size > 64) imported.clear();
    imported.set(jwk, key);
  }
  const verify = alg === "ES256" ? { name: "ECDSA", hash: "SHA-256" } : { name: "RSASSA-PKCS1-v1_5" };
  return await crypto.subtle.verify(verify, key, signature.slice(), data.slice());
}
"#)]
extern "C" {
    /// The body of a GET of `url` (a promise of a string; rejects unless 2xx).
    fn fetch_json(url: &str) -> js_sys::Promise;
    /// Whether `signature` over `data` verifies with the JWK `jwk` under
    /// `alg` (a promise of a boolean; rejects on a key WebCrypto refuses).
    fn verify_signature(jwk: &str, alg: &str, data: &[u8], signature: &[u8]) -> js_sys::Promise;
}

thread_local! {
    /// The issuer's keys, for every request of this isolate.
    static KEYS: RefCell<KeySet> = RefCell::new(KeySet::default());
    /// The fetch of the key set under way, if one is: a promise every
    /// request that needs it awaits (see [`refresh_shared`]).
    static FETCHING: RefCell<Option<js_sys::Promise>> = const { RefCell::new(None) };
}

/// Verifies with the issuer's keys (see the module docs).
pub(crate) struct WebCrypto;

impl KeyVerifier for WebCrypto {
    fn verify<'a>(
        &'a self,
        config: &'a OAuthConfig,
        jwt: &'a Jwt,
        now_ms: u64,
    ) -> VerifyFuture<'a> {
        Box::pin(async move {
            let kid = jwt.kid.as_deref();
            let mut key = KEYS.with(|k| k.borrow().find(&jwt.alg, kid).map(|v| v.to_string()));
            let max_age = config.jwks_max_age_ms;
            let fetch = KEYS.with(|k| k.borrow().should_fetch(key.is_some(), now_ms, max_age))
                || (key.is_none() && FETCHING.with(|f| f.borrow().is_some()));
            if fetch {
                refresh_shared(config, now_ms).await?;
                key = KEYS.with(|k| k.borrow().find(&jwt.alg, kid).map(|v| v.to_string()));
            }
            let Some(jwk) = key else {
                return Err(KeyError::Invalid);
            };
            let input = jwt.signing_input.as_bytes();
            let verdict = JsFuture::from(verify_signature(&jwk, &jwt.alg, input, &jwt.signature))
                .await
                .map_err(|_| KeyError::Invalid)?;
            if verdict.as_bool() == Some(true) {
                Ok(())
            } else {
                Err(KeyError::Invalid)
            }
        })
    }
}

/// [`refresh`], once for every request that needs it meanwhile. The key set
/// counts as fetched from the moment its fetch starts (so a failing issuer
/// is not asked again on every request), so the requests a fresh isolate
/// gets together, which all find no key, each found the set fetched and no
/// key, and all but the first were refused (401s for good tokens, seen in
/// the bench); now they wait for the one fetch.
async fn refresh_shared(config: &OAuthConfig, now_ms: u64) -> Result<(), KeyError> {
    let promise = match FETCHING.with(|f| f.borrow().clone()) {
        Some(p) => p,
        None => {
            let config = config.clone();
            let p = wasm_bindgen_futures::future_to_promise(async move {
                let done = refresh(&config, now_ms).await;
                FETCHING.with(|f| f.borrow_mut().take());
                match done {
                    Ok(()) => Ok(wasm_bindgen::JsValue::UNDEFINED),
                    Err(KeyError::Unavailable(why)) => Err(why.into()),
                    Err(KeyError::Invalid) => Err(wasm_bindgen::JsValue::NULL),
                }
            });
            FETCHING.with(|f| *f.borrow_mut() = Some(p.clone()));
            p
        }
    };
    match JsFuture::from(promise).await {
        Ok(_) => Ok(()),
        Err(e) => Err(e
            .as_string()
            .map_or(KeyError::Invalid, KeyError::Unavailable)),
    }
}

/// Fetches the key set (finding its URL in the issuer's metadata first,
/// unless configured). The attempt counts as a fetch even when it fails, so
/// a failing issuer is not asked again on every request.
async fn refresh(config: &OAuthConfig, now_ms: u64) -> Result<(), KeyError> {
    let known = KEYS.with(|k| k.borrow().url.clone());
    let url = match config.jwks_url.clone().or(known) {
        Some(u) => u,
        None => discover(config).await?,
    };
    KEYS.with(|k| {
        let mut k = k.borrow_mut();
        k.url = Some(url.clone());
        k.fetched_ms = Some(now_ms);
    });
    let jwks = get_json(&url).await?;
    KEYS.with(|k| k.borrow_mut().update(&jwks, now_ms));
    Ok(())
}

/// The `jwks_uri` of the issuer's metadata (RFC 8414, then OIDC).
async fn discover(config: &OAuthConfig) -> Result<String, KeyError> {
    let mut why = String::from("no metadata");
    for url in config.metadata_urls() {
        match get_json(&url).await {
            Ok(doc) => {
                if let Some(u) = jwks_uri(config, &doc) {
                    return Ok(u);
                }
                why = format!("{url} names another issuer or no jwks_uri");
            }
            Err(KeyError::Unavailable(e)) => why = e,
            Err(e) => return Err(e),
        }
    }
    Err(KeyError::Unavailable(why))
}

async fn get_json(url: &str) -> Result<serde_json::Value, KeyError> {
    let text = JsFuture::from(fetch_json(url)).await.map_err(|e| {
        use wasm_bindgen::JsCast;
        let why = e
            .dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .unwrap_or_else(|| format!("fetching {url} failed"));
        KeyError::Unavailable(why)
    })?;
    let text = text.as_string().unwrap_or_default();
    serde_json::from_str(&text).map_err(|_| KeyError::Unavailable(format!("{url} is not JSON")))
}
