//! The Worker's [`KeyVerifier`]: the issuer's JWKS, fetched and cached per
//! isolate as [`IssuerKeys`] plans, and signatures verified by the
//! runtime's WebCrypto (`crypto.subtle`: native and constant-time; RSA in
//! wasm would be slow and carries an advisory). Translation only: which
//! key, whether and what to fetch, how long to back off and when to give
//! up are decided in `crate::auth`; this does the GETs and reports what
//! came back.

use std::cell::RefCell;

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::auth::{
    Answer, IssuerKeys, Jwt, KeyError, KeyVerifier, OAuthConfig, Plan, VerifyFuture,
    FETCH_TIMEOUT_MS, REFRESH_LOST_MS,
};

#[wasm_bindgen(inline_js = r#"
export async function get(url, timeout_ms) {
  const r = await fetch(url, {
    headers: { accept: "application/json" },
    signal: AbortSignal.timeout(timeout_ms),
  });
  return [r.status, await r.text()];
}

// Resolves when `p` settles or after `ms`, whichever is first.
export function settled_within(p, ms) {
  let timer;
  const late = new Promise((ok) => { timer = setTimeout(ok, ms); });
  return Promise.race([p.then(() => {}, () => {}), late]).finally(() => clearTimeout(timer));
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
    /// A GET of `url`, given up after `timeout_ms`: a promise of
    /// `[status, body]` (rejects when there is no answer).
    fn get(url: &str, timeout_ms: u32) -> js_sys::Promise;
    /// A promise that resolves when `p` settles or after `ms`.
    fn settled_within(p: &js_sys::Promise, ms: u32) -> js_sys::Promise;
    /// Whether `signature` over `data` verifies with the JWK `jwk` under
    /// `alg` (a promise of a boolean; rejects on a key WebCrypto refuses).
    fn verify_signature(jwk: &str, alg: &str, data: &[u8], signature: &[u8]) -> js_sys::Promise;
}

thread_local! {
    /// The issuer's keys and their refresh, for every request of this isolate.
    static KEYS: RefCell<IssuerKeys> = RefCell::new(IssuerKeys::default());
    /// The refresh under way, if one is: a promise every request that
    /// needs it awaits (the one refresh [`IssuerKeys`] allows).
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
            // A plan, a refresh (or the wait for one), a plan: after a
            // refresh ends the plan is never to fetch again.
            for _ in 0..3 {
                let now = clock(now_ms);
                match KEYS.with(|k| k.borrow().plan(config, &jwt.alg, kid, now)) {
                    Plan::Verify(jwk) => return verify(&jwk.to_string(), jwt).await,
                    Plan::Invalid => return Err(KeyError::Invalid),
                    Plan::Unavailable { why, retry_after_s } => {
                        return Err(KeyError::Unavailable { why, retry_after_s })
                    }
                    Plan::Fetch => {
                        start(config, now);
                        wait().await;
                    }
                    Plan::Wait => wait().await,
                }
            }
            Err(KeyError::Unavailable {
                why: "the issuer's keys are still being fetched".into(),
                retry_after_s: 1,
            })
        })
    }
}

/// The Worker's clock: `Date.now()` moves on only across I/O.
fn clock(at_least: u64) -> u64 {
    at_least.max(js_sys::Date::now() as u64)
}

/// Starts the refresh [`IssuerKeys::begin`] allows (none when one is under
/// way or backing off), as a promise of its own: it runs to its end even
/// when the request that started it goes away, and every request that
/// needs it meanwhile awaits it ([`wait`]).
fn start(config: &OAuthConfig, now_ms: u64) {
    let Some(first) = KEYS.with(|k| k.borrow_mut().begin(config, now_ms)) else {
        return;
    };
    let config = config.clone();
    let refresh = wasm_bindgen_futures::future_to_promise(async move {
        let mut next = Some(first);
        while let Some(r) = next {
            let answer = fetch(&r.url).await;
            next = KEYS.with(|k| k.borrow_mut().answered(&config, r, answer, clock(0)));
        }
        // (A refresh taken as lost and replaced leaves the new one's promise.)
        if !KEYS.with(|k| k.borrow().refreshing(clock(0))) {
            FETCHING.with(|f| f.borrow_mut().take());
        }
        Ok(wasm_bindgen::JsValue::UNDEFINED)
    });
    FETCHING.with(|f| *f.borrow_mut() = Some(refresh));
}

/// Waits for the refresh under way, if any (at most [`REFRESH_LOST_MS`]).
async fn wait() {
    if let Some(p) = FETCHING.with(|f| f.borrow().clone()) {
        let _ = JsFuture::from(settled_within(&p, REFRESH_LOST_MS as u32)).await;
    }
}

/// One GET, as [`IssuerKeys::answered`] takes it.
async fn fetch(url: &str) -> Answer {
    match JsFuture::from(get(url, FETCH_TIMEOUT_MS as u32)).await {
        Ok(pair) => {
            let pair = js_sys::Array::from(&pair);
            let status = pair.get(0).as_f64().unwrap_or(0.0) as u16;
            if (200..300).contains(&status) {
                Answer::Body(pair.get(1).as_string().unwrap_or_default())
            } else {
                Answer::Status(status)
            }
        }
        Err(e) => Answer::Failed(
            e.dyn_ref::<js_sys::Error>()
                .map(|e| format!("fetching {url} failed: {}", String::from(e.message())))
                .unwrap_or_else(|| format!("fetching {url} failed")),
        ),
    }
}

/// Whether `jwt`'s signature verifies with `jwk` (WebCrypto).
async fn verify(jwk: &str, jwt: &Jwt) -> Result<(), KeyError> {
    let input = jwt.signing_input.as_bytes();
    let verdict = JsFuture::from(verify_signature(jwk, &jwt.alg, input, &jwt.signature))
        .await
        .map_err(|_| KeyError::Invalid)?;
    if verdict.as_bool() == Some(true) {
        Ok(())
    } else {
        Err(KeyError::Invalid)
    }
}
