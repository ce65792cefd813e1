//! Inside a Durable Object. One class serves every kind of instance, told
//! apart by the internal header the Worker set ([`super::route`]):
//!
//! - `calls:<n>`: the durable calls of shard `n` (their journals, claims,
//!   idle TTL); `call:<id>`, one call, when calls are not sharded;
//! - `task:<id>`: one task (its journal and status; its alarm runs it);
//! - `session:<id>`: one 2025-11-25 session (its calls and event log);
//! - `hub` (`hub:<n>`): `subscriptions/listen` streams, and the fan-out
//!   of the changes they listen for to them; the tools an operator paused;
//! - `index:<n>`: a shard of the operator's index of tasks and sessions;
//! - `meter:<digest>`: one principal's limits.

use super::route::{
    CALL_ID_HEADER, ELICITATION_HEADER, HUB_HEADER, SESSION_ID_HEADER, SESSION_NEW_HEADER,
    TASK_ID_HEADER,
};
use super::Stores;
use crate::effects::{Changes, Effect, Reply};
use crate::error::McpError;
use crate::http::{HttpRequest, HttpResponse};
use crate::index::{IndexChange, IndexEntry};
use crate::server::task::TaskHost;
use crate::server::{error_response, Durable, Env, Place, Server};

/// Serves a request the Worker forwarded to this object. Its answer
/// depends on the request's `Origin` as the Worker's own do (`Vary`).
pub async fn handle_in_object(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    stores: &Stores<'_>,
) -> Reply {
    let mut reply = handle(server, req, env, stores).await;
    // A round admitted by its meter ran here: its place there is free.
    if let Some(lease) = req.header(super::meter::LEASE_HEADER) {
        super::meter::release(server, lease);
    }
    super::cors::vary(&mut reply.response);
    reply
}

async fn handle(server: &Server, req: &HttpRequest, env: &Env, stores: &Stores<'_>) -> Reply {
    // A page completing an elicitation of a call kept here.
    if req.header(ELICITATION_HEADER).is_some() {
        return super::page::serve(server, req, env, super::page::Keeper::Object(stores)).await;
    }
    // An operator's request, sent by the Worker's admin path: a Worker
    // built without the `admin` feature sends none (the native TestServer
    // serves admin either way).
    #[cfg(any(feature = "admin", not(target_arch = "wasm32")))]
    if req.header(super::admin::object::ADMIN_HEADER).is_some() {
        return super::admin::object::serve(server, req, env, stores).await;
    }
    if cfg!(any(feature = "limits", not(target_arch = "wasm32")))
        && req.header(super::meter::METER_HEADER).is_some()
    {
        return super::meter::serve(stores.meter, req, env.now_ms);
    }
    match req.header(HUB_HEADER) {
        Some("broadcast") => return broadcast_here(req, stores),
        // `listen <this hub's name>`: its streams' tasks are told the name.
        Some(v) if v.starts_with("listen") => {
            let hub = v.trim_start_matches("listen").trim().to_string();
            let mut reply = server.serve(req, env, Place::Worker, None, None).await;
            super::announce::listening(&mut reply, &hub);
            return reply;
        }
        _ => {}
    }
    if let Some(hub) = req.header(super::route::WATCH_HEADER) {
        if super::announce::is_hub(server, hub) {
            return super::announce::watch(stores.task, hub, req);
        }
    }
    serve_kept(server, req, env, stores).await
}

/// A hub shard's share of a broadcast: the index changes it keeps, and
/// the rest fanned out to its streams.
fn broadcast_here(req: &HttpRequest, stores: &Stores<'_>) -> Reply {
    // Read as text, as the index store reads these: one reader linked.
    let mut changes: Changes = std::str::from_utf8(&req.body)
        .ok()
        .and_then(|t| crate::json::from_str(t).ok())
        .unwrap_or_default();
    // An index shard keeps the admin index's changes sent to it.
    for change in std::mem::take(&mut changes.index) {
        if let Err(e) = stores.index.apply(&change) {
            return Reply::new(error_response(&e, None));
        }
    }
    Reply::new(HttpResponse::empty(204)).with(Effect::Fanout(changes))
}

