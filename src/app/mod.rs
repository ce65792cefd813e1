//! What users build with: the [`Registry`] of tools, resources and prompts,
//! typed results, schemas derived from types, and the Worker's
//! [`Bindings`] an entry function reads its configuration from.
//!
//! # Layout
//! - `tool.rs`: a tool (schemas derived from its argument and result types).
//! - `result.rs`: `CallToolResult`, content blocks, `Json<T>` structured output.
//! - `registry.rs`: the registry, resources, templates, prompts, shared state.
//! - `bindings.rs`: the Worker's vars, secrets and bindings.
//! - `page.rs`: pages served beside `/mcp` (where URL-mode elicitations send the user).
//! - `ui.rs`: MCP Apps views (`ui://` resources) and the tool metadata naming them.
//! - `skills/`: skills (SEP-2640): a `SKILL.md` and its files, `include_skills!`.

mod bindings;
pub mod page;
mod registry;
mod result;
pub mod skills;
mod tool;
pub mod ui;

pub use bindings::Bindings;
pub use page::{Cookie, Page, PageReply, Question};
pub use registry::{Completer, Prompt, Registry, Resource, ResourceTemplate};
pub use result::{content, text, CallToolResult, IntoToolResult, Json, NEXT_TOOL};
pub use skills::{Skill, SkillError};
pub(crate) use tool::{earlier_body, Body, KeptBody};
pub use tool::{TaskSupport, Tool};
pub(crate) use ui::declare_extension as declare_ui_extension;
pub use ui::View;
