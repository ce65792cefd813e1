//! The OAuth exchanges themselves, through the `oauth2` crate: registering
//! a client (RFC 7591), the authorization-code grant with PKCE S256 and the
//! `resource` indicator, its callback checked (`state`, RFC 9207 `iss`),
//! the code and refresh exchanges, and the client-credentials grant.

use std::io::Read;

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet,
    EndpointSet, PkceCodeChallenge, RedirectUrl, RefreshToken, RequestTokenError, Scope,
    TokenResponse, TokenUrl,
};
use serde_json::{json, Value};
use url::Url;

use super::discovery::Issuer;
use super::{now, Grant, Registration};
use crate::{Error, Result};

/// A client of one authorization server: the token endpoint set.
type TokenClient =
    BasicClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// The method a client with (or without) a secret authenticates with at a
/// server that supports `methods`.
pub(crate) fn auth_method(has_secret: bool, methods: &[String]) -> String {
    let supports = |m: &str| methods.iter().any(|s| s == m);
    if !has_secret {
        "none"
    } else if supports("client_secret_basic") || !supports("client_secret_post") {
        "client_secret_basic"
    } else {
        "client_secret_post"
    }
    .to_string()
}

/// Registers a client with the authorization server's registration
/// endpoint (RFC 7591). A native public client when the server allows it.
pub(crate) fn register(
    agent: &ureq::Agent,
    issuer: &Issuer,
    endpoint: &str,
    client_name: &str,
    redirect_uri: &str,
) -> Result<Registration> {
    let requested = if issuer.auth_methods.iter().any(|m| m == "none") {
        "none".to_string()
    } else {
        auth_method(true, &issuer.auth_methods)
    };
    let body = json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": requested,
        // A CLI or a library on someone's machine, redirected to loopback.
        "application_type": "native",
    });
    let resp = match agent
        .post(endpoint)
        .set("content-type", "application/json")
        .set("accept", "application/json")
        .send_string(&body.to_string())
    {
        Ok(r) => r,
        Err(ureq::Error::Status(code, r)) => {
            let text = r.into_string().unwrap_or_default();
            return Err(Error::Auth(format!(
                "client registration refused ({code}): {text}"
            )));
        }
        Err(e) => return Err(Error::Transport(e.to_string())),
    };
    let doc: Value = serde_json::from_str(
        &resp
            .into_string()
            .map_err(|e| Error::Transport(e.to_string()))?,
    )
    .map_err(|e| Error::Auth(format!("client registration answered no JSON: {e}")))?;
    let client_id = doc["client_id"]
        .as_str()
        .ok_or_else(|| Error::Auth("client registration answered no client_id".into()))?
        .to_string();
    let client_secret = doc["client_secret"].as_str().map(str::to_string);
    let method = doc["token_endpoint_auth_method"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| auth_method(client_secret.is_some(), &issuer.auth_methods));
    Ok(Registration {
        client_id,
        client_secret,
        auth_method: method,
    })
}

fn token_client(reg: &Registration, token_endpoint: &str) -> Result<TokenClient> {
    let mut c = BasicClient::new(ClientId::new(reg.client_id.clone())).set_token_uri(
        TokenUrl::new(token_endpoint.to_string()).map_err(|e| Error::Auth(e.to_string()))?,
    );
    match (&reg.client_secret, reg.auth_method.as_str()) {
        (Some(s), "client_secret_post") => {
            c = c
                .set_client_secret(ClientSecret::new(s.clone()))
                .set_auth_type(AuthType::RequestBody)
        }
        (Some(s), "client_secret_basic") => {
            c = c
                .set_client_secret(ClientSecret::new(s.clone()))
                .set_auth_type(AuthType::BasicAuth)
        }
        // A public client: its id in the body, no secret anywhere.
        _ => c = c.set_auth_type(AuthType::RequestBody),
    }
    Ok(c)
}

/// The HTTP the `oauth2` crate sends its token requests with: ours, with
/// an error status handed back as a response so its error body is read.
fn http(
    agent: &ureq::Agent,
) -> impl Fn(oauth2::HttpRequest) -> std::result::Result<oauth2::HttpResponse, std::io::Error> + '_
{
    fn io(e: impl std::fmt::Display) -> std::io::Error {
        std::io::Error::other(e.to_string())
    }
    move |req: oauth2::HttpRequest| {
        let uri = req.uri().to_string();
        let post = req.method() == oauth2::http::Method::POST;
        let mut r = if post {
            agent.post(&uri)
        } else {
            agent.get(&uri)
        };
        for (k, v) in req.headers() {
            r = r.set(k.as_str(), v.to_str().map_err(io)?);
        }
        let sent = if post {
            r.send_bytes(req.body())
        } else {
            r.call()
        };
        let resp = match sent {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(io(e)),
        };
        let mut b = oauth2::http::Response::builder().status(resp.status());
        if let Some(ct) = resp.header("content-type") {
            b = b.header("content-type", ct);
        }
        let mut body = Vec::new();
        resp.into_reader().read_to_end(&mut body)?;
        b.body(body).map_err(io)
    }
}

