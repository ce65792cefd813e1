//! Everything a server offers, and the state its handlers share.

use std::any::Any;
use std::cmp::Ordering;
use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::skills::Skill;
use super::tool::Tool;
use super::ui::{is_view_uri, View};
use crate::engine::{boxed, BoxedHandler, Handler};

/// Completes one argument: `(argument name, partial value, other arguments)`
/// to candidate values.
pub type Completer = Rc<dyn Fn(&str, &str, &Map<String, Value>) -> Vec<String>>;

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

impl From<View> for Resource {
    fn from(view: View) -> Self {
        let (uri, meta, handler) = view.into_parts();
        Self { uri, meta, handler }
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
    pub(crate) state: Option<Rc<dyn Any>>,
    /// Pages served beside `/mcp` ([`Registry::page`]).
    pub(crate) pages: Vec<super::page::PageRoute>,
    /// Skills ([`Registry::skill`]), sorted by URI, and all their files as
    /// resources (each once: a nested skill's are its parent's too).
    pub(crate) skills: Vec<Skill>,
    pub(crate) skill_files: Vec<Resource>,
    /// Limits over each principal's calls of every tool
    /// ([`Registry::limits`]).
    pub(crate) limits: crate::limits::Limits,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Shares `state` with every handler: `cx.state::<S>()` returns it.
    /// Build it from the Worker's secrets and bindings in your entry
    /// function; it lives as long as the isolate. One value: put several
    /// things in one struct.
    pub fn state<S: 'static>(&mut self, state: S) -> &mut Self {
        self.state = Some(Rc::new(state));
        self
    }

    /// Limits over all of each principal's calls, whatever the tool (a
    /// tool's own limits are [`crate::app::Tool::limits`]); the `LIMITS`
    /// var overrides them kind by kind.
    #[cfg(feature = "limits")]
    pub fn limits(&mut self, limits: crate::limits::Limits) -> &mut Self {
        self.limits = limits;
        self
    }

    /// Adds (or replaces) a tool.
    pub fn tool(&mut self, tool: Tool) -> &mut Self {
        self.tools.retain(|t| t.name != tool.name);
        insert_sorted(&mut self.tools, tool, |a, b| a.name.cmp(&b.name));
        self
    }

    /// Adds a resource.
    pub fn resource(&mut self, r: Resource) -> &mut Self {
        self.resources.retain(|x| x.uri != r.uri);
        insert_sorted(&mut self.resources, r, |a, b| a.uri.cmp(&b.uri));
        self
    }

    /// Adds an MCP Apps view: a `ui://` page that tools name with
    /// [`Tool::view`]. A server with a view declares the extension.
    pub fn view(&mut self, view: View) -> &mut Self {
        self.resource(view.into())
    }

    /// Whether it serves an MCP Apps view.
    pub(crate) fn has_views(&self) -> bool {
        self.resources.iter().any(|r| is_view_uri(&r.uri))
    }

    /// Serves a skill (the skills extension, SEP-2640): listed by
    /// `skills/list`, each file a resource at `skill://…`. A server with a
    /// skill declares the extension. See [`Skill`].
    pub fn skill(&mut self, skill: Skill) -> &mut Self {
        self.skills([skill])
    }

    /// Serves skills: what [`include_skills!`](crate::include_skills) read.
    pub fn skills(&mut self, skills: impl IntoIterator<Item = Skill>) -> &mut Self {
        for skill in skills {
            self.skills.retain(|s| s.uri() != skill.uri());
            insert_sorted(&mut self.skills, skill, |a, b| a.uri().cmp(&b.uri()));
        }
        // Made again from every skill: a file can belong to several (the
        // first skill's, in URI order, serves it).
        self.skill_files.clear();
        for (uri, meta, handler) in self.skills.iter().flat_map(Skill::resources) {
            if let Err(at) = self.skill_files.binary_search_by(|f| f.uri.cmp(&uri)) {
                self.skill_files.insert(at, Resource { uri, meta, handler });
            }
        }
        self
    }

    /// Adds a resource template.
    pub fn template(&mut self, t: ResourceTemplate) -> &mut Self {
        self.templates.retain(|x| x.template != t.template);
        insert_sorted(&mut self.templates, t, |a, b| a.template.cmp(&b.template));
        self
    }

    /// Serves `handler` at `path` (GET and POST), beside `/mcp`: a page
    /// that a URL-mode elicitation sends the user to, and that can complete
    /// it ([`PageReply::complete`](crate::PageReply::complete)). See
    /// [`Page`](crate::Page).
    pub fn page(
        &mut self,
        path: &str,
        handler: impl Fn(&super::page::Page) -> super::page::PageReply + 'static,
    ) -> &mut Self {
        self.pages.retain(|p| p.path != path);
        self.pages.push(super::page::PageRoute::new(path, handler));
        self
    }

    /// The page served at `path`.
    pub(crate) fn find_page(&self, path: &str) -> Option<&super::page::PageRoute> {
        self.pages.iter().find(|p| p.path == path)
    }

    /// Adds a prompt.
    pub fn prompt(&mut self, p: Prompt) -> &mut Self {
        self.prompts.retain(|x| x.name != p.name);
        insert_sorted(&mut self.prompts, p, |a, b| a.name.cmp(&b.name));
        self
    }

    /// The tool called `name`. Tools and prompts are kept sorted by name
    /// ([`Registry::tool`]), a catalog searched by its key.
    pub fn find_tool(&self, name: &str) -> Option<&Tool> {
        self.tool_index(name).and_then(|i| self.tools.get(i))
    }

    /// Where the tool called `name` is in the catalog (a request carries
    /// it from where it was first looked up to where the tool runs).
    pub(crate) fn tool_index(&self, name: &str) -> Option<usize> {
        self.tools
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()
    }

    /// The prompt called `name`.
    pub fn find_prompt(&self, name: &str) -> Option<&Prompt> {
        let i = self
            .prompts
            .binary_search_by(|p| p.name.as_str().cmp(name))
            .ok()?;
        self.prompts.get(i)
    }
}

/// Matches a level-1 URI template (`{var}` segments) against `uri`.
/// Puts `item` into the sorted `items` after every item not greater, as
/// pushing it and sorting stably did: a binary search and an insert per
/// list, where a sort linked a stable sort per list's type (about 3 KB of
/// wasm each).
fn insert_sorted<T>(items: &mut Vec<T>, item: T, cmp: impl Fn(&T, &T) -> Ordering) {
    let at = items.partition_point(|x| cmp(x, &item) != Ordering::Greater);
    items.insert(at, item);
}

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
