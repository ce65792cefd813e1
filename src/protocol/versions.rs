//! Protocol versions we speak, and the reserved `_meta` keys of 2026-07-28.

/// The stateless protocol: every request carries its version in `_meta`.
pub const MODERN: &str = "2026-07-28";

/// The session protocol most clients in the field still speak.
pub const SESSION: &str = "2025-11-25";

/// Older session-era versions a client may still ask for in `initialize`.
pub const SESSION_OLDER: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

/// Versions served on the stateless wire, newest first.
pub const MODERN_VERSIONS: [&str; 1] = [MODERN];

/// `_meta` key: the protocol version of this request (its presence marks a 2026 request).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the lowest log level the client wants for this request.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key: the server's name and version (in `server/discover`).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key on `subscriptions/listen` frames.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The tasks extension's identifier.
pub const EXT_TASKS: &str = "io.modelcontextprotocol/tasks";

/// The header that names a 2025-11-25 session.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// Whether `id` can name a session: the ids we mint are 32 hex digits; we
/// accept up to 64 ASCII letters and digits.
pub fn is_session_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The tasks extension's identifier (SEP-2663), under `extensions` in
/// client and server capabilities.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
