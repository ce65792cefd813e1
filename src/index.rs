//! The hub's index: what an operator's listing starts from, and the tools
//! an operator paused (every isolate reads them now and then). Durable calls need none:
//! they live in a fixed set of call shards, each listed whole. Tasks and
//! sessions each live in an object of their own, so the hub (the first
//! listen shard, which already hears of every task change) keeps an entry
//! for each: a task's with its summary (updated by the change the task
//! sends anyway, so listing tasks reads one object), a live session's with
//! only where it is (its calls are read from it when listed). The hub keeps
//! the tools an operator paused too.
//!
//! Entries name objects by the task's or session's real id (the index is
//! internal); the admin answers show only their digests.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::McpError;
use crate::kept::page::{tally, Tally};
use crate::kept::{CallSummary, Kind, Status};
use crate::vec_map::VecSet;

/// One task or live session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// Its admin id (`t.<h>`) or id prefix (`s.<h>`).
    pub handle: String,
    /// The object that keeps it (`task:<id>`, `session:<id>`).
    pub object: String,
    /// A task or a session.
    pub kind: Kind,
    /// A task's summary as of its last change (a session's calls are read
    /// from the session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<CallSummary>,
}

/// A change to the index, sent to the hub with the other changes.
// An entry is a few hundred bytes and a request makes a change or two:
// boxing it would change this public enum's shape for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexChange {
    /// Insert or replace an entry.
    Put(IndexEntry),
    /// Forget the entry with this handle (a session deleted, a task gone).
    Remove(String),
}

impl IndexChange {
    /// The handle of the entry it changes.
    pub fn handle(&self) -> &str {
        match self {
            Self::Put(e) => &e.handle,
            Self::Remove(h) => h,
        }
    }
}

/// The index's storage (the hub object's SQLite in the Worker).
pub trait IndexStore {
    /// Applies a change.
    fn apply(&self, change: &IndexChange) -> Result<(), McpError>;
    /// Every entry.
    fn entries(&self) -> Result<Vec<IndexEntry>, McpError>;
    /// The tools an operator paused.
    fn paused_tools(&self) -> Result<Vec<String>, McpError>;
    /// Pauses (`true`) or resumes a tool.
    fn set_paused(&self, tool: &str, paused: bool) -> Result<(), McpError>;
    /// Marks a console sign-in link's `nonce` spent, kept until
    /// `until_ms` (when the link stops being good anyway): `true` for the
    /// first use, `false` for any later one. Marks past their time are
    /// forgotten at `now_ms`.
    fn spend_link(&self, nonce: &str, until_ms: u64, now_ms: u64) -> Result<bool, McpError>;
    // What an operator's listing reads (a Worker built without the
    // `admin` feature never asks, and links none of it).
    /// Up to `limit` tasks in `status` after `after` (`(updated, handle)`),
    /// changed at or before `until_ms`, oldest first: one read of the
    /// index by status (see [`crate::kept::page`]).
    fn page(
        &self,
        _status: Status,
        _after: Option<(u64, &str)>,
        _until_ms: Option<u64>,
        _limit: usize,
    ) -> Result<Vec<IndexEntry>, McpError> {
        Ok(Vec::new())
    }
    /// The live sessions' entries.
    fn sessions(&self) -> Result<Vec<IndexEntry>, McpError> {
        Ok(Vec::new())
    }
    /// Its tasks counted per tool and status, kept by each change.
    fn tally(&self) -> Result<Tally, McpError> {
        Ok(Tally::new())
    }
    /// How many tasks in `status` changed after `since_ms`.
    fn newer(&self, _status: Status, _since_ms: u64) -> Result<u64, McpError> {
        Ok(0)
    }
    /// How many tasks in `status` run `tool`, were started by
    /// `principal` and changed at or before `until_ms` (each if given).
    fn matched(
        &self,
        _status: Status,
        _tool: Option<&str>,
        _principal: Option<&str>,
        _until_ms: Option<u64>,
    ) -> Result<u64, McpError> {
        Ok(0)
    }
}

/// What an entry is listed by: its task's status, tool and last change
/// (`None`: not a task with a summary, never in a page).
pub fn listed_by(e: &IndexEntry) -> Option<(Status, &str, u64)> {
    let s = e.summary.as_ref().filter(|_| e.kind == Kind::Task)?;
    Some((s.status, s.tool.as_str(), s.updated_ms))
}

/// An [`IndexStore`] in memory, for tests.
#[derive(Debug, Default)]
pub struct MemoryIndex {
    entries: RefCell<BTreeMap<String, IndexEntry>>,
    paused: RefCell<BTreeSet<String>>,
    spent: RefCell<BTreeMap<String, u64>>,
}

impl MemoryIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }
}

