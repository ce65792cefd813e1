//! What a 2025-11-25 session keeps, behind a small synchronous trait (the
//! Worker implements it over the session Durable Object's SQLite).

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::{Journal, RoundEnd, CHECKPOINT, DETACH, TIMER};
use crate::error::McpError;
use crate::kept::summary;
use crate::kept::{CallSummary, Kind, Status};

/// The session itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The client's capabilities from `initialize`.
    pub client_capabilities: Value,
    /// The level set by `logging/setLevel`, if any.
    #[serde(default)]
    pub log_level: Option<String>,
    /// Subscribed resource URIs.
    #[serde(default)]
    pub subscriptions: Vec<String>,
    /// The next call stream number.
    #[serde(default)]
    pub next_stream: u64,
    /// Last request from the client (ms since the epoch): the idle TTL runs from here.
    pub last_seen_ms: u64,
    /// Who opened the session (the bearer token's principal; `""` without
    /// auth). Every later request must come from the same principal.
    #[serde(default)]
    pub principal: String,
    /// When the session's alarm is armed to fire (ms since the epoch). A
    /// request re-arms it only when it must fire earlier; when it fires,
    /// the alarm works out the next time itself.
    #[serde(default)]
    pub alarm_at_ms: Option<u64>,
    /// This server's origin as `initialize` reached it: the one the
    /// session's pages are named under, whoever's request runs a round.
    #[serde(default)]
    pub origin: String,
}

/// One request of the session that runs through the engine (a call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionCall {
    /// The SSE stream its messages go to (`c<n>`). A call gets one only
    /// when it has more to say than its result (see `calls::start`).
    pub stream: String,
    /// The call's id in idempotency keys: random, fixed when it starts.
    /// Empty in rows stored before it existed; their key is
    /// `<session>/<stream>`, as it was then.
    #[serde(default)]
    pub call_id: String,
    /// The client's JSON-RPC id.
    pub request_id: Value,
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub method: String,
    /// The request's params.
    pub params: Value,
    /// The replay journal.
    pub journal: Journal,
    /// Where it is: the one status of a kept call (rows stored before
    /// read their seed-003 words: `running`, `awaiting_elicit`, …).
    /// `requests/getStatus` shows [`seed_status`] of it.
    pub state: Status,
    /// The resume token, when the client declared `resumableRequests`.
    #[serde(default)]
    pub resume_token: Option<String>,
    /// Seconds of silence after which the call is cancelled (resume policy).
    #[serde(default)]
    pub max_wait_ms: Option<u64>,
    /// Last time the client showed up for this call.
    pub last_contact_ms: u64,
    /// The last event the client confirmed (by `Last-Event-ID`).
    #[serde(default)]
    pub confirmed_lsn: u64,
    /// When a request claimed the running round (ms since the epoch; 0: no
    /// round is running). Written before the round runs, so a duplicate
    /// answer arriving meanwhile does not run it again.
    #[serde(default)]
    pub claimed_at_ms: u64,
    /// The caller as the call's client last showed it (its start, its
    /// last answer): a round run for an operator's answer, with no request
    /// of the client's, holds the body to these scopes. Never a credential.
    #[serde(default)]
    pub caller: crate::auth::Caller,
    /// The resource URI the call was reached at (for a scope challenge).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource: String,
}

impl crate::store::log::Record for SessionCall {
    fn journal(&self) -> &Journal {
        &self.journal
    }

    fn journal_mut(&mut self) -> &mut Journal {
        &mut self.journal
    }
}

impl SessionCall {
    /// What the call runs: the tool's or the prompt's name, or the
    /// resource's URI.
    pub fn target(&self) -> &str {
        let p = &self.params;
        p["name"]
            .as_str()
            .or_else(|| p["uri"].as_str())
            .unwrap_or_default()
    }

    /// Its admin id's last part: its call id (its stream in rows stored
    /// before call ids were).
    pub fn admin_key(&self) -> &str {
        if self.call_id.is_empty() {
            &self.stream
        } else {
            &self.call_id
        }
    }

    /// The call as an operator's listing shows it (admin id
    /// `s.<digest of the session id>.<call id>`).
    pub fn summary(&self, meta: &SessionMeta) -> CallSummary {
        let j = &self.journal;
        let status = match self.status_of_old_row() {
            // A round claimed it (running, or died with its isolate: the
            // next request takes it over): working, as a durable call's
            // claimed row is.
            s if self.claimed_at_ms != 0 && !s.is_final() => Status::Working,
            s => s,
        };
        let id = summary::session_call_id(&meta.id, self.admin_key());
        let mut s = summary::base(id, Kind::Session, self.target().to_string(), status, j);
        if s.principal.is_empty() {
            s.principal = meta.principal.clone();
        }
        s.updated_ms = s.updated_ms.max(self.last_contact_ms);
        if s.created_ms == 0 {
            s.created_ms = self.last_contact_ms;
        }
        s
    }

