//! What users build with: the [`Registry`] of tools, resources and prompts,
//! typed results, schemas derived from types, and the Worker's
//! [`Bindings`] an entry function reads its configuration from.
//!
//! # Layout
//! - `tool.rs`: a tool (schemas derived from its argument and result types).
//! - `result.rs`: `CallToolResult`, content blocks, `Json<T>` structured output.
//! - `registry.rs`: the registry, resources, templates, prompts, shared state.
//! - `bindings.rs`: the Worker's vars, secrets and bindings.

mod bindings;
mod registry;
mod result;
mod tool;

pub use bindings::Bindings;
pub use registry::{Completer, Prompt, Registry, Resource, ResourceTemplate};
pub use result::{content, text, CallToolResult, IntoToolResult, Json, NEXT_TOOL};
pub use tool::{TaskSupport, Tool};
