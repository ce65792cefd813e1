//! An operator's request inside an object: a call shard, a session, a
//! task or the hub (the index) answers for what it keeps. The Worker sends
//! these ([`super::job`]); the header naming the operation is internal (a
//! client's copy is dropped), so only the Worker's admin path reaches them.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::super::Stores;
use super::each::{each, Keeper};
use crate::admin::summary::{self, DURABLE_PREFIX, SESSION_PREFIX, TASK_PREFIX};
use crate::admin::{CallDetail, CallSummary};
use crate::effects::{Effect, Reply};
use crate::engine::{Journal, RoundEnd};
use crate::error::McpError;
use crate::http::{HttpRequest, HttpResponse};
use crate::index::IndexEntry;
use crate::kept::{self, Event, Transition};
use crate::replay::PausedCall;
use crate::server::task::TaskHost;
use crate::server::{error_response, Env, Server};
use crate::store::CallStatus;

/// The internal header that carries the operation.
pub(crate) const ADMIN_HEADER: &str = "x-durable-mcp-admin";

/// What the Worker asks an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Ask {
    /// Every call it keeps, summarized.
    List,
    /// One call whole (`ids[0]`).
    Show,
    /// Cancel these.
    Cancel,
    /// Pause these calls (each, not its tool).
    Hold,
    /// Resume these paused calls.
    Release,
    /// Answer the question `key` of the call `ids[0]` on its behalf.
    Answer,
    /// Ask the call `ids[0]` again from its question `key`.
    Rewind,
    /// These paused calls' journals.
    Export,
    /// Forget these finished calls.
    Purge,
    /// The hub: the index and the paused tools.
    Entries,
    /// The hub: the paused tools alone (each isolate reads them now and
    /// then).
    Paused,
    /// The hub: pause `tool`.
    Pause,
    /// The hub: resume `tool`.
    Resume,
    /// The hub: spend the console sign-in link whose nonce is `ids[0]`
    /// (kept until `until_ms`); answers whether this was its first use.
    SpendLink,
}

/// The body of an object's admin request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Body {
    #[serde(default)]
    pub(crate) ids: Vec<String>,
    #[serde(default)]
    pub(crate) tool: Option<String>,
    /// The operator's name (written into a cancelled call's history).
    #[serde(default)]
    pub(crate) operator: String,
    /// Until when a mark is kept ([`Ask::SpendLink`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) until_ms: Option<u64>,
    /// The question ([`Ask::Answer`], [`Ask::Rewind`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<String>,
    /// The answer ([`Ask::Answer`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<Value>,
}

/// The hub's answer to [`Ask::Entries`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Entries {
    pub(crate) entries: Vec<IndexEntry>,
    pub(crate) paused: Vec<String>,
}

/// The request that asks `op` of an object.
pub(crate) fn request(op: Ask, body: &Body) -> HttpRequest {
    let op = serde_json::to_value(op)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    HttpRequest {
        method: "POST".into(),
        path: "/admin".into(),
        headers: vec![
            (ADMIN_HEADER.into(), op),
            ("content-type".into(), "application/json".into()),
        ],
        body: serde_json::to_vec(body).unwrap_or_default(),
    }
}

fn ok(v: &impl Serialize) -> Reply {
    Reply::new(HttpResponse::json(200, &json!(v)))
}

/// Serves an operator's request inside an object.
pub(crate) async fn serve(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    stores: &Stores<'_>,
) -> Reply {
    let op: Option<Ask> = req
        .header(ADMIN_HEADER)
        .and_then(|h| serde_json::from_value(Value::String(h.to_string())).ok());
    let body: Body = serde_json::from_slice(&req.body).unwrap_or_default();
    let Some(op) = op else {
        let e = McpError::invalid_request("Invalid Request: an unknown admin operation");
        return Reply::new(error_response(&e, None));
    };
    if matches!(op, Ask::Answer | Ask::Rewind) {
        let act = super::outside::Act {
            id: body.ids.first().cloned().unwrap_or_default(),
            key: body.key.clone().unwrap_or_default(),
            answer: body.answer.clone(),
            operator: body.operator.clone(),
        };
        return super::outside::act(server, env, stores, act)
            .await
            .unwrap_or_else(|e| Reply::new(error_response(&e, None)));
    }
    match answer(server, op, &body, env, stores) {
        Ok(reply) => reply,
        Err(e) => Reply::new(error_response(&e, None)),
    }
}

