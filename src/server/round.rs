//! One round of a paused call, wherever it is kept: the one place a
//! [`Cx`] is built and a body run, and the one reading of how it ended.
//!
//! | the journal holds      | the event                        | the plan                     |
//! |------------------------|----------------------------------|------------------------------|
//! | nothing (a new call)   | the call arrives                 | run; pause, finish or fail   |
//! | pending requests       | the client's answers arrive      | take them, run again         |
//! | a pending URL ask      | its page completes it            | take the page's values, run  |
//! | a pending timer        | the timer is due (a task's alarm)| pass it, run again           |
//! | answers, no pending    | a rollback or fix is served      | run again (it was parked)    |
//! | anything               | the call is cancelled            | drop it (no run)             |
//!
//! Each run ends in a [`Step`]: done (a result), paused (the requests to
//! send and the journal to keep), parked (the code changed in a way the
//! call cannot be replayed under: kept as it was, for a rollback), or
//! failed. Where a call is kept — a sealed token and a durable call's
//! object (`call.rs`), a session (`session/calls.rs`), a task
//! (`task/slice.rs`) — is a keeper: it loads the journal, claims the round,
//! takes the event in, runs it here and stores what the step says. It
//! decides nothing a round means.

use serde_json::{Map, Value};

use super::target::{run_target, Target};
use super::Server;
use crate::auth::Caller;
use crate::elicitation::Home;
use crate::engine::{ClientCaps, Cx, InputRequest, Journal, Outcome, Run, TaskMode};
use crate::error::{ErrorKind, McpError};
use crate::vec_map::VecMap;

/// Where a round runs: everything it needs besides the journal.
pub(crate) struct Site {
    /// What the client can be asked.
    pub(crate) caps: ClientCaps,
    /// Who is calling, and this server's resource URI (for step-up).
    pub(crate) caller: Caller,
    pub(crate) resource: String,
    /// The call's id (idempotency keys) and whether its rounds are
    /// accepted once (only then may `cx.once` run an effect).
    pub(crate) call_id: String,
    pub(crate) once_safe: bool,
    pub(crate) progress_token: Option<Value>,
    pub(crate) log_level: Option<String>,
    pub(crate) task_mode: TaskMode,
    /// Answers the client sent for keys not pending yet.
    pub(crate) offered: Map<String, Value>,
    /// Where the server keeps the call between rounds, if it does (only
    /// then can it send the user to a page).
    pub(crate) kept: Option<Kept>,
}

/// A call the server keeps: where, for whom, reached where.
pub(crate) struct Kept {
    pub(crate) home: Home,
    pub(crate) principal: String,
    pub(crate) origin: String,
}

impl Site {
    /// A site for `call_id` with `caps`, signed in as `caller`; the rest
    /// unset.
    pub(crate) fn new(call_id: String, caps: ClientCaps, caller: Caller, resource: String) -> Self {
        Self {
            caps,
            caller,
            resource,
            call_id,
            once_safe: true,
            progress_token: None,
            log_level: None,
            task_mode: TaskMode::default(),
            offered: Map::new(),
            kept: None,
        }
    }
}

/// The one place a round's [`Cx`] is made.
pub(crate) fn cx(server: &Server, journal: Journal, site: Site) -> Cx {
    let mut cx = Cx::new(journal, site.caps)
        .with_caller(site.caller, site.resource)
        .with_call(site.call_id, site.once_safe)
        .with_offered(site.offered)
        .with_progress_token(site.progress_token)
        .with_log_level(site.log_level.as_deref())
        .with_task_mode(site.task_mode);
    if let Some(k) = site.kept {
        cx = cx.with_out_of_band(super::out_of_band(server, k.home, &k.principal, &k.origin));
    }
    cx
}

/// Runs one round of `target` from `journal` at `site`.
pub(crate) async fn run(
    server: &Server,
    target: &Target<'_>,
    args: Value,
    journal: Journal,
    site: Site,
) -> Run<Value> {
    if let Target::Tool(t) = target {
        let paused = if server.paused.contains(&t.name) {
            Some(paused_tool(&t.name, !journal.is_fresh()))
        } else {
            journal.held.as_deref().map(|why| held_call(&t.name, why))
        };
        if let Some(e) = paused {
            return Run {
                outcome: Outcome::Error(e),
                notifications: Vec::new(),
                status: None,
            };
        }
    }
    run_target(server, target, cx(server, journal, site), args).await
}

/// The error every round of a call an operator paused ends in: as for a
/// paused tool (`503`, with `Retry-After`), the call parked, kept as it
/// was until it is resumed.
pub(crate) fn held_call(tool: &str, why: &str) -> McpError {
    McpError::new(
        ErrorKind::Unavailable,
        format!("Service unavailable: this call is paused ({why}); try again later"),
    )
    .with_data(serde_json::json!({
        "tool": tool,
        "paused": true,
        "kept": true,
        "retryAfter": PAUSED_RETRY_AFTER_S,
    }))
}

