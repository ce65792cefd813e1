//! What a server offers: tools, resources, resource templates and prompts.
//!
//! Each entry holds its metadata (what `*/list` shows) and a handler run by
//! the replay engine, so resources and prompts can ask the client for input
//! just like tools.

use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use crate::engine::{boxed, BoxedHandler, Handler};

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

    /// Adds `structuredContent`.
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured_content = Some(value);
        self
    }

    /// The JSON result object (without `resultType`, which the wire adds).
    pub fn to_json(&self) -> Value {
        let mut v = json!({"content": self.content});
        if let Some(s) = &self.structured_content {
            v["structuredContent"] = s.clone();
        }
        if self.is_error {
            v["isError"] = json!(true);
        }
        if let Some(m) = &self.meta {
            v["_meta"] = Value::Object(m.clone());
        }
        v
    }
}

/// A tool result with one text block: `Ok(text("done"))`.
pub fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::new(vec![content::text(s)])
}

/// Content block constructors.
pub mod content {
    use serde_json::{json, Value};

    /// `{type: "text", text}`.
    pub fn text(s: impl Into<String>) -> Value {
        json!({"type": "text", "text": s.into()})
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

/// Completes one argument: `(argument name, partial value, other arguments)`
/// to candidate values.
pub type Completer = Rc<dyn Fn(&str, &str, &Map<String, Value>) -> Vec<String>>;

/// A tool.
pub struct Tool {
    pub(crate) name: String,
    pub(crate) meta: Map<String, Value>,
    pub(crate) handler: BoxedHandler<CallToolResult>,
    pub(crate) durable: bool,
}

impl Tool {
    /// A tool named `name` run by `handler`, an `async fn(&mut Cx, Args) ->
    /// Result<CallToolResult, ToolError>` whose `Args` deserialize from the
    /// call's arguments. Its input schema defaults to an open object.
    pub fn new<A, H>(name: &str, handler: H) -> Self
    where
        A: DeserializeOwned + 'static,
        H: Handler<A, CallToolResult>,
    {
        let mut meta = Map::new();
        meta.insert("name".into(), json!(name));
        meta.insert("inputSchema".into(), json!({"type": "object"}));
        Self {
            name: name.to_string(),
            meta,
            handler: boxed(handler),
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

    /// Sets the JSON Schema of the arguments.
    pub fn input_schema(self, schema: Value) -> Self {
        self.set("inputSchema", schema)
    }

    /// Sets the JSON Schema of `structuredContent`.
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

/// A resource at a fixed URI.
pub struct Resource {
    pub(crate) uri: String,
    pub(crate) meta: Map<String, Value>,
    /// Gets `{uri}`; returns the `contents` array.
    pub(crate) handler: BoxedHandler<Vec<Value>>,
}

impl Resource {
    /// A resource at `uri` called `name`, read by `handler`.
    pub fn new<H>(uri: &str, name: &str, handler: H) -> Self
    where
        H: Handler<Value, Vec<Value>>,
    {
        let mut meta = Map::new();
        meta.insert("uri".into(), json!(uri));
        meta.insert("name".into(), json!(name));
        Self {
            uri: uri.to_string(),
            meta,
            handler: boxed(handler),
        }
    }

    /// Sets any field of the listing (`description`, `mimeType`, `title` …).
    pub fn set(mut self, key: &str, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// Its `resources/list` entry.
    pub fn listing(&self) -> Value {
        Value::Object(self.meta.clone())
    }
}

/// A family of resources named by an RFC 6570 level-1 URI template.
pub struct ResourceTemplate {
    pub(crate) template: String,
    pub(crate) meta: Map<String, Value>,
    /// Gets `{uri, <variables>}`; returns the `contents` array.
    pub(crate) handler: BoxedHandler<Vec<Value>>,
    pub(crate) completer: Option<Completer>,
}

impl ResourceTemplate {
    /// A template such as `test://template/{id}/data`.
    pub fn new<H>(template: &str, name: &str, handler: H) -> Self
    where
        H: Handler<Value, Vec<Value>>,
    {
        let mut meta = Map::new();
        meta.insert("uriTemplate".into(), json!(template));
        meta.insert("name".into(), json!(name));
        Self {
            template: template.to_string(),
            meta,
            handler: boxed(handler),
            completer: None,
        }
    }

    /// Sets any field of the listing.
    pub fn set(mut self, key: &str, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// Completes template variables.
    pub fn complete(
        mut self,
        f: impl Fn(&str, &str, &Map<String, Value>) -> Vec<String> + 'static,
    ) -> Self {
        self.completer = Some(Rc::new(f));
        self
    }

    /// Its `resources/templates/list` entry.
    pub fn listing(&self) -> Value {
        Value::Object(self.meta.clone())
    }

    /// Matches `uri` against the template: the variables, or `None`.
    pub fn match_uri(&self, uri: &str) -> Option<Map<String, Value>> {
        match_template(&self.template, uri)
    }
}

/// A prompt.
pub struct Prompt {
    pub(crate) name: String,
    pub(crate) meta: Map<String, Value>,
    /// Gets the `arguments` object; returns the `GetPromptResult` object.
    pub(crate) handler: BoxedHandler<Value>,
    pub(crate) completer: Option<Completer>,
}

impl Prompt {
    /// A prompt called `name`, built by `handler`.
    pub fn new<H>(name: &str, handler: H) -> Self
    where
        H: Handler<Value, Value>,
    {
        let mut meta = Map::new();
        meta.insert("name".into(), json!(name));
        Self {
            name: name.to_string(),
            meta,
            handler: boxed(handler),
            completer: None,
        }
    }

    /// Declares an argument.
    pub fn argument(mut self, name: &str, description: &str, required: bool) -> Self {
        let args = self.meta.entry("arguments").or_insert_with(|| json!([]));
        if let Value::Array(list) = args {
            list.push(json!({"name": name, "description": description, "required": required}));
        }
        self
    }

    /// Sets any field of the listing.
    pub fn set(mut self, key: &str, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// Completes arguments.
    pub fn complete(
        mut self,
        f: impl Fn(&str, &str, &Map<String, Value>) -> Vec<String> + 'static,
    ) -> Self {
        self.completer = Some(Rc::new(f));
        self
    }

    /// Its `prompts/list` entry.
    pub fn listing(&self) -> Value {
        Value::Object(self.meta.clone())
    }
}

/// Everything a server offers, in registration order; listings are sorted by
/// name (or URI) so `*/list` is deterministic.
#[derive(Default)]
pub struct Registry {
    pub(crate) tools: Vec<Tool>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) prompts: Vec<Prompt>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a tool.
    pub fn tool(&mut self, tool: Tool) -> &mut Self {
        self.tools.retain(|t| t.name != tool.name);
        self.tools.push(tool);
        self.tools.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }

    /// Adds a resource.
    pub fn resource(&mut self, r: Resource) -> &mut Self {
        self.resources.retain(|x| x.uri != r.uri);
        self.resources.push(r);
        self.resources.sort_by(|a, b| a.uri.cmp(&b.uri));
        self
    }

    /// Adds a resource template.
    pub fn template(&mut self, t: ResourceTemplate) -> &mut Self {
        self.templates.retain(|x| x.template != t.template);
        self.templates.push(t);
        self.templates.sort_by(|a, b| a.template.cmp(&b.template));
        self
    }

    /// Adds a prompt.
    pub fn prompt(&mut self, p: Prompt) -> &mut Self {
        self.prompts.retain(|x| x.name != p.name);
        self.prompts.push(p);
        self.prompts.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }

    /// The tool called `name`.
    pub fn find_tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The prompt called `name`.
    pub fn find_prompt(&self, name: &str) -> Option<&Prompt> {
        self.prompts.iter().find(|p| p.name == name)
    }
}

/// Matches a level-1 URI template (`{var}` segments) against `uri`.
fn match_template(template: &str, uri: &str) -> Option<Map<String, Value>> {
    let mut vars = Map::new();
    let mut rest = uri;
    let mut tpl = template;
    while !tpl.is_empty() {
        if let Some(after) = tpl.strip_prefix('{') {
            let end = after.find('}')?;
            let name = &after[..end];
            tpl = &after[end + 1..];
            // A variable runs to the next literal character of the template
            // (or to the end); it never spans a '/'.
            let stop = tpl.chars().next();
            let len = rest
                .char_indices()
                .find(|(_, c)| Some(*c) == stop || *c == '/')
                .map_or(rest.len(), |(i, _)| i);
            if len == 0 {
                return None;
            }
            vars.insert(name.to_string(), json!(&rest[..len]));
            rest = &rest[len..];
        } else {
            let lit_len = tpl.find('{').unwrap_or(tpl.len());
            rest = rest.strip_prefix(&tpl[..lit_len])?;
            tpl = &tpl[lit_len..];
        }
    }
    rest.is_empty().then_some(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_and_extract_variables() {
        let v = match_template("test://template/{id}/data", "test://template/42/data")
            .expect("matches");
        assert_eq!(v["id"], "42");
        assert!(match_template("test://template/{id}/data", "test://template//data").is_none());
        assert!(match_template("test://template/{id}/data", "test://template/4/2/data").is_none());
        assert!(match_template("a/{x}", "b/1").is_none());
        assert_eq!(
            match_template("f/{a}-{b}", "f/1-2").expect("matches")["b"],
            "2"
        );
    }
}
