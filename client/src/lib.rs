//! A blocking MCP client that drives every flow a durable-mcp server offers
//! — and any other MCP server's: the 2026-07-28 stateless wire with its
//! multi-round-trip requests (MRTR), the tasks extension (SEP-2663),
//! 2025-11-25 sessions with SSE and `Last-Event-ID` resume, the saga
//! methods (seed 000), the streamless sketch (seed 002), and tool chaining
//! (seed 004: `_meta.nextTool`, followed with the arguments checked against
//! the listed schema, at most five calls deep and never in a cycle).
//!
//! What the server asks — a form, a completion, the roots — is answered by
//! the [`Handler`] the caller supplies. The `durable-mcp` CLI is this
//! client with a handler that asks a person at the terminal.
//!
//! ```no_run
//! use durable_mcp_client::{Client, Handler};
//! use serde_json::{json, Value};
//!
//! struct Staging;
//! impl Handler for Staging {
//!     fn elicit(&mut self, _params: &Value) -> Value {
//!         json!({"action": "accept", "content": {"target": "staging"}})
//!     }
//!     fn sample(&mut self, _params: &Value) -> Value {
//!         json!({"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "me"})
//!     }
//! }
//!
//! let mut client = Client::new("http://127.0.0.1:8787/mcp", Staging);
//! let result = client.call_tool("deploy", json!({"service": "api"}))?;
//! println!("{}", result["content"][0]["text"]);
//! # Ok::<(), durable_mcp_client::Error>(())
//! ```
//!
//! # Layout
//! - `lib.rs`: [`Client`], [`Handler`], [`Wire`], [`Error`].
//! - `transport.rs`: HTTP and the JSON-or-SSE replies.
//! - `modern.rs`: the 2026-07-28 wire, MRTR and tasks; `rounds.rs`: MRTR
//!   rounds one at a time.
//! - `session.rs`: 2025-11-25 sessions.
//! - `seeds.rs`: the saga methods and the streamless sketch.
//! - `chain.rs`: following `_meta.nextTool`.
//! - `schema.rs`, `sse.rs`: a small JSON Schema check; an SSE reader.
//! - `extra.rs`: the newer settings (protocol version, request `_meta`,
//!   elicitation defaults) and what the client learned from the server.
//! - `headers.rs`: `x-mcp-header` annotations and `Mcp-Param-*` headers.
//! - `requests.rs`: any request, `server/discover`, resources, prompts.
//! - `listen.rs`: a session's `GET` stream read beside a call's.

mod chain;
pub mod headers;
mod listen;
mod modern;
pub mod oauth;
mod requests;
mod rounds;
pub mod schema;
mod seeds;
mod session;
mod settings;
pub mod sse;
#[cfg(test)]
mod tests;
mod transport;
mod versions;

use serde_json::{json, Value};

pub use chain::{next_tool, ChainError, Step, MAX_CHAIN};
pub use modern::Started;
pub use rounds::{InputRequired, Retry, Round};
pub use versions::{SESSION_VERSIONS, STATELESS_VERSIONS};

/// The 2026-07-28 protocol version.
pub const MODERN: &str = "2026-07-28";
/// The 2025-11-25 protocol version.
pub const SESSION: &str = "2025-11-25";
/// The tasks extension's identifier.
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// Answers what a server asks in the middle of a call.
pub trait Handler {
    /// An `elicitation/create`: returns `{action, content?}`.
    fn elicit(&mut self, params: &Value) -> Value;
    /// A `sampling/createMessage`: returns `{role, content, model}`.
    fn sample(&mut self, params: &Value) -> Value;
    /// A `roots/list`: returns `{roots: [...]}` (none by default).
    fn roots(&mut self) -> Value {
        json!({"roots": []})
    }
    /// A notification: progress, a log message, a task's new status
    /// (`notifications/tasks`, also made up from each poll of a task).
    fn notify(&mut self, _message: &Value) {}
}

/// How calls travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// 2026-07-28 if the server answers `server/discover`, else a session.
    Auto,
    /// The 2026-07-28 stateless wire (MRTR, tasks).
    Modern,
    /// A 2025-11-25 session (SSE, `Last-Event-ID`).
    Session,
    /// The saga methods (seed 000).
    Saga,
    /// The streamless sketch (seed 002).
    Sketch,
}

