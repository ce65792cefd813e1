//! What a 2025-11-25 session keeps, behind a small synchronous trait (the
//! Worker implements it over the session Durable Object's SQLite).

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::{Journal, RoundEnd};
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

/// Where a call of the session is (seed 003's model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallState {
    /// Accepted, not run yet.
    Initializing,
    /// Running a round.
    Running,
    /// Waiting for the client's answer to an elicitation.
    AwaitingElicit,
    /// Waiting for the client's answer to a sampling request.
    AwaitingSample,
    /// Waiting for the client's roots.
    AwaitingRoots,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled by the client or by its resume policy's `maxWait`.
    Cancelled,
}

impl CallState {
    /// True once nothing more will happen.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
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
    /// Where it is.
    pub state: CallState,
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
        let parked_last = summary::last_end(j).is_some_and(|(e, _)| e == RoundEnd::Parked);
        let status = match self.state {
            // A round claimed it (running, or died with its isolate: the
            // next request takes it over): working, as a durable call's
            // claimed row is.
            s if self.claimed_at_ms != 0 && !s.is_final() => Status::Working,
            CallState::Initializing | CallState::Running if parked_last => Status::Parked,
            CallState::Initializing | CallState::Running => Status::Working,
            CallState::AwaitingElicit | CallState::AwaitingSample | CallState::AwaitingRoots => {
                summary::paused(j)
            }
            CallState::Completed => Status::Completed,
            CallState::Failed => Status::Failed,
            CallState::Cancelled => Status::Cancelled,
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