/// How long a client is told to wait before it tries a paused tool again.
pub(crate) const PAUSED_RETRY_AFTER_S: u64 = 30;

/// The error a round of a tool an operator paused ends in (`503`, with
/// `Retry-After`): a new call is refused; a call already under way
/// (`kept`) is parked, kept as it was until the tool is resumed.
pub(crate) fn paused_tool(tool: &str, kept: bool) -> McpError {
    McpError::new(
        ErrorKind::Unavailable,
        format!("Service unavailable: the tool {tool:?} is paused by an operator; try again later"),
    )
    .with_data(serde_json::json!({
        "tool": tool,
        "paused": true,
        "kept": kept,
        "retryAfter": PAUSED_RETRY_AFTER_S,
    }))
}

/// Whether an error keeps its call as it was (parked): the code changed
/// under it, or its tool is paused.
fn parks(e: &McpError) -> bool {
    e.kind == ErrorKind::CodeChanged
        || (e.kind == ErrorKind::Unavailable && e.data.as_ref().is_some_and(|d| d["kept"] == true))
}

/// How a round ended, as every keeper reads it.
pub(crate) enum Step {
    /// A result (a tool's error result included, `isError`).
    Done(Value),
    /// A prompt's or a resource's failure: bad input.
    Refused(String),
    /// Waiting: the requests to send, the journal to keep.
    Paused {
        requests: VecMap<String, InputRequest>,
        journal: Journal,
    },
    /// The code changed so that the call cannot be replayed: kept as it
    /// was before this round (its answers too) for a rollback or a fix.
    Parked(McpError),
    /// Failed with a JSON-RPC error.
    Failed(McpError),
}

impl Step {
    /// Reads a run's outcome; `tool`: whether a tool ran (a tool's failure
    /// is a result, a prompt's is bad input).
    pub(crate) fn of(outcome: Outcome<Value>, tool: bool) -> Self {
        match outcome {
            Outcome::Complete(v) => Step::Done(v),
            Outcome::ToolFailed(m) if tool => {
                Step::Done(crate::app::CallToolResult::error(m).into_json())
            }
            Outcome::ToolFailed(m) => Step::Refused(m),
            Outcome::InputRequired { requests, journal } => Step::Paused { requests, journal },
            Outcome::Error(e) if parks(&e) => Step::Parked(e),
            Outcome::Error(e) => Step::Failed(e),
        }
    }
}

/// A round as it ended, for its keeper's record ([`record`]).
pub(crate) struct Ended<'a> {
    /// The call's id (a durable call's, a task's, a session call's).
    pub(crate) call_id: &'a str,
    /// The tool (prompt, resource) it runs.
    pub(crate) tool: &'a str,
    /// The wire: `mrtr`, `saga`, `sketch`, `session` or `task`.
    pub(crate) wire: &'static str,
    /// Who runs it (the principal's name).
    pub(crate) principal: &'a str,
    /// When it ended (the request's clock).
    pub(crate) now_ms: u64,
    /// The round's number, where no kept journal says it.
    pub(crate) round: u32,
    /// The client's W3C `traceparent` (from the request's `_meta`), if any.
    pub(crate) traceparent: Option<&'a str>,
    /// The JSON-RPC error it ended in, if any (code, kind).
    pub(crate) error: Option<(i64, String)>,
}

/// Records how a round ended: in the journal's trail where its keeper
/// keeps one (see [`crate::engine::Trail`]), and as a log line and a span
/// ([`crate::trace`]) for the host to write.
pub(crate) fn record(
    server: &Server,
    journal: Option<&mut Journal>,
    end: crate::engine::RoundEnd,
    why: Option<&str>,
    ended: &Ended<'_>,
) {
    let config = &server.config;
    if journal.is_some() {
        held(server, end, ended);
    }
    // A round kept nowhere (a stateless call's) is logged only when asked
    // for: a line costs a stateless round trip about a third of its time.
    if journal.is_none() && config.round_logs != super::config::RoundLogs::All {
        return;
    }
    let parent = ended.traceparent.and_then(crate::trace::parse_traceparent);
    let m = marked(journal, (end, why), ended, parent.as_ref());
    if config.round_logs == super::config::RoundLogs::Off && !config.round_spans {
        return;
    }
    let ev = event(ended, end, &m, parent.as_ref());
    log(server, &ev);
}

/// Tells the principal's meter, where limits apply to it, that a call it
/// keeps is held paused (until its keeper's idle TTL) or no longer held.
/// A parked round leaves it as it was.
fn held(server: &Server, end: crate::engine::RoundEnd, ended: &Ended<'_>) {
    use crate::engine::RoundEnd;
    if !server.limits_apply(ended.principal) {
        return;
    }
    let c = &server.config;
    let ttl = match ended.wire {
        "session" => c.session_ttl_ms,
        "task" => c.task_ttl_ms,
        _ => c.state_ttl_ms,
    };
    let until = match end {
        RoundEnd::Paused => ended.now_ms.saturating_add(ttl),
        RoundEnd::Parked => return,
        _ => 0,
    };
    let note = crate::limits::Note::Held {
        call: ended.call_id.to_string(),
        tool: ended.tool.to_string(),
        until,
    };
    server.note(crate::limits::meter_name(ended.principal), note);
}

