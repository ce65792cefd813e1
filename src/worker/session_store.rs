//! The session's storage over Durable Object SQLite. `exec` is synchronous,
//! so the sans-IO session code can use it without awaiting. The tables are
//! made on the first write, so an object asked about a session that does
//! not exist stores nothing; reads of an object without them are empty.
//!
//! The session row is read on every request; the object keeps the last one
//! it read or wrote in memory ([`MetaCache`]), written through. That is
//! exact: the object is the only writer of its storage, writes are
//! synchronous, and memory goes with the object when it is evicted or
//! broken.

use std::cell::{Cell, RefCell};

use serde::Deserialize;
use serde_json::Value;
use worker::{SqlStorage, SqlStorageValue};

use super::log_rows::{self, Held};
use super::sql::{FromRow, Number, SqlRow, Text};
use crate::error::McpError;
use crate::session::{SessionCall, SessionMeta, SessionStore};
use crate::store::log::Record as _;

/// Every row written is billed, and so is every write to an index or to
/// SQLite's own tables: `session_calls` is keyed by its stream id itself
/// (`WITHOUT ROWID`; with a rowid, each write of a call's row was two rows
/// written, the row and its key), and an event's `lsn` is its rowid without
/// `AUTOINCREMENT` (which wrote `sqlite_sequence` on every event: three
/// rows per event, now two). Events are never deleted one by one (the
/// session's whole storage goes at once), so the next rowid, the largest
/// plus one, increases just as `AUTOINCREMENT`'s did. Tables made before
/// keep their layout; both read and write alike.
const SCHEMA: [&str; 4] = [
    "CREATE TABLE IF NOT EXISTS session_meta (id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS session_events (lsn INTEGER PRIMARY KEY, stream TEXT NOT NULL, data TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS session_events_by_stream ON session_events (stream, lsn)",
    "CREATE TABLE IF NOT EXISTS session_calls (stream TEXT PRIMARY KEY, json TEXT NOT NULL) WITHOUT ROWID",
];

/// The object's copy of its session row: `None` until read or written.
pub(crate) type MetaCache = RefCell<Option<SessionMeta>>;

pub(crate) struct SqliteSessionStore<'a> {
    sql: SqlStorage,
    cache: &'a MetaCache,
    /// The calls it served last, parsed (see [`Held`]).
    held: &'a Held,
    /// Whether the tables exist: learned from the first read (a missing
    /// table reads as empty), so no request pays a schema query.
    made: Cell<Option<bool>>,
}

fn err(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("session storage failed: {e}"))
}

struct EventRow {
    lsn: f64,
    data: String,
}

impl FromRow for EventRow {
    fn from_row(r: &SqlRow<'_>) -> worker::Result<Self> {
        Ok(EventRow {
            lsn: r.number("lsn")?,
            data: r.text("data")?,
        })
    }
}

impl<'a> SqliteSessionStore<'a> {
    pub(crate) fn new(sql: SqlStorage, cache: &'a MetaCache, held: &'a Held) -> Self {
        Self {
            sql,
            cache,
            held,
            made: Cell::new(None),
        }
    }

    /// Runs a read; an object without session tables reads as empty.
    fn rows<T: FromRow>(
        &self,
        query: &str,
        bind: Vec<SqlStorageValue>,
    ) -> Result<Vec<T>, McpError> {
        if self.made.get() == Some(false) {
            return Ok(Vec::new());
        }
        let rows = super::sql::rows(&self.sql, query, bind).map_err(err)?;
        self.made.set(Some(rows.is_some()));
        Ok(rows.unwrap_or_default())
    }

    /// Makes the tables before the first write.
    fn make(&self) -> Result<(), McpError> {
        if self.made.get() != Some(true) {
            for stmt in SCHEMA {
                self.sql.exec(stmt, None).map_err(err)?;
            }
            self.made.set(Some(true));
        }
        Ok(())
    }

    fn json_rows(&self, query: &str, bind: Vec<SqlStorageValue>) -> Result<Vec<String>, McpError> {
        let rows: Vec<Text> = self.rows(query, bind)?;
        Ok(rows.into_iter().map(|r| r.0).collect())
    }