fn token_error<RE: std::error::Error + 'static>(
    what: &str,
    e: RequestTokenError<RE, oauth2::basic::BasicErrorResponse>,
) -> Error {
    match e {
        RequestTokenError::ServerResponse(r) => Error::Auth(format!("{what} refused: {r}")),
        RequestTokenError::Request(e) => Error::Transport(format!("{what}: {e}")),
        other => Error::Auth(format!("{what}: {other}")),
    }
}

/// A started authorization: the URL to send the user to, and what its
/// callback must carry.
pub(crate) struct Started {
    pub(crate) url: String,
    state: String,
    verifier: oauth2::PkceCodeVerifier,
}

/// Builds the authorization request: PKCE S256, a fresh `state`, the
/// scopes (none when there are none to ask for) and the `resource`.
pub(crate) fn start(
    issuer: &Issuer,
    reg: &Registration,
    redirect_uri: &str,
    scopes: &[String],
    resource: &str,
) -> Result<Started> {
    let client = token_client(reg, &issuer.token_endpoint)?
        .set_auth_uri(
            AuthUrl::new(issuer.authorization_endpoint.clone())
                .map_err(|e| Error::Auth(e.to_string()))?,
        )
        .set_redirect_uri(
            RedirectUrl::new(redirect_uri.to_string()).map_err(|e| Error::Auth(e.to_string()))?,
        );
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state) = client
        .authorize_url(CsrfToken::new_random)
        .add_scopes(scopes.iter().cloned().map(Scope::new))
        .add_extra_param("resource", resource)
        .set_pkce_challenge(challenge)
        .url();
    Ok(Started {
        url: url.to_string(),
        state: state.secret().clone(),
        verifier,
    })
}

