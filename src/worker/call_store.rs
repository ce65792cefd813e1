//! Durable calls' storage over Durable Object SQLite.

use worker::{SqlStorage, SqlStorageValue};

use super::log_rows::{self, Held};
use super::sql::{FromRow, SqlRow, Text};
use crate::error::McpError;
use crate::kept;
use crate::store::{CallRow, CallStore, StoredCall};

/// A [`CallStore`] over the object's SQLite database: a row per call, keyed
/// by call id (a shard's object holds many), and its journal's log
/// ([`log_rows`]). `exec` is synchronous, so nothing here spans an await.
pub(crate) struct SqliteStore<'a> {
    sql: SqlStorage,
    /// What the object keeps across requests: the calls it served last,
    /// and whether the table exists (a shard stores a new call on nearly
    /// every request, and `CREATE TABLE IF NOT EXISTS` is a statement like
    /// any other); cleared when its storage is deleted.
    held: &'a Held,
}

/// A row as SQLite gives it (numbers come back as JS numbers); `id` only
/// where it was selected.
struct Row {
    id: String,
    version: f64,
    status: String,
    claimed_at: f64,
    journal: String,
    reply: Option<String>,
    updated_at: f64,
}

impl FromRow for Row {
    fn from_row(r: &SqlRow<'_>) -> worker::Result<Self> {
        Ok(Row {
            id: if r.has("id") {
                r.text("id")?
            } else {
                String::new()
            },
            version: r.number("version")?,
            status: r.text("status")?,
            claimed_at: r.number("claimed_at")?,
            journal: r.text("journal")?,
            reply: r.text_or_null("reply")?,
            updated_at: r.number("updated_at")?,
        })
    }
}

impl Row {
    fn into_row(self) -> CallRow {
        CallRow {
            version: self.version as i64,
            status: self.status,
            claimed_at: self.claimed_at as i64,
            journal: self.journal,
            reply: self.reply,
            updated_at: self.updated_at as i64,
            tool: String::new(),
            principal: String::new(),
        }
    }

    /// The call as its row holds it (its journal's head).
    fn call(self) -> std::result::Result<StoredCall, McpError> {
        self.into_row().call()
    }
}

struct Oldest {
    oldest: Option<f64>,
}

impl FromRow for Oldest {
    fn from_row(r: &SqlRow<'_>) -> worker::Result<Self> {
        Ok(Oldest {
            oldest: r.number_or_null("oldest")?,
        })
    }
}

fn storage_error(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("durable storage failed: {e}"))
}

/// The tally of a shard's calls ([`super::tally`]).
const TALLY: &str = "durable_tally";

/// Every status word a row holds, as a condition the index reads by (an
/// `IN` on its first column: one range per word).
const EVERY_WORD: &str =
    "status IN ('waiting', 'working', 'parked', 'completed', 'failed', 'cancelled', 'purged')";

fn int(ms: u64) -> SqlStorageValue {
    SqlStorageValue::from(i64::try_from(ms).unwrap_or(i64::MAX))
}

impl<'a> SqliteStore<'a> {
    pub(crate) fn new(sql: SqlStorage, held: &'a Held) -> Self {
        Self { sql, held }
    }

    fn row(&self, id: &str) -> std::result::Result<Option<CallRow>, McpError> {
        // No table yet is no call; the first save creates it.
        let Some(rows) = super::sql::rows::<Row>(
            &self.sql,
            "SELECT version, status, claimed_at, journal, reply, updated_at FROM durable_calls WHERE id = ?",
            vec![SqlStorageValue::from(id.to_string())],
        )
        .map_err(storage_error)?
        else {
            return Ok(None);
        };
        Ok(rows.into_iter().next().map(Row::into_row))
    }

    fn write(&self, id: &str, call: &StoredCall) -> std::result::Result<(), McpError> {
        self.ensure()?;
        let (row, log, manifest) = self.held.calls.with(id, |held| {
            CallRow::save(call, held.map(|(c, m)| (&c.journal, m)))
        })?;
        log_rows::write(&self.sql, self.held, id, &log, manifest.deltas)?;
        let reply = match row.reply {
            Some(r) => SqlStorageValue::from(r),
            None => SqlStorageValue::Null,
        };
        // An upsert, not `INSERT OR REPLACE`: a replace deletes the row
        // without firing the delete trigger, and the counts would drift.
        self.sql
            .exec(
                "INSERT INTO durable_calls (id, version, status, claimed_at, journal, reply, updated_at, tool, principal) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET version = excluded.version, \
                 status = excluded.status, claimed_at = excluded.claimed_at, journal = excluded.journal, \
                 reply = excluded.reply, updated_at = excluded.updated_at, tool = excluded.tool, \
                 principal = excluded.principal",
                vec![
                    SqlStorageValue::from(id.to_string()),
                    SqlStorageValue::from(row.version),
                    SqlStorageValue::from(row.status),
                    SqlStorageValue::from(row.claimed_at),
                    SqlStorageValue::from(row.journal),
                    reply,
                    SqlStorageValue::from(row.updated_at),
                    SqlStorageValue::from(row.tool),
                    SqlStorageValue::from(row.principal),
                ],
            )
            .map_err(storage_error)?;
        self.held.calls.put(id, manifest, call.clone());
        Ok(())
    }

