//! `Cx`: what a tool body uses to ask the client things, memoize side effects
//! and report progress.
//!
//! Every `ask` is answered from the journal when the client has already
//! answered it; otherwise it is registered and the call suspends. Asks
//! register when they are *called*, not when awaited, so
//! `let a = cx.elicit(..); let b = cx.sample(..); (a.await?, b.await?)` sends
//! both requests in one round.

use std::any::Any;
use std::cell::RefCell;
use std::future::{ready, Future, Ready};
use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::journal::{
    answer_fits, short_digest, unfit, Answer, InputRequest, Journal, CHECKPOINT, DETACH, TIMER,
};
use super::{Suspended, ToolError};

/// The `_meta` key of a URL elicitation's params that holds what its page
/// shows ([`Cx::elicit_url_showing`]).
pub const PAGE_DETAILS_META: &str = "io.durable-mcp/page";
pub use super::journal::APPROVER_META;
use crate::auth::Caller;
use crate::error::McpError;
use crate::protocol::{object, ListKind, LogLevel};
use crate::vec_map::{VecMap, VecSet};

/// Which kinds of input the client declared it can answer in *this* request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientCaps {
    /// `elicitation` (form mode at least).
    pub elicitation: bool,
    /// `elicitation.url`: URL-mode elicitations may be sent.
    #[serde(default)]
    pub elicitation_url: bool,
    /// `sampling`.
    pub sampling: bool,
    /// `roots`.
    pub roots: bool,
    /// The tasks extension (`extensions["io.modelcontextprotocol/tasks"]`).
    pub tasks: bool,
}

/// Where a call stands with the tasks extension, which decides what
/// `cx.detach` and `cx.sleep` do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskMode {
    /// Not a task and cannot become one: `detach` does nothing and a
    /// `sleep` is a checkpoint (the client's next request passes it).
    #[default]
    Off,
    /// The call may become a task: a pause there makes it one.
    Allowed,
    /// Running as a task: the task's object answers timers when due.
    Running,
}

impl ClientCaps {
    /// Reads a `ClientCapabilities` object.
    pub fn from_json(caps: Option<&Value>) -> Self {
        let has = |k: &str| caps.and_then(|c| c.get(k)).is_some_and(|v| !v.is_null());
        let tasks = caps
            .and_then(|c| c.get("extensions"))
            .and_then(|e| e.get(crate::protocol::versions::TASKS_EXTENSION))
            .is_some_and(|v| !v.is_null());
        let url = caps
            .and_then(|c| c.get("elicitation"))
            .and_then(|e| e.get("url"))
            .is_some_and(|v| !v.is_null());
        Self {
            elicitation: has("elicitation"),
            elicitation_url: url,
            sampling: has("sampling"),
            roots: has("roots"),
            tasks,
        }
    }

    /// Every kind: for tests and for wires where the client always can.
    pub fn all() -> Self {
        Self {
            elicitation: true,
            elicitation_url: true,
            sampling: true,
            roots: true,
            tasks: false,
        }
    }
}

/// The client's answer to an elicitation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// `accept`, `decline` or `cancel`.
    pub action: String,
    /// The submitted form when accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

impl ElicitResult {
    /// True when the user accepted.
    pub fn accepted(&self) -> bool {
        self.action == "accept"
    }

    /// One field of the accepted form, deserialized.
    pub fn field<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        self.content
            .as_ref()
            .and_then(|c| c.get(name))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }
}

/// The user's answer to a typed form ([`Cx::elicit`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Elicitation<T> {
    /// The user submitted the form.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user dismissed the form without choosing.
    Cancelled,
}

impl<T> Elicitation<T> {
    /// The submitted form, when accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Self::Accepted(t) => Some(t),
            _ => None,
        }
    }
}

/// The client's answer to a sampling request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleResult {
    /// Usually `assistant`.
    pub role: String,
    /// A content block (or a list of them).
    pub content: Value,
    /// The model that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Why the model stopped.
    #[serde(
        default,
        rename = "stopReason",
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_reason: Option<String>,
}

impl SampleResult {
    /// The text of the answer (text blocks joined).
    pub fn text(&self) -> String {
        let block_text = |b: &Value| {
            b.get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match &self.content {
            Value::Array(blocks) => blocks.iter().map(block_text).collect(),
            b => block_text(b),
        }
    }
}

/// One root the client exposes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Params for a form elicitation: a message and a flat object schema.
pub fn form(message: impl Into<String>, requested_schema: Value) -> Value {
    object([
        ("mode", "form".into()),
        ("message", Value::String(message.into())),
        ("requestedSchema", requested_schema),
    ])
}

/// Params for a one-message sampling request.
pub fn ask(prompt: impl Into<String>, max_tokens: u32) -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt.into()}}],
        "maxTokens": max_tokens,
    })
}

