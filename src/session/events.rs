//! The session's event log as SSE: event ids that name their stream,
//! logging messages before they are sent, and how a stream reply ends
//! (closed, polled, held open).

use serde_json::Value;

use super::SessionStore;
use crate::effects::{Effect, Reply};
use crate::error::McpError;
use crate::http::{HttpResponse, SseEvent};
use crate::server::Server;

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

/// Logs `message` on `stream` and pushes it to whoever holds the stream
/// open; the stream then closes (the call is over).
pub(crate) fn logged_push(
    store: &dyn SessionStore,
    stream: &str,
    message: &Value,
) -> Result<crate::effects::Push, McpError> {
    Ok(crate::effects::Push {
        stream: stream.to_string(),
        events: log_all(store, stream, std::slice::from_ref(message))?,
        close: true,
    })
}

/// A reply carrying `events` of `stream`, after a priming event whose id is
/// `prime_after` (the position the events follow).
///
/// - `done`: the call is over; the stream closes after the events.
/// - polling mode (the default): the stream closes after the events with a
///   `retry:` hint, so the object can hibernate; the client comes back with
///   `GET` + `Last-Event-ID`.
/// - held-open mode: the stream stays open and later messages are pushed.
pub(super) fn stream_reply(
    server: &Server,
    stream: &str,
    prime_after: u64,
    events: Vec<SseEvent>,
    done: bool,
) -> Reply {
    let polling = server.config.sse_polling;
    let priming = SseEvent {
        id: Some(event_id(stream, prime_after)),
        retry_ms: (polling && !done).then_some(server.config.sse_retry_ms),
        ..SseEvent::default()
    };
    let mut all = vec![priming];
    all.extend(events);
    let open = !done && !polling;
    let reply = Reply::new(HttpResponse::sse(all, open));
    if open {
        reply.with(Effect::HoldOpen(stream.to_string()))
    } else {
        reply
    }
}
