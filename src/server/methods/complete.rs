//! `completion/complete`.

use serde_json::{json, Map, Value};

use super::string_param;
use crate::error::McpError;
use crate::server::request::object_param;
use crate::server::Server;

/// `completion/complete` for prompt arguments and template variables.
pub(super) fn complete(server: &Server, p: &Map<String, Value>) -> Result<Value, McpError> {
    let reference = object_param(p, "ref")?;
    let argument = object_param(p, "argument")?;
    let arg_name = string_param(&argument, "name")?;
    let value = argument.get("value").and_then(Value::as_str).unwrap_or("");
    let context = object_param(p, "context")?;
    let context_args = object_param(&context, "arguments")?;
    let completer = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = string_param(&reference, "name")?;
            let prompt = server
                .registry
                .find_prompt(name)
                .ok_or_else(|| McpError::invalid_params(format!("Unknown prompt: {name}")))?;
            prompt.completer.clone()
        }
        Some("ref/resource") => {
            let uri = string_param(&reference, "uri")?;
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
