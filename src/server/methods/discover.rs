//! `server/discover`, and the capabilities this server declares.

use serde_json::{json, Value};

use super::lists::add_cache_fields;
use crate::protocol::versions::{META_SERVER_INFO, TASKS_EXTENSION};
use crate::server::Server;

/// `server/discover`: versions, capabilities, identity.
pub(super) fn discover(server: &Server) -> Value {
    let mut result = json!({
        "resultType": "complete",
        "supportedVersions": crate::server::supported_versions(),
        "capabilities": modern_capabilities(server),
        "_meta": {META_SERVER_INFO: {"name": server.config.name, "version": server.config.version}},
    });
    if let Some(i) = &server.config.instructions {
        result["instructions"] = json!(i);
    }
    add_cache_fields(server, &mut result);
    result
}

/// What this server supports on the stateless wire: list changes reach
/// `subscriptions/listen` streams.
pub(crate) fn capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"listChanged": true},
        "prompts": {"listChanged": true},
        "completions": {},
        "logging": {},
    })
}

/// The stateless wire's capabilities, plus the tasks extension when a tool
/// can run as a task, MCP Apps when a view is served, skills when a skill is.
fn modern_capabilities(server: &Server) -> Value {
    let mut caps = capabilities();
    if server.registry.tools.iter().any(|t| t.task.is_some()) {
        caps["extensions"] = json!({ TASKS_EXTENSION: {} });
    }
    if server.registry.has_views() {
        crate::app::declare_ui_extension(&mut caps);
    }
    crate::server::declare_skills(&server.registry, &mut caps);
    caps
}
