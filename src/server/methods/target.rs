//! What a `tools/call`, `prompts/get` or `resources/read` runs: the tool,
//! prompt, resource or template it names.

use serde_json::{json, Map, Value};

use super::string_param;
use crate::error::{ErrorKind, McpError};
use crate::protocol::Method;
use crate::server::request::object_param;
use crate::server::{Server, Target};

/// What a `tools/call`, `prompts/get` or `resources/read` runs, and with
/// which arguments. `found`: where the tool a `tools/call` names is in the
/// registry, when a step before looked it up.
pub(crate) fn call_target<'a>(
    server: &'a Server,
    method: Method,
    p: &Map<String, Value>,
    found: Option<usize>,
) -> Result<(Target<'a>, Value), McpError> {
    match method {
        Method::ToolsCall => {
            let name = string_param(p, "name")?;
            let tool = match found {
                Some(i) => server.registry.tools.get(i),
                None => server.registry.find_tool(name),
            };
            let tool = tool.ok_or_else(|| {
                if p.contains_key("requestState") {
                    // A paused call of a tool this deploy does not serve:
                    // the call is kept for a rollback.
                    crate::engine::tool_gone(name)
                } else {
                    McpError::new(ErrorKind::InvalidParams, format!("Unknown tool: {name}"))
                }
            })?;
            Ok((
                Target::Tool(tool),
                Value::Object(object_param(p, "arguments")?),
            ))
        }
        Method::PromptsGet => {
            let name = string_param(p, "name")?;
            let prompt = server.registry.find_prompt(name).ok_or_else(|| {
                McpError::new(ErrorKind::InvalidParams, format!("Unknown prompt: {name}"))
            })?;
            Ok((
                Target::Prompt(prompt),
                Value::Object(object_param(p, "arguments")?),
            ))
        }
        Method::ResourcesRead => {
            let uri = string_param(p, "uri")?;
            Ok((find_resource(server, uri)?, json!({ "uri": uri })))
        }
        m => Err(McpError::method_not_found(m.name())),
    }
}

fn find_resource<'a>(server: &'a Server, uri: &str) -> Result<Target<'a>, McpError> {
    if let Some(r) = server.registry.resources.iter().find(|r| r.uri == uri) {
        return Ok(Target::Resource(r));
    }
    if let Some(r) = crate::server::skills::file(&server.registry, uri) {
        return Ok(Target::Resource(r));
    }
    for t in &server.registry.templates {
        if t.match_uri(uri).is_some() {
            return Ok(Target::Template(t));
        }
    }
    Err(McpError::new(
        ErrorKind::ResourceNotFound,
        format!("Resource not found: {uri}"),
    )
    .with_data(json!({"uri": uri})))
}
