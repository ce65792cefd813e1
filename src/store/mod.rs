//! Storage for durable calls: a small synchronous trait and an in-memory
//! implementation. The Worker implements it over Durable Object SQLite,
//! whose `exec` is synchronous, so no borrow ever spans an `.await`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

pub mod log;
pub mod warm;

use serde::{Deserialize, Serialize};

use crate::engine::{Journal, RoundEnd};
use crate::error::McpError;
use crate::kept::page::{slot, Tally};
use crate::kept::summary;
use crate::kept::{CallSummary, Kind, Status};

/// One durable call as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredCall {
    /// The journal version: the round a retry must continue from.
    pub version: u32,
    /// Where the call is ([`crate::kept`]): a claimed row is `working`,
    /// a paused one `waiting` (or `parked`), a finished one `completed`,
    /// `failed` or `cancelled`.
    pub status: Status,
    /// A tombstone (see [`crate::kept`]): a finished call purged by an
    /// operator or past its retention, kept unlisted until no token can
    /// name it, so a token still naming it gets its end (its last trail
    /// mark and reply, its status), never a rebuild.
    #[serde(default)]
    pub tomb: bool,
    /// When the running round was claimed (ms since the epoch).
    pub claimed_at_ms: u64,
    /// The journal.
    pub journal: Journal,
    /// The reply to the last answered round, so a client whose reply was
    /// lost gets it again by retrying exactly.
    #[serde(default)]
    pub last_reply: Option<StoredReply>,
    /// When the call last changed (ms since the epoch): the idle TTL runs
    /// from here.
    #[serde(default)]
    pub updated_ms: u64,
}

/// The reply to one answered round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReply {
    /// The round the client answered (the round in its state token).
    pub round: u32,
    /// A digest of the answers it sent: only an exact retry is answered.
    pub answers: String,
    /// The round's outcome and notifications, as the wire adapters read them.
    pub reply: serde_json::Value,
}

impl StoredCall {
    /// The tombstone this finished call leaves (see [`StoredCall::tomb`]):
    /// its end (the last mark of its trail, the reply an exact retry
    /// gets), nothing of its answers or effects.
    pub fn tombstone(&self) -> StoredCall {
        let last = self
            .journal
            .trail
            .as_ref()
            .and_then(|t| t.marks.last().cloned());
        let mut journal = Journal {
            round: self.journal.round,
            ..Journal::new()
        };
        if let Some(mark) = last {
            journal
                .trail
                .get_or_insert_with(Default::default)
                .marks
                .push(mark);
        }
        StoredCall {
            version: self.version,
            status: self.status,
            tomb: true,
            claimed_at_ms: 0,
            journal,
            last_reply: self.last_reply.clone(),
            updated_ms: self.updated_ms,
        }
    }

    /// The tool it runs (`""`: none recorded).
    pub fn tool(&self) -> &str {
        self.journal
            .invocation
            .as_ref()
            .map_or("", |i| i.tool.as_str())
    }

    /// Who started it (`""`: nobody named, an open server).
    pub fn principal(&self) -> &str {
        self.journal.trail.as_ref().map_or("", |t| t.owner.as_str())
    }

    /// Finished and still whole: what retention makes a tombstone.
    pub fn retained(&self) -> bool {
        self.status.is_final() && !self.tomb
    }

    /// The call as an operator's listing shows it (admin id `d.<id>`).
    pub fn summary(&self, call_id: &str) -> CallSummary {
        let j = &self.journal;
        let status = self.status;
        let tool = j
            .invocation
            .as_ref()
            .map(|i| i.tool.clone())
            .unwrap_or_default();
        let mut s = summary::base(summary::durable_id(call_id), Kind::Durable, tool, status, j);
        // The row keeps its own clock: the trail's last mark is when a
        // round ended, the row's when anything (a claim, a cancel) changed.
        s.updated_ms = s.updated_ms.max(self.updated_ms);
        if s.created_ms == 0 {
            s.created_ms = self.updated_ms;
        }
        s
    }
}

