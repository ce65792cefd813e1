//! The crate's one error type and the one place it becomes a JSON-RPC error
//! and an HTTP status.

use serde_json::{json, Value};

/// What went wrong, by class. Each class has exactly one JSON-RPC code and one
/// HTTP status (see [`McpError::code`] and [`McpError::http_status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The body is not JSON (`-32700`, 400).
    Parse,
    /// The JSON is not a valid JSON-RPC request (`-32600`, 400).
    InvalidRequest,
    /// No such method, or a method removed in this protocol version (`-32601`, 404).
    MethodNotFound,
    /// Parameters missing or wrong, including `_meta` (`-32602`, 400).
    InvalidParams,
    /// A sealed state token was refused (`-32602`, 400).
    InvalidState,
    /// A `Last-Event-ID` naming a stream the session does not have
    /// (`-32011`, 404).
    StreamNotFound,
    /// A path other than the MCP endpoint (`-32600`, 404).
    UnknownPath,
    /// A resource that does not exist (`-32602` with `data.uri`, SEP-2164; 404).
    ResourceNotFound,
    /// An HTTP header disagrees with the body (`-32020`, 400).
    HeaderMismatch,
    /// The tool needs a client capability that was not declared (`-32021`, 400).
    MissingCapability,
    /// The request needs the user at a URL first, and the client cannot be
    /// sent a URL-mode elicitation (`-32042`, 400; `data.elicitations`).
    UrlElicitationRequired,
    /// The protocol version is not one we speak (`-32022`, 400).
    UnsupportedVersion,
    /// `Origin` or `Host` not allowed (`-32600`, 403).
    Forbidden,
    /// No or bad bearer token (`-32600`, 401).
    Unauthorized,
    /// A valid token without the scopes the operation needs (`-32600`,
    /// 403, with an `insufficient_scope` challenge).
    InsufficientScope,
    /// The body is over the size limit (`-32600`, 413).
    TooLarge,
    /// The HTTP method is not served here (`-32600`, 405).
    MethodNotAllowed,
    /// The `Accept` header does not admit our reply (`-32600`, 406).
    NotAcceptable,
    /// The `Content-Type` is not JSON (`-32600`, 415).
    UnsupportedMediaType,
    /// A retry of a round that another retry is running right now
    /// (`-32010`, 409): try again shortly.
    Conflict,
    /// An unknown, expired or deleted session (`-32001`, 404): re-initialize.
    SessionNotFound,
    /// A request the server cancelled (`-32800`, as LSP's RequestCancelled).
    RequestCancelled,
    /// The server is misconfigured or broke (`-32603`, 500).
    Internal,
    /// The tool's code changed since the call paused in a way the call
    /// cannot be replayed under (`-32050`, 409; `data` names the tool and
    /// the key): the call is kept, and the same request continues it
    /// after a rollback or a fixing deploy.
    CodeChanged,
    /// Something the request needs is down for now, the authorization
    /// server's keys (`-32603`, 503; the reply carries `Retry-After`, and
    /// `data.retryAfter` in seconds).
    Unavailable,
    /// A limit on the caller was reached (`-32013`, 429; the reply carries
    /// `Retry-After`, and `data` names the limit, its scope and
    /// `retryAfter` in seconds). Nothing ran and nothing was stored. The
    /// code is in the band 2026-07-28 leaves to implementations
    /// (-32000..-32019; -32020..-32099 are the specification's), until a
    /// rate-limit code is specified (SEP-3304 proposes -32023).
    Limited,
}

/// An error with its class, a message for humans and optional `data`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpError {
    /// The class.
    pub kind: ErrorKind,
    /// A short human-readable message; never a secret.
    pub message: String,
    /// Structured detail (`supported` versions, `requiredCapabilities` …).
    pub data: Option<Value>,
    /// The `WWW-Authenticate` challenge an auth failure is sent with.
    pub challenge: Option<String>,
}