#[derive(Debug, Default)]
struct State {
    journal: Journal,
    caps: ClientCaps,
    /// Requests registered in this run that have no answer yet.
    asked: VecMap<String, InputRequest>,
    /// Notifications (progress, log) emitted by this run, in order.
    notifications: Vec<Value>,
    progress_token: Option<Value>,
    log_level: Option<LogLevel>,
    /// Answers the client sent for keys that were not pending (a first
    /// request that already carries `inputResponses`): taken when the tool
    /// asks that key, if their shape fits what it asks.
    offered: Map<String, Value>,
    /// The call's id (stable across its rounds), for idempotency keys.
    call_id: String,
    /// Whether a round is accepted once (durable mode, sessions): only
    /// then can `once` promise its effect runs once.
    once_safe: bool,
    task_mode: TaskMode,
    /// The last `cx.status` message of this run.
    status: Option<String>,
    /// The answers this run read so far, in order: key and a digest of
    /// the value (what a `once` or a question made now may depend on).
    /// Internal requests (timers, checkpoints) carry nothing and are left
    /// out.
    read: Vec<(String, String)>,
    /// The recorded `once` effects this run has replayed.
    replayed: VecSet<String>,
    /// The code version running this round (see `Journal::code`).
    code: String,
    /// The code version that ran the round before (none for a new call).
    paused_on: Option<String>,
    /// This is the call's first run: nothing was recorded before it.
    fresh: bool,
    /// The current body's code version, when this run is a pinned call's
    /// kept earlier body that may move to it ([`Cx::upgrade_point`]).
    upgrade_to: Option<String>,
    /// The body reached an upgrade point: the current body runs next.
    upgrading: bool,
    /// Set when the run is a replay check ([`crate::replay`]): no effect
    /// runs, and what the replay meets is noted here.
    dry_run: Option<Rc<RefCell<DryRun>>>,
    /// Who is calling (`Caller::default()` when nobody signed in).
    caller: Caller,
    /// This server's resource URI, for a step-up challenge.
    resource: String,
    /// The scopes this call needs whatever it asks (server-wide and the
    /// tool's): a step-up challenge names them with the new ones.
    base_scopes: Vec<String>,
    /// URL-mode elicitation ids and sealed values, where the server keeps
    /// this call between rounds (none: `elicit_url` is refused).
    out_of_band: Option<super::url::OutOfBand>,
}

/// What a replay check saw ([`Cx::with_dry_run`]).
#[derive(Debug, Default)]
pub(crate) struct DryRun {
    /// The first effect the new code would run now (not run).
    pub(crate) effect: Option<String>,
    /// Questions whose recorded answer no longer fits: asked again.
    pub(crate) asked_again: Vec<String>,
    /// The recorded answers the replay read.
    pub(crate) read: Vec<String>,
}

/// The tool's handle on its call. See the module docs.
#[derive(Default)]
pub struct Cx {
    inner: RefCell<State>,
    /// The server's shared state (secrets, bindings), set by the registry.
    app: Option<Rc<dyn Any>>,
}

impl std::fmt::Debug for Cx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cx").field("inner", &self.inner).finish()
    }
}

impl Cx {
    /// A context replaying `journal` for a client with `caps`.
    pub fn new(journal: Journal, caps: ClientCaps) -> Self {
        Self {
            inner: RefCell::new(State {
                journal,
                caps,
                once_safe: true,
                ..State::default()
            }),
            app: None,
        }
    }

    /// Lets the body send URL-mode elicitations ([`Cx::elicit_url`]): the
    /// server keeps this call between rounds and records a page's answer
    /// against it.
    pub fn with_out_of_band(self, oob: super::url::OutOfBand) -> Self {
        self.inner.borrow_mut().out_of_band = Some(oob);
        self
    }

    /// Names the call (`call_id`) and says whether its rounds are accepted
    /// once (`once_safe`: durable mode and sessions are; a stateless token
    /// can be replayed until it expires).
    pub fn with_call(self, call_id: impl Into<String>, once_safe: bool) -> Self {
        {
            let mut st = self.inner.borrow_mut();
            st.call_id = call_id.into();
            st.once_safe = once_safe;
        }
        self
    }

    /// A key for an outside system to deduplicate the effect `key` of this
    /// call by (send it as an `Idempotency-Key` header): the same on every
    /// round and every retry of this call, different for every other call.
    /// `cx.once` makes an effect run once as far as this server knows; if
    /// the isolate dies while the effect is in flight, a retry runs it
    /// again, and only the receiver, seeing the same key, can tell.
    pub fn idempotency_key(&self, key: &str) -> String {
        format!("{}:{key}", self.inner.borrow().call_id)
    }

    /// Says which code runs this round (`version`) and which changes it has
    /// (`patches`): a new call records both, a paused one records a
    /// version that differs from the last it ran on.
    pub fn with_code(self, version: String, patches: &[String]) -> Self {
        {
            let mut st = self.inner.borrow_mut();
            if st.journal.is_fresh() {
                st.fresh = true;
                st.journal.patches.extend(patches.iter().cloned());
            }
            st.paused_on = st.journal.code.last().cloned();
            if st.journal.code.last() != Some(&version) {
                st.journal.code.push(version.clone());
            }
            st.code = version;
        }
        self
    }