fn answer(
    server: &Server,
    op: Ask,
    body: &Body,
    env: &Env,
    stores: &Stores<'_>,
) -> Result<Reply, McpError> {
    match op {
        Ask::List => Ok(ok(&list(stores)?)),
        Ask::Show => {
            let id = body.ids.first().map(String::as_str).unwrap_or_default();
            Ok(ok(&show(server, stores, id)?))
        }
        Ask::Cancel => cancel(server, stores, env, body),
        Ask::Hold => super::hold::hold(server, stores, env, (&body.ids, &body.operator), true),
        Ask::Release => super::hold::hold(server, stores, env, (&body.ids, &body.operator), false),
        // Served before, asynchronously: a session's call runs its round.
        Ask::Answer | Ask::Rewind => Err(McpError::internal("served elsewhere")),
        Ask::Export => {
            // A user's answers are sealed for the deploy check, never shown.
            let ring = &server.config.keys;
            let sealed: Option<Vec<PausedCall>> = export(stores, &body.ids)?
                .into_iter()
                .map(|c| c.sealed(ring))
                .collect();
            let sealed = sealed.ok_or_else(|| {
                McpError::internal("exporting needs STATE_KEYS to seal the answers")
            })?;
            Ok(ok(&sealed))
        }
        Ask::Purge => purge(stores, &body.ids),
        Ask::Entries => Ok(ok(&Entries {
            entries: stores.index.entries()?,
            paused: stores.index.paused_tools()?,
        })),
        Ask::Paused => Ok(ok(&stores.index.paused_tools()?)),
        Ask::SpendLink => {
            let nonce = body.ids.first().map(String::as_str).unwrap_or_default();
            let until = body.until_ms.unwrap_or_default();
            let first = !nonce.is_empty() && stores.index.spend_link(nonce, until, env.now_ms)?;
            Ok(ok(&json!({ "first": first })))
        }
        Ask::Pause | Ask::Resume => {
            let tool = body.tool.as_deref().unwrap_or_default();
            stores.index.set_paused(tool, op == Ask::Pause)?;
            let paused = stores.index.paused_tools()?;
            // This isolate knows at once; the others within a refresh.
            server.paused.set(paused.clone(), env.now_ms);
            Ok(ok(
                &json!({"tool": tool, "paused": op == Ask::Pause, "pausedTools": paused}),
            ))
        }
    }
}

/// Every call this object keeps, summarized: a shard's durable calls, a
/// session's calls, a task.
fn list(stores: &Stores<'_>) -> Result<Vec<CallSummary>, McpError> {
    let mut out: Vec<CallSummary> = stores
        .call
        .list()?
        .iter()
        .map(|(id, c)| c.summary(id))
        .collect();
    if let Some(meta) = stores.session.meta()? {
        out.extend(stores.session.calls()?.iter().map(|c| c.summary(&meta)));
    }
    if let Some(t) = stores.task.load()? {
        out.push(t.summary());
    }
    Ok(out)
}

/// What a call's tool shows of its answers to an operator.
fn shows<'a>(server: &'a Server, tool: &str) -> impl Fn(&str) -> bool + 'a {
    let keys = server
        .registry
        .find_tool(tool)
        .map(|t| t.admin_shows.clone())
        .unwrap_or_default();
    move |key: &str| keys.iter().any(|k| k == key)
}

fn not_found(id: &str) -> McpError {
    McpError::new(
        crate::error::ErrorKind::ResourceNotFound,
        format!("No call {id:?} is kept here"),
    )
}

