//! A kept journal's log ([`crate::store::log`]) in Durable Object SQLite:
//! the deltas of each journal the object keeps (a shard's calls, a
//! session's calls, a task), in rows of at most
//! [`CHUNK_BYTES`](crate::store::log::CHUNK_BYTES), keyed by the
//! journal's owner (a call id, a session stream, `task`), the delta's
//! number and the row's place in it. The object keeps what it read and
//! wrote last in memory ([`Held`]).

use std::cell::Cell;

use worker::{SqlStorage, SqlStorageValue};

use crate::error::McpError;
use crate::server::task::TaskRecord;
use crate::session::SessionCall;
use crate::store::log;
use crate::store::warm::Warm;
use crate::store::StoredCall;

/// What an object keeps in memory of its kept journals: the calls it
/// served last, parsed, and which of its tables exist. Exact because the
/// object is its storage's only writer and its writes are synchronous; it
/// goes with the object when the object is evicted.
#[derive(Default)]
pub(crate) struct Held {
    pub(crate) calls: Warm<StoredCall>,
    pub(crate) sessions: Warm<SessionCall>,
    pub(crate) task: Warm<TaskRecord>,
    /// The durable calls' table exists (see `SqliteStore`).
    pub(crate) call_table: Cell<bool>,
    /// The hub's index is made and up to date (see `SqliteIndex`).
    pub(crate) index_table: Cell<bool>,
    /// The log's table exists.
    log_table: Cell<bool>,
}

impl Held {
    /// Forgets everything (the object's storage was deleted).
    pub(crate) fn clear(&self) {
        self.calls.clear();
        self.sessions.clear();
        self.task.clear();
        self.call_table.set(false);
        self.index_table.set(false);
        self.log_table.set(false);
    }
}

const TABLE: &str = "CREATE TABLE IF NOT EXISTS journal_log (
    owner TEXT NOT NULL,
    n INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (owner, n, seq)) WITHOUT ROWID";

fn err(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("durable storage failed: {e}"))
}

/// Writes what a save says of `owner`'s log: forgets it first on a reset,
/// then appends the delta as number `deltas - 1`.
pub(crate) fn write(
    sql: &SqlStorage,
    held: &Held,
    owner: &str,
    rows: &log::Rows,
    deltas: u32,
) -> Result<(), McpError> {
    if rows.reset {
        forget(sql, owner)?;
    }
    let Some(delta) = &rows.delta else {
        return Ok(());
    };
    if !held.log_table.get() {
        sql.exec(TABLE, None).map_err(err)?;
        held.log_table.set(true);
    }
    let n = i64::from(deltas.saturating_sub(1));
    for (seq, chunk) in log::chunks(delta).into_iter().enumerate() {
        sql.exec(
            "INSERT OR REPLACE INTO journal_log (owner, n, seq, body) VALUES (?, ?, ?, ?)",
            vec![
                SqlStorageValue::from(owner.to_string()),
                SqlStorageValue::from(n),
                SqlStorageValue::from(seq as i64),
                SqlStorageValue::from(chunk.to_string()),
            ],
        )
        .map_err(err)?;
    }
    Ok(())
}

/// `owner`'s deltas, whole, in order.
pub(crate) fn read(sql: &SqlStorage, owner: &str) -> Result<Vec<String>, McpError> {
    struct Row {
        n: f64,
        body: String,
    }
    impl super::sql::FromRow for Row {
        fn from_row(r: &super::sql::SqlRow<'_>) -> worker::Result<Self> {
            Ok(Row {
                n: r.number("n")?,
                body: r.text("body")?,
            })
        }
    }
    let rows = super::sql::rows::<Row>(
        sql,
        "SELECT n, body FROM journal_log WHERE owner = ? ORDER BY n, seq",
        vec![SqlStorageValue::from(owner.to_string())],
    )
    .map_err(err)?
    .unwrap_or_default();
    let mut out: Vec<(f64, String)> = Vec::new();
    for r in rows {
        match out.last_mut() {
            Some((n, body)) if *n == r.n => body.push_str(&r.body),
            _ => out.push((r.n, r.body)),
        }
    }
    Ok(out.into_iter().map(|(_, b)| b).collect())
}

/// Forgets `owner`'s log.
pub(crate) fn forget(sql: &SqlStorage, owner: &str) -> Result<(), McpError> {
    super::sql::run(
        sql,
        "DELETE FROM journal_log WHERE owner = ?",
        vec![SqlStorageValue::from(owner.to_string())],
    )
    .map(|_| ())
    .map_err(err)
}
