//! The session's storage over Durable Object SQLite. `exec` is synchronous,
//! so the sans-IO session code can use it without awaiting. The tables are
//! made on the first write, so an object asked about a session that does
//! not exist stores nothing.

use std::cell::Cell;

use serde::Deserialize;
use serde_json::Value;
use worker::{SqlStorage, SqlStorageValue};

use crate::error::McpError;
use crate::session::{SessionCall, SessionMeta, SessionStore};

const SCHEMA: [&str; 4] = [
    "CREATE TABLE IF NOT EXISTS session_meta (id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS session_events (lsn INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, data TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS session_events_by_stream ON session_events (stream, lsn)",
    "CREATE TABLE IF NOT EXISTS session_calls (stream TEXT PRIMARY KEY, json TEXT NOT NULL)",
];

pub(crate) struct SqliteSessionStore {
    sql: SqlStorage,
    /// Whether the tables exist: asked on first use (a call's object never
    /// uses this store, so it never asks).
    made: std::cell::OnceCell<Cell<bool>>,
}

fn err(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("session storage failed: {e}"))
}

#[derive(Deserialize)]
struct JsonRow {
    json: String,
}

#[derive(Deserialize)]
struct EventRow {
    lsn: f64,
    data: String,
}

impl SqliteSessionStore {
    pub(crate) fn new(sql: SqlStorage) -> Self {
        Self {
            sql,
            made: std::cell::OnceCell::new(),
        }
    }

    fn made(&self) -> &Cell<bool> {
        self.made.get_or_init(|| Cell::new(Self::exists(&self.sql)))
    }

    /// Whether this object holds session tables.
    fn exists(sql: &SqlStorage) -> bool {
        #[derive(Deserialize)]
        struct Name {
            #[allow(dead_code)]
            name: String,
        }
        sql.exec(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'session_meta'",
            None,
        )
        .and_then(|c| c.to_array::<Name>())
        .is_ok_and(|rows| !rows.is_empty())
    }

    /// Makes the tables before the first write.
    fn make(&self) -> Result<(), McpError> {
        if !self.made().get() {
            for stmt in SCHEMA {
                self.sql.exec(stmt, None).map_err(err)?;
            }
            self.made().set(true);
        }
        Ok(())
    }

    fn json_rows(&self, query: &str, bind: Vec<SqlStorageValue>) -> Result<Vec<String>, McpError> {
        if !self.made().get() {
            return Ok(Vec::new());
        }
        let rows: Vec<JsonRow> = self
            .sql
            .exec(query, bind)
            .and_then(|c| c.to_array())
            .map_err(err)?;
        Ok(rows.into_iter().map(|r| r.json).collect())
    }
}

impl SessionStore for SqliteSessionStore {
    fn meta(&self) -> Result<Option<SessionMeta>, McpError> {
        let rows = self.json_rows("SELECT json FROM session_meta WHERE id = 1", vec![])?;
        rows.first()
            .map(|j| serde_json::from_str(j).map_err(err))
            .transpose()
    }

    fn put_meta(&self, meta: &SessionMeta) -> Result<(), McpError> {
        self.make()?;
        let json = serde_json::to_string(meta).map_err(err)?;
        self.sql
            .exec(
                "INSERT OR REPLACE INTO session_meta (id, json) VALUES (1, ?)",
                vec![json.into()],
            )
            .map(|_| ())
            .map_err(err)
    }

    fn append_event(&self, stream: &str, message: &Value) -> Result<u64, McpError> {
        self.make()?;
        #[derive(Deserialize)]
        struct Lsn {
            lsn: f64,
        }
        let rows: Vec<Lsn> = self
            .sql
            .exec(
                "INSERT INTO session_events (stream, data) VALUES (?, ?) RETURNING lsn",
                vec![stream.into(), message.to_string().into()],
            )
            .and_then(|c| c.to_array())
            .map_err(err)?;
        rows.first()
            .map(|r| r.lsn as u64)
            .ok_or_else(|| err("no lsn returned"))
    }

    fn events_after(&self, stream: &str, after: u64) -> Result<Vec<(u64, Value)>, McpError> {
        if !self.made().get() {
            return Ok(Vec::new());
        }
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let rows: Vec<EventRow> = self
            .sql
            .exec(
                "SELECT lsn, data FROM session_events WHERE stream = ? AND lsn > ? ORDER BY lsn",
                vec![stream.into(), after.into()],
            )
            .and_then(|c| c.to_array())
            .map_err(err)?;
        rows.into_iter()
            .map(|r| Ok((r.lsn as u64, serde_json::from_str(&r.data).map_err(err)?)))
            .collect()
    }

    fn call(&self, stream: &str) -> Result<Option<SessionCall>, McpError> {
        let rows = self.json_rows(
            "SELECT json FROM session_calls WHERE stream = ?",
            vec![stream.into()],
        )?;
        rows.first()
            .map(|j| serde_json::from_str(j).map_err(err))
            .transpose()
    }

    fn put_call(&self, call: &SessionCall) -> Result<(), McpError> {
        self.make()?;
        let json = serde_json::to_string(call).map_err(err)?;
        self.sql
            .exec(
                "INSERT OR REPLACE INTO session_calls (stream, json) VALUES (?, ?)",
                vec![call.stream.as_str().into(), json.into()],
            )
            .map(|_| ())
            .map_err(err)
    }

    fn calls(&self) -> Result<Vec<SessionCall>, McpError> {
        self.json_rows("SELECT json FROM session_calls", vec![])?
            .iter()
            .map(|j| serde_json::from_str(j).map_err(err))
            .collect()
    }
}
