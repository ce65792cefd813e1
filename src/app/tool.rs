//! A tool: its listing (name, schemas, description) and its handler.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use super::result::{CallToolResult, IntoToolResult};
use crate::engine::{boxed_map, BoxedHandler, Handler};
use crate::schema::object_schema;

/// A tool.
pub struct Tool {
    pub(crate) name: String,
    pub(crate) meta: Map<String, Value>,
    pub(crate) handler: BoxedHandler<CallToolResult>,
    pub(crate) durable: bool,
}

impl Tool {
    /// A tool named `name` run by `handler`, an `async fn(&mut Cx, Args) ->
    /// Result<Out, ToolError>`.
    ///
    /// - `inputSchema` is derived from `Args` (`Deserialize + JsonSchema`;
    ///   field doc comments become descriptions). `serde_json::Value` takes
    ///   any object.
    /// - The doc comment of `Args` becomes the tool's description unless
    ///   [`Tool::description`] sets one.
    /// - `Out` is a [`CallToolResult`], a `String`, or a [`Json<T>`](super::Json),
    ///   which also lists `outputSchema` derived from `T`.
    pub fn new<A, O, H>(name: &str, handler: H) -> Self
    where
        A: DeserializeOwned + JsonSchema + 'static,
        O: IntoToolResult,
        H: Handler<A, O>,
    {
        let mut meta = Map::new();
        meta.insert("name".into(), json!(name));
        let mut input = object_schema::<A>();
        if let Some(Value::String(d)) = input.as_object_mut().and_then(|m| m.remove("description"))
        {
            meta.insert("description".into(), json!(d));
        }
        meta.insert("inputSchema".into(), input);
        if let Some(output) = O::output_schema() {
            meta.insert("outputSchema".into(), output);
        }
        Self {
            name: name.to_string(),
            meta,
            handler: boxed_map(handler, O::into_tool_result),
            durable: false,
        }
    }

    /// Sets the description shown to the model.
    pub fn description(self, d: &str) -> Self {
        self.set("description", json!(d))
    }

    /// Sets the human-facing title.
    pub fn title(self, t: &str) -> Self {
        self.set("title", json!(t))
    }

    /// Replaces the derived JSON Schema of the arguments (for schemas a type
    /// cannot express).
    pub fn input_schema(self, schema: Value) -> Self {
        self.set("inputSchema", schema)
    }

    /// Sets the JSON Schema of `structuredContent` (derived for [`Json`](super::Json) results).
    pub fn output_schema(self, schema: Value) -> Self {
        self.set("outputSchema", schema)
    }

    /// Sets annotations (`readOnlyHint`, …).
    pub fn annotations(self, a: Value) -> Self {
        self.set("annotations", a)
    }

    /// Keeps the call's journal in a Durable Object between rounds (durable
    /// mode) rather than only in the sealed state token.
    pub fn durable(mut self) -> Self {
        self.durable = true;
        self
    }

    /// Sets any other field of the tool's listing.
    pub fn set(mut self, key: &str, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its `tools/list` entry.
    pub fn listing(&self) -> Value {
        Value::Object(self.meta.clone())
    }
}
