//! Finding who signs a server's callers in: its Protected Resource Metadata
//! (RFC 9728) and its authorization server's metadata (RFC 8414, OpenID
//! Connect Discovery), with the checks the MCP authorization spec asks of a
//! client before it sends anyone anywhere.

use serde_json::Value;
use url::Url;

use super::challenge::Challenge;
use crate::{Error, Result};

/// A server's Protected Resource Metadata, checked against its URL.
#[derive(Debug, Clone)]
pub(crate) struct Resource {
    /// `resource`: the identifier tokens are asked for (RFC 8707).
    pub(crate) resource: String,
    /// `authorization_servers`: issuer identifiers, as written.
    pub(crate) authorization_servers: Vec<String>,
    /// `scopes_supported`, when the server lists them.
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// An authorization server's metadata, its issuer checked.
#[derive(Debug, Clone)]
pub(crate) struct Issuer {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// `token_endpoint_auth_methods_supported` (RFC 8414's default when
    /// absent: `client_secret_basic`).
    pub(crate) auth_methods: Vec<String>,
    pub(crate) client_id_metadata_documents: bool,
    /// `authorization_response_iss_parameter_supported` (RFC 9207).
    pub(crate) iss_in_response: bool,
}

/// GETs a JSON document; `None` for anything but a 200 with a JSON object.
pub(crate) fn get_json(agent: &ureq::Agent, url: &str) -> Result<Option<Value>> {
    let resp = match agent
        .get(url)
        .set("accept", "application/json")
        .set("mcp-protocol-version", crate::MODERN)
        .call()
    {
        Ok(r) => r,
        Err(ureq::Error::Status(..)) => return Ok(None),
        Err(e) => return Err(Error::Transport(format!("{url}: {e}"))),
    };
    if resp.status() != 200 {
        return Ok(None);
    }
    let text = resp
        .into_string()
        .map_err(|e| Error::Transport(e.to_string()))?;
    Ok(serde_json::from_str::<Value>(&text)
        .ok()
        .filter(Value::is_object))
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array().map(|a| {
        a.iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    })
}

/// The URLs to try for the metadata of `server`: the challenge's
/// `resource_metadata`, else the well-known URI with the endpoint's path,
/// then at the root (RFC 9728 §3.1; MCP: path-suffixed first).
pub(crate) fn resource_metadata_urls(server: &Url, challenge: Option<&Challenge>) -> Vec<String> {
    if let Some(url) = challenge.and_then(|c| c.resource_metadata.clone()) {
        return vec![url];
    }
    let origin = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    urls
}

/// Fetches and checks the Protected Resource Metadata of `server`.
pub(crate) fn protected_resource(
    agent: &ureq::Agent,
    server: &Url,
    challenge: Option<&Challenge>,
) -> Result<Resource> {
    for url in resource_metadata_urls(server, challenge) {
        let Some(doc) = get_json(agent, &url)? else {
            continue;
        };
        let resource = doc["resource"]
            .as_str()
            .ok_or_else(|| Error::Auth(format!("{url} names no resource")))?;
        if !resource_covers(resource, server) {
            return Err(Error::Auth(format!(
                "the protected resource metadata is for {resource}, not {server}: refusing to sign in"
            )));
        }
        let authorization_servers = strings(&doc["authorization_servers"]).unwrap_or_default();
        if authorization_servers.is_empty() {
            return Err(Error::Auth(format!("{url} names no authorization server")));
        }
        return Ok(Resource {
            resource: resource.to_string(),
            authorization_servers,
            scopes_supported: strings(&doc["scopes_supported"]),
        });
    }
    Err(Error::Auth(format!(
        "{server} asks for sign-in but publishes no protected resource metadata"
    )))
}

/// Whether a metadata document's `resource` is this server: the same
/// origin, and a path that is the endpoint's or a parent of it (a server
/// may name its root as the resource).
pub(crate) fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if r.fragment().is_some() || r.origin() != server.origin() {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let sp = server.path().trim_end_matches('/');
    rp.is_empty() || sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// The URLs to try for an issuer's metadata (RFC 8414 §3.1 inserts the
/// well-known segment before the issuer's path; OIDC appends it).
pub(crate) fn issuer_metadata_urls(issuer: &str) -> Result<Vec<String>> {
    let u = Url::parse(issuer).map_err(|e| Error::Auth(format!("issuer {issuer}: {e}")))?;
    let origin = u.origin().ascii_serialization();
    let path = u.path().trim_end_matches('/');
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// Fetches an issuer's metadata. Its `issuer` must be the identifier the
/// well-known URL was built from, character for character (RFC 8414 §3.3):
/// otherwise its endpoints could be anyone's.
pub(crate) fn issuer(agent: &ureq::Agent, issuer: &str) -> Result<Issuer> {
    for url in issuer_metadata_urls(issuer)? {
        let Some(doc) = get_json(agent, &url)? else {
            continue;
        };
        return parse_issuer(issuer, &doc);
    }
    Err(Error::Auth(format!(
        "no authorization server metadata for {issuer}"
    )))
}

pub(crate) fn parse_issuer(expected: &str, doc: &Value) -> Result<Issuer> {
    if doc["issuer"].as_str() != Some(expected) {
        return Err(Error::Auth(format!(
            "the authorization server metadata names issuer {}, not {expected}: refusing it",
            doc["issuer"]
        )));
    }
    let endpoint = |k: &str| -> Result<String> {
        let s = doc[k]
            .as_str()
            .ok_or_else(|| Error::Auth(format!("{expected} has no {k}")))?;
        Url::parse(s).map_err(|e| Error::Auth(format!("{expected}'s {k}: {e}")))?;
        Ok(s.to_string())
    };
    // PKCE with S256 or nothing: metadata that does not say it supports it
    // is an authorization server MCP clients must not use.
    let pkce = strings(&doc["code_challenge_methods_supported"]).unwrap_or_default();
    if !pkce.iter().any(|m| m == "S256") {
        return Err(Error::Auth(format!(
            "{expected} does not advertise PKCE with S256"
        )));
    }
    Ok(Issuer {
        issuer: expected.to_string(),
        authorization_endpoint: endpoint("authorization_endpoint")?,
        token_endpoint: endpoint("token_endpoint")?,
        registration_endpoint: doc["registration_endpoint"].as_str().map(str::to_string),
        scopes_supported: strings(&doc["scopes_supported"]),
        auth_methods: strings(&doc["token_endpoint_auth_methods_supported"])
            .unwrap_or_else(|| vec!["client_secret_basic".to_string()]),
        client_id_metadata_documents: doc["client_id_metadata_document_supported"] == true,
        iss_in_response: doc["authorization_response_iss_parameter_supported"] == true,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn path_suffixed_metadata_first() {
        assert_eq!(
            resource_metadata_urls(&url("http://h:1/mcp"), None),
            vec![
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource"
            ]
        );
        let c = Challenge {
            resource_metadata: Some("http://h:1/custom.json".into()),
            ..Challenge::default()
        };
        assert_eq!(
            resource_metadata_urls(&url("http://h:1/mcp"), Some(&c)),
            vec!["http://h:1/custom.json"]
        );
    }

    #[test]
    fn the_resource_must_be_this_server() {
        let server = url("http://h:1/mcp");
        assert!(resource_covers("http://h:1/mcp", &server));
        assert!(resource_covers("http://h:1", &server));
        assert!(resource_covers("http://h:1/", &server));
        assert!(!resource_covers("https://evil.example.com/mcp", &server));
        assert!(!resource_covers("http://h:2/mcp", &server));
        assert!(!resource_covers("http://h:1/mc", &server));
        assert!(!resource_covers("http://h:1/mcp#x", &server));
    }

    #[test]
    fn issuer_urls_insert_then_append() {
        assert_eq!(
            issuer_metadata_urls("http://a:1/tenant1").unwrap(),
            vec![
                "http://a:1/.well-known/oauth-authorization-server/tenant1",
                "http://a:1/.well-known/openid-configuration/tenant1",
                "http://a:1/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(issuer_metadata_urls("http://a:1").unwrap().len(), 2);
    }

    #[test]
    fn metadata_of_another_issuer_is_refused() {
        let doc = json!({"issuer": "https://attacker.example.com",
            "authorization_endpoint": "http://a/authorize", "token_endpoint": "http://a/token",
            "code_challenge_methods_supported": ["S256"]});
        assert!(parse_issuer("http://a", &doc).is_err());
        let mut ok = doc.clone();
        ok["issuer"] = json!("http://a");
        let i = parse_issuer("http://a", &ok).unwrap();
        assert_eq!(i.auth_methods, vec!["client_secret_basic"]);
        // A trailing slash is another issuer.
        assert!(parse_issuer("http://a/", &ok).is_err());
        ok["code_challenge_methods_supported"] = json!(["plain"]);
        assert!(parse_issuer("http://a", &ok).is_err());
    }
}
