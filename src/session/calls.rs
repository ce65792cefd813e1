//! Calls on the session wire: each runs on the replay engine; a suspended
//! round becomes JSON-RPC requests to the client on the call's stream, and
//! the last answer of a round runs the next one.

use std::future::Future;
use std::task::Poll;

use serde_json::{json, Value};

use super::events::{log_all, stream_reply};
use super::store::{SessionCall, SessionMeta, SessionStore};
use super::{caps_of, progress_token, session_shape};
use crate::effects::{Push, Reply};
use crate::engine::{ClientCaps, Journal, Outside, RoundEnd};
use crate::error::McpError;
use crate::http::HttpResponse;
use crate::http::SseEvent;
use crate::kept::Status;
use crate::protocol::{notification, result_response, ClientRequest, Method, Request};
use crate::server::{call_target, round, Env, Kept, Server, Site, Step, Target};

/// Who a request of the session comes from (already checked to be its
/// principal), for the rounds it runs: a refreshed token runs them with
/// its own scopes. Read once per request (`session::handle_inner`).
pub(crate) struct Turn {
    pub(crate) caller: crate::auth::Caller,
    pub(crate) resource: String,
    /// This server's origin as the request reached it, for a session
    /// whose meta has none (opened before it was kept there); else empty.
    pub(crate) origin: String,
}

impl Turn {
    /// The turn of `call`'s own client as its last request showed it: a
    /// round run for an operator holds the body to the client's scopes.
    fn of(call: &SessionCall) -> Self {
        Self {
            caller: call.caller.clone(),
            resource: call.resource.clone(),
            origin: String::new(),
        }
    }
}

/// The resume policy a resumable call's stream opens with (seed 003).
fn resume_policy(server: &Server, call: &SessionCall, r: &Request) -> Option<Value> {
    let token = call.resume_token.as_ref()?;
    Some(notification(
        "notifications/requests/resumePolicy",
        json!({"requestId": r.id, "resumeToken": token,
               "maxWait": server.config.resume_max_wait_ms / 1000}),
    ))
}

/// Starts a call: `tools/call`, `prompts/get` or `resources/read`.
pub(super) async fn start(
    server: &Server,
    turn: &Turn,
    env: &Env,
    store: &dyn SessionStore,
    meta: &SessionMeta,
    r: &Request,
) -> Result<Reply, McpError> {
    let found = target_of(server, turn, r)?;
    let resumable = super::resumable(meta);
    let mut call = new_call(server, turn, env, r, resumable);
    let mut messages: Vec<Value> = resume_policy(server, &call, r).into_iter().collect();
    // The target just found runs the first round: looked up once.
    let rounds = Rounds::new(server, &call, Some(found));
    messages.extend(rounds.advance(store, env, meta, turn, &mut call).await);

    // A call that finished at once with nothing else to say is a plain JSON
    // response; there is nothing to resume.
    if messages.len() == 1 && call.state.is_final() && !resumable {
        let only = messages.remove(0);
        return Ok(Reply::new(HttpResponse::json(200, &only)));
    }
    ensure_stream(store, env, &mut call)?;
    let stream = call.stream.clone();
    let events = store_round(server, store, env, meta, &mut call, &messages)?;
    Ok(stream_reply(
        server,
        &stream,
        0,
        events,
        call.state.is_final(),
    ))
}

/// What a call runs, found once. Unknown tools and the like are plain
/// errors, before any stream exists; a token without the tool's scopes is
/// refused before the call starts (403 with the challenge, so the client
/// steps up and sends the call again); tasks are a 2026-07-28 extension,
/// so a task-only tool cannot run here.
fn target_of<'s>(
    server: &'s Server,
    turn: &Turn,
    r: &Request,
) -> Result<(Target<'s>, Value), McpError> {
    let method = r
        .kind
        .ok_or_else(|| McpError::method_not_found(&r.method))?;
    let found = call_target(server, method, &r.params, None)?;
    if let (Target::Tool(t), _) = &found {
        crate::auth::require(&turn.caller, &turn.resource, &server.tool_scopes(t))?;
        if t.task_support() == Some(crate::app::TaskSupport::Required) {
            return Err(crate::server::task::extension_required(&format!(
                "The tool {:?}",
                t.name()
            )));
        }
    }
    Ok(found)
}

