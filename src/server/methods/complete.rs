//! `completion/complete`.

use serde_json::{json, Value};

use crate::error::McpError;
use crate::protocol::ClientRequest;
use crate::server::Server;

/// `completion/complete` for prompt arguments and template variables.
pub(super) fn complete(server: &Server, p: &ClientRequest) -> Result<Value, McpError> {
    let p = match p {
        ClientRequest::Complete(p) => p,
        other => return Err(other.unusable()),
    };
    let arg_name = p.argument.name.as_str();
    let value = p.argument.value.as_deref().unwrap_or("");
    let context_args = (p.context.as_ref())
        .and_then(|c| c.arguments.clone())
        .unwrap_or_default();
    let reference = &p.reference;
    let missing =
        |key: &str| McpError::invalid_params(format!("Invalid params: ref.{key} must be a string"));
    let completer = match reference.kind.as_str() {
        "ref/prompt" => {
            let name = reference.name.as_deref().ok_or_else(|| missing("name"))?;
            let prompt = server
                .registry
                .find_prompt(name)
                .ok_or_else(|| McpError::invalid_params(format!("Unknown prompt: {name}")))?;
            prompt.completer.clone()
        }
        "ref/resource" => {
            let uri = reference.uri.as_deref().ok_or_else(|| missing("uri"))?;
            server
                .registry
                .templates
                .iter()
                .find(|t| t.template == uri)
                .and_then(|t| t.completer.clone())
        }
        _ => {
            return Err(McpError::invalid_params(
                "Invalid params: ref.type must be ref/prompt or ref/resource",
            ))
        }
    };
    let mut values = completer
        .map(|c| c(arg_name, value, &context_args))
        .unwrap_or_default();
    let total = values.len();
    values.truncate(100);
    Ok(json!({
        "resultType": "complete",
        "completion": {"values": values, "total": total, "hasMore": total > 100}
    }))
}