/// A request for what this object keeps: a session, a task or a durable
/// call, as the Worker's header names it.
async fn serve_kept(server: &Server, req: &HttpRequest, env: &Env, stores: &Stores<'_>) -> Reply {
    if let Some(session_id) = req.header(SESSION_ID_HEADER) {
        let new = req.header(SESSION_NEW_HEADER).is_some();
        let mut reply =
            crate::session::handle(server, req, env, stores.session, session_id, new).await;
        index_session(&mut reply, session_id, new);
        return reply;
    }
    if let Some(task_id) = req.header(TASK_ID_HEADER) {
        let host = TaskHost {
            task_id: task_id.to_string(),
            store: stores.task,
        };
        return server.serve(req, env, Place::Task(&host), None, None).await;
    }
    let Some(call_id) = req.header(CALL_ID_HEADER) else {
        let e = McpError::invalid_request(
            "Invalid Request: objects are reached only through the Worker",
        );
        return Reply::new(error_response(&e, None));
    };
    let durable = Durable::new(call_id, stores.call);
    server
        .serve(req, env, Place::Call(&durable), None, None)
        .await
}

/// A session opened or deleted by this reply, for the admin index (the
/// hub lists a session's calls by asking it).
fn index_session(reply: &mut Reply, session_id: &str, new: bool) {
    let handle = crate::kept::summary::session_handle(session_id);
    if reply.effects.contains(&Effect::DeleteStorage) {
        reply
            .effects
            .push(Effect::Indexed(IndexChange::Remove(handle)));
    } else if new && reply.response.status < 300 {
        reply
            .effects
            .push(Effect::Indexed(IndexChange::Put(IndexEntry {
                handle,
                object: format!("session:{session_id}"),
                kind: crate::kept::Kind::Session,
                summary: None,
            })));
    }
}

/// The object's alarm: a session cancels calls past their `maxWait` and
/// goes when idle; a task runs its next slice (or goes after its TTL); a
/// call's object (idle past its TTL) goes.
pub async fn alarm(
    server: &Server,
    stores: &Stores<'_>,
    now_ms: u64,
) -> Result<Vec<Effect>, McpError> {
    if let Some(task) = stores.task.load()? {
        return task_alarm(server, stores, task.task_id, now_ms).await;
    }
    if let Some(meta) = stores.session.meta()? {
        let effect = crate::session::on_alarm(server, stores.session, now_ms)?;
        let mut effects = vec![effect];
        if effects.contains(&Effect::DeleteStorage) {
            let handle = crate::kept::summary::session_handle(&meta.id);
            effects.push(Effect::Indexed(IndexChange::Remove(handle)));
        }
        return Ok(effects);
    }
    calls_alarm(server, stores, now_ms)
}

/// A task's alarm: its next slice, or its end (then off the admin index).
async fn task_alarm(
    server: &Server,
    stores: &Stores<'_>,
    task_id: String,
    now_ms: u64,
) -> Result<Vec<Effect>, McpError> {
    let host = TaskHost {
        task_id,
        store: stores.task,
    };
    let handle = crate::kept::summary::task_id(&host.task_id);
    let mut effects = crate::server::task::alarm(server, &host, now_ms).await?;
    if effects.contains(&Effect::DeleteStorage) {
        effects.push(Effect::Indexed(IndexChange::Remove(handle)));
    }
    Ok(effects)
}

/// A calls object's alarm: those idle for the whole TTL go; the alarm
/// moves to when the oldest one left would be idle that long. With none
/// left the object goes (its shard comes back empty on the next call).
fn calls_alarm(server: &Server, stores: &Stores<'_>, now_ms: u64) -> Result<Vec<Effect>, McpError> {
    // Not sooner than a 64th of the TTL from now, though: in a busy shard
    // the next call is due a moment later, and an alarm per moment would
    // cost a request and a write each. A call may outlive its TTL by that.
    let ttl = server.config.state_ttl_ms;
    // Finished calls stay listed for operators as long as configured (never
    // past the TTL), then become tombstones until the TTL.
    let retain = server.config.retain_completed_ms.unwrap_or(ttl).min(ttl);
    let next = stores.call.sweep(now_ms, ttl, retain)?;
    match next {
        Some(due) => {
            let soonest = now_ms.saturating_add((ttl / 64).max(1));
            Ok(vec![Effect::WakeAt(due.max(soonest))])
        }
        // Alarms are at-least-once: deleting what is already gone is fine.
        None => Ok(vec![Effect::DeleteStorage]),
    }
}