/// A call as its request starts it. No stream yet: a call that answers
/// at once with nothing else to say never needs one, and then its request
/// writes nothing at all.
fn new_call(server: &Server, turn: &Turn, env: &Env, r: &Request, resumable: bool) -> SessionCall {
    SessionCall {
        stream: String::new(),
        call_id: call_id(env),
        request_id: r.id.clone(),
        method: r.method.clone(),
        params: r.call_params(),
        journal: Journal::new(),
        state: Status::Working,
        resume_token: resumable.then(|| crate::server::new_call_id(env)),
        max_wait_ms: resumable.then_some(server.config.resume_max_wait_ms),
        last_contact_ms: env.now_ms,
        confirmed_lsn: 0,
        claimed_at_ms: 0,
        caller: turn.caller.clone(),
        resource: turn.resource.clone(),
    }
}

/// Gives `call` a stream if it has none yet: `c<n>` from the session's
/// counter, read and written with no await between, so two calls of the
/// session running at once never share one (and `meta` loaded before the
/// call's awaits may be stale: the stored one is read). The write also
/// stores the last-seen time exactly.
fn ensure_stream(
    store: &dyn SessionStore,
    env: &Env,
    call: &mut SessionCall,
) -> Result<(), McpError> {
    if !call.stream.is_empty() {
        return Ok(());
    }
    let mut meta = store.meta()?.ok_or_else(super::not_found)?;
    call.stream = format!("c{}", meta.next_stream);
    meta.next_stream += 1;
    meta.last_seen_ms = meta.last_seen_ms.max(env.now_ms);
    store.put_meta(&meta)
}

/// A call's id for idempotency keys: derived one way from the request's
/// randomness, which also makes the resume token, so a webhook that sees
/// the key learns nothing of the token.
fn call_id(env: &Env) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(b"durable-mcp session call id\0")
        .chain_update(env.random)
        .finalize();
    crate::engine::hex(&digest[..16])
}

/// Takes a client's answer to one of our requests; when it completes the
/// round, runs the next one and returns what to push to the call's stream.
pub(super) async fn answer(
    server: &Server,
    turn: &Turn,
    env: &Env,
    store: &dyn SessionStore,
    meta: &SessionMeta,
    id: &Value,
    outcome: Result<Value, Value>,
) -> Result<Vec<Push>, McpError> {
    let Some((mut call, key)) = asked_by(server, store, env, id)? else {
        return Ok(Vec::new());
    };
    let stream = call.stream.clone();
    // The same rule as every wire: a wrong-shaped answer is refused and the
    // question stays open for a corrected one.
    let answer = [(key, outcome)];
    call.journal.check_answers(&answer)?;
    call.last_contact_ms = env.now_ms;
    call.caller = turn.caller.clone();
    call.journal.accept_answers(answer);
    // The client is here: checkpoints left in this round pass too.
    if !call.journal.pending.is_empty() && !continue_after_checkpoints(&mut call) {
        store.put_call(&call)?;
        return Ok(Vec::new());
    }
    let messages = run_claimed(server, store, env, meta, turn, &mut call).await?;
    let events = store_round(server, store, env, meta, &mut call, &messages)?;
    let close = call.state.is_final() || server.config.sse_polling;
    Ok(vec![Push {
        stream,
        events,
        close,
    }])
}

/// The call that asked the request `id` answers, and its key, if that
/// call waits for this answer now.
fn asked_by(
    server: &Server,
    store: &dyn SessionStore,
    env: &Env,
    id: &Value,
) -> Result<Option<(SessionCall, String)>, McpError> {
    let Some((stream, round, key)) = id.as_str().and_then(parse_request_id) else {
        // Not an id we issued: nothing waits for it.
        return Ok(None);
    };
    let Some(call) = store.call(&stream)? else {
        return Ok(None);
    };
    if call.state.is_final() || call.journal.round != round {
        // A late or repeated answer: the round it belongs to is over.
        return Ok(None);
    }
    if running_elsewhere(server, &call, env.now_ms) {
        // A copy of this answer (a client's retry) is running the round
        // right now: running it again would repeat its side effects.
        return Ok(None);
    }
    Ok(Some((call, key)))
}

/// Why something from outside the client was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No such call waiting for it (unknown, over, or not asking that),
    /// with why.
    Not(&'static str),
    /// Its round is running right now: try again.
    Busy,
}