    /// Its status, as a row stored before sessions kept the one status
    /// meant it: a call parked on new code kept the word it had before
    /// its round (`running`, `awaiting_elicit`, …), and its last round's
    /// end said parked. A row stored since is parked already (this
    /// changes nothing of it).
    fn status_of_old_row(&self) -> Status {
        let parked_last =
            summary::last_end(&self.journal).is_some_and(|(e, _)| e == RoundEnd::Parked);
        match self.state {
            Status::Working | Status::Waiting if parked_last => Status::Parked,
            s => s,
        }
    }
}

/// The call's status in seed 003's words (`requests/getStatus`), from its
/// one status and its journal: not run yet is `initializing`; working is
/// `running`; waiting or parked is `awaiting_elicit`, `awaiting_sample` or
/// `awaiting_roots` by the question it asked its client last (its answer
/// may be in: a call parked after it keeps that word), or `running` when
/// it asked the client nothing (only checkpoints).
pub fn seed_status(call: &SessionCall) -> &'static str {
    match call.state {
        Status::Completed => "completed",
        Status::Failed => "failed",
        Status::Cancelled => "cancelled",
        Status::Working if call.journal.round == 0 => "initializing",
        Status::Working => "running",
        Status::Waiting | Status::Parked => match client_question(&call.journal) {
            Some("sampling/createMessage") => "awaiting_sample",
            Some("roots/list") => "awaiting_roots",
            Some(_) => "awaiting_elicit",
            None => "running",
        },
    }
}

/// The method of the first question for the client the call's last paused
/// round asked (per its trail; where it keeps none, of what is pending).
fn client_question(j: &Journal) -> Option<&str> {
    let for_client = |m: &&str| !matches!(*m, CHECKPOINT | TIMER | DETACH);
    let marks = j.trail.as_ref().map_or(&[][..], |t| t.marks.as_slice());
    match marks.iter().rev().find(|m| m.end == RoundEnd::Paused) {
        Some(m) => m.asked.iter().map(|a| a.method.as_str()).find(for_client),
        None => j
            .pending
            .values()
            .map(|r| r.method.as_str())
            .find(for_client),
    }
}

/// Storage of one session.
pub trait SessionStore {
    /// The session, if it exists.
    fn meta(&self) -> Result<Option<SessionMeta>, McpError>;
    /// Writes the session.
    fn put_meta(&self, meta: &SessionMeta) -> Result<(), McpError>;
    /// Appends a message to `stream`'s log; returns its log sequence number,
    /// unique and increasing across the session.
    fn append_event(&self, stream: &str, message: &Value) -> Result<u64, McpError>;
    /// The messages of `stream` after `after`, in order.
    fn events_after(&self, stream: &str, after: u64) -> Result<Vec<(u64, Value)>, McpError>;
    /// The call on `stream`.
    fn call(&self, stream: &str) -> Result<Option<SessionCall>, McpError>;
    /// Writes a call.
    fn put_call(&self, call: &SessionCall) -> Result<(), McpError>;
    /// Every call.
    fn calls(&self) -> Result<Vec<SessionCall>, McpError>;
}

/// A `SessionStore` in memory, for tests.
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    meta: RefCell<Option<SessionMeta>>,
    events: RefCell<Vec<(u64, String, Value)>>,
    calls: RefCell<BTreeMap<String, SessionCall>>,
    writes: std::cell::Cell<u64>,
    row_limit: std::cell::Cell<Option<usize>>,
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Refuses a call whose rows would be larger than `bytes` from now on,
    /// as SQLite does (and, as the Worker's rows do, one past the cap a
    /// kept call may hold).
    pub fn limit_rows(&self, bytes: usize) {
        self.row_limit.set(Some(bytes));
    }

    /// How many rows were written (what SQLite storage would bill).
    pub fn writes(&self) -> u64 {
        self.writes.get()
    }

    fn wrote(&self) {
        self.writes.set(self.writes.get() + 1);
    }

    /// How many events are stored (tests check that deletion empties it).
    pub fn event_count(&self) -> usize {
        self.events.borrow().len()
    }
}

impl SessionStore for MemorySessionStore {
    fn meta(&self) -> Result<Option<SessionMeta>, McpError> {
        Ok(self.meta.borrow().clone())
    }

    fn put_meta(&self, meta: &SessionMeta) -> Result<(), McpError> {
        self.wrote();
        *self.meta.borrow_mut() = Some(meta.clone());
        Ok(())
    }

    fn append_event(&self, stream: &str, message: &Value) -> Result<u64, McpError> {
        self.wrote();
        let mut ev = self.events.borrow_mut();
        let lsn = ev.last().map_or(1, |(l, _, _)| l + 1);
        ev.push((lsn, stream.to_string(), message.clone()));
        Ok(lsn)
    }

    fn events_after(&self, stream: &str, after: u64) -> Result<Vec<(u64, Value)>, McpError> {
        Ok(self
            .events
            .borrow()
            .iter()
            .filter(|(l, s, _)| s == stream && *l > after)
            .map(|(l, _, m)| (*l, m.clone()))
            .collect())
    }

