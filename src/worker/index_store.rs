//! The hub's admin index over Durable Object SQLite: a row per task or
//! live session, a row per paused tool, a row per console sign-in link
//! spent (until it would have expired). Reading never creates a table:
//! every hub shard is asked, and only the first one is ever written to.

use worker::{SqlStorage, SqlStorageValue};

use super::log_rows::Held;
use super::sql::Text;
use crate::error::McpError;
use crate::index::{listed_by, IndexChange, IndexEntry, IndexStore};
#[cfg(feature = "admin")]
use crate::kept::{page::Tally, Status};

/// An [`IndexStore`] over the object's SQLite database. A task's row
/// carries its status, tool and last change in columns, indexed by
/// (status, updated, handle) and counted per tool and status by triggers
/// ([`super::tally`]), so an operator's page reads a page of it.
pub(crate) struct SqliteIndex<'a> {
    sql: SqlStorage,
    held: &'a Held,
    /// This request found no index (an index shard nobody wrote to): its
    /// other reads ask no more.
    #[cfg_attr(not(feature = "admin"), allow(dead_code))]
    absent: std::cell::Cell<bool>,
}

/// The tally of the index's tasks.
const TALLY: &str = "admin_tally";

fn int(ms: u64) -> SqlStorageValue {
    SqlStorageValue::from(i64::try_from(ms).unwrap_or(i64::MAX))
}

fn storage_error(e: impl std::fmt::Display) -> McpError {
    McpError::internal(format!("admin index storage failed: {e}"))
}

impl<'a> SqliteIndex<'a> {
    pub(crate) fn new(sql: SqlStorage, held: &'a Held) -> Self {
        Self {
            sql,
            held,
            absent: std::cell::Cell::new(false),
        }
    }

    /// Makes the tables (once per object's life), and brings an index of
    /// an earlier release up to this one's layout ([`Self::migrate`]).
    fn ensure(&self) -> Result<(), McpError> {
        if self.held.index_table.get() {
            return Ok(());
        }
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS admin_index (
                    handle TEXT PRIMARY KEY,
                    entry TEXT NOT NULL,
                    status TEXT NOT NULL DEFAULT '',
                    tool TEXT NOT NULL DEFAULT '',
                    updated INTEGER NOT NULL DEFAULT 0,
                    principal TEXT NOT NULL DEFAULT '') WITHOUT ROWID",
                None,
            )
            .map_err(storage_error)?;
        self.sql
            .exec(
                "CREATE TABLE IF NOT EXISTS admin_paused (name TEXT PRIMARY KEY) WITHOUT ROWID",
                None,
            )
            .map_err(storage_error)?;
        if !super::tally::exists(&self.sql, TALLY)? {
            self.migrate()?;
        }
        self.held.index_table.set(true);
        Ok(())
    }

    /// Once (the tally table marks it done): the columns a page is read
    /// by, filled from each entry, their index, and the counts with their
    /// triggers. The one full read of the index there is.
    fn migrate(&self) -> Result<(), McpError> {
        super::tally::add_columns(
            &self.sql,
            "admin_index",
            &[
                "status TEXT NOT NULL DEFAULT ''",
                "tool TEXT NOT NULL DEFAULT ''",
                "updated INTEGER NOT NULL DEFAULT 0",
                "principal TEXT NOT NULL DEFAULT ''",
            ],
        )?;
        let rows = super::sql::rows::<Text>(&self.sql, "SELECT entry FROM admin_index", Vec::new())
            .map_err(storage_error)?
            .unwrap_or_default();
        for r in rows {
            let Ok(e) = crate::json::from_str::<IndexEntry>(&r.0) else {
                continue;
            };
            let mut bind = columns(&e);
            bind.push(SqlStorageValue::from(e.handle.clone()));
            self.sql
                .exec(
                    "UPDATE admin_index SET status = ?, tool = ?, updated = ?, principal = ? WHERE handle = ?",
                    bind,
                )
                .map_err(storage_error)?;
        }
        super::tally::finish(
            &self.sql,
            "admin_index_by_status ON admin_index (status, updated, handle)",
            "admin_index",
            TALLY,
        )
    }

    /// Whether the index exists to be read (brought up to date).
    #[cfg(feature = "admin")]
    fn readable(&self) -> Result<bool, McpError> {
        if self.held.index_table.get() {
            return Ok(true);
        }
        if self.absent.get() {
            return Ok(false);
        }
        let there = super::sql::run(
            &self.sql,
            "SELECT handle FROM admin_index LIMIT 0",
            Vec::new(),
        )
        .map_err(storage_error)?;
        if there {
            self.ensure()?;
        }
        self.absent.set(!there);
        Ok(there)
    }
}