/// One call whole.
fn show(server: &Server, stores: &Stores<'_>, id: &str) -> Result<CallDetail, McpError> {
    if let Some(call_id) = id.strip_prefix(DURABLE_PREFIX) {
        let call = stores
            .call
            .load(call_id)?
            .filter(|c| c.status != CallStatus::Purged)
            .ok_or_else(|| not_found(id))?;
        let s = call.summary(call_id);
        let args = call
            .journal
            .invocation
            .as_ref()
            .map(|i| i.arguments.clone())
            .unwrap_or(Value::Null);
        let shows = shows(server, &s.tool);
        return Ok(summary::detail(s, args, &call.journal, &shows));
    }
    if id.starts_with(SESSION_PREFIX) {
        let meta = stores.session.meta()?.ok_or_else(|| not_found(id))?;
        let calls = stores.session.calls()?;
        let call = calls
            .iter()
            .find(|c| summary::session_call_id(&meta.id, c.admin_key()) == id)
            .ok_or_else(|| not_found(id))?;
        let s = call.summary(&meta);
        let shows = shows(server, &s.tool);
        let args = call.params.get("arguments").cloned().unwrap_or(Value::Null);
        return Ok(summary::detail(s, args, &call.journal, &shows));
    }
    if id.starts_with(TASK_PREFIX) {
        let t = stores.task.load()?.ok_or_else(|| not_found(id))?;
        let s = t.summary();
        if s.id != id {
            return Err(not_found(id));
        }
        let shows = shows(server, &s.tool);
        return Ok(summary::detail(s, t.arguments.clone(), &t.journal, &shows));
    }
    Err(not_found(id))
}

const CANCELLED: &str = "Cancelled by an operator";

/// Cancels the calls named: a durable call's row says so (its client gets
/// `-32800` when it comes back), a session's call gets that error on its
/// stream, a task becomes `cancelled`.
fn cancel(server: &Server, stores: &Stores<'_>, env: &Env, body: &Body) -> Result<Reply, McpError> {
    let why = if body.operator.is_empty() {
        CANCELLED.to_string()
    } else {
        format!("{CANCELLED} ({})", body.operator)
    };
    each(&body.ids, |id, keeper, effects| match keeper {
        Keeper::Durable(call_id) => cancel_durable(stores, call_id, env.now_ms, &why),
        Keeper::Session => cancel_session_call(stores, id, env.now_ms, &why, effects),
        Keeper::Task => Ok(match stores.task.load()? {
            Some(t) if summary::task_id(&t.task_id) == id => {
                let host = TaskHost {
                    task_id: t.task_id.clone(),
                    store: stores.task,
                };
                match crate::server::task::cancel_task(server, &host, t, env.now_ms, &why)? {
                    Some(e) => {
                        effects.extend(e);
                        Ok(())
                    }
                    None => Err("already finished"),
                }
            }
            _ => Err("not found"),
        }),
    })
}

fn cancel_durable(
    stores: &Stores<'_>,
    call_id: &str,
    now_ms: u64,
    why: &str,
) -> Result<Result<(), &'static str>, McpError> {
    let Some(mut call) = stores.call.load(call_id)? else {
        return Ok(Err("not found"));
    };
    if call.status == CallStatus::Purged {
        return Ok(Err("not found"));
    }
    if let Transition::No(why) = kept::transition(call.kept_status(), Event::Cancel) {
        return Ok(Err(why.why()));
    }
    // A round running at this moment (a claim is held only while one
    // awaits) finds this when it ends and stores nothing over it: its
    // client, and every retry, gets `-32800`.
    call.status = CallStatus::Cancelled;
    call.updated_ms = now_ms;
    call.last_reply = None;
    call.journal.pending.clear();
    call.journal
        .mark(now_ms, RoundEnd::Cancelled, Some(why), "");
    stores.call.save(call_id, &call)?;
    Ok(Ok(()))
}