    fn call(&self, stream: &str) -> Result<Option<SessionCall>, McpError> {
        Ok(self.calls.borrow().get(stream).cloned())
    }

    fn put_call(&self, call: &SessionCall) -> Result<(), McpError> {
        use crate::store::log::Record as _;
        // The rows the Worker would write (its whole log, as if new): the
        // cap and the row limit hold here as there.
        let (row, rows, _) = call.rows(None)?;
        let chunks = rows
            .delta
            .as_deref()
            .map(crate::store::log::chunks)
            .unwrap_or_default();
        let limit = self.row_limit.get().unwrap_or(usize::MAX);
        if let Some(size) = std::iter::once(row.len())
            .chain(chunks.iter().map(|c| c.len()))
            .find(|n| *n > limit)
        {
            return Err(McpError::internal(format!(
                "session storage failed: string or blob too big: SQLITE_TOOBIG ({size} bytes)"
            )));
        }
        self.wrote();
        self.calls
            .borrow_mut()
            .insert(call.stream.clone(), call.clone());
        Ok(())
    }

    fn calls(&self) -> Result<Vec<SessionCall>, McpError> {
        Ok(self.calls.borrow().values().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A call's row as stored before sessions kept the one status: its
    /// seed-003 word in `state`; `marks`: its trail's rounds.
    fn old_row(state: &str, round: u32, pending: Value, marks: Value) -> SessionCall {
        serde_json::from_value(json!({
            "stream": "c1",
            "request_id": 7,
            "method": "tools/call",
            "params": {"name": "approve", "arguments": {}},
            "journal": {"v": 1, "round": round, "pending": pending,
                        "trail": {"startedMs": 1000, "marks": marks}},
            "state": state,
            "last_contact_ms": 2000
        }))
        .expect("an old call row loads")
    }

    fn mark(round: u32, end: &str, asked: &[&str]) -> Value {
        let asked: Vec<Value> = (asked.iter())
            .map(|m| json!({"key": "k", "method": m}))
            .collect();
        json!({"round": round, "atMs": 1500, "end": end, "asked": asked})
    }

    #[test]
    fn rows_stored_with_the_seed_003_words_load_and_show_them_again() {
        let meta = SessionMeta {
            id: "s".into(),
            protocol_version: "2025-11-25".into(),
            client_capabilities: json!({}),
            log_level: None,
            subscriptions: Vec::new(),
            next_stream: 2,
            last_seen_ms: 0,
            principal: String::new(),
            alarm_at_ms: None,
            origin: String::new(),
        };
        let sample = json!({"k": {"method": "sampling/createMessage"}});
        let asked_roots = json!([mark(1, "paused", &["roots/list"])]);
        let checkpoint = json!([mark(1, "paused", &["durable-mcp/checkpoint"])]);
        let parked_after_elicit = json!([
            mark(1, "paused", &["elicitation/create"]),
            mark(2, "parked", &[])
        ]);
        let none = json!([]);
        for (word, round, pending, marks, status, shown) in [
            (
                "initializing",
                0,
                json!({}),
                &none,
                Status::Working,
                Status::Working,
            ),
            (
                "running",
                1,
                json!({}),
                &checkpoint,
                Status::Working,
                Status::Working,
            ),
            (
                "awaiting_sample",
                1,
                sample,
                &none,
                Status::Waiting,
                Status::Waiting,
            ),
            (
                "awaiting_roots",
                1,
                json!({}),
                &asked_roots,
                Status::Waiting,
                Status::Waiting,
            ),
            (
                "awaiting_elicit",
                1,
                json!({}),
                &parked_after_elicit,
                Status::Waiting,
                Status::Parked,
            ),
            (
                "completed",
                1,
                json!({}),
                &none,
                Status::Completed,
                Status::Completed,
            ),
            (
                "failed",
                1,
                json!({}),
                &none,
                Status::Failed,
                Status::Failed,
            ),
            (
                "cancelled",
                1,
                json!({}),
                &none,
                Status::Cancelled,
                Status::Cancelled,
            ),
        ] {
            let call = old_row(word, round, pending, marks.clone());
            assert_eq!(call.state, status, "{word}");
            assert_eq!(call.summary(&meta).status, shown, "{word}");
            assert_eq!(seed_status(&call), word, "the wire's word as before");
        }
    }

    #[test]
    fn a_parked_call_shows_the_word_of_where_it_was() {
        let asked_elicit = json!([
            mark(1, "paused", &["elicitation/create"]),
            mark(2, "parked", &[])
        ]);
        let mut call = old_row("parked", 1, json!({}), asked_elicit);
        assert_eq!(call.state, Status::Parked);
        assert_eq!(seed_status(&call), "awaiting_elicit", "its answer is in");
        call.journal.trail = None;
        assert_eq!(seed_status(&call), "running", "it asked its client nothing");
        let stored = serde_json::to_value(&call).expect("a call serializes");
        assert_eq!(stored["state"], "parked");
    }
}
