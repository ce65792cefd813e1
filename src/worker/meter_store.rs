//! A principal's meter over Durable Object SQLite: one table of rows, each
//! counting until its `until` (see [`crate::limits::meter`]). Made on the
//! first write; a meter that never wrote reads as empty. (Without the
//! `limits` feature none is linked: see `object.rs`.)
use worker::{SqlStorage, SqlStorageValue};

use super::sql::{rows, run, FromRow, Number, SqlRow};
use crate::error::McpError;
use crate::limits::{MeterStore, Row};

/// A [`MeterStore`] over the object's SQLite database.
pub(crate) struct SqliteMeter {
    sql: SqlStorage,
}

impl SqliteMeter {
    pub(crate) fn new(sql: SqlStorage) -> Self {
        Self { sql }
    }
}

fn int(ms: u64) -> SqlStorageValue {
    SqlStorageValue::from(i64::try_from(ms).unwrap_or(i64::MAX))
}

fn text(s: &str) -> SqlStorageValue {
    SqlStorageValue::from(s.to_string())
}

fn storage_error(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("meter storage failed: {e}"))
}

struct Stored {
    kind: String,
    key: String,
    tool: String,
    n: f64,
    until: f64,
    text: String,
}

impl FromRow for Stored {
    fn from_row(r: &SqlRow<'_>) -> worker::Result<Self> {
        Ok(Stored {
            kind: r.text("kind")?,
            key: r.text("key")?,
            tool: r.text("tool")?,
            n: r.number("n")?,
            until: r.number("until")?,
            text: r.text("text")?,
        })
    }
}

impl From<Stored> for Row {
    fn from(s: Stored) -> Row {
        Row {
            kind: s.kind,
            key: s.key,
            tool: s.tool,
            n: s.n as u64,
            until: s.until as u64,
            text: s.text,
        }
    }
}

const COLUMNS: &str = "kind, key, tool, n, until, text";

impl MeterStore for SqliteMeter {
    fn count(&self, kind: &str, tool: Option<&str>, now_ms: u64) -> Result<u64, McpError> {
        let found: Option<Vec<Number>> = match tool {
            Some(t) => rows(
                &self.sql,
                "SELECT COUNT(*) AS n FROM meter WHERE kind = ? AND tool = ? AND until > ?",
                vec![text(kind), text(t), int(now_ms)],
            ),
            None => rows(
                &self.sql,
                "SELECT COUNT(*) AS n FROM meter WHERE kind = ? AND until > ?",
                vec![text(kind), int(now_ms)],
            ),
        }
        .map_err(storage_error)?;
        Ok(found
            .and_then(|r| r.into_iter().next())
            .map_or(0, |c| c.0 as u64))
    }

    fn get(&self, kind: &str, key: &str) -> Result<Option<Row>, McpError> {
        let found: Option<Vec<Stored>> = rows(
            &self.sql,
            &format!("SELECT {COLUMNS} FROM meter WHERE kind = ? AND key = ?"),
            vec![text(kind), text(key)],
        )
        .map_err(storage_error)?;
        Ok(found.and_then(|r| r.into_iter().next()).map(Row::from))
    }

    fn put(&self, row: &Row) -> Result<(), McpError> {
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS meter (
                    kind TEXT NOT NULL, key TEXT NOT NULL, tool TEXT NOT NULL,
                    n INTEGER NOT NULL, until INTEGER NOT NULL, text TEXT NOT NULL,
                    PRIMARY KEY (kind, key)) WITHOUT ROWID",
                None,
            )
            .map_err(storage_error)?;
        self.sql
            .exec(
                &format!("INSERT OR REPLACE INTO meter ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"),
                vec![
                    text(&row.kind),
                    text(&row.key),
                    text(&row.tool),
                    int(row.n),
                    int(row.until),
                    text(&row.text),
                ],
            )
            .map(|_| ())
            .map_err(storage_error)
    }

    fn delete(&self, kind: &str, key: &str) -> Result<(), McpError> {
        run(
            &self.sql,
            "DELETE FROM meter WHERE kind = ? AND key = ?",
            vec![text(kind), text(key)],
        )
        .map(|_| ())
        .map_err(storage_error)
    }

    fn expire(&self, now_ms: u64) -> Result<(), McpError> {
        run(
            &self.sql,
            "DELETE FROM meter WHERE until <= ?",
            vec![int(now_ms)],
        )
        .map(|_| ())
        .map_err(storage_error)
    }

    fn live(&self, now_ms: u64) -> Result<Vec<Row>, McpError> {
        let found: Option<Vec<Stored>> = rows(
            &self.sql,
            &format!("SELECT {COLUMNS} FROM meter WHERE until > ?"),
            vec![int(now_ms)],
        )
        .map_err(storage_error)?;
        Ok(found
            .unwrap_or_default()
            .into_iter()
            .map(Row::from)
            .collect())
    }
}
