//! The hub's admin index over Durable Object SQLite: a row per task or
//! live session, a row per paused tool, a row per console sign-in link
//! spent (until it would have expired). Reading never creates a table:
//! every hub shard is asked, and only the first one is ever written to.

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use crate::error::McpError;
use crate::index::{IndexChange, IndexEntry, IndexStore};

/// An [`IndexStore`] over the object's SQLite database.
pub(crate) struct SqliteIndex {
    sql: SqlStorage,
}

#[derive(Deserialize)]
struct Entry {
    entry: String,
}

fn int(ms: u64) -> SqlStorageValue {
    SqlStorageValue::from(i64::try_from(ms).unwrap_or(i64::MAX))
}

#[derive(Deserialize)]
struct Tool {
    name: String,
}

fn storage_error(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("admin index storage failed: {e}"))
}

impl SqliteIndex {
    pub(crate) fn new(sql: SqlStorage) -> Self {
        Self { sql }
    }

    fn ensure(&self) -> Result<(), McpError> {
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS admin_index (
                    handle TEXT PRIMARY KEY,
                    entry TEXT NOT NULL) WITHOUT ROWID",
                None,
            )
            .map_err(storage_error)?;
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS admin_paused (name TEXT PRIMARY KEY) WITHOUT ROWID",
                None,
            )
            .map(|_| ())
            .map_err(storage_error)
    }
}

impl IndexStore for SqliteIndex {
    fn apply(&self, change: &IndexChange) -> Result<(), McpError> {
        self.ensure()?;
        match change {
            IndexChange::Put(e) => {
                let entry = serde_json::to_string(e).map_err(storage_error)?;
                self.sql
                    .exec(
                        "INSERT OR REPLACE INTO admin_index (handle, entry) VALUES (?, ?)",
                        vec![
                            SqlStorageValue::from(e.handle.clone()),
                            SqlStorageValue::from(entry),
                        ],
                    )
                    .map(|_| ())
                    .map_err(storage_error)
            }
            IndexChange::Remove(handle) => self
                .sql
                .exec(
                    "DELETE FROM admin_index WHERE handle = ?",
                    vec![SqlStorageValue::from(handle.clone())],
                )
                .map(|_| ())
                .map_err(storage_error),
        }
    }

    fn entries(&self) -> Result<Vec<IndexEntry>, McpError> {
        let rows =
            super::sql::rows::<Entry>(&self.sql, "SELECT entry FROM admin_index", Vec::new())
                .map_err(storage_error)?
                .unwrap_or_default();
        Ok(rows
            .into_iter()
            .filter_map(|r| serde_json::from_str(&r.entry).ok())
            .collect())
    }

    fn paused_tools(&self) -> Result<Vec<String>, McpError> {
        let rows = super::sql::rows::<Tool>(
            &self.sql,
            "SELECT name FROM admin_paused ORDER BY name",
            Vec::new(),
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        Ok(rows.into_iter().map(|t| t.name).collect())
    }

    fn spend_link(&self, nonce: &str, until_ms: u64, now_ms: u64) -> Result<bool, McpError> {
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS admin_spent (nonce TEXT PRIMARY KEY, until_ms INTEGER NOT NULL) WITHOUT ROWID",
                None,
            )
            .map_err(storage_error)?;
        self.sql
            .exec(
                "DELETE FROM admin_spent WHERE until_ms <= ?",
                vec![int(now_ms)],
            )
            .map_err(storage_error)?;
        // No await between the read and the write: the object runs
        // nothing else in between, so exactly one request finds no row.
        let found = super::sql::rows::<serde_json::Value>(
            &self.sql,
            "SELECT 1 AS spent FROM admin_spent WHERE nonce = ?",
            vec![SqlStorageValue::from(nonce.to_string())],
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        if !found.is_empty() {
            return Ok(false);
        }
        self.sql
            .exec(
                "INSERT INTO admin_spent (nonce, until_ms) VALUES (?, ?)",
                vec![SqlStorageValue::from(nonce.to_string()), int(until_ms)],
            )
            .map_err(storage_error)?;
        Ok(true)
    }

    fn set_paused(&self, tool: &str, paused: bool) -> Result<(), McpError> {
        self.ensure()?;
        let statement = if paused {
            "INSERT OR REPLACE INTO admin_paused (name) VALUES (?)"
        } else {
            "DELETE FROM admin_paused WHERE name = ?"
        };
        self.sql
            .exec(statement, vec![SqlStorageValue::from(tool.to_string())])
            .map(|_| ())
            .map_err(storage_error)
    }
}
