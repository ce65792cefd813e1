//! A task's storage over Durable Object SQLite: one row, the task as JSON.

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use crate::error::McpError;
use crate::server::task::{TaskRecord, TaskStore};

/// A [`TaskStore`] over the object's SQLite database. Reading never
/// creates the table: every object's alarm asks whether it holds a task,
/// and the objects that do not (calls, sessions) must not be written to.
pub(crate) struct SqliteTaskStore {
    sql: SqlStorage,
}

#[derive(Deserialize)]
struct Row {
    record: String,
}

fn storage_error(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("task storage failed: {e}"))
}

impl SqliteTaskStore {
    pub(crate) fn new(sql: SqlStorage) -> Self {
        Self { sql }
    }
}

impl TaskStore for SqliteTaskStore {
    fn load(&self) -> Result<Option<TaskRecord>, McpError> {
        let rows = super::sql::rows::<Row>(
            &self.sql,
            "SELECT record FROM durable_task WHERE id = 1",
            Vec::new(),
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        let task: Option<TaskRecord> = rows
            .into_iter()
            .next()
            .map(|r| serde_json::from_str(&r.record).map_err(storage_error))
            .transpose()?;
        // A journal of a newer format is refused, not misread.
        if let Some(t) = &task {
            t.journal.readable()?;
        }
        Ok(task)
    }

    fn save(&self, task: &TaskRecord) -> Result<(), McpError> {
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS durable_task (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    record TEXT NOT NULL)",
                None,
            )
            .map_err(storage_error)?;
        let record = serde_json::to_string(task).map_err(storage_error)?;
        self.sql
            .exec(
                "INSERT OR REPLACE INTO durable_task (id, record) VALUES (1, ?)",
                vec![SqlStorageValue::from(record)],
            )
            .map(|_| ())
            .map_err(storage_error)
    }
}
