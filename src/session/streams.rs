//! `GET` on the session wire: replay of a call's stream after
//! `Last-Event-ID`, the standalone stream, and waiting for what comes next.

use super::calls::{
    continue_after_checkpoints, parked, run_claimed, running_elsewhere, store_round,
};
use super::events::{event_id, logged, parse_event_id, stream_reply};
use super::{SessionMeta, SessionStore};
use crate::effects::{Effect, Reply};
use crate::error::{ErrorKind, McpError};
use crate::http::{HttpRequest, HttpResponse, SseEvent};
use crate::server::{Env, Server};

/// The stream that standalone GETs watch (held-open mode only).
const STANDALONE: &str = "_";

/// The standalone stream, held open. Nothing is ever sent outside a
/// request's own stream here, so in polling mode there is none to hold.
fn standalone(server: &Server) -> Result<Reply, McpError> {
    if server.config.sse_polling {
        return Err(McpError::new(
            ErrorKind::MethodNotAllowed,
            "Method not allowed: no standalone stream",
        ));
    }
    let priming = SseEvent {
        id: Some(event_id(STANDALONE, 0)),
        ..SseEvent::default()
    };
    Ok(Reply::new(HttpResponse::sse(vec![priming], true))
        .with(Effect::HoldOpen(STANDALONE.to_string())))
}

/// `GET`: replays a call's stream after `Last-Event-ID`, or opens the
/// standalone stream.
pub(super) async fn get(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    store: &dyn SessionStore,
    meta: &SessionMeta,
    turn: &super::calls::Turn,
) -> Result<Reply, McpError> {
    let Some(last) = req.header("last-event-id") else {
        return standalone(server);
    };
    let (stream, lsn) = parse_event_id(last)
        .ok_or_else(|| McpError::invalid_request("Invalid Request: unknown Last-Event-ID"))?;
    let mut call = store.call(&stream)?.ok_or_else(|| {
        McpError::new(
            ErrorKind::StreamNotFound,
            "Stream not found: no such stream in this session",
        )
    })?;
    call.confirmed_lsn = call.confirmed_lsn.max(lsn);
    call.last_contact_ms = env.now_ms;
    back(server, env, store, meta, turn, &mut call).await?;
    let events: Vec<SseEvent> = store
        .events_after(&stream, lsn)?
        .iter()
        .map(|(l, m)| logged(&stream, *l, m))
        .collect();
    let done = call.state.is_final();
    if !done && events.is_empty() {
        // Nothing new yet: wait here for it (closing would spend the
        // client's reconnection attempts).
        return Ok(Reply::new(HttpResponse::sse(Vec::new(), true)).with(Effect::HoldOpen(stream)));
    }
    Ok(stream_reply(server, &stream, lsn, events, done))
}

/// The client came back to `call`'s stream: after a checkpoint, or after
/// a deploy the call could not be replayed under, the call goes on now
/// (unless a round of it runs elsewhere); else what it confirmed and when
/// it came are stored.
async fn back(
    server: &Server,
    env: &Env,
    store: &dyn SessionStore,
    meta: &SessionMeta,
    turn: &super::calls::Turn,
    call: &mut super::SessionCall,
) -> Result<(), McpError> {
    if !running_elsewhere(server, call, env.now_ms)
        && (parked(call) || continue_after_checkpoints(call))
    {
        let messages = run_claimed(server, store, env, meta, turn, call).await?;
        store_round(server, store, env, meta, call, &messages)?;
        Ok(())
    } else {
        store.put_call(call)
    }
}