/// A stored call as the columns of its row (what the Worker's SQLite
/// table holds): the one place the row format is written and read, so a
/// test can hold a row written today and read it with tomorrow's code.
/// The journal's answers, effects' outputs and arguments are not in it:
/// they are in its log ([`log`]), rows that grow with the work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRow {
    /// `version` (the round).
    pub version: i64,
    /// `status`: the call's ([`Status::as_str`]), or `purged` for a
    /// tombstone (rows written before there was one status say
    /// `awaiting_input` or `running`: see [`read_status`]).
    pub status: String,
    /// `claimed_at` (ms).
    pub claimed_at: i64,
    /// `journal`: the journal's head as JSON (see [`log`]; an earlier
    /// release wrote the whole journal here, which still reads). It
    /// carries its own format version, `v`.
    pub journal: String,
    /// `reply`: the last answered round's reply as JSON, if any.
    pub reply: Option<String>,
    /// `updated_at` (ms).
    pub updated_at: i64,
    /// `tool`: the tool it runs (`""` for a tombstone): what the shard's
    /// counts are kept by ([`crate::kept::page::Tally`]).
    #[serde(default)]
    pub tool: String,
    /// `principal`: who started it (`""`: an open server, or a
    /// tombstone): what a listing's `matched` counts by.
    #[serde(default)]
    pub principal: String,
}

impl CallRow {
    /// The row `call` is stored as, over rows that hold `base` (the
    /// journal as they hold it, and its log; `None`: unknown, or a
    /// tombstone: the log starts over), with what to append to the log
    /// and the log after.
    pub fn save(
        call: &StoredCall,
        base: Option<(&Journal, &log::Manifest)>,
    ) -> Result<(Self, log::Rows, log::Manifest), McpError> {
        // A tombstone keeps none of the call's log.
        let base = base.filter(|_| !call.tomb);
        let (rows, manifest) = log::save(&call.journal, base)?;
        let row = Self {
            version: i64::from(call.version),
            status: if call.tomb {
                TOMB
            } else {
                call.status.as_str()
            }
            .to_string(),
            claimed_at: i64::try_from(call.claimed_at_ms).unwrap_or(i64::MAX),
            journal: rows.head.clone(),
            reply: call
                .last_reply
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(row_error)?,
            updated_at: i64::try_from(call.updated_ms).unwrap_or(i64::MAX),
            tool: if call.tomb {
                String::new()
            } else {
                call.tool().to_string()
            },
            principal: if call.tomb {
                String::new()
            } else {
                call.principal().to_string()
            },
        };
        Ok((row, rows, manifest))
    }

    /// The call a row and its log's deltas (whole bodies, in order) hold.
    pub fn load(
        self,
        deltas: impl IntoIterator<Item = String>,
    ) -> Result<(StoredCall, log::Manifest), McpError> {
        let (journal, manifest) = log::load(&self.journal, deltas)?;
        Ok((self.with(journal)?, manifest))
    }

    /// How many deltas follow the row in its log.
    pub fn deltas(&self) -> Result<u32, McpError> {
        log::deltas_of(&self.journal)
    }

    /// The call as its row alone holds it: the journal's head (its
    /// tool, trail and pending questions, not its answers or effects'
    /// outputs) — what a listing shows. A journal of a newer format than
    /// this release reads is refused (it was written by a newer deploy:
    /// rolled back, this one would misread it), never guessed at.
    pub fn call(self) -> Result<StoredCall, McpError> {
        let journal = log::head_only(&self.journal)?;
        self.with(journal)
    }

    fn with(self, journal: Journal) -> Result<StoredCall, McpError> {
        let (status, tomb) = read_status(&self.status, &journal)?;
        Ok(StoredCall {
            version: u32::try_from(self.version).unwrap_or(0),
            status,
            tomb,
            claimed_at_ms: u64::try_from(self.claimed_at).unwrap_or(0),
            journal,
            last_reply: self
                .reply
                .map(|r| crate::json::from_str(&r))
                .transpose()
                .map_err(row_error)?,
            updated_ms: u64::try_from(self.updated_at).unwrap_or(0),
        })
    }
}

/// A tombstone's row status.
pub const TOMB: &str = "purged";

/// Every status word a current row holds: each status's, and a
/// tombstone's (what a sweep reads by, in the order of the index).
pub const ROW_WORDS: [&str; 7] = [
    "waiting",
    "working",
    "parked",
    "completed",
    "failed",
    "cancelled",
    TOMB,
];

/// The word a row written today holds for a call in `status` (`tomb`: a
/// tombstone's), and what a row's word (of any release) says, as that:
/// what a migration rewrites an older row's word to, so every row is
/// found by the status it is listed under.
pub fn row_word(call: &StoredCall) -> &'static str {
    if call.tomb {
        TOMB
    } else {
        call.status.as_str()
    }
}