/// Tells the principal's meter, where limits apply to it, that a call it
/// keeps ended without a round (cancelled by its client or an operator,
/// its session deleted): it is no longer held.
pub(crate) fn let_go(server: &Server, principal: &str, call_id: &str) {
    if server.limits_apply(principal) {
        let note = crate::limits::Note::Held {
            call: call_id.to_string(),
            tool: String::new(),
            until: 0,
        };
        server.note(crate::limits::meter_name(principal), note);
    }
}

/// The round's event, as its log line and its span carry it.
fn event<'e>(
    ended: &'e Ended<'_>,
    end: crate::engine::RoundEnd,
    m: &'e Marked,
    parent: Option<&'e (String, String)>,
) -> crate::trace::RoundEvent<'e> {
    crate::trace::RoundEvent {
        call_id: ended.call_id,
        tool: ended.tool,
        method: crate::protocol::Method::ToolsCall.name(),
        wire: ended.wire,
        round: m.round,
        outcome: end.as_str(),
        started_ms: m.started_ms,
        round_start_ms: ended.now_ms,
        at_ms: ended.now_ms,
        waited_ms: m.waited_ms,
        code: &m.code,
        principal: ended.principal,
        trace_id: &m.trace_id,
        parent_span_id: parent.map(|(_, s)| s.as_str()),
        protocol_version: None,
        session_id: None,
        request_id: None,
        error: ended.error.as_ref().map(|(c, k)| (*c, k.as_str())),
        asked: &m.asked,
    }
}

/// One line per round: the log's fields, the span under `otlp`.
fn log(server: &Server, ev: &crate::trace::RoundEvent<'_>) {
    let config = &server.config;
    let line = if config.round_logs != super::config::RoundLogs::Off {
        crate::trace::round_line(ev, &config.name, config.round_spans)
    } else {
        crate::trace::span_line(ev, &config.name)
    };
    server.log(line);
}

/// What a round's log line says of its call: from its journal, marked
/// with the round's end, where its keeper keeps one.
struct Marked {
    round: u32,
    trace_id: String,
    started_ms: u64,
    waited_ms: u64,
    code: String,
    asked: Vec<String>,
}

/// Marks the round's end in `journal` (if kept) and says what its line
/// tells. One trace for the whole call: the client's, or the call's own.
fn marked(
    journal: Option<&mut Journal>,
    (end, why): (crate::engine::RoundEnd, Option<&str>),
    ended: &Ended<'_>,
    parent: Option<&(String, String)>,
) -> Marked {
    let trace = || {
        parent
            .map(|(t, _)| t.clone())
            .unwrap_or_else(|| crate::trace::trace_id_for(ended.call_id))
    };
    let Some(j) = journal else {
        return Marked {
            round: ended.round.max(1),
            trace_id: trace(),
            started_ms: ended.now_ms,
            waited_ms: 0,
            code: String::new(),
            asked: Vec::new(),
        };
    };
    j.mark(ended.now_ms, end, why, ended.principal);
    let code = j.code.last().cloned().unwrap_or_default();
    let asked: Vec<String> = j.pending.values().map(|r| r.method.clone()).collect();
    let round = j.round.max(1);
    let t = j.trail.get_or_insert_with(Default::default);
    if t.trace_id.is_empty() {
        t.trace_id = trace();
    }
    Marked {
        round,
        trace_id: t.trace_id.clone(),
        started_ms: t.started_ms,
        waited_ms: t.waited_ms,
        code,
        asked,
    }
}

/// The JSON-RPC error a step ended in (code and kind), if any.
pub(crate) fn error_of(step: &Step) -> Option<(i64, String)> {
    match step {
        Step::Parked(e) | Step::Failed(e) => Some((e.code(), format!("{:?}", e.kind))),
        Step::Refused(_) => Some((-32602, "InvalidParams".into())),
        _ => None,
    }
}

/// How a step ends a round, as the trail records it (and why).
pub(crate) fn end_of(step: &Step) -> (crate::engine::RoundEnd, Option<String>) {
    use crate::engine::RoundEnd;
    match step {
        Step::Done(v) if v["isError"] == true => {
            (RoundEnd::Failed, Some("the tool returned an error".into()))
        }
        Step::Done(_) => (RoundEnd::Completed, None),
        Step::Refused(m) => (RoundEnd::Failed, Some(m.clone())),
        Step::Paused { .. } => (RoundEnd::Paused, None),
        Step::Parked(e) => (RoundEnd::Parked, Some(e.message.clone())),
        Step::Failed(e) => (RoundEnd::Failed, Some(e.message.clone())),
    }
}

/// The client's W3C `traceparent` in a request's `_meta`, if any.
pub(crate) fn traceparent(meta: Option<&Value>) -> Option<String> {
    meta?.get("traceparent")?.as_str().map(str::to_string)
}