/// Checks the callback the user's browser was sent to and exchanges its
/// code. The `state` must be ours; an `iss` must be the issuer exactly, and
/// must be there when the server said it sends one (RFC 9207 §2.4).
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    agent: &ureq::Agent,
    issuer: &Issuer,
    reg: &Registration,
    redirect_uri: &str,
    started: Started,
    callback: &str,
    scopes: &[String],
    resource: &str,
) -> Result<Grant> {
    let cb = Url::parse(callback)
        .map_err(|e| Error::Auth(format!("the authorization callback is no URL: {e}")))?;
    let param = |k: &str| {
        cb.query_pairs()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(err) = param("error") {
        let why = param("error_description").unwrap_or_default();
        return Err(Error::Auth(format!("authorization refused: {err} {why}")));
    }
    if param("state").as_deref() != Some(started.state.as_str()) {
        return Err(Error::Auth(
            "the authorization callback's state is not ours".into(),
        ));
    }
    match param("iss") {
        Some(iss) if iss != issuer.issuer => {
            return Err(Error::Auth(format!(
                "the authorization response came from {iss}, not {}",
                issuer.issuer
            )))
        }
        None if issuer.iss_in_response => {
            return Err(Error::Auth(
                "the authorization response lacks the iss its server promised".into(),
            ))
        }
        _ => {}
    }
    let code = param("code")
        .ok_or_else(|| Error::Auth("the authorization callback carries no code".into()))?;
    let client = token_client(reg, &issuer.token_endpoint)?.set_redirect_uri(
        RedirectUrl::new(redirect_uri.to_string()).map_err(|e| Error::Auth(e.to_string()))?,
    );
    let token = client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(started.verifier)
        .add_extra_param("resource", resource)
        .request(&http(agent))
        .map_err(|e| token_error("the code exchange", e))?;
    Ok(grant_of(&token, None, issuer, reg, scopes, resource))
}

fn grant_of(
    token: &oauth2::basic::BasicTokenResponse,
    old_refresh: Option<&str>,
    issuer: &Issuer,
    reg: &Registration,
    scopes: &[String],
    resource: &str,
) -> Grant {
    Grant {
        resource: resource.to_string(),
        issuer: issuer.issuer.clone(),
        token_endpoint: issuer.token_endpoint.clone(),
        client: reg.clone(),
        access_token: token.access_token().secret().clone(),
        // A refresh that rotates nothing keeps the old refresh token.
        refresh_token: token
            .refresh_token()
            .map(|r| r.secret().clone())
            .or_else(|| old_refresh.map(str::to_string)),
        expires_at: token.expires_in().map(|d| now() + d.as_secs()),
        scopes: scopes.to_vec(),
    }
}

/// Refreshes `grant` (with its `resource`, RFC 8707 §2.2).
pub(crate) fn refresh(agent: &ureq::Agent, grant: &Grant) -> Result<Grant> {
    let rt = grant
        .refresh_token
        .as_deref()
        .ok_or_else(|| Error::Auth("no refresh token".into()))?;
    let token = token_client(&grant.client, &grant.token_endpoint)?
        .exchange_refresh_token(&RefreshToken::new(rt.to_string()))
        .add_extra_param("resource", &grant.resource)
        .request(&http(agent))
        .map_err(|e| token_error("the refresh", e))?;
    let issuer = Issuer {
        issuer: grant.issuer.clone(),
        token_endpoint: grant.token_endpoint.clone(),
        authorization_endpoint: String::new(),
        registration_endpoint: None,
        scopes_supported: None,
        auth_methods: Vec::new(),
        client_id_metadata_documents: false,
        iss_in_response: false,
    };
    Ok(grant_of(
        &token,
        Some(rt),
        &issuer,
        &grant.client,
        &grant.scopes,
        &grant.resource,
    ))
}

/// The client-credentials grant (a machine signing in as itself).
pub(crate) fn client_credentials(
    agent: &ureq::Agent,
    issuer: &Issuer,
    reg: &Registration,
    scopes: &[String],
    resource: &str,
) -> Result<Grant> {
    let token = token_client(reg, &issuer.token_endpoint)?
        .exchange_client_credentials()
        .add_scopes(scopes.iter().cloned().map(Scope::new))
        .add_extra_param("resource", resource)
        .request(&http(agent))
        .map_err(|e| token_error("the client-credentials grant", e))?;
    Ok(grant_of(&token, None, issuer, reg, scopes, resource))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn issuer() -> Issuer {
        Issuer {
            issuer: "http://as".into(),
            authorization_endpoint: "http://as/authorize".into(),
            token_endpoint: "http://as/token".into(),
            registration_endpoint: None,
            scopes_supported: None,
            auth_methods: vec!["none".into()],
            client_id_metadata_documents: false,
            iss_in_response: true,
        }
    }

    fn public() -> Registration {
        Registration {
            client_id: "c".into(),
            client_secret: None,
            auth_method: "none".into(),
        }
    }

    #[test]
    fn picks_the_method_the_server_supports() {
        let m = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(auth_method(false, &m(&["client_secret_basic"])), "none");
        assert_eq!(
            auth_method(true, &m(&["client_secret_post"])),
            "client_secret_post"
        );
        assert_eq!(auth_method(true, &m(&[])), "client_secret_basic");
        assert_eq!(
            auth_method(true, &m(&["client_secret_post", "client_secret_basic"])),
            "client_secret_basic"
        );
    }

    #[test]
    fn the_request_carries_pkce_resource_and_scopes() {
        let s = start(
            &issuer(),
            &public(),
            "http://127.0.0.1:9/cb",
            &["a".into(), "b".into()],
            "http://h/mcp",
        )
        .unwrap();
        let u = Url::parse(&s.url).unwrap();
        let q: std::collections::HashMap<_, _> = u.query_pairs().into_owned().collect();
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["resource"], "http://h/mcp");
        assert_eq!(q["scope"], "a b");
        assert_eq!(q["state"], s.state);
        let none = start(&issuer(), &public(), "http://127.0.0.1:9/cb", &[], "r").unwrap();
        assert!(!none.url.contains("scope="));
    }

    #[test]
    fn a_callback_from_elsewhere_is_refused_before_any_exchange() {
        let agent = ureq::AgentBuilder::new().build();
        let go = |cb: &dyn Fn(&str) -> String| {
            let s = start(&issuer(), &public(), "http://127.0.0.1:9/cb", &[], "r").unwrap();
            let url = cb(&s.state);
            finish(
                &agent,
                &issuer(),
                &public(),
                "http://127.0.0.1:9/cb",
                s,
                &url,
                &[],
                "r",
            )
        };
        // Wrong iss, trailing-slash iss, missing iss (promised), wrong state:
        // each an Auth error before the token endpoint (unreachable here:
        // reaching it would be a Transport error).
        for cb in [
            &|st: &str| format!("http://127.0.0.1:9/cb?code=x&state={st}&iss=https://evil"),
            &|st: &str| format!("http://127.0.0.1:9/cb?code=x&state={st}&iss=http://as/"),
            &|st: &str| format!("http://127.0.0.1:9/cb?code=x&state={st}"),
            &|_: &str| "http://127.0.0.1:9/cb?code=x&state=other&iss=http://as".to_string(),
        ] as [&dyn Fn(&str) -> String; 4]
        {
            match go(cb) {
                Err(Error::Auth(_)) => {}
                other => panic!("expected a refusal, got {other:?}"),
            }
        }
        match go(&|st: &str| format!("http://127.0.0.1:9/cb?code=x&state={st}&iss=http://as")) {
            Err(Error::Transport(_)) => {}
            other => panic!("expected to reach the token endpoint, got {other:?}"),
        }
    }
}
