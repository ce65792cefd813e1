//! Resumable requests (seed 001, SEP-975) and the session's alarm.
//!
//! A client that declared `resumableRequests` gets
//! `notifications/requests/resumePolicy {requestId, resumeToken, maxWait}`
//! first on each call's stream. `requests/getStatus` reports the call's
//! state (seed 003's model) without fetching messages; `requests/resume`,
//! sent with the original request id, delivers the messages the client has
//! not confirmed, then the rest. A call nobody asks about for `maxWait` is
//! cancelled and its journal freed; an idle session is deleted.

use serde_json::{json, Value};

use super::events::{event_id, logged, stream_reply};
use super::store::{seed_status, SessionCall, SessionMeta, SessionStore};
use crate::effects::{Effect, Reply};
use crate::engine::Journal;
use crate::error::{ErrorKind, McpError};
use crate::kept::Status;
use crate::protocol::params::ResumableParams;
use crate::protocol::{ClientRequest, Request};
use crate::server::{Env, Server};

fn find(
    store: &dyn SessionStore,
    request_id: &Value,
    token: Option<&str>,
) -> Result<SessionCall, McpError> {
    let token = token
        .ok_or_else(|| McpError::invalid_params("Invalid params: resumeToken must be a string"))?;
    store
        .calls()?
        .into_iter()
        .find(|c| {
            &c.request_id == request_id
                && c.resume_token.as_deref().is_some_and(|t| {
                    t.len() == token.len()
                        && t.bytes()
                            .zip(token.bytes())
                            .fold(0, |a, (x, y)| a | (x ^ y))
                            == 0
                })
        })
        .ok_or_else(|| {
            McpError::invalid_params("Invalid params: no resumable request with that id and token")
        })
}

/// `requests/getStatus {requestId, resumeToken}`.
pub(super) fn get_status(
    store: &dyn SessionStore,
    env: &Env,
    r: &Request,
) -> Result<Value, McpError> {
    let p = resumable(r)?;
    let request_id = (p.request_id.as_ref())
        .ok_or_else(|| McpError::invalid_params("Invalid params: requestId is required"))?;
    let mut call = find(store, request_id, p.resume_token.as_deref())?;
    if !call.state.is_final() {
        call.last_contact_ms = env.now_ms;
        store.put_call(&call)?;
    }
    let events = store.events_after(&call.stream, 0)?;
    let last = events.last().map_or(0, |(l, _)| *l);
    let undelivered = events
        .iter()
        .filter(|(l, _)| *l > call.confirmed_lsn)
        .count();
    Ok(json!({
        "requestId": call.request_id,
        "status": seed_status(&call),
        "lastEventId": event_id(&call.stream, last),
        "deliveredEventId": event_id(&call.stream, call.confirmed_lsn),
        "undeliveredMessages": undelivered,
    }))
}

/// The params of `requests/getStatus` and `requests/resume`.
fn resumable(r: &Request) -> Result<&ResumableParams, McpError> {
    match &r.params {
        ClientRequest::Resumable(p) => Ok(p),
        other => Err(other.unusable()),
    }
}

/// `requests/resume {resumeToken}`, sent with the original request's id.
pub(super) fn resume(
    server: &Server,
    env: &Env,
    store: &dyn SessionStore,
    r: &Request,
) -> Result<Reply, McpError> {
    let mut call = find(store, &r.id, resumable(r)?.resume_token.as_deref())?;
    if call.state == Status::Cancelled {
        return Err(McpError::invalid_params(
            "Invalid params: the request was cancelled (its resume policy's maxWait passed)",
        ));
    }
    call.last_contact_ms = env.now_ms;
    store.put_call(&call)?;
    let events = store
        .events_after(&call.stream, call.confirmed_lsn)?
        .iter()
        .map(|(l, m)| logged(&call.stream, *l, m))
        .collect::<Vec<_>>();
    Ok(stream_reply(
        server,
        &call.stream,
        call.confirmed_lsn,
        events,
        call.state.is_final(),
    ))
}

/// After a request: when the session's alarm must fire by (the idle TTL,
/// the earliest `maxWait` of a waiting call), if the armed alarm would fire
/// later than that (or none is armed). An alarm that fires early is fine —
/// it works out the next time itself — so most requests re-arm nothing.
pub(super) fn arm(server: &Server, store: &dyn SessionStore) -> Result<Option<u64>, McpError> {
    let Some(mut meta) = store.meta()? else {
        return Ok(None);
    };
    let wake = next_wake(server, store, &meta)?;
    if meta.alarm_at_ms.is_some_and(|armed| armed <= wake) {
        return Ok(None);
    }
    meta.alarm_at_ms = Some(wake);
    store.put_meta(&meta)?;
    Ok(Some(wake))
}

/// When the session's alarm should fire next: the earliest `maxWait` of a
/// waiting call, or the idle TTL.
fn next_wake(
    server: &Server,
    store: &dyn SessionStore,
    meta: &SessionMeta,
) -> Result<u64, McpError> {
    let mut wake = super::idle_deadline(server, meta);
    // Only calls of a session that declared resumable requests have a
    // `maxWait`: the others' wake is the idle TTL, without reading a call.
    if !super::resumable(meta) {
        return Ok(wake);
    }
    for c in store.calls()? {
        if let (false, Some(max)) = (c.state.is_final(), c.max_wait_ms) {
            wake = wake.min(c.last_contact_ms.saturating_add(max));
        }
    }
    Ok(wake)
}

/// The alarm: cancels calls whose `maxWait` passed, deletes an idle session.
/// Idempotent (alarms are at-least-once). Returns what to do next: wake
/// again, or delete the object's storage.
pub(crate) fn on_alarm(
    server: &Server,
    store: &dyn SessionStore,
    now_ms: u64,
) -> Result<Effect, McpError> {
    let Some(mut meta) = store.meta()? else {
        return Ok(Effect::DeleteStorage);
    };
    if now_ms >= super::idle_deadline(server, &meta) {
        return Ok(Effect::DeleteStorage);
    }
    for mut c in store.calls()? {
        if let (false, Some(max)) = (c.state.is_final(), c.max_wait_ms) {
            if now_ms >= c.last_contact_ms.saturating_add(max) {
                crate::server::round::let_go(server, &meta.principal, &c.call_id);
                c.state = Status::Cancelled;
                c.journal = Journal::new();
                store.put_call(&c)?;
                // The request gets its answer: whoever reads the stream later
                // learns it was cancelled.
                let cancelled = McpError::new(
                    ErrorKind::RequestCancelled,
                    "Request cancelled: no client contact within the resume policy's maxWait",
                );
                store.append_event(&c.stream, &cancelled.to_response(Some(&c.request_id)))?;
            }
        }
    }
    let wake = next_wake(server, store, &meta)?;
    meta.alarm_at_ms = Some(wake);
    store.put_meta(&meta)?;
    Ok(Effect::WakeAt(wake))
}
