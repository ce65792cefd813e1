//! A task as stored in its Durable Object, and the storage trait.

use std::cell::RefCell;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::{ClientCaps, Journal};
use crate::error::McpError;
use crate::kept::summary;
use crate::kept::{CallSummary, Kind, Status};
use crate::store::log::Record as _;
use crate::vec_map::VecMap;

/// One task. Its object holds exactly one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task id (the object's name; an unguessable bearer capability).
    pub task_id: String,
    /// Who created it: only they can see or change it.
    pub principal: String,
    /// The caller as its last request (creation, or the last
    /// `tasks/update`) showed it: a slice run by the alarm, with no request,
    /// holds the body to these scopes. Never a credential.
    #[serde(default)]
    pub caller: crate::auth::Caller,
    /// The resource URI the task was reached at (for a scope challenge).
    #[serde(default)]
    pub resource: String,
    /// This server's origin as the task was reached (for its pages).
    #[serde(default)]
    pub origin: String,
    /// The tool it runs.
    pub tool: String,
    /// The tool's arguments.
    pub arguments: Value,
    /// What the creating request's client can answer.
    pub caps: ClientCaps,
    /// Where it is: the one status of a kept call (rows stored before
    /// read their SEP-2663 words: `working`, `input_required`, …). The wire
    /// shows [`wire_status`] of it.
    pub status: Status,
    /// The body's last `cx.status` message, or why it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ms since the epoch).
    pub created_ms: u64,
    /// When it last changed.
    pub updated_ms: u64,
    /// The journal the body replays from; `pending` holds what it waits on.
    pub journal: Journal,
    /// When each pending timer is due (ms since the epoch), by key.
    #[serde(default)]
    pub timers: VecMap<String, u64>,
    /// The `CallToolResult`, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error object, once failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// Bumped on every write, so a slice that ran while a request changed
    /// the task (a cancel) notices.
    #[serde(default)]
    pub version: u64,
    /// Held back by a limit: the refusal, until its meter admits it (the
    /// task is `working`, and says so in its status message).
    /// (The refusal as written: read with `limits::wire::refusal`.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited: Option<Value>,
    /// The lease its meter admitted its first slice under, released when
    /// that slice ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
    /// The status the operator's index last heard: a write that leaves it
    /// as it was tells the index nothing (a task's index shard hears of its
    /// status changes, not of each slice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listed: Option<Status>,
}

impl crate::store::log::Record for TaskRecord {
    fn journal(&self) -> &Journal {
        &self.journal
    }

    fn journal_mut(&mut self) -> &mut Journal {
        &mut self.journal
    }
}

impl TaskRecord {
    /// The task as an operator's listing shows it (admin id `t.<digest of
    /// the task id>`).
    pub fn summary(&self) -> CallSummary {
        let j = &self.journal;
        let id = summary::task_id(&self.task_id);
        let status = self.status_of_old_row();
        let mut s = summary::base(id, Kind::Task, self.tool.clone(), status, j);
        s.principal = if self.caller.principal.is_empty() {
            self.principal.clone()
        } else {
            self.caller.principal.clone()
        };
        s.created_ms = self.created_ms;
        s.updated_ms = self.updated_ms;
        if let Some(m) = &self.status_message {
            s.note = Some(m.clone());
        }
        s
    }

    /// Its status, as a row stored before tasks kept the one status meant
    /// it: their `working` was also a task stuck on new code (its message
    /// says so) or waiting on a timer, and their `completed` also a tool's
    /// error. A row stored since holds these already (this changes
    /// nothing of it); an old one is stored right by its next slice.
    fn status_of_old_row(&self) -> Status {
        let stuck = (self.status_message.as_deref()).is_some_and(|m| m.starts_with("Stuck"));
        let tool_error = self.result.as_ref().is_some_and(|r| r["isError"] == true);
        match self.status {
            Status::Working if stuck => Status::Parked,
            Status::Working if !self.journal.pending.is_empty() => Status::Waiting,
            Status::Completed if tool_error => Status::Failed,
            s => s,
        }
    }

