//! How callers sign in: one mode per server, read once from the Worker's
//! vars, and the one place that decides who a request is from once the
//! host has checked what it could.

use super::{authenticate_api_token, parse_api_tokens, resource_uri, unauthorized};
use super::{Caller, OAuthConfig, Refusal};
use crate::error::{ErrorKind, McpError};

/// How callers sign in to this server.
#[derive(Debug, Clone, Default)]
pub enum SignIn {
    /// Anyone may call, and nobody in particular does.
    #[default]
    Open,
    /// `API_TOKENS`: a static bearer token names the caller; a request
    /// without one of them is refused.
    ApiTokens(Vec<(String, String)>),
    /// `OAUTH_ISSUER`: this server is an OAuth 2.1 resource server. A
    /// static `API_TOKENS` entry is accepted beside it (checked first), for
    /// machines that have no user to sign in.
    OAuth {
        /// How access tokens are checked.
        config: OAuthConfig,
        /// `(token, principal)` pairs accepted beside OAuth.
        api_tokens: Vec<(String, String)>,
    },
    /// `OAUTH_WRAPPER=workers-oauth-provider`: Cloudflare's
    /// `@cloudflare/workers-oauth-provider` wraps this Worker and has
    /// checked every token; the caller is what it hands the Worker
    /// (`ctx.props`).
    Wrapper,
}

/// OAuth with no static tokens beside it.
impl From<OAuthConfig> for SignIn {
    fn from(config: OAuthConfig) -> Self {
        SignIn::OAuth {
            config,
            api_tokens: Vec::new(),
        }
    }
}

