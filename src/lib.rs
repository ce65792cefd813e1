//! # durable-mcp
//!
//! MCP servers on Cloudflare Workers whose tools can stop in the middle of a
//! call to ask the client something — a form (elicitation), a completion from
//! its model (sampling), its roots — and carry on afterwards, with the pause
//! persisted rather than held in memory.
//!
//! Everything but [`worker`] is sans-IO: time, randomness, keys and storage
//! come in as arguments, so the whole server runs under `cargo test`.
//!
//! # Layout
//! - [`protocol`]: JSON-RPC and MCP message shapes.
//! - [`engine`]: the replay engine, `Cx` and the journal.
//! - [`server`]: classify a request, dispatch it, build the reply.
//! - [`session`]: the 2025-11-25 session wire (one Durable Object per session).
//! - [`http`]: Streamable HTTP framing as pure functions.
//! - [`token`]: sealed state tokens.
//! - [`store`]: storage of durable calls (a sync trait + in-memory).
//! - [`tools`]: example tools and the conformance fixtures.
//! - `worker` (wasm32 only): the Cloudflare glue.

pub mod engine;
pub mod error;
pub mod http;
pub mod protocol;
pub mod server;
pub mod session;
pub mod store;
pub mod token;
pub mod tools;

#[cfg(target_arch = "wasm32")]
mod worker;

pub use engine::{ask, form, Cx, ElicitResult, SampleResult, ToolError};
pub use error::{ErrorKind, McpError};
