//! What the three stores share about Durable Object SQLite: an object
//! makes its tables on its first write, so a read of an object that never
//! wrote (a fresh call, a task id nobody created, any object's alarm asking
//! what it holds) finds no table — that reads as "nothing", with no schema
//! query first.

use serde::de::DeserializeOwned;
use worker::{SqlStorage, SqlStorageValue};

/// Runs `statement`; `false` when its table does not exist (yet). Its
/// rows, if any, are not read.
pub(crate) fn run(
    sql: &SqlStorage,
    statement: &str,
    bind: Vec<SqlStorageValue>,
) -> worker::Result<bool> {
    match sql.exec(statement, bind) {
        Ok(_) => Ok(true),
        Err(e) if e.to_string().contains("no such table") => Ok(false),
        Err(e) => Err(e),
    }
}

/// The rows of `query`, or `None` when its table does not exist (yet).
pub(crate) fn rows<T: DeserializeOwned>(
    sql: &SqlStorage,
    query: &str,
    bind: Vec<SqlStorageValue>,
) -> worker::Result<Option<Vec<T>>> {
    match sql.exec(query, bind).and_then(|c| c.to_array()) {
        Ok(rows) => Ok(Some(rows)),
        Err(e) if e.to_string().contains("no such table") => Ok(None),
        Err(e) => Err(e),
    }
}
