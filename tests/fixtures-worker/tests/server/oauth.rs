//! OAuth sign-in on the host: the resource server's metadata and
//! challenges, tokens refused for every reason a validator must refuse
//! them, and paused calls that belong to the user — continued under a
//! refreshed token, stepped up to a wider scope from the round that needed
//! it, refused to anyone else. Signatures are checked by the `TestKeys`
//! twin here (WebCrypto in the Worker: the e2e tests).

use serde_json::{json, Value};

use crate::{assert_error, set, Harness};
use durable_mcp::auth::OAuthConfig;
use durable_mcp::http::HttpRequest;
use durable_mcp::testing::{test_token, TestReply, TestServer};

const ISSUER: &str = "https://id.example";
const RESOURCE: &str = "http://127.0.0.1:8787/mcp";

fn server() -> TestServer {
    Harness::with_config(|c| {
        c.sign_in = durable_mcp::auth::SignIn::from(OAuthConfig {
            issuer: ISSUER.into(),
            scopes: vec!["mcp:read".into()],
            ..OAuthConfig::default()
        });
    })
}

fn claims(h: &TestServer, sub: &str, scope: &str) -> Value {
    let now = h.now_ms / 1000;
    json!({"iss": ISSUER, "sub": sub, "aud": RESOURCE, "client_id": "client-1",
           "scope": scope, "iat": now, "exp": now + 300})
}

fn token(h: &TestServer, sub: &str, scope: &str) -> String {
    test_token("test-key", &claims(h, sub, scope))
}

fn call_as(h: &mut TestServer, bearer: Option<&str>, name: &str, extra: Value) -> TestReply {
    let mut params = json!({"name": name, "arguments": {"build": "v1"}});
    if let (Some(p), Value::Object(e)) = (params.as_object_mut(), extra) {
        p.extend(e);
    }
    let auth = bearer.map(|b| format!("Bearer {b}"));
    h.request("tools/call", params, |headers| {
        set(headers, "authorization", auth.as_deref())
    })
}

