//! JSON-RPC and MCP message shapes for both protocol eras.
//!
//! # Layout
//! - `jsonrpc.rs`: parsing one message, building replies.
//! - `versions.rs`: protocol versions and the `_meta` keys of 2026-07-28.
//! - `kinds.rs`: log levels and list kinds.
//! - `method.rs`: every method a client sends, named once.
//! - `params.rs`: each method's params, typed.

pub mod jsonrpc;
mod kinds;
pub mod method;
pub mod params;
pub mod versions;

pub use jsonrpc::{
    notification, object, parse_message, parse_value, result_bytes, result_response, Message,
    Notification, Request, Response,
};
pub use kinds::{ListKind, LogLevel};
pub use method::Method;
pub use params::ClientRequest;
