//! `tasks/get`, `tasks/update` and `tasks/cancel`, served in the task's
//! object (the Worker routes them by `taskId`). `tasks/result` and
//! `tasks/list` do not exist in SEP-2663: they are unknown methods.

use serde_json::{json, Map, Value};

use super::slice::{next_wake, store};
use super::{detailed, extension_required, unknown_task, wire_status, TaskHost, TaskRecord};
use crate::engine::ClientCaps;
use crate::error::McpError;
use crate::protocol::{ClientRequest, Method, Request};
use crate::server::{Ctx, MethodReply, RequestMeta, Server};

/// Serves a task method.
pub(crate) fn handle(
    server: &Server,
    request: &Request,
    meta: &RequestMeta,
    ctx: &Ctx<'_>,
) -> Result<MethodReply, McpError> {
    if !ClientCaps::from_json(Some(&meta.capabilities)).tasks {
        return Err(extension_required(&request.method));
    }
    let ClientRequest::Task(p) = &request.params else {
        return Err(request.params.unusable());
    };
    let inputs = match request.kind {
        Some(Method::TasksUpdate) => Some(inputs_of(p.input_responses.as_ref())?),
        _ => None,
    };
    let task = own_task(ctx, p.task_id.as_str())?;
    let now = ctx.env.now_ms;
    match (request.kind, task) {
        (Some(Method::TasksGet), Some((_, t))) => Ok(MethodReply {
            effects: nudge(server, &t, now),
            ..MethodReply::plain(detailed(server, &t))
        }),
        // An unknown (or expired, or someone else's) task is -32602 for
        // every method (the extension's spec: MUST for get, SHOULD for
        // update and cancel).
        (_, None) => Err(unknown_task()),
        (Some(Method::TasksUpdate), Some((host, mut t))) => {
            // The body goes on with the scopes of the token the client
            // answered with (a refreshed or stepped-up one).
            t.caller = ctx.caller.clone();
            update(server, host, t, inputs.unwrap_or_default(), now)
        }
        (_, Some((host, t))) => cancel(server, host, t, now),
    }
}

/// A `tasks/update`'s answers: an object, or `-32602`.
fn inputs_of(v: Option<&Value>) -> Result<Map<String, Value>, McpError> {
    match v {
        Some(Value::Object(m)) => Ok(m.clone()),
        _ => Err(McpError::invalid_params(
            "Invalid params: inputResponses must be an object",
        )),
    }
}

/// The task `task_id` in this object, if the caller created it: only the
/// creator sees a task; to anyone else it does not exist.
fn own_task<'c>(
    ctx: &Ctx<'c>,
    task_id: &str,
) -> Result<Option<(&'c TaskHost<'c>, TaskRecord)>, McpError> {
    Ok(match ctx.task {
        Some(host) if host.task_id == task_id => host
            .store
            .load()?
            .filter(|t| t.principal == ctx.principal.0)
            .map(|t| (host, t)),
        _ => None,
    })
}

/// A poll of a task that should have moved on long ago re-arms its alarm.
/// Alarms are durable, so this is for the case where one was lost anyway
/// (a crash between the write and the alarm); the margin keeps polls of a
/// task whose alarm is running right now from scheduling it twice.
fn nudge(server: &Server, t: &TaskRecord, now: u64) -> Vec<crate::effects::Effect> {
    const MARGIN_MS: u64 = 2000;
    let due = next_wake(server, t, t.updated_ms);
    if !t.status.is_final() && due.saturating_add(MARGIN_MS) <= now {
        vec![crate::effects::Effect::WakeAt(now)]
    } else {
        Vec::new()
    }
}

/// `{resultType: "complete"}`: the empty acknowledgement.
fn ack() -> Value {
    json!({"resultType": "complete"})
}

/// Takes the client's answers. Keys that are not outstanding are ignored;
/// an answer of the wrong shape is refused (`-32602`) and its question
/// stays open. Once nothing is left to answer the task goes on at once.
fn update(
    server: &Server,
    host: &TaskHost<'_>,
    mut t: TaskRecord,
    inputs: Map<String, Value>,
    now: u64,
) -> Result<MethodReply, McpError> {
    if wire_status(&t) != "input_required" {
        return Ok(MethodReply::plain(ack()));
    }
    let answers: Vec<(String, Result<Value, Value>)> = inputs
        .into_iter()
        .filter(|(k, _)| t.journal.pending.get(k).is_some_and(|r| !r.is_internal()))
        .map(|(k, v)| (k, Ok(v)))
        .collect();
    t.journal.check_answers(&answers)?;
    if t.journal.accept_answers(answers) == 0 {
        return Ok(MethodReply::plain(ack()));
    }
    // Waiting still while questions (or a timer) are left; else it goes on.
    t.status = t.going_on();
    t.updated_ms = now;
    let effects = store(server, host, t, now)?;
    Ok(MethodReply {
        effects,
        ..MethodReply::plain(ack())
    })
}

/// Cancels a task that has not ended; the alarm will not run it again. On
/// an ended task, the same acknowledgement and nothing else.
fn cancel(
    server: &Server,
    host: &TaskHost<'_>,
    t: TaskRecord,
    now: u64,
) -> Result<MethodReply, McpError> {
    let effects = cancel_task(server, host, t, now, "Cancelled by the client")?;
    Ok(MethodReply {
        effects: effects.unwrap_or_default(),
        ..MethodReply::plain(ack())
    })
}

/// Cancels `t` unless it has ended (`None` then): the alarm will not run
/// it again; `why` becomes its status message.
pub(crate) fn cancel_task(
    server: &Server,
    host: &TaskHost<'_>,
    mut t: TaskRecord,
    now: u64,
    why: &str,
) -> Result<Option<Vec<crate::effects::Effect>>, McpError> {
    if !matches!(
        crate::kept::transition(t.summary().status, crate::kept::Event::Cancel),
        crate::kept::Transition::To(_)
    ) {
        return Ok(None);
    }
    t.status = crate::kept::Status::Cancelled;
    t.status_message = Some(why.into());
    t.journal.pending.clear();
    t.timers.clear();
    t.updated_ms = now;
    let end = (crate::engine::RoundEnd::Cancelled, Some(why), None);
    super::slice::mark(server, &mut t, end, now);
    store(server, host, t, now).map(Some)
}