    /// The tool version whose body ran the call's last round
    /// ([`Journal::tool_version`]).
    pub(crate) fn tool_version(&self) -> Option<String> {
        self.inner
            .borrow()
            .journal
            .tool_version()
            .map(str::to_string)
    }

    /// Lets a kept earlier body move its call to the current body, whose
    /// code version is `current` ([`Cx::upgrade_point`]).
    pub(crate) fn with_upgrade_to(self, current: String) -> Self {
        self.inner.borrow_mut().upgrade_to = Some(current);
        self
    }

    /// Where a pinned call moves to the tool's current version (as
    /// Temporal's upgrade on continue-as-new): reached in an earlier
    /// version's body kept with [`Tool::keeps`](crate::Tool::keeps), the
    /// call leaves that body here, and the current body runs the rest of
    /// the round from the start, replaying the answers and effects the
    /// call recorded as an `upgrade` tool would (a question it asks the
    /// same way under the same key is not asked again; an effect under
    /// the same key does not run again). Everywhere else — the current
    /// body, an `upgrade` tool — it does nothing. `key` names the point
    /// in the call's history. Put it where the two versions agree on
    /// what came before, typically before the first question the new
    /// version asks differently:
    ///
    /// ```
    /// # use durable_mcp::{Cx, ToolError};
    /// async fn deploy_v1(cx: &mut Cx, _: serde_json::Value) -> Result<String, ToolError> {
    ///     let _ticket = cx.once("ticket", async || Ok::<_, ToolError>(7)).await?;
    ///     // Calls that got this far may finish on the new body.
    ///     cx.upgrade_point("after-ticket")?;
    ///     Ok("v1 done".into())
    /// }
    /// ```
    pub fn upgrade_point(&self, key: &str) -> Result<(), ToolError> {
        let mut st = self.inner.borrow_mut();
        if st.upgrade_to.is_none() {
            return Ok(());
        }
        st.upgrading = true;
        if let Some(trail) = st.journal.trail.as_mut() {
            trail.moved_at = Some(key.to_string());
        }
        Err(ToolError::Suspend(Suspended(())))
    }

    /// After the body reached an upgrade point: readies the run for the
    /// current body (its code version recorded, this run's reads and
    /// questions forgotten, the journal kept). False when it did not.
    pub(crate) fn take_upgrade(&mut self) -> bool {
        let st = self.inner.get_mut();
        let Some(current) = st.upgrade_to.take().filter(|_| st.upgrading) else {
            return false;
        };
        st.upgrading = false;
        st.asked.clear();
        st.read.clear();
        st.replayed.clear();
        st.paused_on = Some(std::mem::replace(&mut st.code, current.clone()));
        st.journal.code.push(current);
        true
    }

    /// Whether this call began on code that has the change `id` (as
    /// Temporal's `patched()`): true for a call that started on code that
    /// asks this in its first round or declares it ([`Tool::patch`](crate::Tool::patch)),
    /// false for one that began on older code. Branch on it to keep old
    /// calls on the old path across a deploy:
    ///
    /// ```
    /// # use durable_mcp::{Cx, ToolError};
    /// # async fn body(cx: &mut Cx) -> Result<String, ToolError> {
    /// let region = if cx.patched("ask-region") {
    ///     cx.elicit_with("region", durable_mcp::form("Which region?", serde_json::json!({
    ///         "type": "object", "properties": {"region": {"type": "string"}}})))
    ///         .await?
    ///         .field::<String>("region")
    ///         .unwrap_or_default()
    /// } else {
    ///     "eu".to_string() // calls paused before the change keep the old default
    /// };
    /// # Ok(region) }
    /// ```
    pub fn patched(&self, id: &str) -> bool {
        let mut st = self.inner.borrow_mut();
        if st.fresh || st.journal.is_fresh() {
            st.fresh = true;
            st.journal.patches.insert(id.to_string());
            return true;
        }
        st.journal.patches.contains(id)
    }

    /// The code version that ran the round before this one, and this
    /// round's (for a divergence report).
    pub(crate) fn code_versions(&self) -> (Option<String>, String) {
        let st = self.inner.borrow();
        (st.paused_on.clone(), st.code.clone())
    }

    /// Makes this run a replay check: `cx.once` runs no effect (the run
    /// stops where a new one would run) and `observer` hears what the
    /// replay met.
    pub(crate) fn with_dry_run(self, observer: Rc<RefCell<DryRun>>) -> Self {
        self.inner.borrow_mut().dry_run = Some(observer);
        self
    }

    /// Gives the tool the server's shared state (see [`Cx::state`]).
    pub fn with_state(mut self, app: Option<Rc<dyn Any>>) -> Self {
        self.app = app;
        self
    }

