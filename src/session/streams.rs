//! SSE on the session wire: event ids that name their stream, replay after a
//! `Last-Event-ID`, and how a stream reply ends (closed, polled, held open).

use serde_json::Value;

use super::{SessionMeta, SessionReply, SessionStore};
use crate::error::{ErrorKind, McpError};
use crate::http::{HttpRequest, HttpResponse, SseEvent};
use crate::server::{Env, Server};

/// The stream that standalone GETs watch (held-open mode only).
const STANDALONE: &str = "_";

/// An event id: `<stream>:<lsn>`. Unique across the session (the lsn is)
/// and names the stream a resume replays.
pub(super) fn event_id(stream: &str, lsn: u64) -> String {
    format!("{stream}:{lsn}")
}

/// Splits an event id into stream and lsn.
pub(super) fn parse_event_id(id: &str) -> Option<(String, u64)> {
    let (stream, lsn) = id.trim().rsplit_once(':')?;
    Some((stream.to_string(), lsn.parse().ok()?))
}

/// The SSE event of a logged message.
pub(super) fn logged(stream: &str, lsn: u64, message: &Value) -> SseEvent {
    SseEvent {
        id: Some(event_id(stream, lsn)),
        ..SseEvent::message(message)
    }
}

/// Logs `messages` on `stream` and returns their events.
pub(super) fn log_all(
    store: &dyn SessionStore,
    stream: &str,
    messages: &[Value],
) -> Result<Vec<SseEvent>, McpError> {
    messages
        .iter()
        .map(|m| {
            store
                .append_event(stream, m)
                .map(|lsn| logged(stream, lsn, m))
        })
        .collect()
}

/// A reply carrying `events` of `stream`, after a priming event whose id is
/// `prime_after` (the position the events follow).
///
/// - `done`: the call is over; the stream closes after the events.
/// - polling mode (the default): the stream closes after the events with a
///   `retry:` hint, so the object can hibernate; the client comes back with
///   `GET` + `Last-Event-ID`.
/// - held-open mode: the stream stays open and later messages are pushed.
pub(super) fn reply(
    server: &Server,
    stream: &str,
    prime_after: u64,
    events: Vec<SseEvent>,
    done: bool,
) -> SessionReply {
    let polling = server.config.sse_polling;
    let priming = SseEvent {
        id: Some(event_id(stream, prime_after)),
        retry_ms: (polling && !done).then_some(server.config.sse_retry_ms),
        ..SseEvent::default()
    };
    let mut all = vec![priming];
    all.extend(events);
    let open = !done && !polling;
    SessionReply {
        response: HttpResponse::sse(all, open),
        live: open.then(|| stream.to_string()),
        pushes: Vec::new(),
        wake_at_ms: None,
    }
}

/// `GET`: replays a call's stream after `Last-Event-ID`, or opens the
/// standalone stream.
pub(super) async fn get(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    store: &dyn SessionStore,
    meta: &SessionMeta,
) -> Result<SessionReply, McpError> {
    let Some(last) = req.header("last-event-id") else {
        // Nothing is ever sent outside a request's own stream here, so in
        // polling mode there is no standalone stream to hold open.
        if server.config.sse_polling {
            return Err(McpError::new(
                ErrorKind::MethodNotAllowed,
                "Method not allowed: no standalone stream",
            ));
        }
        return Ok(SessionReply {
            response: HttpResponse::sse(
                vec![SseEvent {
                    id: Some(event_id(STANDALONE, 0)),
                    ..SseEvent::default()
                }],
                true,
            ),
            live: Some(STANDALONE.to_string()),
            pushes: Vec::new(),
            wake_at_ms: None,
        });
    };
    let (stream, lsn) = parse_event_id(last)
        .ok_or_else(|| McpError::invalid_request("Invalid Request: unknown Last-Event-ID"))?;
    let mut call = store
        .call(&stream)?
        .ok_or_else(|| McpError::new(ErrorKind::NotFound, "No such stream in this session"))?;
    call.confirmed_lsn = call.confirmed_lsn.max(lsn);
    call.last_contact_ms = env.now_ms;
    // Back after a checkpoint: the call goes on now.
    if super::calls::continue_after_checkpoints(&mut call) {
        let messages = super::calls::advance(server, meta, &mut call).await;
        log_all(store, &stream, &messages)?;
    }
    store.put_call(&call)?;
    let events: Vec<SseEvent> = store
        .events_after(&stream, lsn)?
        .iter()
        .map(|(l, m)| logged(&stream, *l, m))
        .collect();
    let done = call.state.is_final();
    if !done && events.is_empty() {
        // Nothing new yet: wait here for it (closing would spend the
        // client's reconnection attempts).
        return Ok(SessionReply {
            response: HttpResponse::sse(Vec::new(), true),
            live: Some(stream),
            pushes: Vec::new(),
            wake_at_ms: None,
        });
    }
    Ok(reply(server, &stream, lsn, events, done))
}