impl IndexStore for MemoryIndex {
    fn apply(&self, change: &IndexChange) -> Result<(), McpError> {
        let mut entries = self.entries.borrow_mut();
        match change {
            IndexChange::Put(e) => {
                entries.insert(e.handle.clone(), e.clone());
            }
            IndexChange::Remove(h) => {
                entries.remove(h);
            }
        }
        Ok(())
    }

    fn entries(&self) -> Result<Vec<IndexEntry>, McpError> {
        Ok(self.entries.borrow().values().cloned().collect())
    }

    fn paused_tools(&self) -> Result<Vec<String>, McpError> {
        Ok(self.paused.borrow().iter().cloned().collect())
    }

    fn set_paused(&self, tool: &str, paused: bool) -> Result<(), McpError> {
        let mut set = self.paused.borrow_mut();
        if paused {
            set.insert(tool.to_string());
        } else {
            set.remove(tool);
        }
        Ok(())
    }

    fn spend_link(&self, nonce: &str, until_ms: u64, now_ms: u64) -> Result<bool, McpError> {
        let mut spent = self.spent.borrow_mut();
        spent.retain(|_, until| *until > now_ms);
        Ok(spent.insert(nonce.to_string(), until_ms).is_none())
    }

    fn page(
        &self,
        status: Status,
        after: Option<(u64, &str)>,
        until_ms: Option<u64>,
        limit: usize,
    ) -> Result<Vec<IndexEntry>, McpError> {
        let mut rows: Vec<IndexEntry> = (self.entries.borrow().values())
            .filter(|e| {
                listed_by(e).is_some_and(|(s, _, u)| {
                    s == status
                        && after.is_none_or(|(au, aid)| (u, e.handle.as_str()) > (au, aid))
                        && until_ms.is_none_or(|until| u <= until)
                })
            })
            .cloned()
            .collect();
        rows.sort_by_key(|e| (listed_by(e).map_or(0, |(_, _, u)| u), e.handle.clone()));
        rows.truncate(limit);
        Ok(rows)
    }

    fn sessions(&self) -> Result<Vec<IndexEntry>, McpError> {
        Ok((self.entries.borrow().values())
            .filter(|e| e.kind == Kind::Session)
            .cloned()
            .collect())
    }

    fn tally(&self) -> Result<Tally, McpError> {
        let entries = self.entries.borrow();
        Ok(tally(
            entries
                .values()
                .filter_map(|e| listed_by(e).and(e.summary.as_ref())),
        ))
    }

    fn newer(&self, status: Status, since_ms: u64) -> Result<u64, McpError> {
        Ok((self.entries.borrow().values())
            .filter_map(listed_by)
            .filter(|(s, _, u)| *s == status && *u > since_ms)
            .count() as u64)
    }

    fn matched(
        &self,
        status: Status,
        tool: Option<&str>,
        principal: Option<&str>,
        until_ms: Option<u64>,
    ) -> Result<u64, McpError> {
        let entries = self.entries.borrow();
        Ok((entries.values())
            .filter_map(|e| e.summary.as_ref().filter(|_| listed_by(e).is_some()))
            .filter(|c| {
                c.status == status
                    && tool.is_none_or(|t| c.tool == t)
                    && principal.is_none_or(|p| c.principal == p)
                    && until_ms.is_none_or(|u| c.updated_ms <= u)
            })
            .count() as u64)
    }
}

/// How long an isolate trusts what it last read of the paused tools before
/// it reads them again (in the background: the request in hand does not
/// wait). A pause reaches every isolate within this.
pub const PAUSED_REFRESH_MS: u64 = 10_000;

/// An isolate's copy of the tools an operator paused.
#[derive(Debug, Default)]
pub struct PausedTools {
    tools: RefCell<VecSet<String>>,
    /// When it was last read (`None`: never) or a read was started.
    read_ms: std::cell::Cell<Option<u64>>,
}

impl PausedTools {
    /// Whether `tool` is paused, as far as this isolate knows.
    pub fn contains(&self, tool: &str) -> bool {
        !self.tools.borrow().is_empty() && self.tools.borrow().contains(tool)
    }

    /// Whether a read is due at `now_ms`; marks one started (so one read
    /// is in flight per isolate).
    pub fn due(&self, now_ms: u64) -> bool {
        let due = self
            .read_ms
            .get()
            .is_none_or(|at| now_ms.saturating_sub(at) >= PAUSED_REFRESH_MS);
        if due {
            self.read_ms.set(Some(now_ms));
        }
        due
    }

    /// What was read (or just written by this isolate).
    pub fn set(&self, tools: impl IntoIterator<Item = String>, now_ms: u64) {
        *self.tools.borrow_mut() = tools.into_iter().collect();
        self.read_ms.set(Some(now_ms));
    }

    /// The paused tools, sorted.
    pub fn list(&self) -> Vec<String> {
        self.tools.borrow().iter().cloned().collect()
    }
}