fn cancel_session_call(
    stores: &Stores<'_>,
    id: &str,
    now_ms: u64,
    why: &str,
    effects: &mut Vec<Effect>,
) -> Result<Result<(), &'static str>, McpError> {
    let Some((meta, mut call)) = super::each::session_call(stores, id)? else {
        return Ok(Err("not found"));
    };
    if let Transition::No(why) = kept::transition(call.summary(&meta).status, Event::Cancel) {
        return Ok(Err(why.why()));
    }
    call.state = kept::Status::Cancelled;
    call.journal
        .mark(now_ms, RoundEnd::Cancelled, Some(why), "");
    call.journal = Journal {
        round: call.journal.round,
        trail: call.journal.trail.take(),
        ..Journal::new()
    };
    stores.session.put_call(&call)?;
    // The request gets its answer on its stream: whoever reads it now or
    // resumes it later learns it was cancelled, and by whom.
    let cancelled = crate::server::cancelled_by_operator();
    let message = cancelled.to_response(Some(&call.request_id));
    if !call.stream.is_empty() {
        effects.push(Effect::Push(crate::session::logged_push(
            stores.session,
            &call.stream,
            &message,
        )?));
    }
    Ok(Ok(()))
}

/// The paused calls named, as the deploy check reads them.
fn export(stores: &Stores<'_>, ids: &[String]) -> Result<Vec<PausedCall>, McpError> {
    let mut out = Vec::new();
    for (id, call) in stores.call.list()? {
        let admin = summary::durable_id(&id);
        if !ids.contains(&admin) || call.status.is_final() {
            continue;
        }
        // A listing holds its journal's head: the call whole, its log read.
        let Some(call) = stores.call.load(&id)? else {
            continue;
        };
        if let Some(inv) = call.journal.invocation.clone() {
            out.push(PausedCall::new(
                admin,
                inv.tool,
                inv.arguments,
                call.journal,
            ));
        }
    }
    if let Some(meta) = stores.session.meta()? {
        for call in stores.session.calls()? {
            let admin = summary::session_call_id(&meta.id, call.admin_key());
            if !ids.contains(&admin)
                || call.state.is_final()
                || call.method != crate::protocol::Method::ToolsCall.name()
            {
                continue;
            }
            out.push(PausedCall::new(
                admin,
                call.target().to_string(),
                call.params["arguments"].clone(),
                call.journal,
            ));
        }
    }
    if let Some(t) = stores.task.load()? {
        let admin = summary::task_id(&t.task_id);
        if ids.contains(&admin) && !t.status.is_final() {
            out.push(PausedCall::new(admin, t.tool, t.arguments, t.journal));
        }
    }
    Ok(out)
}

/// Purges the finished calls named, as the machine says ([`kept`]): a
/// durable call's row becomes a tombstone (unlisted; its end kept for the
/// tokens that may still name it, until its TTL); a task's whole object
/// goes (and its index entry). A session's calls go with the session.
fn purge(stores: &Stores<'_>, ids: &[String]) -> Result<Reply, McpError> {
    each(ids, |id, keeper, effects| match keeper {
        Keeper::Durable(call_id) => Ok(match stores.call.load(call_id)? {
            // Purged already: nothing more to do (purge is idempotent).
            Some(c) if c.status == CallStatus::Purged => Ok(()),
            Some(c) => match kept::transition(c.kept_status(), Event::Purge) {
                // Kept, unlisted, until no token can name it: a token
                // still naming it gets its end, never a rebuild.
                Transition::Tombstone => {
                    stores.call.save(call_id, &c.tombstone())?;
                    Ok(())
                }
                Transition::No(why) => Err(why.why()),
                _ => Err("not finished"),
            },
            None => Err("not found"),
        }),
        Keeper::Task => Ok(match stores.task.load()? {
            Some(t) if summary::task_id(&t.task_id) == id => {
                match kept::transition(t.summary().status, Event::Purge) {
                    // A task id is its own capability and nothing
                    // rebuilds a task: its object goes whole.
                    Transition::Tombstone => {
                        effects.push(Effect::DeleteStorage);
                        effects.push(Effect::Indexed(crate::index::IndexChange::Remove(
                            id.to_string(),
                        )));
                        Ok(())
                    }
                    Transition::No(why) => Err(why.why()),
                    _ => Err("not finished"),
                }
            }
            _ => Err("not found"),
        }),
        Keeper::Session => Ok(Err("a session's calls go with the session (its idle TTL)")),
    })
}
