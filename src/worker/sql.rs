//! What the stores share about Durable Object SQLite: an object
//! makes its tables on its first write, so a read of an object that never
//! wrote (a fresh call, a task id nobody created, any object's alarm asking
//! what it holds) finds no table — that reads as "nothing", with no schema
//! query first.
//!
//! Rows are read by hand ([`FromRow`], by column name over the cursor's
//! raw values), not deserialized: workers-rs' `to_array::<T>()` goes through
//! `serde_wasm_bindgen`, which compiled a second deserializer for every row
//! type beside the JSON one each already had, for the few columns each
//! holds.

use serde_json::Value;
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
        Err(e) if no_table(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The rows of `query`, or `None` when its table does not exist (yet).
pub(crate) fn rows<T: FromRow>(
    sql: &SqlStorage,
    query: &str,
    bind: Vec<SqlStorageValue>,
) -> worker::Result<Option<Vec<T>>> {
    let read = || -> worker::Result<Vec<T>> {
        let cursor = sql.exec(query, bind)?;
        let names = cursor.column_names();
        cursor
            .raw()
            .map(|values| {
                T::from_row(&SqlRow {
                    names: &names,
                    values: values?,
                })
            })
            .collect()
    };
    match read() {
        Ok(rows) => Ok(Some(rows)),
        Err(e) if no_table(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

fn no_table(e: &worker::Error) -> bool {
    e.to_string().contains("no such table")
}

/// A row type a query's rows are read into.
pub(crate) trait FromRow: Sized {
    /// Reads one row; a column missing or of another type is an error.
    fn from_row(row: &SqlRow<'_>) -> worker::Result<Self>;
}

/// One row as SQLite gave it: its query's column names and its values
/// (numbers come back as JS numbers: an integer or a float).
pub(crate) struct SqlRow<'c> {
    names: &'c [String],
    values: Vec<SqlStorageValue>,
}

fn wrong(name: &str, what: &str) -> worker::Error {
    worker::Error::RustError(format!("column {name}: not {what}"))
}

impl SqlRow<'_> {
    fn get(&self, name: &str) -> Option<&SqlStorageValue> {
        let at = self.names.iter().position(|n| n == name)?;
        self.values.get(at)
    }

    fn first_name(&self) -> &str {
        self.names.first().map_or("", String::as_str)
    }

    /// Whether the query selected `name`.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// `name`'s text, or `None` for `NULL`.
    pub(crate) fn text_or_null(&self, name: &str) -> worker::Result<Option<String>> {
        match self.get(name) {
            Some(SqlStorageValue::String(s)) => Ok(Some(s.clone())),
            Some(SqlStorageValue::Null) => Ok(None),
            _ => Err(wrong(name, "text")),
        }
    }

    /// `name`'s text.
    pub(crate) fn text(&self, name: &str) -> worker::Result<String> {
        self.text_or_null(name)?.ok_or_else(|| wrong(name, "text"))
    }

    /// `name`'s number, or `None` for `NULL`.
    pub(crate) fn number_or_null(&self, name: &str) -> worker::Result<Option<f64>> {
        match self.get(name) {
            Some(SqlStorageValue::Integer(i)) => Ok(Some(*i as f64)),
            Some(SqlStorageValue::Float(f)) => Ok(Some(*f)),
            Some(SqlStorageValue::Null) => Ok(None),
            _ => Err(wrong(name, "a number")),
        }
    }

    /// `name`'s number.
    pub(crate) fn number(&self, name: &str) -> worker::Result<f64> {
        self.number_or_null(name)?
            .ok_or_else(|| wrong(name, "a number"))
    }
}

/// A row as a JSON object, column by column (a blob reads as `null`): for
/// reads that pick columns by hand.
impl FromRow for Value {
    fn from_row(row: &SqlRow<'_>) -> worker::Result<Self> {
        let cell = |v: &SqlStorageValue| match v {
            SqlStorageValue::Null | SqlStorageValue::Blob(_) => Value::Null,
            SqlStorageValue::Boolean(b) => Value::Bool(*b),
            SqlStorageValue::Integer(i) => Value::from(*i),
            SqlStorageValue::Float(f) => Value::from(*f),
            SqlStorageValue::String(s) => Value::String(s.clone()),
        };
        Ok(Value::Object(
            row.names
                .iter()
                .cloned()
                .zip(row.values.iter().map(cell))
                .collect(),
        ))
    }
}

/// A query of one text column (`SELECT entry …`, `SELECT json …`): its
/// values, whatever the column's name.
pub(crate) struct Text(pub(crate) String);

impl FromRow for Text {
    fn from_row(row: &SqlRow<'_>) -> worker::Result<Self> {
        match row.values.first() {
            Some(SqlStorageValue::String(s)) => Ok(Text(s.clone())),
            _ => Err(wrong(row.first_name(), "text")),
        }
    }
}

/// A query of one number column (`SELECT COUNT(*) …`, `RETURNING lsn`).
pub(crate) struct Number(pub(crate) f64);

impl FromRow for Number {
    fn from_row(row: &SqlRow<'_>) -> worker::Result<Self> {
        match row.values.first() {
            Some(SqlStorageValue::Integer(i)) => Ok(Number(*i as f64)),
            Some(SqlStorageValue::Float(f)) => Ok(Number(*f)),
            _ => Err(wrong(row.first_name(), "a number")),
        }
    }
}
