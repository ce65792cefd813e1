//! A tool: its listing (name, schemas, description) and its handler.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::cell::OnceCell;

use serde_json::{json, Map, Value};

use super::result::{CallToolResult, IntoToolResult};
use super::ui::{self, Visibility};
use crate::engine::{boxed_map, BoxedHandler, Handler};
use crate::schema::object_schema;

/// Whether a tool's calls run as tasks (the tasks extension, SEP-2663).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// A task when the client declared the extension on the call; an
    /// ordinary call otherwise.
    Optional,
    /// Only as a task: a client without the extension gets `-32021`.
    Required,
}

/// A tool.
pub struct Tool {
    pub(crate) name: String,
    /// Its listing's fields but the derived ones ([`Schemas`]); a field set
    /// here (an `inputSchema` given by hand) wins over the derived one.
    pub(crate) meta: Map<String, Value>,
    /// The schemas derived from its types, each made when first needed
    /// (an output schema: by a listing or the tool's first result).
    schemas: Schemas,
    pub(crate) handler: BoxedHandler<CallToolResult>,
    pub(crate) durable: bool,
    pub(crate) task: Option<TaskSupport>,
    /// Input asked before `cx.detach` goes over the request's own wire.
    pub(crate) input_before_task: bool,
    /// OAuth scopes a call of this tool needs (beyond `OAUTH_SCOPES`).
    pub(crate) scopes: Vec<String>,
    /// The tool's declared code version ([`Tool::version`]).
    pub(crate) version: Option<String>,
    /// Changes this code has that `cx.patched` asks about after a pause
    /// ([`Tool::patch`]).
    pub(crate) patches: Vec<String>,
    /// Answer keys whose values an operator may see ([`Tool::admin_shows`]).
    pub(crate) admin_shows: Vec<String>,
    /// Earlier versions' bodies this code still serves ([`Tool::keeps`]).
    pub(crate) kept: Vec<KeptBody>,
    /// Whether a paused call stays on the body that started it
    /// ([`Tool::pinned`]).
    pub(crate) pinned: bool,
    /// Its calls' limits per principal ([`Tool::limits`]).
    pub(crate) limits: crate::limits::Limits,
}

/// A tool's schemas derived from its types, each made once, when first
/// needed (the Worker reads every input schema for the headers it copies;
/// an output schema waits for a listing or the tool's first result).
struct Schemas {
    input: fn() -> Value,
    output: fn() -> Option<Value>,
    made_input: OnceCell<Input>,
    made_output: OnceCell<Option<Value>>,
}

/// The input schema made.
struct Input {
    /// `inputSchema`, its description taken out.
    schema: Value,
    /// The doc comment of the arguments' type: the tool's description
    /// unless one is set.
    description: Option<Value>,
}

impl Schemas {
    fn new(input: fn() -> Value, output: fn() -> Option<Value>) -> Self {
        Self {
            input,
            output,
            made_input: OnceCell::new(),
            made_output: OnceCell::new(),
        }
    }

    fn input(&self) -> &Input {
        self.made_input.get_or_init(|| {
            let mut schema = (self.input)();
            let description = schema
                .as_object_mut()
                .and_then(|m| m.remove("description"))
                .filter(Value::is_string);
            Input {
                schema,
                description,
            }
        })
    }

    fn output(&self) -> Option<&Value> {
        self.made_output.get_or_init(self.output).as_ref()
    }
}

/// An earlier version's body a tool still serves to the calls it started.
pub(crate) struct KeptBody {
    pub(crate) version: String,
    pub(crate) handler: BoxedHandler<CallToolResult>,
    /// Its own `outputSchema`, what its results are checked against.
    output: fn() -> Option<Value>,
}

impl KeptBody {
    /// Its `outputSchema` (made each time: a kept body's call ends once).
    pub(crate) fn output_schema(&self) -> Option<Value> {
        (self.output)()
    }
}