impl McpError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            data: None,
            challenge: None,
        }
    }

    /// Sends the error with `WWW-Authenticate: challenge`.
    pub fn with_challenge(mut self, challenge: String) -> Self {
        self.challenge = Some(challenge);
        self
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Shorthand for [`ErrorKind::InvalidParams`].
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidParams, message)
    }

    /// Shorthand for [`ErrorKind::InvalidRequest`].
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest, message)
    }

    /// Shorthand for [`ErrorKind::MethodNotFound`].
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorKind::MethodNotFound,
            format!("Method not found: {method}"),
        )
    }

    /// The answer for a path this server does not serve. It names the
    /// path without its query: an answer must not echo whatever the URL
    /// held (a token in a query string, say), and an admin path refused
    /// for want of a credential answers with this very error, so nothing
    /// tells the two apart.
    pub fn unknown_path(path: &str) -> Self {
        let bare = path.split('?').next().unwrap_or(path);
        Self::new(
            ErrorKind::UnknownPath,
            format!("Not found: {bare} is not an MCP endpoint; use /mcp"),
        )
    }

    /// Shorthand for [`ErrorKind::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// The JSON-RPC error code.
    pub fn code(&self) -> i64 {
        match self.kind {
            ErrorKind::Parse => -32700,
            ErrorKind::InvalidRequest
            | ErrorKind::Forbidden
            | ErrorKind::Unauthorized
            | ErrorKind::InsufficientScope
            | ErrorKind::TooLarge
            | ErrorKind::MethodNotAllowed
            | ErrorKind::NotAcceptable
            | ErrorKind::UnknownPath
            | ErrorKind::UnsupportedMediaType => -32600,
            ErrorKind::MethodNotFound => -32601,
            ErrorKind::InvalidParams | ErrorKind::InvalidState | ErrorKind::ResourceNotFound => {
                -32602
            }
            ErrorKind::Conflict => -32010,
            ErrorKind::CodeChanged => -32050,
            ErrorKind::StreamNotFound => -32011,
            ErrorKind::HeaderMismatch => -32020,
            ErrorKind::SessionNotFound => -32001,
            ErrorKind::RequestCancelled => -32800,
            ErrorKind::MissingCapability => -32021,
            ErrorKind::UrlElicitationRequired => -32042,
            ErrorKind::UnsupportedVersion => -32022,
            ErrorKind::Internal | ErrorKind::Unavailable => -32603,
            ErrorKind::Limited => -32013,
        }
    }

    /// The HTTP status this error is sent with.
    pub fn http_status(&self) -> u16 {
        match self.kind {
            ErrorKind::Parse
            | ErrorKind::InvalidRequest
            | ErrorKind::InvalidParams
            | ErrorKind::InvalidState
            | ErrorKind::HeaderMismatch
            | ErrorKind::MissingCapability
            | ErrorKind::UrlElicitationRequired
            | ErrorKind::UnsupportedVersion
            | ErrorKind::RequestCancelled => 400,
            ErrorKind::Unauthorized => 401,
            ErrorKind::Forbidden | ErrorKind::InsufficientScope => 403,
            ErrorKind::MethodNotFound
            | ErrorKind::StreamNotFound
            | ErrorKind::UnknownPath
            | ErrorKind::ResourceNotFound
            | ErrorKind::SessionNotFound => 404,
            ErrorKind::MethodNotAllowed => 405,
            ErrorKind::NotAcceptable => 406,
            ErrorKind::Conflict | ErrorKind::CodeChanged => 409,
            ErrorKind::TooLarge => 413,
            ErrorKind::Limited => 429,
            ErrorKind::UnsupportedMediaType => 415,
            ErrorKind::Internal => 500,
            ErrorKind::Unavailable => 503,
        }
    }

    /// The JSON-RPC error object.
    pub fn to_error_object(&self) -> Value {
        let mut obj = json!({"code": self.code(), "message": self.message});
        if let Some(data) = &self.data {
            obj["data"] = data.clone();
        }
        obj
    }

    /// The whole JSON-RPC response for request `id` (`null` when unknown).
    pub fn to_response(&self, id: Option<&Value>) -> Value {
        json!({"jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": self.to_error_object()})
    }
}

impl std::fmt::Display for McpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code())
    }
}

impl std::error::Error for McpError {}

/// The crate's result type.
pub type Result<T, E = McpError> = std::result::Result<T, E>;