    /// Creates the table when missing (a fired alarm deletes it). Keyed by
    /// the call id itself (`WITHOUT ROWID`): with a rowid, the text key is
    /// a second B-tree, and every round's write was two rows written (the
    /// row and its key), which Cloudflare bills; now it is one. A table made
    /// before keeps its layout (`IF NOT EXISTS`); both read and write alike.
    fn ensure(&self) -> std::result::Result<(), McpError> {
        if self.held.call_table.get() {
            return Ok(());
        }
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS durable_calls (
                    id TEXT PRIMARY KEY,
                    version INTEGER NOT NULL,
                    status TEXT NOT NULL,
                    claimed_at INTEGER NOT NULL,
                    journal TEXT NOT NULL,
                    reply TEXT,
                    updated_at INTEGER NOT NULL,
                    tool TEXT NOT NULL DEFAULT '',
                    principal TEXT NOT NULL DEFAULT '') WITHOUT ROWID",
                None,
            )
            .map_err(storage_error)?;
        if !super::tally::exists(&self.sql, TALLY)? {
            self.migrate()?;
        }
        self.held.call_table.set(true);
        Ok(())
    }

    /// Brings a table made by an earlier release to this one's layout,
    /// once (the tally table is the mark that it ran): a `tool` column,
    /// every row's status word as it is listed (rows of older releases
    /// said `awaiting_input` or `running`, or `completed` for a failed
    /// call), the index by (status, updated, id) that pages and sweeps
    /// read, and the counts with their triggers. The one full read of the
    /// table there is; a new table has no rows to read.
    fn migrate(&self) -> std::result::Result<(), McpError> {
        super::tally::add_columns(
            &self.sql,
            "durable_calls",
            &[
                "tool TEXT NOT NULL DEFAULT ''",
                "principal TEXT NOT NULL DEFAULT ''",
            ],
        )?;
        let rows = super::sql::rows::<Row>(
            &self.sql,
            "SELECT id, version, status, claimed_at, journal, reply, updated_at FROM durable_calls",
            Vec::new(),
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        for mut r in rows {
            let id = std::mem::take(&mut r.id);
            let word = r.status.clone();
            // A row this release cannot read keeps its word: it is not
            // listed, as before.
            let Ok(call) = r.call() else { continue };
            let (tool, principal) = if call.tomb {
                ("", "")
            } else {
                (call.tool(), call.principal())
            };
            let now = crate::store::row_word(&call);
            if tool.is_empty() && principal.is_empty() && now == word {
                continue;
            }
            self.sql
                .exec(
                    "UPDATE durable_calls SET status = ?, tool = ?, principal = ? WHERE id = ?",
                    vec![
                        SqlStorageValue::from(now.to_string()),
                        SqlStorageValue::from(tool.to_string()),
                        SqlStorageValue::from(principal.to_string()),
                        SqlStorageValue::from(id),
                    ],
                )
                .map_err(storage_error)?;
        }
        super::tally::finish(
            &self.sql,
            "durable_calls_by_status ON durable_calls (status, updated_at, id)",
            "durable_calls",
            TALLY,
        )
    }

    /// Deletes the calls last updated at or before `cutoff_ms` (idle for
    /// the whole TTL) and their logs; `false`
    /// when there is no table (an object that never stored a call has
    /// nothing to sweep). Through the index by status: each status's
    /// oldest rows up to the cutoff, none after.
    fn delete_idle(&self, cutoff_ms: u64) -> std::result::Result<bool, McpError> {
        // Made (and brought up to date) before it is read by its index.
        if !super::sql::run(
            &self.sql,
            "SELECT id FROM durable_calls LIMIT 0",
            Vec::new(),
        )
        .map_err(storage_error)?
        {
            return Ok(false);
        }
        self.ensure()?;
        // Their logs first: a call's rows go together.
        super::sql::run(
            &self.sql,
            &format!("DELETE FROM journal_log WHERE owner IN (SELECT id FROM durable_calls WHERE {EVERY_WORD} AND updated_at <= ?)"),
            vec![int(cutoff_ms)],
        )
        .map_err(storage_error)?;
        self.held.calls.clear();
        super::sql::run(
            &self.sql,
            &format!("DELETE FROM durable_calls WHERE {EVERY_WORD} AND updated_at <= ?"),
            vec![int(cutoff_ms)],
        )
        .map_err(storage_error)
    }

    /// Finished calls last updated at or before `cutoff_ms` (past their
    /// retention) become tombstones (a sweep runs a 64th of the TTL
    /// apart: few rows each time).
    fn bury_finished(&self, cutoff_ms: u64) -> std::result::Result<(), McpError> {
        let finished = super::sql::rows::<Row>(
            &self.sql,
            "SELECT id, version, status, claimed_at, journal, reply, updated_at FROM durable_calls \
             WHERE status IN ('completed', 'failed', 'cancelled') AND updated_at <= ?",
            vec![int(cutoff_ms)],
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        for mut r in finished {
            let id = std::mem::take(&mut r.id);
            self.save(&id, &r.call()?.tombstone())?;
        }
        Ok(())
    }

    /// When the next call left is due to go: a finished one `retain_ms`
    /// after its last update, any other `ttl_ms` after (`None`: none left).
    fn next_due(&self, ttl_ms: u64, retain_ms: u64) -> std::result::Result<Option<u64>, McpError> {
        // Each status's oldest row, one step down the index each: no row
        // is read whole. One row of scalar subqueries (a compound SELECT of
        // seven terms is more than Cloudflare's SQLite allows); a status
        // without rows counts as never, 2^53 - 1 (the largest integer a JS
        // number holds), for the scalar `min`.
        const NEXT_DUE: &str = "SELECT min(\
            coalesce((SELECT min(updated_at) FROM durable_calls WHERE status = 'waiting') + ?, 9007199254740991), \
            coalesce((SELECT min(updated_at) FROM durable_calls WHERE status = 'working') + ?, 9007199254740991), \
            coalesce((SELECT min(updated_at) FROM durable_calls WHERE status = 'parked') + ?, 9007199254740991), \
            coalesce((SELECT min(updated_at) FROM durable_calls WHERE status = 'completed') + ?, 9007199254740991), \
            coalesce((SELECT min(updated_at) FROM durable_calls WHERE status = 'failed') + ?, 9007199254740991), \
            coalesce((SELECT min(updated_at) FROM durable_calls WHERE status = 'cancelled') + ?, 9007199254740991), \
            coalesce((SELECT min(updated_at) FROM durable_calls WHERE status = 'purged') + ?, 9007199254740991)\
            ) AS oldest";
        let (live, finished) = (int(ttl_ms), int(retain_ms));
        let bind = vec![
            live.clone(),
            live.clone(),
            live.clone(),
            finished.clone(),
            finished.clone(),
            finished,
            live,
        ];
        let query = NEXT_DUE;
        let next = super::sql::rows::<Oldest>(&self.sql, query, bind)
            .map_err(storage_error)?
            .unwrap_or_default();
        // Never: no row left.
        Ok(next
            .into_iter()
            .next()
            .and_then(|o| o.oldest)
            .filter(|ms| *ms < 9_007_199_254_740_991.0)
            .map(|ms| ms as u64))
    }
}

impl CallStore for SqliteStore<'_> {
    fn load(&self, id: &str) -> std::result::Result<Option<StoredCall>, McpError> {
        if let Some(call) = self
            .held
            .calls
            .with(id, |held| held.map(|(c, _)| c.clone()))
        {
            return Ok(Some(call));
        }
        let Some(row) = self.row(id)? else {
            return Ok(None);
        };
        let log = if row.deltas()? > 0 {
            log_rows::read(&self.sql, id)?
        } else {
            Vec::new()
        };
        let (call, manifest) = row.load(log)?;
        self.held.calls.put(id, manifest, call.clone());
        Ok(Some(call))
    }

    fn status(&self, id: &str) -> std::result::Result<Option<kept::Status>, McpError> {
        let rows = super::sql::rows::<Text>(
            &self.sql,
            "SELECT status FROM durable_calls WHERE id = ?",
            vec![SqlStorageValue::from(id.to_string())],
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        crate::store::status_word(&row.0).map(Some)
    }

    fn save(&self, id: &str, call: &StoredCall) -> std::result::Result<(), McpError> {
        self.write(id, call)
            .inspect_err(|_| self.held.calls.forget(id))
    }

    fn claim(&self, id: &str, now_ms: u64) -> std::result::Result<(), McpError> {
        self.sql
            .exec(
                "UPDATE durable_calls SET status = 'working', claimed_at = ?, updated_at = ? WHERE id = ?",
                vec![int(now_ms), int(now_ms), SqlStorageValue::from(id.to_string())],
            )
            .map_err(storage_error)
            .inspect_err(|_| self.held.calls.forget(id))?;
        self.held.calls.touch(id, |c| {
            c.status = kept::Status::Working;
            c.claimed_at_ms = now_ms;
            c.updated_ms = now_ms;
        });
        Ok(())
    }

    fn list(&self) -> std::result::Result<Vec<(String, StoredCall)>, McpError> {
        let rows = super::sql::rows::<Row>(
            &self.sql,
            "SELECT id, version, status, claimed_at, journal, reply, updated_at FROM durable_calls \
             WHERE status != 'purged'",
            Vec::new(),
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        rows.into_iter()
            .map(|mut r| {
                let id = std::mem::take(&mut r.id);
                Ok((id, r.call()?))
            })
            .collect()
    }

    fn delete(&self, id: &str) -> std::result::Result<(), McpError> {
        self.held.calls.forget(id);
        log_rows::forget(&self.sql, id)?;
        super::sql::run(
            &self.sql,
            "DELETE FROM durable_calls WHERE id = ?",
            vec![SqlStorageValue::from(id.to_string())],
        )
        .map(|_| ())
        .map_err(storage_error)
    }

    fn sweep(
        &self,
        now_ms: u64,
        ttl_ms: u64,
        retain_ms: u64,
    ) -> std::result::Result<Option<u64>, McpError> {
        if !self.delete_idle(now_ms.saturating_sub(ttl_ms))? {
            return Ok(None);
        }
        self.bury_finished(now_ms.saturating_sub(retain_ms))?;
        self.next_due(ttl_ms, retain_ms)
    }

    #[cfg(feature = "admin")]
    fn page(
        &self,
        status: kept::Status,
        after: Option<(u64, &str)>,
        until_ms: Option<u64>,
        limit: usize,
    ) -> std::result::Result<Vec<(String, StoredCall)>, McpError> {
        if !self.listable()? {
            return Ok(Vec::new());
        }
        let (updated, id) = after.map_or((-1, ""), |(u, id)| {
            (i64::try_from(u).unwrap_or(i64::MAX), id)
        });
        let rows = super::sql::rows::<Row>(
            &self.sql,
            "SELECT id, version, status, claimed_at, journal, reply, updated_at FROM durable_calls \
             WHERE status = ? AND (updated_at, id) > (?, ?) AND updated_at <= ? \
             ORDER BY updated_at, id LIMIT ?",
            vec![
                SqlStorageValue::from(status.as_str().to_string()),
                SqlStorageValue::from(updated),
                SqlStorageValue::from(id.to_string()),
                int(until_ms.unwrap_or(u64::MAX)),
                SqlStorageValue::from(i64::try_from(limit).unwrap_or(i64::MAX)),
            ],
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        rows.into_iter()
            .map(|mut r| {
                let id = std::mem::take(&mut r.id);
                Ok((id, r.call()?))
            })
            .collect()
    }

    #[cfg(feature = "admin")]
    fn tally(&self) -> std::result::Result<kept::page::Tally, McpError> {
        if !self.listable()? {
            return Ok(Default::default());
        }
        super::tally::read(&self.sql, TALLY)
    }

    #[cfg(feature = "admin")]
    fn newer(&self, status: kept::Status, since_ms: u64) -> std::result::Result<u64, McpError> {
        if !self.listable()? {
            return Ok(0);
        }
        super::tally::count(
            &self.sql,
            "SELECT count(*) AS n FROM durable_calls WHERE status = ? AND updated_at > ?",
            vec![
                SqlStorageValue::from(status.as_str().to_string()),
                int(since_ms),
            ],
        )
    }

    #[cfg(feature = "admin")]
    fn matched(
        &self,
        status: kept::Status,
        tool: Option<&str>,
        principal: Option<&str>,
        until_ms: Option<u64>,
    ) -> std::result::Result<u64, McpError> {
        if !self.listable()? {
            return Ok(0);
        }
        super::tally::count(
            &self.sql,
            "SELECT count(*) AS n FROM durable_calls WHERE status = ? AND updated_at <= ? \
             AND (? IS NULL OR tool = ?) AND (? IS NULL OR principal = ?)",
            super::tally::matching(status, tool, principal, until_ms),
        )
    }
}

#[cfg(feature = "admin")]
impl SqliteStore<'_> {
    /// Whether the shard holds a table to list, brought up to date (an
    /// object that never stored a call makes none).
    fn listable(&self) -> std::result::Result<bool, McpError> {
        if self.held.call_table.get() {
            return self.ensure().map(|()| true);
        }
        let there = super::sql::run(
            &self.sql,
            "SELECT id FROM durable_calls LIMIT 0",
            Vec::new(),
        )
        .map_err(storage_error)?;
        if there {
            self.ensure()?;
        }
        Ok(there)
    }
}