/// What `whoami` said (its text is JSON).
fn whoami(r: &TestReply) -> Value {
    let text = r.json["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("{}");
    serde_json::from_str(text).unwrap_or_default()
}

fn challenge(r: &TestReply) -> String {
    r.header("www-authenticate").unwrap_or_default().to_string()
}

#[test]
fn the_metadata_names_the_resource_the_issuer_and_every_scope() {
    let mut h = server();
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = h.send(HttpRequest {
            method: "GET".into(),
            path: path.into(),
            headers: vec![("host".into(), "127.0.0.1:8787".into())],
            body: Vec::new(),
        });
        assert_eq!(r.status, 200, "{path}: {}", r.json);
        assert_eq!(r.json["resource"], RESOURCE);
        assert_eq!(r.json["authorization_servers"], json!([ISSUER]));
        assert_eq!(r.json["bearer_methods_supported"], json!(["header"]));
        let scopes = r.json["scopes_supported"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(scopes.contains(&json!("mcp:read")), "{}", r.json);
        assert!(!scopes.contains(&json!("offline_access")));
        assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    }
}

#[test]
fn no_token_is_a_401_whose_challenge_names_the_metadata_and_no_error() {
    let mut h = server();
    let r = call_as(&mut h, None, "whoami", json!({}));
    assert_error(&r, 401, -32600);
    let c = challenge(&r);
    assert_eq!(
        c,
        "Bearer resource_metadata=\"http://127.0.0.1:8787/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:read\""
    );
    assert!(r
        .header("access-control-expose-headers")
        .is_some_and(|v| v.eq_ignore_ascii_case("www-authenticate")));
}

#[test]
fn every_bad_token_is_a_401_invalid_token() {
    let mut h = server();
    let now = h.now_ms / 1000;
    let good = claims(&h, "ada", "mcp:read");
    let with = |k: &str, v: Value| {
        let mut c = good.clone();
        c[k] = v;
        c
    };
    let unsigned = |header: Value| {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        use base64::Engine;
        let e = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
        format!("{}.{}.", e(&header), e(&good))
    };
    let bad_signature = {
        let t = token(&h, "ada", "mcp:read");
        format!("{}.AAAA", t.rsplit_once('.').map_or("", |(a, _)| a))
    };
    let cases: Vec<(&str, String)> = vec![
        ("malformed", "not-a-jwt".into()),
        ("bad signature", bad_signature),
        (
            "alg none",
            unsigned(json!({"alg": "none", "kid": "test-key"})),
        ),
        (
            "HS256",
            unsigned(json!({"alg": "HS256", "kid": "test-key"})),
        ),
        ("unknown kid", test_token("other-key", &good)),
        (
            "expired",
            test_token("test-key", &with("exp", json!(now - 3600))),
        ),
        (
            "nbf in the future",
            test_token("test-key", &with("nbf", json!(now + 3600))),
        ),
        (
            "wrong iss",
            test_token("test-key", &with("iss", json!("https://id.example.evil"))),
        ),
        (
            "wrong aud",
            test_token("test-key", &with("aud", json!("https://other.example/mcp"))),
        ),
        ("no sub", test_token("test-key", &with("sub", json!("")))),
    ];
    for (what, t) in cases {
        let r = call_as(&mut h, Some(&t), "whoami", json!({}));
        assert_error(&r, 401, -32600);
        assert!(
            challenge(&r).contains("error=\"invalid_token\""),
            "{what}: {}",
            challenge(&r)
        );
    }
    let t = token(&h, "ada", "mcp:read");
    let ok = call_as(&mut h, Some(&t), "whoami", json!({}));
    assert_eq!(ok.status, 200, "{}", ok.json);
    let who = whoami(&ok);
    assert_eq!(who["subject"], "ada");
    assert_eq!(who["clientId"], "client-1");
    assert_eq!(who["scopes"], json!(["mcp:read"]));
}

#[test]
fn a_token_without_the_server_wide_scope_is_a_403_naming_it() {
    let mut h = server();
    let t = token(&h, "ada", "profile");
    let r = call_as(&mut h, Some(&t), "whoami", json!({}));
    assert_error(&r, 403, -32600);
    let c = challenge(&r);
    assert!(c.contains("error=\"insufficient_scope\""), "{c}");
    assert!(c.contains("scope=\"mcp:read\""), "{c}");
}

#[test]
fn a_paused_call_goes_on_under_a_refreshed_token_and_steps_up_from_the_round_that_needs_it() {
    let mut h = server();
    let first = token(&h, "ada", "mcp:read");
    let r1 = call_as(&mut h, Some(&first), "release", json!({}));
    assert_eq!(
        r1.json["result"]["resultType"], "input_required",
        "{}",
        r1.json
    );
    let state = r1.json["result"]["requestState"].clone();
    let answer = json!({"requestState": state,
        "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});

    // Half an hour later (the call still paused) the first token has
    // expired; the client refreshed it.
    h.now_ms += 1_800_000;
    let expired = call_as(&mut h, Some(&first), "release", answer.clone());
    assert_error(&expired, 401, -32600);
    let refreshed = token(&h, "ada", "mcp:read");
    // Another user's token gets what an unknown call gets.
    let bob = token(&h, "bob", "mcp:read release:write");
    let stranger = call_as(&mut h, Some(&bob), "release", answer.clone());
    assert_error(&stranger, 400, -32602);
    assert!(stranger.json["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("another principal"));

    // The next round needs release:write, which the refreshed token lacks.
    let short = call_as(&mut h, Some(&refreshed), "release", answer.clone());
    assert_error(&short, 403, -32600);
    let c = challenge(&short);
    assert!(c.contains("scope=\"mcp:read release:write\""), "{c}");
    // Signed in again with it: the same retry goes on from that round.
    let wider = token(&h, "ada", "mcp:read release:write");
    let done = call_as(&mut h, Some(&wider), "release", answer);
    assert_eq!(
        done.json["result"]["resultType"], "complete",
        "{}",
        done.json
    );
    let said = done.json["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(said.starts_with("Released v1 for ada"), "{said}");
}

#[test]
fn no_caller_header_from_a_client_is_believed() {
    let mut h = server();
    let forged = r#"{"principal":"x","subject":"root","scopes":["mcp:read"]}"#;
    let r = h.request(
        "tools/call",
        json!({"name": "whoami", "arguments": {}}),
        |headers| set(headers, "x-durable-mcp-caller", Some(forged)),
    );
    assert_error(&r, 401, -32600);
}

/// `OAUTH_WRAPPER=workers-oauth-provider`: the library in front checked the
/// token; the caller is what it hands over, and nothing else gets in.
#[test]
fn behind_the_built_in_authorization_server_the_caller_is_its_props() {
    let mut h = Harness::with_config(|c| c.sign_in = durable_mcp::auth::SignIn::Wrapper);
    let r = call_as(&mut h, None, "whoami", json!({}));
    assert_error(&r, 401, -32600);
    h.props = Some(r#"{"sub":"ada","client_id":"c9","scopes":["mcp:read"]}"#.into());
    let ok = call_as(&mut h, None, "whoami", json!({}));
    assert_eq!(ok.status, 200, "{}", ok.json);
    let who = whoami(&ok);
    assert_eq!(who["subject"], "ada");
    assert_eq!(who["clientId"], "c9");
    // A paused call goes on for the same user and no one else.
    let r1 = call_as(&mut h, None, "release", json!({}));
    let answer = json!({"requestState": r1.json["result"]["requestState"],
        "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    h.props = Some(r#"{"sub":"bob","client_id":"c9","scopes":["release:write"]}"#.into());
    assert_error(
        &call_as(&mut h, None, "release", answer.clone()),
        400,
        -32602,
    );
    h.props = Some(r#"{"sub":"ada","client_id":"c9","scopes":["mcp:read"]}"#.into());
    assert_error(
        &call_as(&mut h, None, "release", answer.clone()),
        403,
        -32600,
    );
    h.props =
        Some(r#"{"sub":"ada","client_id":"c9","scopes":["mcp:read","release:write"]}"#.into());
    let done = call_as(&mut h, None, "release", answer);
    assert_eq!(
        done.json["result"]["resultType"], "complete",
        "{}",
        done.json
    );
}

/// A token that checked out is not taken apart and verified again on its
/// next request (the Worker then answers without waiting on WebCrypto), but
/// it still expires, and the memory lasts no longer than the key set would.
#[test]
fn a_token_that_checked_out_is_remembered_until_it_expires_or_the_key_set_ages() {
    let mut h = server();
    let now = h.now_ms / 1000;
    let mut long = claims(&h, "ada", "mcp:read");
    long["exp"] = json!(now + 3600);
    let long = test_token("test-key", &long);
    let mut short = claims(&h, "ada", "mcp:read");
    short["exp"] = json!(now + 100);
    let short = test_token("test-key", &short);
    for t in [&long, &short] {
        assert_eq!(call_as(&mut h, Some(t), "whoami", json!({})).status, 200);
    }
    // The issuer "removes" every key: a new token fails, the seen ones pass.
    h.verifier = Box::new(durable_mcp::testing::TestKeys {
        valid_kids: Vec::new(),
    });
    let fresh = token(&h, "ada", "mcp:read deploy");
    assert_error(
        &call_as(&mut h, Some(&fresh), "whoami", json!({})),
        401,
        -32600,
    );
    assert_eq!(
        call_as(&mut h, Some(&long), "whoami", json!({})).status,
        200
    );
    // Past its own expiry the short one is refused, remembered or not.
    h.now_ms += 101_000;
    assert_error(
        &call_as(&mut h, Some(&short), "whoami", json!({})),
        401,
        -32600,
    );
    assert_eq!(
        call_as(&mut h, Some(&long), "whoami", json!({})).status,
        200
    );
    // Past the key set's age limit the long one is checked again (and fails).
    h.now_ms += durable_mcp::auth::JWKS_MAX_AGE_MS;
    assert_error(
        &call_as(&mut h, Some(&long), "whoami", json!({})),
        401,
        -32600,
    );
}

/// Props handed over while the wrapper mode is off would make every user
/// the same caller: refused as a misconfiguration.
#[test]
fn props_without_the_wrapper_mode_refuse_to_serve() {
    let mut h = Harness::new();
    h.props = Some(r#"{"sub":"ada"}"#.into());
    let r = call_as(&mut h, None, "whoami", json!({}));
    assert_error(&r, 500, -32603);
    assert!(r.json["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("OAUTH_WRAPPER"));
}

/// The claims named in `OAUTH_CLAIMS` reach the tool with the caller; no
/// others do.
#[test]
fn a_tool_reads_the_claims_it_was_given() {
    let mut h = Harness::with_config(|c| {
        c.sign_in = durable_mcp::auth::SignIn::from(OAuthConfig {
            issuer: ISSUER.into(),
            claims: vec!["email".into()],
            ..OAuthConfig::default()
        });
    });
    let mut c = claims(&h, "ada", "mcp:read");
    c["email"] = json!("ada@example.com");
    c["secret"] = json!("not for tools");
    let t = test_token("test-key", &c);
    let r = call_as(&mut h, Some(&t), "whoami", json!({}));
    let who = whoami(&r);
    assert_eq!(
        who["claims"],
        json!({"email": "ada@example.com"}),
        "{}",
        r.json
    );
}

/// Signed in with OAuth, a list is the caller's to cache, as with
/// `API_TOKENS` (it said `public` while only static tokens were read).
#[test]
fn with_oauth_lists_are_cached_by_the_caller_only() {
    let mut h = server();
    let bearer = format!("Bearer {}", token(&h, "ada", "mcp:read"));
    let r = h.request("tools/list", json!({}), |headers| {
        set(headers, "authorization", Some(&bearer))
    });
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["result"]["cacheScope"], "private", "{}", r.json);
}
