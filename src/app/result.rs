//! What a tool returns: [`CallToolResult`], content blocks, and typed
//! results ([`Json`]) whose `outputSchema` is derived from their type.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::engine::ToolError;

/// The result of a tool call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallToolResult {
    /// Content blocks (`text`, `image`, `audio`, `resource_link`, `resource`).
    pub content: Vec<Value>,
    /// Machine-readable output, matching the tool's `outputSchema`.
    pub structured_content: Option<Value>,
    /// True when the tool failed (the model sees the content as an error).
    pub is_error: bool,
    /// `_meta` of the result (tool chaining puts `nextTool` here).
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A result with these content blocks.
    pub fn new(content: Vec<Value>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A failed result with one text block.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![content::text(message)],
            is_error: true,
            ..Self::default()
        }
    }

    /// Asks the client to call `tool` next with `arguments` (tool chaining,
    /// seed 004: `_meta.nextTool`). When the tool returns, the runtime
    /// checks that this server lists `tool` and that `arguments` fit its
    /// input schema; a chain that does not is refused as a tool error
    /// rather than sent to the client broken.
    pub fn with_next_tool(mut self, tool: &str, arguments: impl Serialize) -> Self {
        let arguments = serde_json::to_value(arguments).unwrap_or(Value::Null);
        self.meta.get_or_insert_with(Map::new).insert(
            NEXT_TOOL.into(),
            json!({"tool": tool, "arguments": arguments}),
        );
        self
    }

    /// The chained call this result asks for: `(tool, arguments)`.
    pub fn next_tool(&self) -> Option<(&str, &Value)> {
        let next = self.meta.as_ref()?.get(NEXT_TOOL)?;
        Some((
            next.get("tool")?.as_str()?,
            next.get("arguments").unwrap_or(&Value::Null),
        ))
    }

    /// Adds `structuredContent`.
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured_content = Some(value);
        self
    }

    /// The JSON result object (without `resultType`, which the wire adds).
    pub fn to_json(&self) -> Value {
        self.clone().into_json()
    }

    /// [`to_json`](Self::to_json), moving the content in rather than
    /// copying it.
    pub fn into_json(self) -> Value {
        let mut v = Map::new();
        v.insert("content".into(), Value::Array(self.content));
        if let Some(s) = self.structured_content {
            v.insert("structuredContent".into(), s);
        }
        if self.is_error {
            v.insert("isError".into(), Value::Bool(true));
        }
        if let Some(m) = self.meta {
            v.insert("_meta".into(), Value::Object(m));
        }
        Value::Object(v)
    }
}

/// The `_meta` key of a chained call (seed 004).
pub const NEXT_TOOL: &str = "nextTool";

/// A tool result with one text block: `Ok(text("done"))`.
pub fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::new(vec![content::text(s)])
}

/// Content block constructors.
pub mod content {
    use serde_json::{json, Value};

    /// `{type: "text", text}`.
    pub fn text(s: impl Into<String>) -> Value {
        crate::protocol::object([("type", "text".into()), ("text", Value::String(s.into()))])
    }

    /// `{type: "image", data (base64), mimeType}`.
    pub fn image(base64: &str, mime_type: &str) -> Value {
        json!({"type": "image", "data": base64, "mimeType": mime_type})
    }

    /// `{type: "audio", data (base64), mimeType}`.
    pub fn audio(base64: &str, mime_type: &str) -> Value {
        json!({"type": "audio", "data": base64, "mimeType": mime_type})
    }

    /// An embedded text resource.
    pub fn embedded_text(uri: &str, mime_type: &str, text: &str) -> Value {
        json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "text": text}})
    }

    /// A link to a resource.
    pub fn resource_link(uri: &str, name: &str) -> Value {
        json!({"type": "resource_link", "uri": uri, "name": name})
    }
}

/// What a tool body may return: a [`CallToolResult`], a [`Json`] value
/// (structured output with a derived `outputSchema`), or plain text.
pub trait IntoToolResult: 'static {
    /// The `outputSchema` this kind of result promises, if any.
    fn output_schema() -> Option<Value> {
        None
    }

    /// The result.
    fn into_tool_result(self) -> Result<CallToolResult, ToolError>;
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
        Ok(self)
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
        Ok(text(self))
    }
}

/// Structured output: `Ok(Json(Sum { sum: 3.0 }))` answers with
/// `structuredContent` (and the same JSON as a text block, for clients that
/// read only content), and the tool lists `outputSchema` derived from `T`.
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema + 'static> IntoToolResult for Json<T> {
    fn output_schema() -> Option<Value> {
        Some(crate::schema::object_schema::<T>())
    }

    fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
        let value = serde_json::to_value(&self.0)
            .map_err(|e| ToolError::failed(format!("the result does not serialize: {e}")))?;
        if !value.is_object() {
            return Err(ToolError::failed(
                "structured output must be a JSON object (a struct)",
            ));
        }
        Ok(text(value.to_string()).with_structured(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_reads_the_same_whether_moved_or_copied() {
        let r = text("hi")
            .with_structured(json!({"n": 1}))
            .with_next_tool("add", json!({"a": 1}));
        let mut failed = CallToolResult::error("no");
        failed.content.push(content::text("more"));
        let want = json!({
            "content": [{"type": "text", "text": "hi"}],
            "structuredContent": {"n": 1},
            "_meta": {NEXT_TOOL: {"tool": "add", "arguments": {"a": 1}}},
        });
        assert_eq!(r.to_json(), want);
        assert_eq!(r.into_json(), want);
        assert_eq!(failed.to_json()["isError"], json!(true));
        assert_eq!(failed.into_json()["content"][1]["text"], "more");
    }
}