/// Something from outside the client ([`Outside`]: a page completed, an
/// operator's answer or rewind) for the call `call_id`: it goes into the
/// call's journal (a page's completion puts
/// `notifications/elicitation/complete` onto the call's stream), and when
/// nothing else is waited for the next round runs right here, its messages
/// following on the stream (held open, or read on resume). `turn` is the
/// request that brought it (a page's); an operator's runs the round as the
/// call's own client last did.
pub(crate) async fn take_outside(
    server: &Server,
    store: &dyn SessionStore,
    env: &Env,
    turn: Option<Turn>,
    call_id: &str,
    what: Outside,
) -> Result<Result<Vec<Push>, Refused>, McpError> {
    let (meta, mut call) = match waiting_call(server, store, env, call_id)? {
        Ok(found) => found,
        Err(refused) => return Ok(Err(refused)),
    };
    // A page's completion is told on the call's stream, before what the
    // round it lets run says.
    let mut messages: Vec<Value> = page_completed(&call.journal, &what).into_iter().collect();
    if let Err(why) = call.journal.take_outside(what, env.now_ms) {
        return Ok(Err(Refused::Not(why)));
    }
    let stream = call.stream.clone();
    let turn = turn.unwrap_or_else(|| Turn::of(&call));
    if call.journal.pending.is_empty() || continue_after_checkpoints(&mut call) {
        messages.extend(run_claimed(server, store, env, &meta, &turn, &mut call).await?);
    }
    let events = store_round(server, store, env, &meta, &mut call, &messages)?;
    let close = call.state.is_final() || server.config.sse_polling;
    Ok(Ok(vec![Push {
        stream,
        events,
        close,
    }]))
}

/// What the call's client is told of a page's completion: under the id
/// its request named (an approver's page has its own, which the client
/// never saw).
fn page_completed(journal: &crate::engine::Journal, what: &Outside) -> Option<Value> {
    let Outside::Page {
        key,
        elicitation_id,
        ..
    } = what
    else {
        return None;
    };
    let asked = journal.pending_url(key, elicitation_id)?;
    Some(notification(
        "notifications/elicitation/complete",
        json!({ "elicitationId": asked.url_elicitation_id() }),
    ))
}

/// The session and its call `call_id`, if that call is not finished and
/// no round of it runs right now (else why not).
fn waiting_call(
    server: &Server,
    store: &dyn SessionStore,
    env: &Env,
    call_id: &str,
) -> Result<Result<(SessionMeta, SessionCall), Refused>, McpError> {
    let Some(meta) = store.meta()? else {
        return Ok(Err(Refused::Not("not found")));
    };
    let found = store
        .calls()?
        .into_iter()
        .find(|c| c.call_id == call_id && !c.state.is_final());
    let Some(call) = found else {
        return Ok(Err(Refused::Not("not found")));
    };
    if running_elsewhere(server, &call, env.now_ms) {
        return Ok(Err(Refused::Busy));
    }
    Ok(Ok((meta, call)))
}

/// Stores `call` after a round and logs what the round said on its
/// stream. A call whose state cannot be stored (a row too large for the
/// platform, past `MAX_CALL_BYTES`, storage down) ends there, failed,
/// once: its stream gets the error as the call's response, an error line
/// is logged, and the call is kept without its journal, so that nothing
/// runs its round — and its effects — again.
pub(super) fn store_round(
    server: &Server,
    store: &dyn SessionStore,
    env: &Env,
    meta: &SessionMeta,
    call: &mut SessionCall,
    messages: &[Value],
) -> Result<Vec<SseEvent>, McpError> {
    let stream = call.stream.clone();
    let Err(e) = store.put_call(call) else {
        return log_all(store, &stream, messages);
    };
    let (why, failed) = crate::kept::unstored(&e);
    let error = Some((failed.code(), format!("{:?}", failed.kind)));
    mark(
        server,
        call,
        meta,
        env,
        (RoundEnd::Failed, Some(&why), error),
        "",
    );
    call.state = Status::Failed;
    forget_journal(call);
    store.put_call(call).map_err(|_| e)?;
    log_all(
        store,
        &stream,
        &[failed.to_response(Some(&call.request_id))],
    )
}

