//! A durable call's storage over Durable Object SQLite.

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use crate::error::McpError;
use crate::store::{CallStatus, CallStore, StoredCall};

/// A [`CallStore`] over the object's SQLite database. `exec` is synchronous,
/// so nothing here spans an await.
pub(crate) struct SqliteStore {
    sql: SqlStorage,
    /// The table exists (checked once per request, not per statement).
    ensured: std::cell::Cell<bool>,
}

#[derive(Deserialize)]
struct Row {
    version: f64,
    status: String,
    claimed_at: f64,
    journal: String,
    reply: Option<String>,
    updated_at: f64,
}

fn storage_error(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("durable storage failed: {e}"))
}

impl SqliteStore {
    pub(crate) fn new(sql: SqlStorage) -> Self {
        Self {
            sql,
            ensured: std::cell::Cell::new(false),
        }
    }

    /// Creates the table when missing (a fired alarm deletes it).
    fn ensure(&self) -> std::result::Result<(), McpError> {
        if self.ensured.get() {
            return Ok(());
        }
        self.ensured.set(true);
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS durable_call (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    version INTEGER NOT NULL,
                    status TEXT NOT NULL,
                    claimed_at INTEGER NOT NULL,
                    journal TEXT NOT NULL,
                    reply TEXT,
                    updated_at INTEGER NOT NULL DEFAULT 0)",
                None,
            )
            .map(|_| ())
            .map_err(storage_error)
    }
}

impl CallStore for SqliteStore {
    fn load(&self) -> std::result::Result<Option<StoredCall>, McpError> {
        // No table yet is no call; the first save creates it.
        let Some(rows) = super::sql::rows::<Row>(
            &self.sql,
            "SELECT version, status, claimed_at, journal, reply, updated_at FROM durable_call WHERE id = 1",
            Vec::new(),
        )
        .map_err(storage_error)?
        else {
            return Ok(None);
        };
        self.ensured.set(true);
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let status: CallStatus =
            serde_json::from_value(serde_json::Value::String(row.status)).map_err(storage_error)?;
        Ok(Some(StoredCall {
            version: row.version as u32,
            status,
            claimed_at_ms: row.claimed_at as u64,
            journal: serde_json::from_str(&row.journal).map_err(storage_error)?,
            last_reply: row
                .reply
                .map(|r| serde_json::from_str(&r))
                .transpose()
                .map_err(storage_error)?,
            updated_ms: row.updated_at as u64,
        }))
    }

    fn save(&self, call: &StoredCall) -> std::result::Result<(), McpError> {
        self.ensure()?;
        let status = serde_json::to_value(call.status).map_err(storage_error)?;
        let journal = serde_json::to_string(&call.journal).map_err(storage_error)?;
        let reply = match &call.last_reply {
            Some(r) => SqlStorageValue::from(serde_json::to_string(r).map_err(storage_error)?),
            None => SqlStorageValue::Null,
        };
        self.sql
            .exec(
                "INSERT OR REPLACE INTO durable_call (id, version, status, claimed_at, journal, reply, updated_at) VALUES (1, ?, ?, ?, ?, ?, ?)",
                vec![
                    SqlStorageValue::from(i64::from(call.version)),
                    SqlStorageValue::from(status.as_str().unwrap_or("running").to_string()),
                    SqlStorageValue::from(i64::try_from(call.claimed_at_ms).unwrap_or(i64::MAX)),
                    SqlStorageValue::from(journal),
                    reply,
                    SqlStorageValue::from(i64::try_from(call.updated_ms).unwrap_or(i64::MAX)),
                ],
            )
            .map(|_| ())
            .map_err(storage_error)
    }

    fn clear(&self) -> std::result::Result<(), McpError> {
        self.ensure()?;
        self.sql
            .exec("DELETE FROM durable_call", None)
            .map(|_| ())
            .map_err(storage_error)
    }
}