impl SignIn {
    /// Reads `API_TOKENS`, the `OAUTH_*` vars and `OAUTH_WRAPPER`. A set
    /// but unusable value, or two modes at once that cannot both hold, is
    /// an error: the server then refuses to serve rather than run open.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let api_tokens = get("API_TOKENS")
            .map(|v| parse_api_tokens(&v))
            .transpose()?;
        let oauth = OAuthConfig::from_lookup(&get)?;
        let wrapper = match get("OAUTH_WRAPPER").as_deref().map(str::trim) {
            None => false,
            Some("workers-oauth-provider") => true,
            Some(_) => return Err("OAUTH_WRAPPER must be \"workers-oauth-provider\"".into()),
        };
        Ok(match (oauth, wrapper, api_tokens) {
            (Some(_), true, _) => {
                return Err("OAUTH_WRAPPER and OAUTH_ISSUER are both set: the built-in \
                            authorization server checks its own tokens; set one"
                    .into())
            }
            (None, true, Some(_)) => {
                return Err("OAUTH_WRAPPER and API_TOKENS are both set: behind the \
                            built-in authorization server every caller signs in \
                            through it; set one"
                    .into())
            }
            (None, true, None) => SignIn::Wrapper,
            (Some(config), false, tokens) => SignIn::OAuth {
                config,
                api_tokens: tokens.unwrap_or_default(),
            },
            (None, false, Some(tokens)) => SignIn::ApiTokens(tokens),
            (None, false, None) => SignIn::Open,
        })
    }

    /// Anyone may call: lists and results are the same for everyone.
    pub fn is_open(&self) -> bool {
        matches!(self, SignIn::Open)
    }

    /// The host verifies who is calling before a request is served (OAuth
    /// or the wrapper): the server takes only the caller it hands over.
    pub fn host_verifies(&self) -> bool {
        matches!(self, SignIn::OAuth { .. } | SignIn::Wrapper)
    }

    /// The OAuth configuration, in that mode.
    pub fn oauth(&self) -> Option<&OAuthConfig> {
        match self {
            SignIn::OAuth { config, .. } => Some(config),
            _ => None,
        }
    }

    /// The static tokens this mode accepts (none when it takes none).
    pub fn api_tokens(&self) -> &[(String, String)] {
        match self {
            SignIn::ApiTokens(t) | SignIn::OAuth { api_tokens: t, .. } => t,
            SignIn::Open | SignIn::Wrapper => &[],
        }
    }

    /// This server's resource URI as a request with `host` reached it, for
    /// a challenge; empty when nobody signs in through a challenge
    /// (nothing reads it then, and every request would pay for it).
    pub fn resource_of(&self, host: Option<&str>) -> String {
        if self.host_verifies() {
            resource_uri(host)
        } else {
            String::new()
        }
    }

    /// Who is calling. `signed`: the caller the host verified, which is
    /// the only one a mode the host verifies takes (refused without);
    /// with `API_TOKENS`, the entry the request's `authorization` names
    /// (refused without); open, nobody in particular.
    pub fn caller(
        &self,
        authorization: Option<&str>,
        host: Option<&str>,
        signed: Option<Caller>,
    ) -> Result<Caller, McpError> {
        match self {
            SignIn::Open => Ok(Caller::default()),
            SignIn::OAuth { config, .. } => signed
                .ok_or_else(|| unauthorized(Refusal::Missing, &resource_uri(host), &config.scopes)),
            // The provider in front answers the challenges.
            SignIn::Wrapper => signed.ok_or_else(|| {
                McpError::new(
                    ErrorKind::Unauthorized,
                    "Unauthorized: sign in through this server's authorization server",
                )
            }),
            SignIn::ApiTokens(tokens) => authenticate_api_token(tokens, authorization)
                .map(Caller::api_token)
                .ok_or_else(|| {
                    McpError::new(
                        ErrorKind::Unauthorized,
                        "Unauthorized: a valid bearer token is required",
                    )
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Result<SignIn, String> {
        SignIn::from_lookup(|k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn each_set_of_vars_reads_as_one_mode_and_modes_that_clash_refuse_to_serve() {
        assert!(with(&[]).is_ok_and(|m| m.is_open()));
        assert!(with(&[("API_TOKENS", "ci:tok-1")])
            .is_ok_and(|m| matches!(m, SignIn::ApiTokens(ref t) if t.len() == 1)));
        assert!(with(&[("OAUTH_WRAPPER", "workers-oauth-provider")])
            .is_ok_and(|m| matches!(m, SignIn::Wrapper)));
        let both = with(&[
            ("API_TOKENS", "ci:tok-1"),
            ("OAUTH_ISSUER", "https://id.example"),
        ]);
        assert!(both.is_ok_and(|m| m.oauth().is_some() && m.api_tokens().len() == 1));
        assert!(with(&[("OAUTH_WRAPPER", "other")]).is_err());
        assert!(with(&[
            ("OAUTH_WRAPPER", "workers-oauth-provider"),
            ("OAUTH_ISSUER", "https://id.example")
        ])
        .is_err());
        assert!(with(&[
            ("OAUTH_WRAPPER", "workers-oauth-provider"),
            ("API_TOKENS", "ci:tok-1")
        ])
        .is_err());
        assert!(with(&[("API_TOKENS", "tokA,tokB")]).is_err());
    }

    #[test]
    fn the_caller_is_the_one_the_mode_takes_and_nobody_else() {
        let bob = Caller::api_token("bob");
        let open = SignIn::Open;
        assert_eq!(
            open.caller(Some("Bearer x"), None, None).ok(),
            Some(Caller::default())
        );
        let tokens = SignIn::ApiTokens(vec![("tok-a".into(), "alice".into())]);
        assert_eq!(
            tokens.caller(Some("Bearer tok-a"), None, None).ok(),
            Some(Caller::api_token("alice"))
        );
        assert!(tokens.caller(Some("Bearer tok-b"), None, None).is_err());
        // A mode the host verifies takes only what the host verified: a
        // static token is not read here (the host read it).
        let oauth = SignIn::OAuth {
            config: OAuthConfig {
                issuer: "https://id.example".into(),
                ..OAuthConfig::default()
            },
            api_tokens: vec![("tok-a".into(), "alice".into())],
        };
        assert!(oauth
            .caller(Some("Bearer tok-a"), Some("h.example"), None)
            .is_err());
        assert_eq!(
            oauth.caller(None, None, Some(bob.clone())).ok(),
            Some(bob.clone())
        );
        assert!(SignIn::Wrapper.caller(None, None, None).is_err());
        assert_eq!(
            SignIn::Wrapper.caller(None, None, Some(bob.clone())).ok(),
            Some(bob)
        );
        assert_eq!(
            oauth.resource_of(Some("h.example")),
            "https://h.example/mcp"
        );
        assert_eq!(tokens.resource_of(Some("h.example")), "");
    }
}
