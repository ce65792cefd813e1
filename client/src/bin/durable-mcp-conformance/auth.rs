//! The `auth/*` scenarios: the client signs in as the suite's mock servers
//! ask, through the library's OAuth ([`durable_mcp_client::oauth`]), then
//! lists the tools and calls one (two authenticated requests: an
//! authorization server that changes between them is met as a user would
//! meet it).

use durable_mcp_client::oauth::{Browser, OAuth};
use durable_mcp_client::{Client, Error, Handler, Wire};
use serde_json::{json, Value};

/// The Client ID Metadata Document URL the suite expects a client that
/// has one to use (its `auth/basic-cimd` scenario).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Where the mock authorization server redirects; never listened on: the
/// browser below reads the redirect instead of following it.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// A user who approves at once: follows the authorization URL to the
/// authorization server's redirect and hands that back.
struct ApprovingUser {
    agent: ureq::Agent,
}

impl Browser for ApprovingUser {
    fn redirect_uri(&mut self) -> durable_mcp_client::Result<String> {
        Ok(REDIRECT_URI.to_string())
    }

    fn authorize(&mut self, url: &str) -> durable_mcp_client::Result<String> {
        let resp = match self.agent.get(url).call() {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(Error::Transport(e.to_string())),
        };
        resp.header("location").map(str::to_string).ok_or_else(|| {
            Error::Auth(format!(
                "the authorization server answered {} without a redirect",
                resp.status()
            ))
        })
    }
}

/// Declines whatever the server asks (the auth scenarios ask nothing).
struct Declines;

impl Handler for Declines {
    fn elicit(&mut self, _: &Value) -> Value {
        json!({"action": "decline"})
    }
    fn sample(&mut self, _: &Value) -> Value {
        json!({"role": "assistant", "content": {"type": "text", "text": ""}, "model": "none"})
    }
}

/// Runs `scenario` against the MCP server at `server_url`.
pub(crate) fn run(scenario: &str, server_url: &str, context: &Value) -> Result<(), String> {
    let str_of = |k: &str| context[k].as_str();
    let oauth = if scenario.starts_with("auth/client-credentials") {
        let (Some(id), Some(secret)) = (str_of("client_id"), str_of("client_secret")) else {
            return Err(format!(
                "{scenario}: only client_secret credentials are supported"
            ));
        };
        OAuth::client_credentials(id, secret)
    } else {
        let agent = ureq::AgentBuilder::new().redirects(0).build();
        let mut o = OAuth::new(ApprovingUser { agent })
            .with_client_name("durable-mcp-conformance")
            .with_client_metadata_url(CLIENT_METADATA_URL);
        if let Some(id) = str_of("client_id") {
            o = o.with_client(id, str_of("client_secret"));
        }
        o
    };
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    let wire = if version.as_str() >= durable_mcp_client::MODERN {
        Wire::Modern
    } else {
        Wire::Session
    };
    let mut client = Client::new(server_url, Declines)
        .with_oauth(oauth)
        .with_wire(wire)
        .with_tasks(false);
    let tools = client.list_tools().map_err(|e| e.to_string())?;
    let name = tools
        .first()
        .and_then(|t| t["name"].as_str())
        .ok_or("the server lists no tool")?
        .to_string();
    let result = client
        .call_tool(&name, json!({}))
        .map_err(|e| e.to_string())?;
    if result["isError"] == true {
        return Err(format!("{name} failed: {result}"));
    }
    Ok(())
}