/// A row's status word as the call's status, and whether it is a
/// tombstone. A tombstone's status is where its call ended, as its trail's
/// last mark says. Rows written before there was one status named a
/// parked call `awaiting_input` (its journal says it is parked) and a
/// failed one `completed` (its trail says it failed).
fn read_status(word: &str, j: &Journal) -> Result<(Status, bool), McpError> {
    let ended = || match summary::last_end(j) {
        Some((RoundEnd::Failed, _)) => Status::Failed,
        Some((RoundEnd::Cancelled, _)) => Status::Cancelled,
        _ => Status::Completed,
    };
    Ok(match word {
        TOMB => (ended(), true),
        "awaiting_input" => (summary::paused(j), false),
        "completed" if ended() == Status::Failed => (Status::Failed, false),
        _ => (status_word(word)?, false),
    })
}

/// A row's status word alone (a tombstone is a finished call).
pub(crate) fn status_word(word: &str) -> Result<Status, McpError> {
    if word == TOMB {
        return Ok(Status::Completed);
    }
    crate::json::from_value(serde_json::Value::String(word.to_string())).map_err(row_error)
}

fn row_error(e: serde_json::Error) -> McpError {
    McpError::internal(format!("storage: a stored call does not read: {e}"))
}

/// Storage of durable calls by call id. One object holds the calls of its
/// shard (`CALL_SHARDS`), or a single call when calls are not sharded.
pub trait CallStore {
    /// The stored call `id`, if any.
    fn load(&self, id: &str) -> Result<Option<StoredCall>, McpError>;
    /// Writes call `id` (insert or replace).
    fn save(&self, id: &str, call: &StoredCall) -> Result<(), McpError>;
    /// Call `id`'s status alone, if it is stored: what a round that
    /// awaited reads again before it stores its end, without reading (and
    /// parsing) the journal.
    fn status(&self, id: &str) -> Result<Option<Status>, McpError> {
        Ok(self.load(id)?.map(|c| c.status))
    }
    /// Marks call `id` running since `now_ms` (a round's claim): its
    /// status and times alone, nothing of its journal.
    fn claim(&self, id: &str, now_ms: u64) -> Result<(), McpError>;
    /// Forgets every call idle for `ttl_ms` at `now_ms` (no token can name
    /// it any more), and makes every finished one (completed, cancelled)
    /// that last changed `retain_ms` or more ago a tombstone
    /// ([`StoredCall::tombstone`]: kept, unlisted, until its TTL takes
    /// it); says when the next of those is due (`None`: nothing left).
    fn sweep(&self, now_ms: u64, ttl_ms: u64, retain_ms: u64) -> Result<Option<u64>, McpError>;
    /// Every call it holds, with its id (an operator's listing), but the
    /// tombstones; each as its row holds it ([`CallRow::call`]: its
    /// journal's head, not its answers or effects' outputs).
    fn list(&self) -> Result<Vec<(String, StoredCall)>, McpError>;
    /// Forgets call `id`.
    fn delete(&self, id: &str) -> Result<(), McpError>;
    // What an operator's listing reads. A Worker built without the
    // `admin` feature never asks, and links none of it: its store keeps
    // these defaults.
    /// Up to `limit` calls in `status` (never a tombstone) after `after`
    /// (their `updated`, then id: `(updated, id) > after`), changed at or
    /// before `until_ms`, oldest first: one read of the index by status,
    /// at most `limit` rows.
    fn page(
        &self,
        _status: Status,
        _after: Option<(u64, &str)>,
        _until_ms: Option<u64>,
        _limit: usize,
    ) -> Result<Vec<(String, StoredCall)>, McpError> {
        Ok(Vec::new())
    }
    /// Its calls counted per tool and status (tombstones not), as kept by
    /// each write that changes a row: no row is read.
    fn tally(&self) -> Result<Tally, McpError> {
        Ok(Tally::new())
    }
    /// How many calls in `status` changed after `since_ms` (a count of the
    /// index's entries, not of rows).
    fn newer(&self, _status: Status, _since_ms: u64) -> Result<u64, McpError> {
        Ok(0)
    }
    /// How many calls in `status` run `tool` (if given), were started by
    /// `principal` (if given) and changed at or before `until_ms` (if
    /// given): a listing's `matched` where its counts do not say it.
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

/// A `CallStore` in memory, for tests and benches: rows as the Worker's
/// SQLite holds them (a call's row and its log's deltas), with the same
/// warm copy of the calls it served last.
#[derive(Debug, Default)]
pub struct MemoryStore {
    rows: RefCell<BTreeMap<String, (CallRow, Vec<String>)>>,
    warm: warm::Warm<StoredCall>,
    writes: std::cell::Cell<u64>,
    written: std::cell::Cell<u64>,
    /// The largest row it takes, as serialized (`None`: any).
    row_limit: std::cell::Cell<Option<usize>>,
    /// The rows by (status word, updated, id): the SQLite index.
    by_status: RefCell<BTreeSet<(String, i64, String)>>,
    /// Its counts, kept by each change as the SQLite triggers keep them.
    counts: RefCell<Tally>,
    /// How many rows its pages and sweeps read.
    read: std::cell::Cell<u64>,
}

/// The largest row local workerd's SQLite takes (Cloudflare documents
/// 2 MB): a test store given it refuses what a Durable Object would.
pub const WORKERD_ROW_LIMIT: usize = 2_200_000;

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many rows were written (what SQLite storage would bill).
    pub fn writes(&self) -> u64 {
        self.writes.get()
    }

