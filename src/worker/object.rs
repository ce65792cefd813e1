//! The `McpObject` Durable Object class: one instance per durable call,
//! named `call:<id>`. It runs the same server with its SQLite storage as the
//! call store, and deletes everything when its idle alarm fires.

use std::time::Duration;

use serde::Deserialize;
use worker::{
    durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, SqlStorageValue,
    State,
};

use super::{config_from_env, request_env, to_http_request, to_worker_response, CALL_ID_HEADER};
use crate::error::McpError;
use crate::server::{Durable, Server};
use crate::store::{CallStatus, CallStore, StoredCall};

/// One paused call (durable mode).
#[durable_object]
pub struct McpObject {
    state: State,
    env: Env,
}

impl DurableObject for McpObject {
    fn new(state: State, env: Env) -> Self {
        Self { state, env }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let http = to_http_request(req).await?;
        let config = match config_from_env(&self.env) {
            Ok(c) => c,
            Err(e) => {
                return to_worker_response(crate::server::error_response(
                    &McpError::internal(e),
                    None,
                ))
            }
        };
        let ttl_ms = config.state_ttl_ms;
        let server = Server::new(config.clone(), crate::tools::registry(config.fixtures));
        let Some(call_id) = http.header(CALL_ID_HEADER).map(str::to_string) else {
            return Response::error("this object is reached only through the worker", 400);
        };
        let store = SqliteStore::new(self.state.storage().sql());
        let durable = Durable {
            call_id,
            store: &store,
        };
        let resp = server.handle_durable(&http, &request_env(), &durable).await;
        // Idle TTL: every request pushes the deletion back.
        self.state
            .storage()
            .set_alarm(Duration::from_millis(ttl_ms))
            .await?;
        to_worker_response(resp)
    }

    async fn alarm(&self) -> Result<Response> {
        // Alarms are at-least-once: deleting what is already gone is fine.
        self.state.storage().delete_all().await?;
        Response::ok("deleted")
    }
}

/// A [`CallStore`] over the object's SQLite database. `exec` is synchronous,
/// so nothing here spans an await.
struct SqliteStore {
    sql: SqlStorage,
}

#[derive(Deserialize)]
struct Row {
    version: f64,
    status: String,
    claimed_at: f64,
    journal: String,
}

fn storage_error(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("durable storage failed: {e}"))
}

impl SqliteStore {
    fn new(sql: SqlStorage) -> Self {
        Self { sql }
    }

    /// Creates the table when missing (a fired alarm deletes it).
    fn ensure(&self) -> std::result::Result<(), McpError> {
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS durable_call (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    version INTEGER NOT NULL,
                    status TEXT NOT NULL,
                    claimed_at INTEGER NOT NULL,
                    journal TEXT NOT NULL)",
                None,
            )
            .map(|_| ())
            .map_err(storage_error)
    }
}

impl CallStore for SqliteStore {
    fn load(&self) -> std::result::Result<Option<StoredCall>, McpError> {
        self.ensure()?;
        let rows: Vec<Row> = self
            .sql
            .exec(
                "SELECT version, status, claimed_at, journal FROM durable_call WHERE id = 1",
                None,
            )
            .and_then(|c| c.to_array())
            .map_err(storage_error)?;
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
        }))
    }

    fn save(&self, call: &StoredCall) -> std::result::Result<(), McpError> {
        self.ensure()?;
        let status = serde_json::to_value(call.status).map_err(storage_error)?;
        let journal = serde_json::to_string(&call.journal).map_err(storage_error)?;
        self.sql
            .exec(
                "INSERT OR REPLACE INTO durable_call (id, version, status, claimed_at, journal) VALUES (1, ?, ?, ?, ?)",
                vec![
                    SqlStorageValue::from(i64::from(call.version)),
                    SqlStorageValue::from(status.as_str().unwrap_or("running").to_string()),
                    SqlStorageValue::from(i64::try_from(call.claimed_at_ms).unwrap_or(i64::MAX)),
                    SqlStorageValue::from(journal),
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