impl std::str::FromStr for Wire {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Ok(match s {
            "auto" => Wire::Auto,
            "modern" => Wire::Modern,
            "session" => Wire::Session,
            "saga" => Wire::Saga,
            "sketch" => Wire::Sketch,
            _ => {
                return Err(format!(
                    "unknown wire {s:?} (auto, modern, session, saga, sketch)"
                ))
            }
        })
    }
}

/// What went wrong.
#[derive(Debug)]
pub enum Error {
    /// The server could not be reached, or answered something that is not
    /// MCP (an HTTP error without a JSON-RPC body, unreadable JSON).
    Transport(String),
    /// A JSON-RPC error from the server.
    Rpc {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
        /// Its data, if any.
        data: Option<Value>,
    },
    /// The server broke the protocol (a reply of the wrong shape).
    Protocol(String),
    /// A task ended without a result (`failed` has its error as `Rpc`).
    Task(String),
    /// A chain of calls the client refused to follow.
    Chain(ChainError),
    /// Signing in failed, or was refused (the server's metadata did not
    /// check out, the user or the authorization server said no, a step-up
    /// that never ends).
    Auth(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Transport(m) => write!(f, "transport: {m}"),
            Error::Rpc { code, message, .. } => write!(f, "server error {code}: {message}"),
            Error::Protocol(m) => write!(f, "protocol: {m}"),
            Error::Task(m) => write!(f, "task: {m}"),
            Error::Chain(c) => write!(f, "chain: {c}"),
            Error::Auth(m) => write!(f, "sign-in: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// A result or an [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// An MCP client for one server.
pub struct Client {
    url: String,
    agent: ureq::Agent,
    wire: Wire,
    handler: Box<dyn Handler>,
    next_id: u64,
    /// The 2025-11-25 session, once initialized.
    session: Option<String>,
    /// Declare the tasks extension on calls (2026-07-28 wire).
    tasks: bool,
    /// The listed tools, once asked (to check chained calls).
    tools: Option<Vec<Value>>,
    /// Declare resumable requests in a session and resume with them.
    resumable: bool,
    /// The resume token of the session call in flight.
    resume_token: Option<String>,
    /// The newer settings and what was learned from the server.
    settings: settings::Settings,
    /// How to sign in when the server asks (none: a 401 is an error).
    sign_in: Option<std::cell::RefCell<oauth::SignIn>>,
    /// Declare URL-mode elicitation (`elicitation.url`).
    url_elicitation: bool,
}

impl Client {
    /// A client of the MCP endpoint `url`, answering with `handler`.
    pub fn new(url: &str, handler: impl Handler + 'static) -> Self {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(std::time::Duration::from_secs(10))
            .timeout_read(std::time::Duration::from_secs(120))
            .build();
        Self {
            url: url.to_string(),
            agent,
            wire: Wire::Auto,
            handler: Box::new(handler),
            next_id: 0,
            session: None,
            tasks: true,
            tools: None,
            resumable: false,
            resume_token: None,
            settings: settings::Settings::default(),
            sign_in: None,
            url_elicitation: false,
        }
    }

    /// Declares URL-mode elicitation (`elicitation.url`, default off): the
    /// handler's `elicit` then also gets `{mode: "url", url, message}`
    /// requests, answered `accept` once the user is done at the URL (a
    /// server that waits for its page asks again until the page says so).
    pub fn with_url_elicitation(mut self, on: bool) -> Self {
        self.url_elicitation = on;
        self
    }

    /// The `elicitation` capability this client declares.
    pub(crate) fn elicitation_caps(&self) -> Value {
        if self.url_elicitation {
            json!({"form": {}, "url": {}})
        } else {
            json!({"form": {}})
        }
    }

    /// Signs in with `oauth` whenever the server asks (a 401 or a 403
    /// `insufficient_scope`): see [`oauth`].
    pub fn with_oauth(mut self, oauth: oauth::OAuth) -> Self {
        self.sign_in = Some(std::cell::RefCell::new(oauth::SignIn::new(oauth)));
        self
    }

    /// Signs in now, whether or not a token is kept (what `durable-mcp
    /// login` does): discovery from the server's well-known metadata.
    pub fn sign_in(&mut self) -> Result<()> {
        let s = self
            .sign_in
            .as_ref()
            .ok_or_else(|| Error::Auth("no OAuth configured".into()))?;
        s.borrow_mut().authorize(&self.url, None)
    }

    /// Forgets the kept grant (what `durable-mcp logout` does).
    pub fn sign_out(&mut self) -> Result<()> {
        match &self.sign_in {
            Some(s) => s.borrow_mut().forget(&self.url),
            None => Ok(()),
        }
    }

    /// The grant in use, if signed in.
    pub fn grant(&self) -> Option<oauth::Grant> {
        self.sign_in
            .as_ref()
            .and_then(|s| s.borrow_mut().grant(&self.url).cloned())
    }

    /// The access token kept for this server, refreshed first when it has
    /// expired (or is about to) and can be; `None` if not signed in. For
    /// requests to the same server that are not MCP (its admin API, say):
    /// it never starts a sign-in, and a failed refresh gives the old token,
    /// which the server then refuses.
    pub fn access_token(&self) -> Option<String> {
        self.sign_in.as_ref()?.borrow_mut().bearer(&self.url)
    }

    /// In a 2025-11-25 session, declares resumable requests (seed 001) and
    /// picks a call's stream up with `requests/resume` (its original id and
    /// resume token) instead of `GET` + `Last-Event-ID`.
    pub fn with_resumable_requests(mut self, on: bool) -> Self {
        self.resumable = on;
        self
    }

    /// Uses `wire` (default [`Wire::Auto`]).
    pub fn with_wire(mut self, wire: Wire) -> Self {
        self.wire = wire;
        self
    }

    /// Whether calls declare the tasks extension (default yes): a server
    /// may then answer with a task, which the client polls to its end.
    pub fn with_tasks(mut self, on: bool) -> Self {
        self.tasks = on;
        self
    }

    /// The wire in use, deciding [`Wire::Auto`] on first use: 2026-07-28 if
    /// the server answers `server/discover`, a 2025-11-25 session if not.
    pub fn wire(&mut self) -> Result<Wire> {
        if self.wire == Wire::Auto {
            self.wire = match self.modern_request("server/discover", json!({}), None) {
                Ok(_) => Wire::Modern,
                // Signing in failed: that is no answer about the wire.
                Err(e @ Error::Auth(_)) => return Err(e),
                Err(_) => Wire::Session,
            };
        }
        Ok(self.wire)
    }

    /// The server's tools (`tools/list`, every page).
    pub fn list_tools(&mut self) -> Result<Vec<Value>> {
        let mut tools = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let mut params = json!({});
            if let Some(c) = &cursor {
                params["cursor"] = c.clone();
            }
            // The seed wires only carry calls: listing is 2026-07-28.
            let page = match self.wire()? {
                Wire::Session => self.session_request("tools/list", params)?,
                _ => self.modern_request("tools/list", params, None)?,
            };
            tools.extend(page["tools"].as_array().cloned().unwrap_or_default());
            match page.get("nextCursor") {
                Some(c) if !c.is_null() => cursor = Some(c.clone()),
                _ => break,
            }
        }
        let tools = self.keep_valid_tools(tools);
        self.tools = Some(tools.clone());
        Ok(tools)
    }

    /// Calls `name` with `arguments` and drives the call to its end on the
    /// wire in use: answers every question with the handler (MRTR rounds,
    /// saga steps, sketch dependents, session requests), polls a task until
    /// it ends. Returns the `CallToolResult` (a tool error is a result with
    /// `isError`, not an `Err`).
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Value> {
        match self.wire()? {
            Wire::Modern | Wire::Auto => self.modern_call(name, arguments),
            Wire::Session => self.session_call(name, arguments),
            Wire::Saga => self.saga_call(name, arguments),
            Wire::Sketch => self.sketch_call(name, arguments),
        }
    }

    /// Ends the session, if one was opened (`DELETE`).
    pub fn close(&mut self) {
        if let Some(id) = self.session.take() {
            let mut req = self
                .agent
                .delete(&self.url)
                .set("mcp-session-id", &id)
                .set("mcp-protocol-version", SESSION);
            if let Some(b) = self.bearer() {
                req = req.set("authorization", &b);
            }
            let _ = req.call();
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Answers one server→client request with the handler.
    fn answer(&mut self, method: &str, params: &Value) -> Value {
        match method {
            "elicitation/create" => self.elicit(params),
            "sampling/createMessage" => self.handler.sample(params),
            "roots/list" => self.handler.roots(),
            _ => json!({}),
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.close();
    }
}

/// The README's example compiles too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
