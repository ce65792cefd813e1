//! Signing in to a server that asks for it, as the MCP authorization spec
//! describes for a client.
//!
//! A request answered 401 with a `Bearer` challenge starts the flow: the
//! server's Protected Resource Metadata (the challenge's
//! `resource_metadata`, else the well-known URIs, path-suffixed first),
//! checked to be this server; its authorization server's metadata, whose
//! `issuer` must be the one asked for; a client identity in the spec's
//! order (pre-registered, a Client ID Metadata Document, dynamic
//! registration); the authorization-code grant with PKCE S256, `state`,
//! `resource` and the RFC 9207 `iss` check; then the request again with
//! the token. A 401 later refreshes (with `resource`); a 403
//! `insufficient_scope` asks again for what was granted plus what the
//! challenge names, at most three authorizations per request. A new
//! authorization server gets a new registration (SEP-2352).
//!
//! Where the user goes is a [`Browser`]'s business (the CLI prints the
//! URL, opens a browser and listens on a loopback redirect); where tokens
//! are kept, a [`TokenStore`]'s ([`FileStore`]: owner-only files).
//!
//! ```no_run
//! use durable_mcp_client::oauth::{Browser, FileStore, OAuth};
//! use durable_mcp_client::{Client, Handler, Result};
//! use serde_json::{json, Value};
//!
//! /// Sends the user to the authorization page by hand.
//! struct Terminal;
//! impl Browser for Terminal {
//!     fn redirect_uri(&mut self) -> Result<String> {
//!         Ok("http://127.0.0.1:8976/callback".into())
//!     }
//!     fn authorize(&mut self, url: &str) -> Result<String> {
//!         println!("open {url}, then paste the address you land on:");
//!         let mut line = String::new();
//!         std::io::stdin().read_line(&mut line).ok();
//!         Ok(line.trim().to_string())
//!     }
//! }
//! # struct Nobody;
//! # impl Handler for Nobody {
//! #     fn elicit(&mut self, _: &Value) -> Value { json!({"action": "decline"}) }
//! #     fn sample(&mut self, _: &Value) -> Value { json!({}) }
//! # }
//!
//! let oauth = OAuth::new(Terminal).with_store(FileStore::new("/tmp/tokens"));
//! let mut client = Client::new("https://mcp.example.com/mcp", Nobody).with_oauth(oauth);
//! let tools = client.list_tools()?; // signs in on the server's 401
//! # Ok::<(), durable_mcp_client::Error>(())
//! ```

mod challenge;
mod discovery;
mod grant;
mod store;

use serde::{Deserialize, Serialize};
use url::Url;

pub use challenge::Challenge;
pub use store::FileStore;

use crate::{Error, Result};

/// Authorizations one request may start before the client gives up (a
/// server that keeps answering 403 would otherwise loop forever).
pub const MAX_AUTHORIZATIONS: u32 = 3;

/// Takes the user to an authorization server and back.
pub trait Browser {
    /// The redirect URI the authorization server sends the user back to
    /// (asked before a client is registered with it).
    fn redirect_uri(&mut self) -> Result<String>;
    /// Sends the user to `url`; returns the URL they were redirected back
    /// to, with its `code`, `state` and `iss`.
    fn authorize(&mut self, url: &str) -> Result<String>;
}

/// Keeps a server's grant between runs.
pub trait TokenStore {
    /// The grant kept for the MCP endpoint `server`.
    fn load(&mut self, server: &str) -> Option<Grant>;
    /// Keeps `grant` for `server`.
    fn save(&mut self, server: &str, grant: &Grant) -> Result<()>;
    /// Forgets `server`'s grant.
    fn remove(&mut self, server: &str) -> Result<()>;
}

/// A client's identity at one authorization server.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Registration {
    /// `client_id` (a URL for a Client ID Metadata Document).
    pub client_id: String,
    /// `client_secret`, for a confidential client.
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub auth_method: String,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("auth_method", &self.auth_method)
            .finish()
    }
}

/// What signing in to one server got: its tokens and how to refresh them.
#[derive(Clone, Serialize, Deserialize)]
pub struct Grant {
    /// The resource the tokens are for (RFC 8707).
    pub resource: String,
    /// The authorization server that issued them.
    pub issuer: String,
    /// Its token endpoint (for refreshing).
    pub token_endpoint: String,
    /// The client they were issued to.
    pub client: Registration,
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was issued.
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the epoch), if said.
    pub expires_at: Option<u64>,
    /// The scopes asked for.
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Tokens never reach a log line.
        f.debug_struct("Grant")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("client", &self.client)
            .field("refreshable", &self.refresh_token.is_some())
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish()
    }
}

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// How a [`Client`](crate::Client) signs in.
pub struct OAuth {
    client_name: String,
    browser: Option<Box<dyn Browser>>,
    store: Option<Box<dyn TokenStore>>,
    client: Option<Registration>,
    metadata_url: Option<String>,
    machine: bool,
}

