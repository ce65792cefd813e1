//! A task's storage over Durable Object SQLite: one row, the task as JSON.

use worker::{SqlStorage, SqlStorageValue};

use super::log_rows::{self, Held};
use super::sql::Text;
use crate::error::McpError;
use crate::server::task::{TaskRecord, TaskStore};
use crate::store::log::Record as _;

/// A [`TaskStore`] over the object's SQLite database. Reading never
/// creates the table: every object's alarm asks whether it holds a task,
/// and the objects that do not (calls, sessions) must not be written to.
pub(crate) struct SqliteTaskStore<'a> {
    sql: SqlStorage,
    held: &'a Held,
}

/// The task's journal's owner in the log.
const OWNER: &str = "task";

fn storage_error(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("task storage failed: {e}"))
}

impl<'a> SqliteTaskStore<'a> {
    pub(crate) fn new(sql: SqlStorage, held: &'a Held) -> Self {
        Self { sql, held }
    }

    fn write(&self, task: &TaskRecord) -> Result<(), McpError> {
        let (record, rows, manifest) = self
            .held
            .task
            .with(OWNER, |h| task.rows(h.map(|(t, m)| (&t.journal, m))))?;
        log_rows::write(&self.sql, self.held, OWNER, &rows, manifest.deltas)?;
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS durable_task (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    record TEXT NOT NULL)",
                None,
            )
            .map_err(storage_error)?;
        self.sql
            .exec(
                "INSERT OR REPLACE INTO durable_task (id, record) VALUES (1, ?)",
                vec![SqlStorageValue::from(record)],
            )
            .map_err(storage_error)?;
        self.held.task.put(OWNER, manifest, task.clone());
        Ok(())
    }
}

impl TaskStore for SqliteTaskStore<'_> {
    fn load(&self) -> Result<Option<TaskRecord>, McpError> {
        if let Some(t) = self.held.task.with(OWNER, |h| h.map(|(t, _)| t.clone())) {
            return Ok(Some(t));
        }
        let rows = super::sql::rows::<Text>(
            &self.sql,
            "SELECT record FROM durable_task WHERE id = 1",
            Vec::new(),
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        // A journal of a newer format is refused, not misread.
        let (task, manifest) = TaskRecord::from_row(&row.0, |_| log_rows::read(&self.sql, OWNER))?;
        self.held.task.put(OWNER, manifest, task.clone());
        Ok(Some(task))
    }

    fn save(&self, task: &TaskRecord) -> Result<(), McpError> {
        self.write(task)
            .inspect_err(|_| self.held.task.forget(OWNER))
    }

    fn watchers(&self) -> Result<Vec<String>, McpError> {
        // No table: nobody ever listened.
        let rows =
            super::sql::rows::<Text>(&self.sql, "SELECT hub FROM durable_task_watch", Vec::new())
                .map_err(storage_error)?
                .unwrap_or_default();
        Ok(rows.into_iter().map(|r| r.0).collect())
    }

    fn watch(&self, hub: &str) -> Result<(), McpError> {
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS durable_task_watch (hub TEXT PRIMARY KEY)",
                None,
            )
            .map_err(storage_error)?;
        self.sql
            .exec(
                "INSERT OR IGNORE INTO durable_task_watch (hub) VALUES (?)",
                vec![SqlStorageValue::from(hub.to_string())],
            )
            .map_err(storage_error)?;
        Ok(())
    }
}