/// An entry's status, tool and last change as its row's columns (a
/// session's: none, never listed by them).
fn columns(e: &IndexEntry) -> Vec<SqlStorageValue> {
    let (status, tool, updated) = listed_by(e).map_or(("", "", 0), |(s, t, u)| (s.as_str(), t, u));
    let principal = (e.summary.as_ref())
        .filter(|_| listed_by(e).is_some())
        .map_or("", |s| s.principal.as_str());
    vec![
        SqlStorageValue::from(status.to_string()),
        SqlStorageValue::from(tool.to_string()),
        int(updated),
        SqlStorageValue::from(principal.to_string()),
    ]
}

impl IndexStore for SqliteIndex<'_> {
    fn apply(&self, change: &IndexChange) -> Result<(), McpError> {
        self.ensure()?;
        match change {
            IndexChange::Put(e) => {
                let entry = serde_json::to_string(e).map_err(storage_error)?;
                let mut bind = vec![
                    SqlStorageValue::from(e.handle.clone()),
                    SqlStorageValue::from(entry),
                ];
                bind.extend(columns(e));
                // An upsert: a replace would delete the row without the
                // delete trigger, and the counts would drift.
                self.sql
                    .exec(
                        "INSERT INTO admin_index (handle, entry, status, tool, updated, principal) \
                         VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(handle) DO UPDATE SET entry = excluded.entry, \
                         status = excluded.status, tool = excluded.tool, updated = excluded.updated, \
                         principal = excluded.principal",
                        bind,
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
        let rows = super::sql::rows::<Text>(&self.sql, "SELECT entry FROM admin_index", Vec::new())
            .map_err(storage_error)?
            .unwrap_or_default();
        Ok(rows
            .into_iter()
            .filter_map(|r| crate::json::from_str(&r.0).ok())
            .collect())
    }

    fn paused_tools(&self) -> Result<Vec<String>, McpError> {
        let rows = super::sql::rows::<Text>(
            &self.sql,
            "SELECT name FROM admin_paused ORDER BY name",
            Vec::new(),
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        Ok(rows.into_iter().map(|t| t.0).collect())
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

    #[cfg(feature = "admin")]
    fn page(
        &self,
        status: Status,
        after: Option<(u64, &str)>,
        until_ms: Option<u64>,
        limit: usize,
    ) -> Result<Vec<IndexEntry>, McpError> {
        if !self.readable()? {
            return Ok(Vec::new());
        }
        let (updated, handle) =
            after.map_or((-1, ""), |(u, h)| (i64::try_from(u).unwrap_or(i64::MAX), h));
        let rows = super::sql::rows::<Text>(
            &self.sql,
            "SELECT entry FROM admin_index WHERE status = ? AND (updated, handle) > (?, ?) \
             AND updated <= ? ORDER BY updated, handle LIMIT ?",
            vec![
                SqlStorageValue::from(status.as_str().to_string()),
                SqlStorageValue::from(updated),
                SqlStorageValue::from(handle.to_string()),
                int(until_ms.unwrap_or(u64::MAX)),
                SqlStorageValue::from(i64::try_from(limit).unwrap_or(i64::MAX)),
            ],
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        Ok(rows
            .into_iter()
            .filter_map(|r| crate::json::from_str(&r.0).ok())
            .collect())
    }

    #[cfg(feature = "admin")]
    fn sessions(&self) -> Result<Vec<IndexEntry>, McpError> {
        if !self.readable()? {
            return Ok(Vec::new());
        }
        let rows = super::sql::rows::<Text>(
            &self.sql,
            "SELECT entry FROM admin_index WHERE status = '' AND handle >= 's.' AND handle < 's/'",
            Vec::new(),
        )
        .map_err(storage_error)?
        .unwrap_or_default();
        Ok(rows
            .into_iter()
            .filter_map(|r| crate::json::from_str::<IndexEntry>(&r.0).ok())
            .filter(|e| e.kind == crate::kept::Kind::Session)
            .collect())
    }

    #[cfg(feature = "admin")]
    fn tally(&self) -> Result<Tally, McpError> {
        if !self.readable()? {
            return Ok(Tally::new());
        }
        super::tally::read(&self.sql, TALLY)
    }

    #[cfg(feature = "admin")]
    fn newer(&self, status: Status, since_ms: u64) -> Result<u64, McpError> {
        if !self.readable()? {
            return Ok(0);
        }
        super::tally::count(
            &self.sql,
            "SELECT count(*) AS n FROM admin_index WHERE status = ? AND updated > ?",
            vec![
                SqlStorageValue::from(status.as_str().to_string()),
                int(since_ms),
            ],
        )
    }

    #[cfg(feature = "admin")]
    fn matched(
        &self,
        status: Status,
        tool: Option<&str>,
        principal: Option<&str>,
        until_ms: Option<u64>,
    ) -> Result<u64, McpError> {
        if !self.readable()? {
            return Ok(0);
        }
        super::tally::count(
            &self.sql,
            "SELECT count(*) AS n FROM admin_index WHERE status = ? AND updated <= ? \
             AND (? IS NULL OR tool = ?) AND (? IS NULL OR principal = ?)",
            super::tally::matching(status, tool, principal, until_ms),
        )
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