/// Whether another request claimed this call's running round and may still
/// be running it (a claim older than the claim timeout died with its isolate).
pub(super) fn running_elsewhere(server: &Server, call: &SessionCall, now_ms: u64) -> bool {
    call.claimed_at_ms != 0
        && now_ms.saturating_sub(call.claimed_at_ms) < server.config.claim_timeout_ms
}

/// Claims the call's next rounds for this request — written before they
/// run, so a duplicate arriving while they await (a webhook, a model) sees
/// the claim and stays out — then runs them and releases the claim.
pub(super) async fn run_claimed(
    server: &Server,
    store: &dyn SessionStore,
    env: &Env,
    meta: &SessionMeta,
    turn: &Turn,
    call: &mut SessionCall,
) -> Result<Vec<Value>, McpError> {
    call.claimed_at_ms = env.now_ms.max(1);
    store.put_call(call)?;
    let rounds = Rounds::new(server, call, None);
    let (messages, awaited) = {
        let advance = rounds.advance(store, env, meta, turn, call);
        let mut advance = std::pin::pin!(advance);
        let first = std::future::poll_fn(|cx| Poll::Ready(advance.as_mut().poll(cx))).await;
        match first {
            Poll::Ready(messages) => (messages, false),
            Poll::Pending => (advance.await, true),
        }
    };
    call.claimed_at_ms = 0;
    if awaited && overtaken(store, meta, call)? {
        return Ok(Vec::new());
    }
    Ok(messages)
}

/// Rounds that awaited may have let an operator's cancel in (nothing else
/// runs in this object before a round's first await). What got there
/// first stays (its error is on the call's stream already): `call` becomes
/// it, and these rounds' messages are dropped.
fn overtaken(
    store: &dyn SessionStore,
    meta: &SessionMeta,
    call: &mut SessionCall,
) -> Result<bool, McpError> {
    let Some(now) = store.call(&call.stream)? else {
        return Ok(false);
    };
    let end = call
        .journal
        .trail
        .as_ref()
        .and_then(|t| t.marks.last())
        .map_or(crate::engine::RoundEnd::Paused, |m| m.end);
    if crate::kept::may_store(now.summary(meta).status, end).is_ok() {
        return Ok(false);
    }
    *call = now;
    Ok(true)
}

/// `notifications/cancelled`: the call stops; its resources are freed.
pub(super) fn cancel(
    server: &Server,
    store: &dyn SessionStore,
    meta: &SessionMeta,
    request_id: &Value,
) -> Result<Vec<Push>, McpError> {
    let mut pushes = Vec::new();
    for mut call in store.calls()? {
        if &call.request_id == request_id && !call.state.is_final() {
            crate::server::round::let_go(server, &meta.principal, &call.call_id);
            call.state = Status::Cancelled;
            forget_journal(&mut call);
            store.put_call(&call)?;
            pushes.push(Push {
                stream: call.stream.clone(),
                events: Vec::new(),
                close: true,
            });
        }
    }
    Ok(pushes)
}

/// What a call's rounds run, looked up once per request: the tool,
/// prompt or resource its request names, or why it cannot run.
pub(super) struct Rounds<'a> {
    server: &'a Server,
    method: Option<Method>,
    target: Result<(Target<'a>, Value), McpError>,
}

