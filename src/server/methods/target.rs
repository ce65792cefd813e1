//! What a `tools/call`, `prompts/get` or `resources/read` runs: the tool,
//! prompt, resource or template it names.

use serde_json::{json, Value};

use crate::error::{ErrorKind, McpError};
use crate::protocol::{ClientRequest, Method};
use crate::server::{Server, Target};

/// What a `tools/call`, `prompts/get` or `resources/read` runs, and with
/// which arguments. `found`: where the tool a `tools/call` names is in the
/// registry, when a step before looked it up.
pub(crate) fn call_target<'a>(
    server: &'a Server,
    method: Method,
    params: &ClientRequest,
    found: Option<usize>,
) -> Result<(Target<'a>, Value), McpError> {
    match (method, params) {
        (Method::ToolsCall, ClientRequest::Call(p)) => {
            let name = p.name.as_str();
            let tool = match found {
                Some(i) => server.registry.tools.get(i),
                None => server.registry.find_tool(name),
            };
            let tool = tool.ok_or_else(|| {
                if p.request_state.is_some() {
                    // A paused call of a tool this deploy does not serve:
                    // the call is kept for a rollback.
                    crate::engine::tool_gone(name)
                } else {
                    McpError::new(ErrorKind::InvalidParams, format!("Unknown tool: {name}"))
                }
            })?;
            Ok((Target::Tool(tool), arguments(p)))
        }
        (Method::PromptsGet, ClientRequest::Call(p)) => {
            let name = p.name.as_str();
            let prompt = server.registry.find_prompt(name).ok_or_else(|| {
                McpError::new(ErrorKind::InvalidParams, format!("Unknown prompt: {name}"))
            })?;
            Ok((Target::Prompt(prompt), arguments(p)))
        }
        (Method::ResourcesRead, ClientRequest::Read(p)) => {
            let uri = p.uri.as_str();
            Ok((find_resource(server, uri)?, json!({ "uri": uri })))
        }
        (_, ClientRequest::Invalid(_)) => Err(params.unusable()),
        (m, _) => Err(McpError::method_not_found(m.name())),
    }
}

/// A call's arguments as the target gets them (absent: none).
fn arguments(p: &crate::protocol::params::CallParams) -> Value {
    Value::Object(p.arguments.clone().unwrap_or_default())
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