    /// How many bytes were written, in all.
    pub fn bytes_written(&self) -> u64 {
        self.written.get()
    }

    /// Refuses rows larger than `bytes` from now on, as SQLite does.
    pub fn limit_rows(&self, bytes: usize) {
        self.row_limit.set(Some(bytes));
    }

    /// Forgets its warm copies, as an evicted object does.
    pub fn evict(&self) {
        self.warm.clear();
    }

    /// The ids of the calls it holds.
    pub fn ids(&self) -> Vec<String> {
        self.rows.borrow().keys().cloned().collect()
    }

    /// How many calls it holds.
    pub fn len(&self) -> usize {
        self.rows.borrow().len()
    }

    /// It holds no call.
    pub fn is_empty(&self) -> bool {
        self.rows.borrow().is_empty()
    }

    /// How many rows its pages and sweeps have read.
    pub fn rows_read(&self) -> u64 {
        self.read.get()
    }

    /// Its calls counted afresh, row by row (what [`CallStore::tally`]
    /// must equal).
    pub fn counted(&self) -> Tally {
        let mut t = Tally::new();
        for (row, _) in self.rows.borrow().values() {
            if let Some(s) = Status::parse(&row.status) {
                t.entry(row.tool.clone()).or_default()[slot(s)] += 1;
            }
        }
        t
    }

    /// Moves a row from `old` to `new` in the index and the counts (what
    /// the SQLite index and triggers do on every write).
    fn reindex(&self, id: &str, old: Option<(&str, i64, &str)>, new: Option<(&str, i64, &str)>) {
        let mut index = self.by_status.borrow_mut();
        let mut counts = self.counts.borrow_mut();
        if let Some((word, updated, tool)) = old {
            index.remove(&(word.to_string(), updated, id.to_string()));
            if let (Some(s), Some(n)) = (Status::parse(word), counts.get_mut(tool)) {
                n[slot(s)] = n[slot(s)].saturating_sub(1);
            }
        }
        if let Some((word, updated, tool)) = new {
            index.insert((word.to_string(), updated, id.to_string()));
            if let Some(s) = Status::parse(word) {
                counts.entry(tool.to_string()).or_default()[slot(s)] += 1;
            }
        }
    }

    /// The ids of the rows of `word` changed at or before `until`, oldest
    /// first, each counted as read.
    fn due(&self, word: &str, until: i64) -> Vec<String> {
        let index = self.by_status.borrow();
        let from = (word.to_string(), i64::MIN, String::new());
        let ids: Vec<String> = index
            .range(from..)
            .take_while(|(w, u, _)| w == word && *u <= until)
            .map(|(_, _, id)| id.clone())
            .collect();
        self.read.set(self.read.get() + ids.len() as u64);
        ids
    }

    /// The oldest `updated` among the rows of `word`.
    fn oldest(&self, word: &str) -> Option<i64> {
        let index = self.by_status.borrow();
        let from = (word.to_string(), i64::MIN, String::new());
        let first = index.range(from..).next().filter(|(w, _, _)| w == word);
        first.map(|(_, u, _)| *u)
    }