impl<'a> Rounds<'a> {
    /// `found`: the target when the caller already looked it up.
    pub(super) fn new(
        server: &'a Server,
        call: &SessionCall,
        found: Option<(Target<'a>, Value)>,
    ) -> Self {
        let method = Method::parse(&call.method);
        let target = found.map(Ok).unwrap_or_else(|| {
            // The call's params as it stored them, typed again.
            let params = call.params.as_object().cloned().unwrap_or_default();
            method.map_or_else(
                || Err(McpError::method_not_found(&call.method)),
                |m| call_target(server, m, &ClientRequest::read(Some(m), params), None),
            )
        });
        Self {
            server,
            method,
            target,
        }
    }

    /// Runs the next rounds of `call`; returns the messages for its stream and
    /// updates its journal and state. Checkpoints pause the call until the client
    /// comes back (polling mode); with streams held open they pass at once.
    pub(super) async fn advance(
        &self,
        store: &dyn SessionStore,
        env: &Env,
        meta: &SessionMeta,
        turn: &Turn,
        call: &mut SessionCall,
    ) -> Vec<Value> {
        let mut messages = Vec::new();
        loop {
            messages.extend(advance_once(self, store, env, meta, turn, call).await);
            if self.server.config.sse_polling || !continue_after_checkpoints(call) {
                return messages;
            }
        }
    }
}

/// When only checkpoints are pending, passes them; true if it did.
pub(super) fn continue_after_checkpoints(call: &mut SessionCall) -> bool {
    let pending = &call.journal.pending;
    if call.state.is_final() || pending.is_empty() || !pending.values().all(|r| r.is_internal()) {
        return false;
    }
    let passed = crate::engine::InputRequest::checkpoints_passed(pending);
    call.journal.accept_answers(passed);
    true
}

/// Runs one round of `call` and settles it; returns what its stream
/// gets.
async fn advance_once(
    rounds: &Rounds<'_>,
    store: &dyn SessionStore,
    env: &Env,
    meta: &SessionMeta,
    turn: &Turn,
    call: &mut SessionCall,
) -> Vec<Value> {
    let server = rounds.server;
    let (target, args) = match &rounds.target {
        Ok((target, args)) => (target, args.clone()),
        // A paused call whose tool this deploy does not serve: kept.
        Err(_) if call.journal.round > 0 && rounds.method == Some(Method::ToolsCall) => {
            return tool_gone(server, meta, env, turn, call);
        }
        Err(e) => {
            call.state = Status::Failed;
            return vec![e.clone().to_response(Some(&call.request_id))];
        }
    };
    let site = site_of(meta, turn, call);
    let is_tool = rounds.method == Some(Method::ToolsCall);
    let run = round::run(server, target, args, call.journal.clone(), site).await;
    let mut messages = run.notifications;
    let step = Step::of(run.outcome, is_tool);
    let (end, why) = round::end_of(&step);
    let error = round::error_of(&step);
    messages.extend(settle(store, env, call, step));
    let end = (end, why.as_deref(), error);
    mark(server, call, meta, env, end, &turn.caller.principal);
    if call.state.is_final() {
        forget_journal(call);
    }
    messages
}

/// A paused call whose tool this deploy does not serve parks (kept for a
/// rollback or a fix); the round's end is marked with why.
fn tool_gone(
    server: &Server,
    meta: &SessionMeta,
    env: &Env,
    turn: &Turn,
    call: &mut SessionCall,
) -> Vec<Value> {
    let name = call.params["name"].as_str().unwrap_or("");
    let gone = crate::engine::tool_gone(name);
    let error = Some((gone.code(), format!("{:?}", gone.kind)));
    let end = (RoundEnd::Parked, Some(gone.message.as_str()), error);
    mark(server, call, meta, env, end, &turn.caller.principal);
    park(call, &gone)
}

/// A finished call's journal is no longer needed: the row stays for
/// `requests/getStatus`, with its round count and its trail for an
/// operator.
fn forget_journal(call: &mut SessionCall) {
    call.journal = Journal {
        round: call.journal.round,
        trail: call.journal.trail.take(),
        ..Journal::new()
    };
}

/// Where a round of `call` runs: the session's client, its caller, and
/// where the call is kept (a page names it there).
fn site_of(meta: &SessionMeta, turn: &Turn, call: &SessionCall) -> Site {
    let caps = ClientCaps::from_json(Some(&Value::Object(caps_of(meta))));
    let mut site = Site::new(
        idempotency_base(meta, call),
        caps,
        turn.caller.clone(),
        turn.resource.clone(),
    );
    site.progress_token = progress_token(&call.params);
    site.log_level = meta.log_level.clone();
    site.kept = Some(Kept {
        home: crate::elicitation::Home::Session(meta.id.clone(), call.call_id.clone()),
        principal: turn.caller.principal.clone(),
        // The session's own origin: a page's request (another host name,
        // say) must not change what a replay asks.
        origin: if meta.origin.is_empty() {
            turn.origin.clone()
        } else {
            meta.origin.clone()
        },
    });
    site
}

/// What a round's `step` leaves `call` in, and what the client is told on
/// the call's stream.
fn settle(store: &dyn SessionStore, env: &Env, call: &mut SessionCall, step: Step) -> Vec<Value> {
    let (state, said) = match step {
        Step::Done(v) => (
            Status::Completed,
            result_response(&call.request_id, session_shape(v)),
        ),
        Step::Refused(m) => (
            Status::Failed,
            McpError::invalid_params(m).to_response(Some(&call.request_id)),
        ),
        Step::Failed(e) => (Status::Failed, e.to_response(Some(&call.request_id))),
        Step::Parked(e) => return park(call, &e),
        Step::Paused { requests, journal } => return asked(store, env, call, requests, journal),
    };
    call.state = state;
    vec![said]
}

/// A round that paused: its questions go to the client on the call's
/// stream (which it gets now), each under an id naming the call's round.
fn asked(
    store: &dyn SessionStore,
    env: &Env,
    call: &mut SessionCall,
    requests: crate::vec_map::VecMap<String, crate::engine::InputRequest>,
    mut journal: Journal,
) -> Vec<Value> {
    journal.round = call.journal.round + 1;
    if let Err(e) = ensure_stream(store, env, call) {
        call.state = Status::Failed;
        return vec![e.to_response(Some(&call.request_id))];
    }
    // It waits for its client's answers (which ones `seed_status` tells
    // from the journal); with only checkpoints the client's next GET
    // continues the call, as a working one.
    call.state = if requests.values().any(|r| !r.is_internal()) {
        Status::Waiting
    } else {
        Status::Working
    };
    let mut messages = Vec::new();
    for (key, r) in requests.iter().filter(|(_, r)| !r.is_internal()) {
        let id = request_id(&call.stream, journal.round, key);
        let mut m = json!({"jsonrpc": "2.0", "id": id, "method": r.method});
        if !r.params.is_null() {
            m["params"] = r.params.clone();
        }
        messages.push(m);
    }
    call.journal = journal;
    messages
}

/// Records how a round of `call` ended in its journal's trail.
fn mark(
    server: &Server,
    call: &mut SessionCall,
    meta: &SessionMeta,
    env: &Env,
    (end, why, error): (RoundEnd, Option<&str>, Option<(i64, String)>),
    principal: &str,
) {
    let params = call.params.as_object();
    let traceparent = round::traceparent(params.and_then(|p| p.get("_meta")));
    let mut journal = std::mem::take(&mut call.journal);
    let ended = round::Ended {
        call_id: &call.call_id,
        tool: call.target(),
        wire: "session",
        principal: if principal.is_empty() {
            &meta.principal
        } else {
            principal
        },
        now_ms: env.now_ms,
        round: 0,
        traceparent: traceparent.as_deref(),
        error,
    };
    round::record(server, Some(&mut journal), end, why, &ended);
    call.journal = journal;
}

/// A call the tool's new code cannot replay stays open, as it was before
/// this run (its answers kept): the client hears why on the call's stream
/// (a log message; no response ends the call), and the call runs again
/// when the client next comes back to it (its stream resumed, its answer
/// sent again) — on a rollback or a fixing deploy it goes on.
fn park(call: &mut SessionCall, e: &McpError) -> Vec<Value> {
    call.state = Status::Parked;
    vec![notification(
        "notifications/message",
        json!({"level": "error", "logger": "durable-mcp", "data": e.to_error_object()}),
    )]
}

/// Whether a stored call has every answer it waits for but no round has
/// run on them: a call the last deploy could not replay.
pub(super) fn parked(call: &SessionCall) -> bool {
    !call.state.is_final() && call.journal.round > 0 && call.journal.pending.is_empty()
}

/// What the call's idempotency keys start with.
fn idempotency_base(meta: &SessionMeta, call: &SessionCall) -> String {
    if call.call_id.is_empty() {
        format!("{}/{}", meta.id, call.stream)
    } else {
        format!("{}/{}", meta.id, call.call_id)
    }
}

/// The id of a request we send: `<stream>/<round>/<key>`, so an answer finds
/// its call and round without a lookup table.
fn request_id(stream: &str, round: u32, key: &str) -> String {
    format!("{stream}/{round}/{key}")
}

fn parse_request_id(id: &str) -> Option<(String, u32, String)> {
    let mut parts = id.splitn(3, '/');
    let stream = parts.next()?.to_string();
    let round = parts.next()?.parse().ok()?;
    let key = parts.next()?.to_string();
    Some((stream, round, key))
}