    /// The call a row holds, its log read (or the object's copy of it).
    fn read_call(&self, json: &str) -> Result<SessionCall, McpError> {
        let stream = crate::json::from_str::<Stream>(json).map_err(err)?.stream;
        if let Some(c) = self
            .held
            .sessions
            .with(&stream, |h| h.map(|(c, _)| c.clone()))
        {
            return Ok(c);
        }
        let owner = owner(&stream);
        let (call, manifest) = SessionCall::from_row(json, |_| log_rows::read(&self.sql, &owner))?;
        self.held.sessions.put(&stream, manifest, call.clone());
        Ok(call)
    }

    fn write_call(&self, call: &SessionCall) -> Result<(), McpError> {
        self.make()?;
        let (json, rows, manifest) = self
            .held
            .sessions
            .with(&call.stream, |h| call.rows(h.map(|(c, m)| (&c.journal, m))))?;
        log_rows::write(
            &self.sql,
            self.held,
            &owner(&call.stream),
            &rows,
            manifest.deltas,
        )?;
        self.sql
            .exec(
                "INSERT OR REPLACE INTO session_calls (stream, json) VALUES (?, ?)",
                vec![call.stream.as_str().into(), json.into()],
            )
            .map_err(err)?;
        self.held.sessions.put(&call.stream, manifest, call.clone());
        Ok(())
    }
}

/// A call's stream, read without the rest of its row.
#[derive(Deserialize)]
struct Stream {
    stream: String,
}

/// A session call's journal's owner in the log.
fn owner(stream: &str) -> String {
    format!("session/{stream}")
}

impl SqliteSessionStore<'_> {}

impl SessionStore for SqliteSessionStore<'_> {
    fn meta(&self) -> Result<Option<SessionMeta>, McpError> {
        if let Some(meta) = self.cache.borrow().as_ref() {
            return Ok(Some(meta.clone()));
        }
        let rows = self.json_rows("SELECT json FROM session_meta WHERE id = 1", vec![])?;
        let meta: Option<SessionMeta> = rows
            .first()
            .map(|j| crate::json::from_str(j).map_err(err))
            .transpose()?;
        self.cache.borrow_mut().clone_from(&meta);
        Ok(meta)
    }

    fn put_meta(&self, meta: &SessionMeta) -> Result<(), McpError> {
        self.make()?;
        let json = serde_json::to_string(meta).map_err(err)?;
        self.sql
            .exec(
                "INSERT OR REPLACE INTO session_meta (id, json) VALUES (1, ?)",
                vec![json.into()],
            )
            .map_err(err)?;
        *self.cache.borrow_mut() = Some(meta.clone());
        Ok(())
    }

    fn append_event(&self, stream: &str, message: &Value) -> Result<u64, McpError> {
        self.make()?;
        let rows = super::sql::rows::<Number>(
            &self.sql,
            "INSERT INTO session_events (stream, data) VALUES (?, ?) RETURNING lsn",
            vec![stream.into(), message.to_string().into()],
        )
        .map_err(err)?
        .unwrap_or_default();
        rows.first()
            .map(|r| r.0 as u64)
            .ok_or_else(|| err("no lsn returned"))
    }

    fn events_after(&self, stream: &str, after: u64) -> Result<Vec<(u64, Value)>, McpError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let rows: Vec<EventRow> = self.rows(
            "SELECT lsn, data FROM session_events WHERE stream = ? AND lsn > ? ORDER BY lsn",
            vec![stream.into(), after.into()],
        )?;
        rows.into_iter()
            .map(|r| Ok((r.lsn as u64, crate::json::from_str(&r.data).map_err(err)?)))
            .collect()
    }

    fn call(&self, stream: &str) -> Result<Option<SessionCall>, McpError> {
        if let Some(c) = self
            .held
            .sessions
            .with(stream, |h| h.map(|(c, _)| c.clone()))
        {
            return Ok(Some(c));
        }
        let rows = self.json_rows(
            "SELECT json FROM session_calls WHERE stream = ?",
            vec![stream.into()],
        )?;
        // A journal of a newer format is refused, not misread.
        rows.first().map(|j| self.read_call(j)).transpose()
    }

    fn put_call(&self, call: &SessionCall) -> Result<(), McpError> {
        self.write_call(call)
            .inspect_err(|_| self.held.sessions.forget(&call.stream))
    }

    fn calls(&self) -> Result<Vec<SessionCall>, McpError> {
        self.json_rows("SELECT json FROM session_calls", vec![])?
            .iter()
            .map(|j| self.read_call(j))
            .collect()
    }
}
