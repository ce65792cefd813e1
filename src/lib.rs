#![doc = include_str!("../docs/GUIDE.md")]
//!
//! # Layout of the crate
//! - [`app`]: what you build with: [`Registry`], [`Tool`], typed results, [`Bindings`],
//!   MCP Apps views ([`app::ui`]), skills ([`app::skills`], [`include_skills!`]).
//! - [`auth`]: who is calling: the bearer credential, `API_TOKENS`.
//! - [`engine`]: the replay engine, [`Cx`] and the journal.
//! - [`kept`]: a kept call's one lifecycle: its status and the machine that moves it.
//! - [`server`]: classify a request, dispatch it, build the reply.
//! - [`session`]: the 2025-11-25 session wire (one Durable Object per session).
//! - [`host`]: which Durable Object serves what; what an object does.
//! - [`effects`]: the one reply out of the core: a response plus effects.
//! - [`http`]: Streamable HTTP framing as pure functions.
//! - [`protocol`]: JSON-RPC and MCP message shapes.
//! - [`outbound`]: calling other services from a tool (`fetch` in the Worker).
//! - [`schema`]: JSON Schemas derived from types; the flat-form check.
//! - [`token`]: sealed state tokens.
//! - [`store`]: storage of durable calls (a sync trait + in-memory).
//! - [`task`] (in [`server`]): the tasks extension: a call that goes on in its own Durable Object.
//! - [`testing`]: a test server that routes and applies effects like the Worker.
//! - `worker` (wasm32, feature `worker`): the Cloudflare glue behind [`entry!`].

pub mod admin;
pub mod app;
pub mod auth;
pub mod effects;
pub mod elicitation;
pub mod engine;
mod entry;
pub mod error;
pub mod host;
pub mod http;
pub mod index;
mod json;
pub mod kept;
pub mod limits;
pub mod outbound;
pub mod protocol;
pub mod replay;
pub mod schema;
pub mod server;
pub mod session;
pub mod store;
pub mod testing;
pub mod token;
pub mod trace;
pub mod vec_map;

/// The tasks extension (a part of the [`server`]; also here for short paths).
pub use server::task;

#[cfg(all(feature = "worker", target_arch = "wasm32"))]
#[doc(hidden)]
pub mod worker;

pub use app::{
    content, text, Bindings, CallToolResult, Cookie, Json, Page, PageReply, Prompt, Question,
    Registry, Resource, ResourceTemplate, TaskSupport, Tool, View,
};
pub use app::{Skill, SkillError};
pub use engine::{
    ask, form, Cx, ElicitResult, Elicitation, SampleResult, ToolError, UrlCompletion,
    UrlElicitation,
};
#[doc(hidden)]
pub use entry::check_entry;
pub use entry::IntoRegistry;
pub use error::{ErrorKind, McpError};
pub use protocol::{ListKind, LogLevel};

/// The README's examples compile too (they use every feature:
/// `cargo test --workspace` builds them, as the fixtures worker does).
#[cfg(all(doctest, feature = "page-secrets"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