/// Which body runs a round of a tool's call ([`Tool::body_for`]).
pub(crate) enum Body<'a> {
    /// The current one.
    Current,
    /// A kept earlier version's (a pinned call that started on it).
    Kept(&'a KeptBody),
    /// A pinned call whose version this code no longer keeps.
    Missing(&'a str),
}

/// The one rule of [`Tool::pinned`], which the rounds ([`Tool::body_for`])
/// and an operator's count of versions (`kept::versions`) both follow: the
/// earlier version whose body runs a call whose last round ran on `last`,
/// for a tool at version `current`; none when the current body runs it (a
/// tool that does not pin, a new call, one on the current version, one
/// that began before the tool declared a version).
pub(crate) fn earlier_body<'v>(
    pinned: bool,
    current: Option<&str>,
    last: Option<&'v str>,
) -> Option<&'v str> {
    last.filter(|v| pinned && current != Some(*v))
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
        let handler = boxed_map(handler, O::into_tool_result);
        Self::from_parts(name, object_schema::<A>, O::output_schema, handler)
    }

    /// [`Tool::new`]'s work that does not depend on its types: built once,
    /// not once per tool.
    fn from_parts(
        name: &str,
        input: fn() -> Value,
        output: fn() -> Option<Value>,
        handler: BoxedHandler<CallToolResult>,
    ) -> Self {
        let mut meta = Map::new();
        meta.insert("name".into(), json!(name));
        Self {
            name: name.to_string(),
            meta,
            schemas: Schemas::new(input, output),
            handler,
            durable: false,
            task: None,
            input_before_task: false,
            scopes: Vec::new(),
            version: None,
            patches: Vec::new(),
            admin_shows: Vec::new(),
            kept: Vec::new(),
            pinned: false,
            limits: Default::default(),
        }
    }

    /// Keeps the body of an earlier `version` of this tool beside the
    /// current one, for the calls that started on it while they drain
    /// (with [`Tool::pinned`]; an `upgrade` tool runs every round on its
    /// current body). `handler` has the shape [`Tool::new`] takes, with
    /// that version's own argument and result types; the listing shows
    /// only the current version. Remove it once the admin's `tools
    /// versions` counts no call left on it.
    ///
    /// ```
    /// # use durable_mcp::{Cx, Tool, ToolError};
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// # struct Args { service: String }
    /// async fn deploy_v3(cx: &mut Cx, a: Args) -> Result<String, ToolError> {
    ///     Ok(format!("v3 deployed {}", a.service))
    /// }
    /// async fn deploy_v2(cx: &mut Cx, a: Args) -> Result<String, ToolError> {
    ///     Ok(format!("v2 deployed {}", a.service))
    /// }
    /// let tool = Tool::new("deploy", deploy_v3)
    ///     .version("3")
    ///     .keeps("2", deploy_v2)
    ///     .pinned();
    /// ```
    pub fn keeps<A, O, H>(mut self, version: impl Into<String>, handler: H) -> Self
    where
        A: DeserializeOwned + JsonSchema + 'static,
        O: IntoToolResult,
        H: Handler<A, O>,
    {
        self.kept.push(KeptBody {
            version: version.into(),
            handler: boxed_map(handler, O::into_tool_result),
            output: O::output_schema,
        });
        self
    }

    /// Pins each call to the version of the body that started it: a paused
    /// call goes on, on every wire, on that body (the current one, or one
    /// kept with [`Tool::keeps`]), whatever the current body has become. A
    /// call whose version this code no longer keeps is parked with `-32050`
    /// naming the version (`data.pinnedTo`) and goes on when a deploy
    /// brings the version back. A kept body may move its calls to the
    /// current one at a point ([`Cx::upgrade_point`](crate::Cx::upgrade_point)).
    ///
    /// Without it (`upgrade`, the default) every round runs the current
    /// body, which replays what the call recorded.
    ///
    /// A call that started before the tool declared a [`Tool::version`]
    /// runs on the current body: nothing says which body started it.
    pub fn pinned(mut self) -> Self {
        self.pinned = true;
        self
    }

    /// Limits each principal's calls of this tool: new calls per period
    /// and per day, calls held paused at once, rounds running at once. An
    /// operator's `LIMITS` var overrides them kind by kind. A call over a
    /// limit is refused before it runs (`-32013`, HTTP 429 with
    /// `Retry-After`); a task over one waits, `working`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use durable_mcp::{limits::Limits, Tool};
    /// # async fn search(_: &mut durable_mcp::Cx, _: serde_json::Value) -> Result<String, durable_mcp::ToolError> { Ok(String::new()) }
    /// let tool = Tool::new("search", search)
    ///     .limits(Limits::new().rate(10, Duration::from_secs(60)).active(2));
    /// # let _ = tool;
    /// ```
    #[cfg(feature = "limits")]
    pub fn limits(mut self, limits: crate::limits::Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Whether the tool pins its calls ([`Tool::pinned`]).
    pub fn is_pinned(&self) -> bool {
        self.pinned
    }

    /// Its declared version ([`Tool::version`]).
    pub fn current_version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// The earlier versions it keeps ([`Tool::keeps`]), in the order kept.
    pub fn kept_versions(&self) -> impl Iterator<Item = &str> {
        self.kept.iter().map(|k| k.version.as_str())
    }

    /// Which body runs the next round of a call whose last round ran on
    /// `version` (none for a new call, or one that began before the tool
    /// declared a version).
    pub(crate) fn body_for<'a>(&'a self, version: Option<&'a str>) -> Body<'a> {
        match earlier_body(self.pinned, self.version.as_deref(), version) {
            None => Body::Current,
            Some(v) => match self.kept.iter().find(|k| k.version == v) {
                Some(k) => Body::Kept(k),
                None => Body::Missing(v),
            },
        }
    }

    /// Lets an operator see the answers under these keys in a call's
    /// history (the admin API, the console, `durable-mcp admin calls
    /// show`). Every other answer shows as `"[hidden]"`: what a user
    /// typed is theirs, so values are hidden unless the tool opts in.
    pub fn admin_shows(mut self, keys: &[&str]) -> Self {
        self.admin_shows
            .extend(keys.iter().map(|k| (*k).to_string()));
        self
    }

    /// Declares this tool's code version (`"2"`, `"2026-11-26"`, a git
    /// hash): each call records the version that started it and the one
    /// that ran each round, and a call the new code cannot replay names
    /// both in its error (`data.pausedOn`, `data.metOn`), with the Worker's
    /// version id when `[version_metadata]` is bound.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Declares that this code has the change `id`: a call that starts on
    /// it records `id`, and [`Cx::patched`](crate::Cx::patched)`(id)` is
    /// true for it on every round, on every later deploy, and false for a
    /// call that began on code without it. Needed only for a change the
    /// body first asks about after a pause: one it asks about in the
    /// call's first round is recorded then.
    pub fn patch(mut self, id: impl Into<String>) -> Self {
        self.patches.push(id.into());
        self
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

    /// Derives the JSON Schema of `structuredContent` from `T`, for a tool
    /// whose result is a [`CallToolResult`] carrying a `T`: made when first
    /// needed (a `tools/list`, or this tool's first result), not when the
    /// worker starts, as `output_schema(object_schema::<T>())` would.
    pub fn output_schema_of<T: JsonSchema>(mut self) -> Self {
        fn of<T: JsonSchema>() -> Option<Value> {
            Some(object_schema::<T>())
        }
        self.meta.remove("outputSchema");
        self.schemas = Schemas::new(self.schemas.input, of::<T>);
        self
    }

    /// Sets annotations (`readOnlyHint`, …).
    pub fn annotations(self, a: Value) -> Self {
        self.set("annotations", a)
    }

    /// The OAuth scopes a call of this tool needs, beyond the server-wide
    /// `OAUTH_SCOPES`: a token without them gets 403 `insufficient_scope`
    /// naming every scope the call needs, so the client can step up. (The
    /// hierarchy rule: a granted `deploy` covers `deploy:write`.) Without
    /// OAuth configured, it has no effect.
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Names the MCP Apps view that shows this tool's results
    /// (`_meta.ui.resourceUri`): a `ui://` page registered with
    /// [`Registry::view`](super::Registry::view). A host that speaks the
    /// extension renders it and hands it the call's arguments and result;
    /// the result's `structuredContent` is what it renders, and its
    /// `content` stays the text for the model (and for other hosts).
    pub fn view(mut self, uri: &str) -> Self {
        ui::name_view(&mut self.meta, uri);
        self
    }

    /// Who may call this tool (`_meta.ui.visibility`): the model, the app
    /// (a view of this server, through the host), or both, as when unset.
    /// `[Visibility::App]` keeps a view's own actions (a refresh button)
    /// out of the model's tool list; the host enforces it.
    pub fn visibility(mut self, who: impl IntoIterator<Item = Visibility>) -> Self {
        ui::set_visibility(&mut self.meta, who);
        self
    }

    /// Keeps the call's journal in a Durable Object between rounds (durable
    /// mode) rather than only in the sealed state token. (A task is
    /// durable by nature: this replaces [`Tool::task`].)
    pub fn durable(mut self) -> Self {
        self.durable = true;
        self.task = None;
        self
    }

    /// Runs the tool as a task when the client declared the tasks
    /// extension on the call (SEP-2663): the body runs at once, and at its
    /// first pause (a question for the client, `cx.sleep`, `cx.detach`) the
    /// call is answered with a task and goes on in the task's own Durable
    /// Object, driven by its alarm with no client connected. Questions
    /// become the task's `inputRequests`, answered with `tasks/update`. A
    /// body that finishes without pausing answers the call directly.
    /// Without the extension the call runs as an ordinary call.
    pub fn task(mut self) -> Self {
        self.task = Some(TaskSupport::Optional);
        self.durable = false;
        self
    }

    /// Like [`Tool::task`], but only as a task: a call without the tasks
    /// extension is refused with `-32021` naming it.
    pub fn task_only(mut self) -> Self {
        self.task = Some(TaskSupport::Required);
        self.durable = false;
        self
    }

    /// For a task tool: questions asked before `cx.detach` go over the
    /// request's own wire (MRTR rounds) and the task starts at `detach`,
    /// so the task is created only once the user said what to do.
    pub fn input_before_task(mut self) -> Self {
        self.input_before_task = true;
        self
    }

    /// Whether (and how) the tool runs as a task.
    pub fn task_support(&self) -> Option<TaskSupport> {
        self.task
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
        let input = self.schemas.input();
        let mut listing = self.meta.clone();
        let derived = [
            ("description", input.description.as_ref()),
            ("inputSchema", Some(&input.schema)),
            ("outputSchema", self.schemas.output()),
        ];
        for (key, value) in derived {
            if let (false, Some(v)) = (listing.contains_key(key), value) {
                listing.insert(key.into(), v.clone());
            }
        }
        Value::Object(listing)
    }

    /// Its `inputSchema`.
    pub(crate) fn input_schema_json(&self) -> &Value {
        match self.meta.get("inputSchema") {
            Some(set) => set,
            None => &self.schemas.input().schema,
        }
    }

    /// Its `outputSchema`, if it declares one.
    pub(crate) fn output_schema_json(&self) -> Option<&Value> {
        match self.meta.get("outputSchema") {
            Some(set) => Some(set),
            None => self.schemas.output(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use schemars::{json_schema, Schema, SchemaGenerator};

    use super::*;
    use crate::{Cx, ToolError};

    thread_local! {
        /// How many times `Counted`'s schema was made.
        static MADE: Cell<u32> = const { Cell::new(0) };
        /// How many times `CountedOut`'s schema was made.
        static MADE_OUT: Cell<u32> = const { Cell::new(0) };
    }

    /// A result whose schema counts the times it is made.
    struct CountedOut;

    impl JsonSchema for CountedOut {
        fn schema_name() -> std::borrow::Cow<'static, str> {
            "CountedOut".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            MADE_OUT.with(|m| m.set(m.get() + 1));
            json_schema!({"type": "object", "properties": {}})
        }
    }

    /// Arguments whose schema counts the times it is made.
    #[derive(serde::Deserialize)]
    struct Counted {}

    impl JsonSchema for Counted {
        fn schema_name() -> std::borrow::Cow<'static, str> {
            "Counted".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            MADE.with(|m| m.set(m.get() + 1));
            json_schema!({"type": "object", "description": "Counts.", "properties": {}})
        }
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)] // only its schema is read
    struct Out {
        n: u32,
    }

    async fn body(_: &mut Cx, _: Counted) -> Result<String, ToolError> {
        Ok(String::new())
    }

    #[test]
    fn schemas_are_made_once_when_first_needed() {
        let tool = Tool::new("t", body).output_schema_of::<Out>();
        assert_eq!(MADE.with(Cell::get), 0, "made when the tool was built");
        let listing = tool.listing();
        assert_eq!(MADE.with(Cell::get), 1);
        assert_eq!(listing["description"], "Counts.");
        assert!(listing["inputSchema"].get("description").is_none());
        assert_eq!(
            listing["outputSchema"]["properties"]["n"]["type"],
            "integer"
        );
        let _ = (tool.listing(), tool.input_schema_json());
        assert_eq!(MADE.with(Cell::get), 1, "made again");
    }

    #[test]
    fn the_input_schema_does_not_make_the_output_schema() {
        let tool = Tool::new("t", body).output_schema_of::<CountedOut>();
        let _ = tool.input_schema_json();
        assert_eq!(MADE_OUT.with(Cell::get), 0, "made with the input schema");
        assert!(tool.output_schema_json().is_some());
        let _ = (tool.output_schema_json(), tool.listing());
        assert_eq!(MADE_OUT.with(Cell::get), 1);
    }

    #[test]
    fn a_field_set_by_hand_wins_over_the_derived_one() {
        let tool = Tool::new("t", body)
            .description("mine")
            .input_schema(json!({"type": "object"}));
        let listing = tool.listing();
        assert_eq!(listing["description"], "mine");
        assert_eq!(listing["inputSchema"], json!({"type": "object"}));
        assert!(listing.get("outputSchema").is_none());
    }
}