    fn wrote(&self, rows: u64, bytes: usize) {
        self.writes.set(self.writes.get() + rows);
        self.written.set(self.written.get() + bytes as u64);
    }

    fn fits(&self, size: usize) -> Result<(), McpError> {
        match self.row_limit.get() {
            Some(limit) if size > limit => Err(McpError::internal(format!(
                "durable storage failed: string or blob too big: SQLITE_TOOBIG ({size} bytes)"
            ))),
            _ => Ok(()),
        }
    }

    fn write(&self, id: &str, call: &StoredCall) -> Result<(), McpError> {
        let (row, log_rows, manifest) = self.warm.with(id, |held| {
            CallRow::save(call, held.map(|(c, m)| (&c.journal, m)))
        })?;
        let reply = row.reply.as_ref().map_or(0, String::len);
        self.fits(row.journal.len() + reply)?;
        let chunks = log_rows
            .delta
            .as_deref()
            .map(log::chunks)
            .unwrap_or_default();
        for c in &chunks {
            self.fits(c.len())?;
        }
        let mut rows = self.rows.borrow_mut();
        let old = rows
            .get(id)
            .map(|(r, _)| (r.status.clone(), r.updated_at, r.tool.clone()));
        let new = (row.status.clone(), row.updated_at, row.tool.clone());
        let entry = rows
            .entry(id.to_string())
            .or_insert_with(|| (row.clone(), Vec::new()));
        // Rows deleted are rows written (what SQLite counts).
        let deleted = if log_rows.reset { entry.1.len() } else { 0 };
        self.wrote(
            1 + (chunks.len() + deleted) as u64,
            row.journal.len() + reply + log_rows.delta.as_ref().map_or(0, String::len),
        );
        entry.0 = row;
        if log_rows.reset {
            entry.1.clear();
        }
        entry.1.extend(log_rows.delta);
        drop(rows);
        self.reindex(
            id,
            old.as_ref().map(|(w, u, t)| (w.as_str(), *u, t.as_str())),
            Some((&new.0, new.1, &new.2)),
        );
        self.warm.put(id, manifest, call.clone());
        Ok(())
    }
}

impl CallStore for MemoryStore {
    fn load(&self, id: &str) -> Result<Option<StoredCall>, McpError> {
        if let Some((call, _)) = self.warm.get(id) {
            return Ok(Some(call));
        }
        let Some((row, log)) = self.rows.borrow().get(id).cloned() else {
            return Ok(None);
        };
        let (call, manifest) = row.load(log)?;
        self.warm.put(id, manifest, call.clone());
        Ok(Some(call))
    }

    fn status(&self, id: &str) -> Result<Option<Status>, McpError> {
        let rows = self.rows.borrow();
        let Some((row, _)) = rows.get(id) else {
            return Ok(None);
        };
        status_word(&row.status).map(Some)
    }

    fn save(&self, id: &str, call: &StoredCall) -> Result<(), McpError> {
        self.write(id, call).inspect_err(|_| self.warm.forget(id))
    }

    fn claim(&self, id: &str, now_ms: u64) -> Result<(), McpError> {
        let mut rows = self.rows.borrow_mut();
        let Some((row, _)) = rows.get_mut(id) else {
            return Ok(());
        };
        let old = (row.status.clone(), row.updated_at, row.tool.clone());
        row.status = Status::Working.as_str().into();
        row.claimed_at = i64::try_from(now_ms).unwrap_or(i64::MAX);
        row.updated_at = row.claimed_at;
        let updated = row.updated_at;
        drop(rows);
        self.reindex(
            id,
            Some((&old.0, old.1, &old.2)),
            Some((Status::Working.as_str(), updated, &old.2)),
        );
        self.wrote(1, 32);
        self.warm.touch(id, |c| {
            c.status = Status::Working;
            c.claimed_at_ms = now_ms;
            c.updated_ms = now_ms;
        });
        Ok(())
    }