    /// The server's shared state: what the registry was given with
    /// `Registry::state` (secrets, bindings, clients), the role axum's
    /// `State<S>` plays. Asking for a type the registry was not given is a
    /// bug, reported as an internal error.
    pub fn state<S: 'static>(&self) -> Result<&S, ToolError> {
        self.app
            .as_deref()
            .and_then(|a| a.downcast_ref::<S>())
            .ok_or_else(|| {
                ToolError::Protocol(McpError::internal(format!(
                    "no shared state of type {} was registered (Registry::state)",
                    std::any::type_name::<S>()
                )))
            })
    }

    /// Sets the progress token progress notifications are sent with.
    pub fn with_progress_token(self, token: Option<Value>) -> Self {
        self.inner.borrow_mut().progress_token = token;
        self
    }

    /// Sets the lowest log level the client asked for (`None`: no log messages).
    pub fn with_log_level(self, level: Option<&str>) -> Self {
        self.inner.borrow_mut().log_level = level.and_then(LogLevel::parse);
        self
    }

    /// Says whether the call may become, or is, a task.
    pub fn with_task_mode(self, mode: TaskMode) -> Self {
        self.inner.borrow_mut().task_mode = mode;
        self
    }

    /// Says who is calling (`resource`: this server's URI, for the
    /// challenge a missing scope is answered with).
    pub fn with_caller(self, caller: Caller, resource: impl Into<String>) -> Self {
        {
            let mut st = self.inner.borrow_mut();
            st.caller = caller;
            st.resource = resource.into();
        }
        self
    }

    /// The scopes the call needs whatever it asks ([`Cx::require_scopes`]
    /// adds to them).
    pub fn with_base_scopes(self, scopes: Vec<String>) -> Self {
        self.inner.borrow_mut().base_scopes = scopes;
        self
    }

    /// Who is calling: an OAuth token's subject, client id and scopes, or
    /// an `API_TOKENS` entry's name (its `subject`); empty when the server
    /// has no auth. A refreshed token is the same caller.
    pub fn caller(&self) -> Caller {
        self.inner.borrow().caller.clone()
    }

    /// Steps up: the call goes on only if the caller's token grants
    /// `scopes` (with the hierarchy rule of [`crate::auth::covers`]). If
    /// not, the request ends with 403 `insufficient_scope` naming every
    /// scope the call needs; the round is not used up, so after the client
    /// signs in again with them, the same retry (same state, same answers)
    /// continues from here. Callers without an OAuth token (static
    /// `API_TOKENS`, or no auth) are not limited by scopes.
    pub fn require_scopes<S: Into<String>>(
        &self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Result<(), ToolError> {
        let st = self.inner.borrow();
        let mut needed = st.base_scopes.clone();
        for s in scopes {
            let s = s.into();
            if !needed.contains(&s) {
                needed.push(s);
            }
        }
        crate::auth::require(&st.caller, &st.resource, &needed).map_err(ToolError::Protocol)
    }

    /// Offers answers for keys that are not pending in the journal.
    pub fn with_offered(self, offered: Map<String, Value>) -> Self {
        self.inner.borrow_mut().offered = offered;
        self
    }

    /// The progress token of this request, if the client sent one.
    pub fn progress_token(&self) -> Option<Value> {
        self.inner.borrow().progress_token.clone()
    }

    /// What the client declared it can answer in this request.
    pub fn capabilities(&self) -> ClientCaps {
        self.inner.borrow().caps.clone()
    }

    /// The round this replay is serving (0 on the first call).
    pub fn round(&self) -> u32 {
        self.inner.borrow().journal.round
    }

    /// Who answered the question asked under `key`, when it was not the
    /// call's client: an operator who answered on the call's behalf
    /// (`"operator"`, or `"operator:<name>"`; see `POST
    /// /admin/api/calls/answer`). `None` when the client answered, or
    /// nothing has. A tool that must know a person approved, and which,
    /// reads it after the answer:
    ///
    /// ```
    /// # use durable_mcp::{text, CallToolResult, Cx, ToolError};
    /// # async fn approve(cx: &mut Cx) -> Result<CallToolResult, ToolError> {
    /// let answer = cx.elicit_with("approve", durable_mcp::form("Ship it?", serde_json::json!({"type": "object"}))).await?;
    /// let who = cx.answered_by("approve").unwrap_or_else(|| "the user".into());
    /// Ok(text(format!("{} by {who}", if answer.accepted() { "approved" } else { "declined" })))
    /// # }
    /// ```
    pub fn answered_by(&self, key: &str) -> Option<String> {
        let st = self.inner.borrow();
        st.journal.answers.get(key).and_then(|a| a.by.clone())
    }

    /// Asks the user to fill in the form `T` (`elicitation/create`, form
    /// mode): the `requestedSchema` is derived from `T` (field docs become
    /// descriptions), and the answer comes back as a `T`.
    ///
    /// MCP forms are flat: every field of `T` must be a string, number,
    /// integer, boolean, a string enum (a unit-variant enum) or a list of
    /// enum strings, optionally `Option`al. Any other `T` is refused with an
    /// internal error naming the field, before anything is sent.
    pub fn elicit<T>(
        &self,
        key: &str,
        message: impl Into<String>,
    ) -> Ready<Result<Elicitation<T>, ToolError>>
    where
        T: DeserializeOwned + schemars::JsonSchema,
    {
        let schema = match crate::schema::form_schema::<T>() {
            Ok(s) => s,
            Err(why) => return ready(Err(ToolError::Protocol(McpError::internal(why)))),
        };
        let answer = self
            .ask(key, "elicitation/create", form(message, schema))
            .and_then(decode::<ElicitResult>);
        ready(answer.and_then(|r| match r.action.as_str() {
            // The schema check let it through, but `T` refuses it (a
            // constraint the schema cannot say): the same -32602, and the
            // form stays open, rather than the call ending.
            "accept" => {
                let content = Value::Object(r.content.unwrap_or_default());
                serde_json::from_value(content)
                    .map(Elicitation::Accepted)
                    .map_err(|e| {
                        ToolError::Protocol(unfit(key, "elicitation/create", &e.to_string()))
                    })
            }
            "decline" => Ok(Elicitation::Declined),
            _ => Ok(Elicitation::Cancelled),
        }))
    }

    /// Sends the user to a page (`elicitation/create` in URL mode, SEP-1036)
    /// and pauses until the page completes the elicitation — a page this
    /// worker serves ([`Registry::page`](crate::Registry::page)), which
    /// answers with [`PageReply::complete`](crate::PageReply::complete).
    /// The `elicitationId` goes into `url` at `{elicitationId}`, else as the
    /// query parameter `elicitationId`; it names this call, this key and the
    /// caller, and cannot be forged. The user's consent in the client is not
    /// the answer: the call waits for the page, across rounds, restarts and
    /// deploys, as long as the call lives. A decline or cancel in the
    /// client is the answer.
    ///
    /// Only where the server keeps the call: a durable tool
    /// ([`Tool::durable`](crate::Tool::durable)), a session, a task (else an
    /// internal error). A client that did not declare `elicitation.url`
    /// gets `-32042` (URL elicitation required) with the elicitation in
    /// `data.elicitations`, as the spec says.
    pub fn elicit_url(
        &self,
        key: &str,
        message: impl Into<String>,
        url: &str,
    ) -> Ready<Result<super::url::UrlElicitation, ToolError>> {
        self.elicit_url_showing(key, message, url, Value::Null)
    }

    /// [`Cx::elicit_url`], with `details` for the page to show (a JSON
    /// object: the tool's arguments, or a summary of what is being
    /// approved). The page reads them, with the message, from the paused
    /// call ([`Page::question`](crate::Page::question)), never from the
    /// link, so whoever holds the link cannot change what is shown or
    /// approved. They travel to the client with the request too (in its
    /// `_meta`), so put nothing there the user may not see.
    pub fn elicit_url_showing(
        &self,
        key: &str,
        message: impl Into<String>,
        url: &str,
        details: Value,
    ) -> Ready<Result<super::url::UrlElicitation, ToolError>> {
        self.url_question(key, (message.into(), url, details), None)
    }

    /// [`Cx::elicit_url_showing`], answered by someone other than the
    /// caller: `approver`, a principal (the subject an approver signs in
    /// as). The link's page admits only them (signed in, as pages are
    /// under sign-in); the caller cannot complete it, but may still decline
    /// or cancel the request in their client (they withdraw). Send the link
    /// (the request's `url`, or [`Cx::elicitation_url`]) to the approver
    /// out of band — an email or a chat message from a `cx.once` effect —
    /// and the call waits for them. [`Cx::answered_by`] then says
    /// `approver:<principal>`. SEP-2848's asynchronous approval.
    pub fn elicit_url_from(
        &self,
        key: &str,
        approver: &str,
        (message, url): (impl Into<String>, &str),
        details: Value,
    ) -> Ready<Result<super::url::UrlElicitation, ToolError>> {
        self.url_question(key, (message.into(), url, details), Some(approver))
    }

    /// The link a URL elicitation under `key` sends its page's visitor to
    /// (`url` as [`Cx::elicit_url`] would send it), to hand to an approver
    /// before asking: `None` where the server keeps no call.
    pub fn elicitation_url(&self, key: &str, url: &str, approver: Option<&str>) -> Option<String> {
        use super::url::{absolute, with_id};
        let oob = self.inner.borrow().out_of_band.clone()?;
        let id = (oob.id)(key, approver);
        Some(with_id(&absolute(&oob.origin, url), &id))
    }

    fn url_question(
        &self,
        key: &str,
        (message, url, details): (String, &str, Value),
        approver: Option<&str>,
    ) -> Ready<Result<super::url::UrlElicitation, ToolError>> {
        use super::url::{absolute, with_id, UrlCompletion, UrlElicitation};
        let (oob, url_ok, answered) = {
            let st = self.inner.borrow();
            (
                st.out_of_band.clone(),
                st.caps.elicitation_url,
                st.journal.answers.contains_key(key),
            )
        };
        let Some(oob) = oob else {
            return ready(Err(ToolError::Protocol(McpError::internal(
                "cx.elicit_url needs a call the server keeps between rounds: \
                 make the tool durable (Tool::durable), or call it in a session or a task",
            ))));
        };
        // The client gets the caller's id (its request names it); an
        // approver's link is theirs alone: the request keeps its digest.
        let id = (oob.id)(key, None);
        let mut params = json!({
            "mode": "url",
            "message": message,
            "url": with_id(&absolute(&oob.origin, url), &id),
            "elicitationId": id,
        });
        if !details.is_null() {
            params["_meta"][PAGE_DETAILS_META] = details;
        }
        if let Some(who) = approver {
            let link = super::journal::link_digest(&(oob.id)(key, Some(who)));
            params["_meta"][APPROVER_META] = json!({ "principal": who, "link": link });
        }
        if !url_ok && !answered {
            return ready(Err(ToolError::Protocol(
                McpError::new(
                    crate::error::ErrorKind::UrlElicitationRequired,
                    "This request requires the user to complete an action at a URL first",
                )
                .with_data(json!({ "elicitations": [params] })),
            )));
        }
        let answer = self.ask(key, "elicitation/create", params);
        ready(answer.map(|v| match v["action"].as_str() {
            Some("accept") => {
                let data = v["content"].as_object().cloned().unwrap_or_default();
                let secrets = v["sealed"]
                    .as_str()
                    .and_then(|s| (oob.open)(s))
                    .unwrap_or_default();
                UrlElicitation::Completed(UrlCompletion::new(data, secrets))
            }
            Some("decline") => UrlElicitation::Declined,
            _ => UrlElicitation::Cancelled,
        }))
    }

    /// Sends an elicitation with raw params (`{mode, message,
    /// requestedSchema}` or URL mode): for forms a type cannot express.
    pub fn elicit_with(&self, key: &str, params: Value) -> Ready<Result<ElicitResult, ToolError>> {
        ready(self.ask(key, "elicitation/create", params).and_then(decode))
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    pub fn sample(&self, key: &str, params: Value) -> Ready<Result<SampleResult, ToolError>> {
        ready(
            self.ask(key, "sampling/createMessage", params)
                .and_then(decode),
        )
    }

    /// Asks the client for its roots (`roots/list`).
    pub fn roots(&self, key: &str) -> Ready<Result<Vec<Root>, ToolError>> {
        let answer = self.ask(key, "roots/list", json!({}));
        ready(answer.and_then(|v| decode(v.get("roots").cloned().unwrap_or(Value::Null))))
    }

    /// Pauses the call without asking anything: the wire lets go of the
    /// client (a state-only `input_required`, or an SSE stream closed with a
    /// `retry:` hint so the Durable Object can hibernate) and the call goes on
    /// when the client comes back. For long work split into resumable steps.
    pub fn checkpoint(&self, key: &str) -> Ready<Result<(), ToolError>> {
        ready(self.ask(key, CHECKPOINT, json!({})).map(|_| ()))
    }

    /// Waits `duration` without holding anything open. In a task the
    /// task's Durable Object sleeps (its alarm wakes it when the time is
    /// up, even with no client connected, and across restarts); on the
    /// other wires a sleep is a [`checkpoint`](Cx::checkpoint): the client
    /// is let go and the call goes on when it comes back.
    pub fn sleep(&self, key: &str, duration: std::time::Duration) -> Ready<Result<(), ToolError>> {
        let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        ready(self.ask(key, TIMER, json!({ "ms": ms })).map(|_| ()))
    }

    /// Where a tool that may run as a task ([`Tool::task`](crate::Tool::task))
    /// becomes one, when the client declared the tasks extension: the call
    /// is answered with a task at once and goes on in the task's Durable
    /// Object. What the body asked before this point went over the
    /// request's own wire. Without the extension it does nothing.
    pub fn detach(&self, key: &str) -> Ready<Result<(), ToolError>> {
        if self.inner.borrow().task_mode == TaskMode::Off {
            return ready(Ok(()));
        }
        ready(self.ask(key, DETACH, json!({})).map(|_| ()))
    }

    /// Sets the task's `statusMessage` (what `tasks/get` shows while it
    /// works). Outside a task it does nothing.
    pub fn status(&self, message: impl Into<String>) {
        let mut st = self.inner.borrow_mut();
        if st.task_mode != TaskMode::Off {
            st.status = Some(message.into());
        }
    }

    /// Whether this run is a task's (in its Durable Object).
    pub fn in_task(&self) -> bool {
        self.inner.borrow().task_mode == TaskMode::Running
    }

    /// Asks the client anything by method name: the answer is returned raw.
    pub fn ask(&self, key: &str, method: &str, params: Value) -> Result<Value, ToolError> {
        let mut request = InputRequest::new(method, params);
        let mut st = self.inner.borrow_mut();
        // What the body read before asking: made only where it is compared
        // or kept (a replay of the same question on the same code, the
        // common case, never needs it).
        let read_digest = |st: &State| short_digest(&json!(st.read));
        if let Some(answer) = st.journal.answers.get(key) {
            let fits = match &answer.outcome {
                Ok(v) => answer_fits(&request, v),
                Err(_) => Ok(()),
            };
            // Asked otherwise because an answer it was made from changed
            // (asked again and answered differently): a new question.
            if answer.asked == request.digest() {
                // Checked again in full: a sealed token's journal could not
                // hold the answer to the form's schema when it was taken. A
                // protocol error leaves the round unrun and the question open.
                fits.map_err(|why| ToolError::Protocol(unfit(key, method, &why)))?;
            } else if fits.is_err()
                || answer
                    .inputs
                    .as_ref()
                    .is_some_and(|i| *i != read_digest(&st))
            {
                // The question changed since it was answered (a deploy
                // changed the code: a field it now requires, another type)
                // and the answer no longer fits it: ask the new question.
                st.journal.answers.remove(key);
                // A client's copy of that old answer (saga completed
                // steps) answers the old question too.
                st.offered.remove(key);
                if let Some(dry) = &st.dry_run {
                    dry.borrow_mut().asked_again.push(key.to_string());
                }
            }
            // Else a question worded or shaped otherwise (a new message, an
            // optional field, a timer's duration, a sampling request's
            // parameters) that the recorded answer still fits: kept.
            if let Some(answer) = st.journal.answers.get(key) {
                let outcome = answer.outcome.clone();
                if !request.is_internal() {
                    let read = (key.to_string(), answer.seen());
                    st.read.push(read);
                    if let Some(dry) = &st.dry_run {
                        dry.borrow_mut().read.push(key.to_string());
                    }
                }
                return outcome.map_err(ToolError::Client);
            }
        }
        let needed = match method {
            "elicitation/create" => (!st.caps.elicitation).then_some("elicitation"),
            "sampling/createMessage" => (!st.caps.sampling).then_some("sampling"),
            "roots/list" => (!st.caps.roots).then_some("roots"),
            _ => None,
        };
        if let Some(cap) = needed {
            return Err(ToolError::MissingCapability(json!({ cap: {} })));
        }
        if let Some(v) = st.offered.remove(key) {
            if answer_fits(&request, &v).is_ok() {
                let inputs = Some(read_digest(&st));
                let answer = Answer::new(request.digest(), Ok(v.clone()), inputs);
                if !request.is_internal() {
                    st.read.push((key.to_string(), answer.seen()));
                }
                st.journal.answers.insert(key.to_string(), Rc::new(answer));
                return Ok(v);
            }
        }
        if let Some(prev) = st.asked.get(key) {
            if prev.digest() != request.digest() {
                return Err(ToolError::Nondeterminism(format!(
                    "input request key {key:?} was used twice in one round for different requests"
                )));
            }
        }
        if !request.is_internal() {
            request.inputs = Some(read_digest(&st));
        }
        st.asked.insert(key.to_string(), request);
        Err(ToolError::Suspend(Suspended(())))
    }

    /// Runs a side effect once per call: a replay gets the recorded output
    /// instead of running `effect` again. Only in durable tools
    /// (`Tool::durable`) and on the session wire, where each round is
    /// accepted once; a stateless tool gets an internal error here.
    pub async fn once<T, F, Fut>(&self, key: &str, effect: F) -> Result<T, ToolError>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, ToolError>>,
    {
        let (recorded, once_safe) = {
            let st = self.inner.borrow();
            (st.journal.once.get(key).cloned(), st.once_safe)
        };
        if let Some(v) = recorded {
            self.replays_same_inputs(key)?;
            self.inner.borrow_mut().replayed.insert(key.to_string());
            return serde_json::from_value(Rc::unwrap_or_clone(v)).map_err(|e| {
                ToolError::Diverged {
                    key: key.to_string(),
                    why: format!(
                        "the effect {key:?} ran and recorded an output that the tool's code now \
                         reads as another type ({e})"
                    ),
                }
            });
        }
        self.runs_no_renamed_effect(key)?;
        if let Some(dry) = &self.inner.borrow().dry_run {
            // A replay check runs no effect: it stops where one would run.
            dry.borrow_mut().effect = Some(key.to_string());
            return Err(ToolError::Suspend(Suspended(())));
        }
        if !once_safe {
            return Err(ToolError::Protocol(McpError::internal(format!(
                "cx.once({key:?}) needs a durable tool: a stateless call's requestState can be \
                 replayed until it expires, which would run the effect again; mark the tool \
                 with Tool::durable()"
            ))));
        }
        // No borrow is held across the effect's await.
        let out = effect().await?;
        let v = serde_json::to_value(&out).map_err(|e| ToolError::Failed(e.to_string()))?;
        let mut st = self.inner.borrow_mut();
        let inputs = st.read.iter().cloned().collect();
        st.journal.once_inputs.insert(key.to_string(), inputs);
        st.journal.once.insert(key.to_string(), Rc::new(v));
        st.replayed.insert(key.to_string());
        Ok(out)
    }

    /// A recorded effect replays only if what it may have been computed
    /// from is still what the tool reads before it. On the same code a
    /// replay reads the same answers in the same order; after a deploy a
    /// step may be inserted (more answers read: fine) or removed (fewer:
    /// fine), but an answer it ran after that is no longer read while
    /// another one, new to it, is read instead is a renamed question: the
    /// effect ran for an answer the tool no longer uses, and replaying its
    /// output would mix the two. The call is kept for a rollback instead.
    fn replays_same_inputs(&self, key: &str) -> Result<(), ToolError> {
        let st = self.inner.borrow();
        let Some(inputs) = st.journal.once_inputs.get(key) else {
            // Recorded before effects kept their inputs: nothing to check.
            return Ok(());
        };
        // A later read of a key replaces an earlier one.
        let mut read: VecMap<&String, &String> = VecMap::new();
        for (k, v) in &st.read {
            read.insert(k, v);
        }
        let gone: Vec<&String> = inputs.keys().filter(|k| !read.contains_key(k)).collect();
        let new: Vec<&String> = read
            .keys()
            .copied()
            .filter(|k| !inputs.contains_key(*k))
            .collect();
        let changed: Vec<&String> = inputs
            .iter()
            .filter(|(k, v)| read.get(k).is_some_and(|now| now != v))
            .map(|(k, _)| k)
            .collect();
        if !changed.is_empty() {
            return Err(ToolError::Diverged {
                key: key.to_string(),
                why: format!(
                    "the effect {key:?} ran for other answers to {changed:?} than the call has \
                     now (asked again after the code changed): its recorded output would mix \
                     the old answers with the new"
                ),
            });
        }
        if gone.is_empty() || new.is_empty() {
            return Ok(());
        }
        Err(ToolError::Diverged {
            key: key.to_string(),
            why: format!(
                "the effect {key:?} ran after the answers {gone:?}, which the tool's code no \
                 longer reads, and it now reads {new:?} instead (a renamed question?): its \
                 recorded output would mix the old answers with the new"
            ),
        })
    }

    /// A new effect runs only while no recorded one went unused. On the
    /// same code a replay reaches every recorded effect before any new
    /// one (the rounds before were a prefix of this run); a new effect
    /// with a recorded one not reached is a renamed or replaced effect,
    /// and running it would run that effect a second time.
    fn runs_no_renamed_effect(&self, key: &str) -> Result<(), ToolError> {
        let st = self.inner.borrow();
        let unused: Vec<&String> = st
            .journal
            .once
            .keys()
            .filter(|k| !st.replayed.contains(*k))
            .collect();
        if unused.is_empty() {
            return Ok(());
        }
        Err(ToolError::Diverged {
            key: key.to_string(),
            why: format!(
                "the effect {key:?} is new, and the recorded effects {unused:?} were not reached \
                 before it (a renamed or replaced effect?): running it could run that effect a \
                 second time"
            ),
        })
    }

    /// Reports progress, when the client sent a progress token.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let mut st = self.inner.borrow_mut();
        let Some(token) = st.progress_token.clone() else {
            return;
        };
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(t) = total {
            params["total"] = json!(t);
        }
        if let Some(m) = message {
            params["message"] = json!(m);
        }
        st.notifications
            .push(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}));
    }

    /// Announces that a list changed: every `subscriptions/listen` stream
    /// that asked for it hears (on the session wire, the call's stream).
    pub fn list_changed(&self, kind: ListKind) {
        self.inner
            .borrow_mut()
            .notifications
            .push(json!({"jsonrpc": "2.0", "method": kind.notification_method()}));
    }

    /// Sends a log message at `level`, when the client asked for that level
    /// or a less severe one.
    pub fn log(&self, level: LogLevel, data: Value) {
        let mut st = self.inner.borrow_mut();
        if st.log_level.is_some_and(|min| level >= min) {
            st.notifications
                .push(json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": level.as_str(), "data": data}}));
        }
    }

    /// Ends the run: the journal (with this run's new requests pending), the
    /// requests to send, and the notifications emitted.
    pub(crate) fn finish(self) -> Finished {
        let st = self.inner.into_inner();
        Finished {
            journal: st.journal,
            asked: st.asked,
            notifications: st.notifications,
            status: st.status,
        }
    }
}

/// What a run leaves behind.
pub(crate) struct Finished {
    pub(crate) journal: Journal,
    pub(crate) asked: VecMap<String, InputRequest>,
    pub(crate) notifications: Vec<Value>,
    pub(crate) status: Option<String>,
}

fn decode<T: DeserializeOwned>(v: Value) -> Result<T, ToolError> {
    crate::json::from_value(v)
        .map_err(|e| ToolError::Failed(format!("the client's answer has an unexpected shape: {e}")))
}