impl OAuth {
    /// Signs in a user through `browser`.
    pub fn new(browser: impl Browser + 'static) -> Self {
        Self {
            client_name: "durable-mcp".into(),
            browser: Some(Box::new(browser)),
            store: None,
            client: None,
            metadata_url: None,
            machine: false,
        }
    }

    /// Signs in as the client itself, with the client-credentials grant
    /// (the `io.modelcontextprotocol/oauth-client-credentials` extension).
    pub fn client_credentials(client_id: &str, client_secret: &str) -> Self {
        Self {
            client_name: "durable-mcp".into(),
            browser: None,
            store: None,
            client: Some(Registration {
                client_id: client_id.into(),
                client_secret: Some(client_secret.into()),
                auth_method: String::new(),
            }),
            metadata_url: None,
            machine: true,
        }
    }

    /// Uses a pre-registered client (first in the spec's order).
    pub fn with_client(mut self, client_id: &str, client_secret: Option<&str>) -> Self {
        self.client = Some(Registration {
            client_id: client_id.into(),
            client_secret: client_secret.map(str::to_string),
            auth_method: String::new(),
        });
        self
    }

    /// Identifies the client by the HTTPS URL of its Client ID Metadata
    /// Document, where the authorization server supports them.
    pub fn with_client_metadata_url(mut self, url: &str) -> Self {
        self.metadata_url = Some(url.into());
        self
    }

    /// The `client_name` registered (default `durable-mcp`).
    pub fn with_client_name(mut self, name: &str) -> Self {
        self.client_name = name.into();
        self
    }

    /// Keeps grants in `store` (default: for this client's life only).
    pub fn with_store(mut self, store: impl TokenStore + 'static) -> Self {
        self.store = Some(Box::new(store));
        self
    }
}

/// A client's sign-in state for its server.
pub(crate) struct SignIn {
    oauth: OAuth,
    /// Token and registration requests follow no redirect.
    agent: ureq::Agent,
    grant: Option<Grant>,
    loaded: bool,
    /// Clients registered this run, by issuer: a re-authorization at the
    /// same server reuses its client, another server gets its own.
    registered: Vec<(String, Registration)>,
}

impl SignIn {
    pub(crate) fn new(oauth: OAuth) -> Self {
        let agent = ureq::AgentBuilder::new()
            .redirects(0)
            .timeout_connect(std::time::Duration::from_secs(10))
            .timeout_read(std::time::Duration::from_secs(30))
            .build();
        Self {
            oauth,
            agent,
            grant: None,
            loaded: false,
            registered: Vec::new(),
        }
    }

    /// The grant in use, if any.
    pub(crate) fn grant(&mut self, server: &str) -> Option<&Grant> {
        if !self.loaded {
            self.loaded = true;
            self.grant = self.oauth.store.as_mut().and_then(|s| s.load(server));
        }
        self.grant.as_ref()
    }

    /// The access token to send, refreshed first when it has expired (or
    /// is about to) and can be.
    pub(crate) fn bearer(&mut self, server: &str) -> Option<String> {
        let expiring = self.grant(server).is_some_and(|g| {
            g.refresh_token.is_some() && g.expires_at.is_some_and(|t| t <= now() + 30)
        });
        if expiring {
            // A failed refresh sends the old token: the server's 401 then
            // starts a new authorization.
            let _ = self.refresh(server);
        }
        self.grant.as_ref().map(|g| g.access_token.clone())
    }

    /// Refreshes the grant.
    pub(crate) fn refresh(&mut self, server: &str) -> Result<()> {
        self.grant(server);
        let grant = self
            .grant
            .as_ref()
            .ok_or_else(|| Error::Auth("not signed in".into()))?;
        let fresh = grant::refresh(&self.agent, grant)?;
        self.keep(server, fresh)
    }

    fn keep(&mut self, server: &str, grant: Grant) -> Result<()> {
        if let Some(s) = self.oauth.store.as_mut() {
            s.save(server, &grant)?;
        }
        self.grant = Some(grant);
        Ok(())
    }