    /// Whether a question of the body waits for the client (an answer by
    /// `tasks/update`), not only the server's own pauses (a timer, a
    /// detach).
    pub fn asks_client(&self) -> bool {
        self.journal.pending.values().any(|r| !r.is_internal())
    }

    /// The status of a task that goes on: waiting while anything is
    /// pending (the client's answers, a timer), else working (its alarm
    /// runs the next slice now).
    pub(crate) fn going_on(&self) -> Status {
        if self.journal.pending.is_empty() {
            Status::Working
        } else {
            Status::Waiting
        }
    }
}

/// The task's status on the wire (SEP-2663), from its one status: waiting
/// on the client is `input_required`; waiting on a timer, working and
/// parked (stuck until a fix or a rollback) are `working`, since the task
/// goes on by itself; a tool's error is a result (`isError`), so
/// `completed`; `failed` is a JSON-RPC error.
pub fn wire_status(t: &TaskRecord) -> &'static str {
    match t.status {
        Status::Waiting if t.asks_client() => "input_required",
        Status::Waiting | Status::Working | Status::Parked => "working",
        Status::Completed => "completed",
        Status::Failed if t.error.is_none() => "completed",
        Status::Failed => "failed",
        Status::Cancelled => "cancelled",
    }
}

/// Storage of one task (one Durable Object holds one task). Synchronous:
/// the Worker's is Durable Object SQLite, whose `exec` is.
pub trait TaskStore {
    /// The task, if this object holds one.
    fn load(&self) -> Result<Option<TaskRecord>, McpError>;
    /// Writes the task (insert or replace).
    fn save(&self, task: &TaskRecord) -> Result<(), McpError>;
    /// The listen hubs holding a stream that named this task: its changes
    /// go to them alone (none: nobody listens, no request).
    fn watchers(&self) -> Result<Vec<String>, McpError>;
    /// Remembers that `hub` holds a stream naming this task. Kept apart
    /// from the record: a slice writing the record it loaded before the
    /// stream opened must not lose the hub.
    fn watch(&self, hub: &str) -> Result<(), McpError>;
}

/// A [`TaskStore`] in memory, for tests.
#[derive(Debug, Default)]
pub struct MemoryTaskStore {
    task: RefCell<Option<TaskRecord>>,
    /// What its rows hold of the journal (its log written as the
    /// Worker's store writes it, to check rows against the limit).
    warm: crate::store::warm::Warm<TaskRecord>,
    writes: std::cell::Cell<u64>,
    row_limit: std::cell::Cell<Option<usize>>,
    watchers: RefCell<Vec<String>>,
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many rows were written (what SQLite storage would bill).
    pub fn writes(&self) -> u64 {
        self.writes.get()
    }

    /// Refuses records larger than `bytes` from now on, as SQLite does.
    pub fn limit_rows(&self, bytes: usize) {
        self.row_limit.set(Some(bytes));
    }
}

impl TaskStore for MemoryTaskStore {
    fn load(&self) -> Result<Option<TaskRecord>, McpError> {
        Ok(self.task.borrow().clone())
    }

    fn save(&self, task: &TaskRecord) -> Result<(), McpError> {
        let (row, rows, manifest) = self
            .warm
            .with("task", |h| task.rows(h.map(|(t, m)| (&t.journal, m))))
            .inspect_err(|_| self.warm.forget("task"))?;
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
            self.warm.forget("task");
            return Err(McpError::internal(format!(
                "task storage failed: string or blob too big: SQLITE_TOOBIG ({size} bytes)"
            )));
        }
        self.writes.set(self.writes.get() + 1 + chunks.len() as u64);
        *self.task.borrow_mut() = Some(task.clone());
        self.warm.put("task", manifest, task.clone());
        Ok(())
    }

    fn watchers(&self) -> Result<Vec<String>, McpError> {
        Ok(self.watchers.borrow().clone())
    }

    fn watch(&self, hub: &str) -> Result<(), McpError> {
        let mut w = self.watchers.borrow_mut();
        if !w.iter().any(|h| h == hub) {
            w.push(hub.to_string());
            self.writes.set(self.writes.get() + 1);
        }
        Ok(())
    }
}

