//! Which scopes a request and a call need: one policy per server, built
//! from the sign-in mode and the registry once, and read by the metadata
//! (`scopes_supported`), the admission of a request and a call's
//! [`require_scopes`](crate::engine::Cx::require_scopes).

use super::{require, resource_uri, Caller, SignIn};
use crate::error::McpError;

/// The scopes this server asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopePolicy {
    /// What every request needs (`OAUTH_SCOPES`).
    every: Vec<String>,
    /// Every scope asked for anywhere: the server-wide ones and each
    /// tool's, sorted, once each.
    supported: Vec<String>,
}

impl ScopePolicy {
    /// The policy of a server signing callers in by `sign_in`, serving
    /// tools that need `tool_scopes` each.
    pub fn new<'a>(sign_in: &SignIn, tool_scopes: impl IntoIterator<Item = &'a [String]>) -> Self {
        let every = sign_in
            .oauth()
            .map(|o| o.scopes.clone())
            .unwrap_or_default();
        let mut supported = every.clone();
        for own in tool_scopes {
            supported.extend(own.iter().cloned());
        }
        supported.sort();
        supported.dedup();
        Self { every, supported }
    }

    /// What every request needs.
    pub fn every_request(&self) -> &[String] {
        &self.every
    }

    /// What a call of a tool that needs `own` needs: the server-wide
    /// scopes and its own.
    pub fn for_tool(&self, own: &[String]) -> Vec<String> {
        let mut scopes = self.every.clone();
        scopes.extend(own.iter().filter(|s| !self.every.contains(s)).cloned());
        scopes
    }

    /// Every scope this server asks for: the metadata's `scopes_supported`.
    pub fn supported(&self) -> &[String] {
        &self.supported
    }

    /// A request is admitted: its verified caller holds the server-wide
    /// scopes (a caller without an OAuth token is not limited by scopes).
    /// `host`: the request's, for the challenge's resource URI (formatted
    /// only when there are scopes to ask for).
    pub fn admit(&self, caller: &Caller, host: Option<&str>) -> Result<(), McpError> {
        if self.every.is_empty() {
            return Ok(());
        }
        require(caller, &resource_uri(host), &self.every)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::OAuthConfig;

    #[test]
    fn the_server_wide_scopes_come_first_and_every_scope_is_listed_once() {
        let sign_in = SignIn::OAuth {
            config: OAuthConfig {
                issuer: "https://id.example".into(),
                scopes: vec!["mcp".into()],
                ..OAuthConfig::default()
            },
            api_tokens: Vec::new(),
        };
        let write = vec!["files:write".to_string(), "mcp".to_string()];
        let read = vec!["files:read".to_string()];
        let policy = ScopePolicy::new(&sign_in, [write.as_slice(), read.as_slice()]);
        assert_eq!(policy.every_request(), ["mcp"]);
        assert_eq!(policy.for_tool(&write), ["mcp", "files:write"]);
        assert_eq!(policy.supported(), ["files:read", "files:write", "mcp"]);
        // Without OAuth nothing is needed of every request; tools' own
        // scopes are still listed.
        let open = ScopePolicy::new(&SignIn::Open, [read.as_slice()]);
        assert!(open.every_request().is_empty());
        assert!(open.admit(&Caller::default(), None).is_ok());
        // With server-wide scopes, a token without them is refused.
        let token = |scopes: &[&str]| Caller {
            issuer: "https://id.example".into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            ..Caller::default()
        };
        assert!(policy
            .admit(&token(&["files:read"]), Some("h.example"))
            .is_err());
        assert!(policy.admit(&token(&["mcp"]), Some("h.example")).is_ok());
        assert_eq!(open.supported(), ["files:read"]);
    }
}