    /// Forgets the grant, here and in the store.
    pub(crate) fn forget(&mut self, server: &str) -> Result<()> {
        self.grant = None;
        self.loaded = true;
        match self.oauth.store.as_mut() {
            Some(s) => s.remove(server),
            None => Ok(()),
        }
    }

    /// Signs in to `server` from scratch: discovery, a client identity,
    /// authorization, tokens. `challenge` is the server's 401 or 403.
    pub(crate) fn authorize(&mut self, server: &str, challenge: Option<&Challenge>) -> Result<()> {
        let url = Url::parse(server).map_err(|e| Error::Auth(format!("{server}: {e}")))?;
        let prm = discovery::protected_resource(&self.agent, &url, challenge)?;
        let issuer_id = prm.authorization_servers[0].clone();
        let issuer = discovery::issuer(&self.agent, &issuer_id)?;
        let scopes = self.scopes(server, challenge, &prm, &issuer);
        let grant = if self.oauth.machine {
            let mut reg = self
                .oauth
                .client
                .clone()
                .ok_or_else(|| Error::Auth("no client credentials".into()))?;
            reg.auth_method = grant::auth_method(true, &issuer.auth_methods);
            grant::client_credentials(&self.agent, &issuer, &reg, &scopes, &prm.resource)?
        } else {
            let browser = self
                .oauth
                .browser
                .as_mut()
                .ok_or_else(|| Error::Auth("no browser to sign in with".into()))?;
            let redirect = browser.redirect_uri()?;
            let reg = self.identity(&issuer, &redirect)?;
            let started = grant::start(&issuer, &reg, &redirect, &scopes, &prm.resource)?;
            let browser = self
                .oauth
                .browser
                .as_mut()
                .ok_or_else(|| Error::Auth("no browser to sign in with".into()))?;
            let callback = browser.authorize(&started.url)?;
            grant::finish(
                &self.agent,
                &issuer,
                &reg,
                &redirect,
                started,
                &callback,
                &scopes,
                &prm.resource,
            )?
        };
        self.keep(server, grant)
    }

    /// What to ask for: the challenge's scopes, else every scope the
    /// resource lists, else none; what was asked before at the same
    /// server too (SEP-2350); `offline_access` where the authorization
    /// server offers it, for a refresh token (SEP-2207).
    fn scopes(
        &mut self,
        server: &str,
        challenge: Option<&Challenge>,
        prm: &discovery::Resource,
        issuer: &discovery::Issuer,
    ) -> Vec<String> {
        let asked = challenge
            .and_then(|c| c.scope.clone())
            .or_else(|| prm.scopes_supported.clone())
            .unwrap_or_default();
        let mut scopes: Vec<String> = match self.grant(server) {
            Some(g) if g.issuer == issuer.issuer => g.scopes.clone(),
            _ => Vec::new(),
        };
        for s in asked {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
        let offline = "offline_access".to_string();
        let offered = issuer
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.contains(&offline));
        if offered && !scopes.contains(&offline) && !self.oauth.machine {
            scopes.push(offline);
        }
        scopes
    }

    /// The client identity at `issuer`, in the spec's order.
    fn identity(&mut self, issuer: &discovery::Issuer, redirect: &str) -> Result<Registration> {
        if let Some(mut reg) = self.oauth.client.clone() {
            reg.auth_method = grant::auth_method(reg.client_secret.is_some(), &issuer.auth_methods);
            return Ok(reg);
        }
        if let Some((_, reg)) = self.registered.iter().find(|(i, _)| *i == issuer.issuer) {
            return Ok(reg.clone());
        }
        // The client of the kept grant, at the same server: stepping up or
        // signing in again stays the same client (a server may bind a
        // paused call to it).
        if let Some(g) = self.grant.as_ref().filter(|g| g.issuer == issuer.issuer) {
            return Ok(g.client.clone());
        }
        if let (Some(url), true) = (
            &self.oauth.metadata_url,
            issuer.client_id_metadata_documents,
        ) {
            return Ok(Registration {
                client_id: url.clone(),
                client_secret: None,
                auth_method: "none".into(),
            });
        }
        let endpoint = issuer.registration_endpoint.clone().ok_or_else(|| {
            Error::Auth(format!(
                "{} offers no registration and this client has no identity there (pass a client id)",
                issuer.issuer
            ))
        })?;
        let reg = grant::register(
            &self.agent,
            issuer,
            &endpoint,
            &self.oauth.client_name,
            redirect,
        )?;
        self.registered.push((issuer.issuer.clone(), reg.clone()));
        Ok(reg)
    }
}
