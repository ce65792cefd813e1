//! A keeper's counts per tool and status, kept by SQLite itself: triggers
//! on the keeper's table update its tally table in the statement that
//! inserts, changes or deletes a row, so no path that writes a row (a
//! round, a claim, a cancel, a purge, a sweep) can leave the counts behind,
//! and a listing's counts read one row per tool. A status change costs one
//! more row written (the tool's counts), a status kept costs none.

#[cfg(feature = "admin")]
use serde_json::Value;
use worker::SqlStorage;

use crate::error::McpError;
#[cfg(feature = "admin")]
use crate::kept::page::Tally;
use crate::kept::Status;

fn err(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("durable storage failed: {e}"))
}

/// `pattern` once per status, `$` standing for the status, joined by
/// commas (one function, not one per pattern: this is wasm).
fn each(pattern: &str) -> String {
    Status::ALL
        .iter()
        .map(|s| pattern.replace('$', s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Creates `tally` and the triggers that keep it for `table` (whose rows
/// have `status` and `tool`), and counts the rows `table` holds already
/// (a table made before there were counts). Run once per table, when the
/// tally table is missing.
pub(crate) fn create(sql: &SqlStorage, table: &str, tally: &str) -> Result<(), McpError> {
    let columns = each("$ INTEGER NOT NULL DEFAULT 0");
    let names = each("$");
    let plus_new = each("new.status = '$'");
    let add = each("$ = $ + excluded.$");
    let minus_old = each("$ = $ - (old.status = '$')");
    let moved = each("$ = $ - (old.status = '$') + (new.status = '$')");
    let sums = each("sum(status = '$')");
    let statements = [
        format!(
            "CREATE TABLE IF NOT EXISTS {tally} (tool TEXT PRIMARY KEY, {columns}) WITHOUT ROWID"
        ),
        format!(
            "CREATE TRIGGER IF NOT EXISTS {tally}_in AFTER INSERT ON {table} BEGIN \
             INSERT INTO {tally} (tool, {names}) VALUES (new.tool, {plus_new}) \
             ON CONFLICT(tool) DO UPDATE SET {add}; END"
        ),
        format!(
            "CREATE TRIGGER IF NOT EXISTS {tally}_out AFTER DELETE ON {table} BEGIN \
             UPDATE {tally} SET {minus_old} WHERE tool = old.tool; END"
        ),
        // The common change: a status moves, the tool stays (one row).
        format!(
            "CREATE TRIGGER IF NOT EXISTS {tally}_moved AFTER UPDATE OF status ON {table} \
             WHEN old.tool = new.tool AND old.status IS NOT new.status BEGIN \
             UPDATE {tally} SET {moved} WHERE tool = new.tool; END"
        ),
        // A row whose tool changes (a tombstone forgets it).
        format!(
            "CREATE TRIGGER IF NOT EXISTS {tally}_retooled AFTER UPDATE OF tool ON {table} \
             WHEN old.tool IS NOT new.tool BEGIN \
             UPDATE {tally} SET {minus_old} WHERE tool = old.tool; \
             INSERT INTO {tally} (tool, {names}) VALUES (new.tool, {plus_new}) \
             ON CONFLICT(tool) DO UPDATE SET {add}; END"
        ),
        format!("DELETE FROM {tally}"),
        format!(
            "INSERT INTO {tally} (tool, {names}) SELECT tool, {sums} FROM {table} GROUP BY tool"
        ),
    ];
    for s in statements {
        sql.exec(&s, None).map_err(err)?;
    }
    Ok(())
}

/// Adds each of `columns` (their definitions) to `table` where it is
/// missing (a table made by an earlier release); a table made today has
/// them.
pub(crate) fn add_columns(sql: &SqlStorage, table: &str, columns: &[&str]) -> Result<(), McpError> {
    for column in columns {
        if let Err(e) = sql.exec(&format!("ALTER TABLE {table} ADD COLUMN {column}"), None) {
            if !e.to_string().contains("duplicate column") {
                return Err(err(e));
            }
        }
    }
    Ok(())
}

/// Makes the index `index` (its definition) and the counts of `table`:
/// the end of a table's migration.
pub(crate) fn finish(
    sql: &SqlStorage,
    index: &str,
    table: &str,
    tally: &str,
) -> Result<(), McpError> {
    sql.exec(&format!("CREATE INDEX IF NOT EXISTS {index}"), None)
        .map_err(err)?;
    create(sql, table, tally)
}

/// Whether `tally` exists (the marker that `create` ran for its table).
pub(crate) fn exists(sql: &SqlStorage, tally: &str) -> Result<bool, McpError> {
    super::sql::run(
        sql,
        &format!("SELECT tool FROM {tally} LIMIT 0"),
        Vec::new(),
    )
    .map_err(err)
}

/// What `tally` holds (nothing when it does not exist yet).
#[cfg(feature = "admin")]
pub(crate) fn read(sql: &SqlStorage, tally: &str) -> Result<Tally, McpError> {
    // Read as JSON values, by hand (no deserializer made for a row type).
    let rows = super::sql::rows::<Value>(sql, &format!("SELECT * FROM {tally}"), Vec::new())
        .map_err(err)?
        .unwrap_or_default();
    Ok(rows
        .iter()
        .map(|row| {
            let n = Status::ALL.map(|s| number(&row[s.as_str()]));
            (row["tool"].as_str().unwrap_or_default().to_string(), n)
        })
        .filter(|(_, n)| n.iter().any(|x| *x > 0))
        .collect())
}

/// A count as SQLite gives it (a JS number), never below zero.
#[cfg(feature = "admin")]
fn number(v: &Value) -> u64 {
    v.as_f64().map_or(0, |x| x.max(0.0) as u64)
}

/// The bindings of a count of the rows in `status` changed at or before
/// `until_ms`, of `tool` and `principal` (each `NULL`, twice: any).
#[cfg(feature = "admin")]
pub(crate) fn matching(
    status: Status,
    tool: Option<&str>,
    principal: Option<&str>,
    until_ms: Option<u64>,
) -> Vec<worker::SqlStorageValue> {
    use worker::SqlStorageValue as V;
    let text = |t: Option<&str>| t.map_or(V::Null, |t| V::from(t.to_string()));
    let until = i64::try_from(until_ms.unwrap_or(u64::MAX)).unwrap_or(i64::MAX);
    vec![
        V::from(status.as_str().to_string()),
        V::from(until),
        text(tool),
        text(tool),
        text(principal),
        text(principal),
    ]
}

/// The number `query` counts (`SELECT count(*) AS n …`; 0 without a table).
#[cfg(feature = "admin")]
pub(crate) fn count(
    sql: &SqlStorage,
    query: &str,
    bind: Vec<worker::SqlStorageValue>,
) -> Result<u64, McpError> {
    let rows = super::sql::rows::<Value>(sql, query, bind)
        .map_err(err)?
        .unwrap_or_default();
    Ok(rows.first().map_or(0, |c| number(&c["n"])))
}