    fn sweep(&self, now_ms: u64, ttl_ms: u64, retain_ms: u64) -> Result<Option<u64>, McpError> {
        // Through the index, as the SQLite sweep: only the rows due are
        // read.
        let cutoff = |ms: u64| i64::try_from(now_ms.saturating_sub(ms)).unwrap_or(i64::MAX);
        for word in ROW_WORDS {
            for id in self.due(word, cutoff(ttl_ms)) {
                self.delete(&id)?;
            }
        }
        for s in [Status::Completed, Status::Failed, Status::Cancelled] {
            for id in self.due(s.as_str(), cutoff(retain_ms)) {
                let row = self.rows.borrow().get(&id).map(|(r, _)| r.clone());
                if let Some(row) = row {
                    self.save(&id, &row.call()?.tombstone())?;
                }
            }
        }
        Ok(self.next_due(ttl_ms, retain_ms))
    }

    fn list(&self) -> Result<Vec<(String, StoredCall)>, McpError> {
        self.rows
            .borrow()
            .iter()
            .filter(|(_, (row, _))| row.status != TOMB)
            .map(|(k, (row, _))| Ok((k.clone(), row.clone().call()?)))
            .collect()
    }

    fn delete(&self, id: &str) -> Result<(), McpError> {
        self.warm.forget(id);
        let gone = self.rows.borrow_mut().remove(id);
        if let Some((row, log)) = gone {
            self.wrote(1 + log.len() as u64, 0);
            self.reindex(id, Some((&row.status, row.updated_at, &row.tool)), None);
        }
        Ok(())
    }

    fn page(
        &self,
        status: Status,
        after: Option<(u64, &str)>,
        until_ms: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(String, StoredCall)>, McpError> {
        let word = status.as_str().to_string();
        let (u, id) = after.map_or((i64::MIN, ""), |(u, id)| {
            (i64::try_from(u).unwrap_or(i64::MAX), id)
        });
        let until = until_ms.map_or(i64::MAX, |m| i64::try_from(m).unwrap_or(i64::MAX));
        let keys: Vec<String> = {
            let index = self.by_status.borrow();
            let from = (word.clone(), u, id.to_string());
            index
                .range((std::ops::Bound::Excluded(from), std::ops::Bound::Unbounded))
                .take_while(|(w, u, _)| *w == word && *u <= until)
                .take(limit)
                .map(|(_, _, id)| id.clone())
                .collect()
        };
        self.read.set(self.read.get() + keys.len() as u64);
        let rows = self.rows.borrow();
        keys.into_iter()
            .filter_map(|id| rows.get(&id).map(|(r, _)| (id, r.clone())))
            .map(|(id, r)| Ok((id, r.call()?)))
            .collect()
    }

    fn tally(&self) -> Result<Tally, McpError> {
        // A tool none of whose calls is left is not counted (as SQLite's).
        let counts = self.counts.borrow();
        Ok((counts.iter())
            .filter(|(_, n)| n.iter().any(|x| *x > 0))
            .map(|(t, n)| (t.clone(), *n))
            .collect())
    }

    fn newer(&self, status: Status, since_ms: u64) -> Result<u64, McpError> {
        let since = i64::try_from(since_ms).unwrap_or(i64::MAX);
        let word = status.as_str().to_string();
        let index = self.by_status.borrow();
        let from = (word.clone(), since, String::from("\u{10FFFF}"));
        Ok(index
            .range(from..)
            .take_while(|(w, _, _)| *w == word)
            .filter(|(_, u, _)| *u > since)
            .count() as u64)
    }

    fn matched(
        &self,
        status: Status,
        tool: Option<&str>,
        principal: Option<&str>,
        until_ms: Option<u64>,
    ) -> Result<u64, McpError> {
        let until = until_ms.map_or(i64::MAX, |m| i64::try_from(m).unwrap_or(i64::MAX));
        Ok((self.rows.borrow().values())
            .filter(|(r, _)| {
                r.status == status.as_str()
                    && tool.is_none_or(|t| r.tool == t)
                    && principal.is_none_or(|p| r.principal == p)
                    && r.updated_at <= until
            })
            .count() as u64)
    }
}

impl MemoryStore {
    /// When the next row is due to go (a finished call's retention, any
    /// other's TTL), from the oldest of each status: no row is read.
    fn next_due(&self, ttl_ms: u64, retain_ms: u64) -> Option<u64> {
        ROW_WORDS
            .iter()
            .filter_map(|w| {
                let oldest = u64::try_from(self.oldest(w)?).unwrap_or(0);
                let finished = Status::parse(w).is_some_and(Status::is_final);
                Some(oldest.saturating_add(if finished { retain_ms } else { ttl_ms }))
            })
            .min()
    }
}
