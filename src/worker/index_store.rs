//! The hub's admin index over Durable Object SQLite: a row per task or
//! live session, a row per paused tool. Reading never creates a table:
//! every hub shard is asked, and only the first one is ever written to.

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use crate::admin::index::{IndexChange, IndexEntry, IndexStore};
use crate::error::McpError;

/// An [`IndexStore`] over the object's SQLite database.
pub(crate) struct SqliteIndex {
    sql: SqlStorage,
}

#[derive(Deserialize)]
struct Entry {
    entry: String,
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