/// Milliseconds since the epoch as an ISO 8601 UTC timestamp
/// (`2026-11-22T09:30:00.000Z`).
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task row as stored before tasks kept the one status: its
    /// SEP-2663 word in `status`.
    fn old_row(status: &str, pending: Value, extra: Value) -> TaskRecord {
        let mut row = serde_json::json!({
            "task_id": "0123456789abcdef0123456789abcdef",
            "principal": "alice",
            "tool": "approve",
            "arguments": {"amount": 5},
            "caps": {"elicitation": true, "sampling": false, "roots": false, "tasks": true},
            "status": status,
            "created_ms": 1000,
            "updated_ms": 2000,
            "journal": {"v": 1, "round": 1, "pending": pending},
            "version": 3
        });
        if let (Some(row), Value::Object(extra)) = (row.as_object_mut(), extra) {
            row.extend(extra);
        }
        serde_json::from_value(row).expect("an old task row loads")
    }

    #[test]
    fn rows_stored_with_the_sep_2663_words_load_and_show_them_again() {
        let ask = serde_json::json!({"q": {"method": "elicitation/create", "params": {}}});
        let timer = serde_json::json!({"t": {"method": "durable-mcp/timer", "params": {"ms": 5}}});
        let result = serde_json::json!({"result": {"content": [], "isError": true}});
        let error = serde_json::json!({"error": {"code": -32603, "message": "boom"}});
        let stuck = serde_json::json!({"status_message": "Stuck: the code changed"});
        for (word, pending, extra, status, shown, wire) in [
            (
                "working",
                Value::Null,
                Value::Null,
                Status::Working,
                Status::Working,
                "working",
            ),
            (
                "working",
                timer,
                Value::Null,
                Status::Working,
                Status::Waiting,
                "working",
            ),
            (
                "working",
                Value::Null,
                stuck,
                Status::Working,
                Status::Parked,
                "working",
            ),
            (
                "input_required",
                ask,
                Value::Null,
                Status::Waiting,
                Status::Waiting,
                "input_required",
            ),
            (
                "completed",
                Value::Null,
                result,
                Status::Completed,
                Status::Failed,
                "completed",
            ),
            (
                "failed",
                Value::Null,
                error,
                Status::Failed,
                Status::Failed,
                "failed",
            ),
            (
                "cancelled",
                Value::Null,
                Value::Null,
                Status::Cancelled,
                Status::Cancelled,
                "cancelled",
            ),
        ] {
            let pending = if pending.is_null() {
                serde_json::json!({})
            } else {
                pending
            };
            let t = old_row(word, pending, extra);
            assert_eq!(t.status, status, "{word}");
            assert_eq!(t.summary().status, shown, "{word}");
            assert_eq!(wire_status(&t), wire, "{word}");
        }
    }

    #[test]
    fn the_wire_status_comes_from_the_one_status_and_the_record() {
        let mut t = old_row("working", serde_json::json!({}), Value::Null);
        t.status = Status::Parked;
        assert_eq!(wire_status(&t), "working", "parked goes on by itself");
        t.status = Status::Failed;
        t.result = Some(serde_json::json!({"content": [], "isError": true}));
        assert_eq!(wire_status(&t), "completed", "a tool's error is a result");
        assert_eq!(t.summary().status, Status::Failed);
        t.status = Status::Waiting;
        t.result = None;
        assert_eq!(
            wire_status(&t),
            "working",
            "waiting on nothing the client answers"
        );
        let stored = serde_json::to_value(&t).expect("a task serializes");
        assert_eq!(stored["status"], "waiting");
    }

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_795_340_400_123), "2026-11-22T09:40:00.123Z");
    }
}
