//! A listing that costs a page (see [`crate::kept::page`]): what a keeper
//! answers for one page ([`shard`], [`index`]: its rows after the cursor,
//! at most `limit` per status, and its counts), the cursor, and the
//! listing's counts summed from the keepers' (each exact, kept by the
//! writes themselves).
//!
//! The cursor is the key the last page ended at (`updated`, admin id):
//! every row at or before it, in every keeper, was shown or filtered out,
//! so it is each keeper's position at once, and a keeper added or gone
//! between pages changes nothing of it. Base64url of `[1, updated, id]`
//! (`1`: its format): opaque to the client.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

use super::super::Stores;
use crate::admin::model::AGE_BUCKETS;
use crate::admin::summary::DURABLE_PREFIX;
use crate::admin::{CallSummary, Counts, Filter, Kind, Listing, Status};
use crate::error::McpError;
use crate::kept::page::{self, Key, Part, Tally};

/// The cursor that resumes after `at`.
pub(super) fn encode(at: &Key) -> String {
    URL_SAFE_NO_PAD.encode(json!([1, at.updated_ms, at.id]).to_string())
}

/// The key a cursor resumes after; `Err` says it is not one this server
/// gave.
pub(super) fn decode(cursor: &str) -> Result<Key, String> {
    let bad = || "cursor is not one this server gave (start again without it)".to_string();
    let bytes = URL_SAFE_NO_PAD.decode(cursor.trim()).map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    match v.as_array().map(Vec::as_slice) {
        Some([format, updated, id]) if format == 1 => Ok(Key {
            updated_ms: updated.as_u64().ok_or_else(bad)?,
            id: id.as_str().ok_or_else(bad)?.to_string(),
        }),
        _ => Err(bad()),
    }
}

/// What a keeper is asked for a page.
pub(super) struct Asked {
    statuses: Vec<Status>,
    after: Option<Key>,
    until_ms: Option<u64>,
    limit: usize,
    filter: Filter,
}

impl Asked {
    /// What [`ask`] wrote, and `until_ms` (`olderThan`, on the job's
    /// clock); what does not read asks for the counts alone.
    pub(super) fn read(page: Option<&Value>, until_ms: Option<u64>) -> Self {
        let page = page.unwrap_or(&Value::Null);
        let mut filter: Filter =
            crate::json::from_value(page["filter"].clone()).unwrap_or_default();
        // The job turned it into `until_ms` (one clock for every keeper).
        filter.older_than_ms = None;
        let after = match page["after"].as_array().map(Vec::as_slice) {
            Some([u, id]) => u.as_u64().zip(id.as_str()).map(|(updated_ms, id)| Key {
                updated_ms,
                id: id.to_string(),
            }),
            _ => None,
        };
        Self {
            statuses: page::statuses(&filter.status),
            after,
            until_ms,
            limit: page["limit"].as_u64().map_or(0, |n| n as usize),
            filter,
        }
    }
}

/// A page's ask of a keeper: what passes `filter` after `after`, at most
/// `limit` rows (0: its counts alone).
pub(super) fn ask(filter: &Filter, after: Option<&Key>, limit: usize) -> Value {
    json!({
        "filter": filter,
        "after": after.map(|k| json!([k.updated_ms, k.id])),
        "limit": limit,
    })
}

/// The key `after` as a keeper whose rows' ids are its admin ids without
/// `prefix` compares them: `(updated, id) > bound` holds for exactly the
/// rows whose admin key is after `after`.
fn bound(after: &Key, prefix: &str) -> (u64, String) {
    match after.id.strip_prefix(prefix) {
        Some(rest) => (after.updated_ms, rest.to_string()),
        // Before every id of this keeper: each row changed then is after.
        None if after.id.as_str() < prefix => (after.updated_ms, String::new()),
        // After every id of this keeper: no row changed then is.
        None => (after.updated_ms.saturating_add(1), String::new()),
    }
}

/// How many paused calls (waiting, parked) changed within each of the
/// younger age buckets (`<1m`, `<1h`, `<1d`), counted on the index.
fn newer(
    now_ms: u64,
    count: impl Fn(Status, u64) -> Result<u64, McpError>,
) -> Result<[u64; 3], McpError> {
    let mut out = [0; 3];
    for (slot, (_, max)) in out.iter_mut().zip(AGE_BUCKETS) {
        for s in [Status::Waiting, Status::Parked] {
            *slot += count(s, now_ms.saturating_sub(max))?;
        }
    }
    Ok(out)
}

/// How many of a keeper's calls pass the filter, counted on its rows
/// where its counts by tool and status do not say (a principal, or an
/// age: `olderThan`); `None`: they say.
fn counted(
    a: &Asked,
    count: impl Fn(Status, Option<&str>, Option<&str>, Option<u64>) -> Result<u64, McpError>,
) -> Result<Option<u64>, McpError> {
    if a.filter.principal.is_none() && a.until_ms.is_none() {
        return Ok(None);
    }
    let (tool, principal) = (a.filter.tool.as_deref(), a.filter.principal.as_deref());
    let mut n = 0;
    for &s in &a.statuses {
        n += count(s, tool, principal, a.until_ms)?;
    }
    Ok(Some(n))
}

fn answer(part: Part, tally: &Tally, newer: [u64; 3], counted: Option<u64>) -> Value {
    json!({
        "rows": part.rows,
        "at": part.at.map(|k| json!([k.updated_ms, k.id])),
        "tally": tally,
        "newer": newer,
        "matched": counted,
    })
}

/// A call shard's page: its durable calls after the cursor, and its
/// counts.
pub(super) fn shard(stores: &Stores<'_>, a: &Asked, now_ms: u64) -> Result<Value, McpError> {
    let fetch = |s, after: Option<&Key>, n| {
        let after = after.map(|k| bound(k, DURABLE_PREFIX));
        let rows = (stores.call).page(
            s,
            after.as_ref().map(|(u, id)| (*u, id.as_str())),
            a.until_ms,
            n,
        )?;
        Ok(rows
            .iter()
            .map(|(id, c)| {
                // Listed by the row's own clock, the one its index
                // orders by.
                let mut s = c.summary(id);
                s.updated_ms = c.updated_ms;
                s
            })
            .collect())
    };
    keeper(
        a,
        now_ms,
        stores.call.tally()?,
        fetch,
        |s, since| stores.call.newer(s, since),
        |s, t, p, u| stores.call.matched(s, t, p, u),
    )
}

/// An index shard's page of the tasks it holds, and their counts.
pub(super) fn index(stores: &Stores<'_>, a: &Asked, now_ms: u64) -> Result<Value, McpError> {
    let fetch = |s, after: Option<&Key>, n| {
        let after = after.map(|k| (k.updated_ms, k.id.as_str()));
        let rows = stores.index.page(s, after, a.until_ms, n)?;
        Ok(rows.into_iter().filter_map(|e| e.summary).collect())
    };
    keeper(
        a,
        now_ms,
        stores.index.tally()?,
        fetch,
        |s, since| stores.index.newer(s, since),
        |s, t, p, u| stores.index.matched(s, t, p, u),
    )
}

/// A keeper's answer (a call shard's, an index shard's): its page after
/// the cursor through `fetch`, its counts, its paused calls by age and,
/// for a filter its counts cannot say, how many match.
fn keeper(
    a: &Asked,
    now_ms: u64,
    tally: Tally,
    fetch: impl FnMut(Status, Option<&Key>, usize) -> Result<Vec<CallSummary>, McpError>,
    newer_of: impl Fn(Status, u64) -> Result<u64, McpError>,
    matched_of: impl Fn(Status, Option<&str>, Option<&str>, Option<u64>) -> Result<u64, McpError>,
) -> Result<Value, McpError> {
    // Nothing counted: nothing listed either (a keeper holding no call,
    // or tombstones alone; most index shards hold few tasks, or none).
    if tally.is_empty() {
        return Ok(answer(Part::default(), &tally, [0; 3], Some(0)));
    }
    let part = if a.limit == 0 {
        Part::default()
    } else {
        let admits = |c: &CallSummary| a.filter.admits(c, now_ms);
        page::read(&a.statuses, a.after.as_ref(), a.limit, admits, fetch)?
    };
    let newer = newer(now_ms, newer_of)?;
    let counted = counted(a, matched_of)?;
    Ok(answer(part, &tally, newer, counted))
}

/// An API listing's pages and counts, as the keepers answer.
#[derive(Default)]
pub(super) struct Pages {
    parts: Vec<Part>,
    tally: Tally,
    newer: [u64; 3],
    matched: usize,
}

impl Pages {
    /// Adds a keeper's answer (`kind`: what it keeps; a kind `filter`
    /// leaves out adds its counts alone).
    pub(super) fn add(&mut self, v: &mut Value, kind: Kind, filter: &Filter) {
        let (part, tally, newer, counted) = part_of(v);
        if filter.kind.is_none_or(|k| k == kind) {
            self.matched += matched(&tally, counted, filter);
        }
        page::add(&mut self.tally, &tally);
        for (a, b) in self.newer.iter_mut().zip(newer) {
            *a += b;
        }
        self.parts.push(part);
    }

    /// The listing: the keepers' parts and `calls` (the live sessions',
    /// each session listed whole) merged into one page of at most `limit`
    /// after `cursor`, and the counts of them all.
    pub(super) fn listing(
        mut self,
        calls: Vec<CallSummary>,
        (filter, limit, cursor): (&Filter, usize, Option<&Key>),
        now_ms: u64,
    ) -> Listing {
        page::add(&mut self.tally, &page::tally(&calls));
        for (a, b) in self.newer.iter_mut().zip(newer_of(&calls, now_ms)) {
            *a += b;
        }
        let admitted: Vec<CallSummary> = (calls.into_iter())
            .filter(|c| filter.admits(c, now_ms))
            .collect();
        self.matched += admitted.len();
        let rows = (admitted.into_iter())
            .filter(|c| cursor.is_none_or(|k| Key::of(c) > *k))
            .collect();
        self.parts.push(Part { rows, at: None });
        let page = page::merge(self.parts, limit);
        Listing {
            calls: page.rows,
            matched: self.matched,
            counts: counts(&self.tally, self.newer),
            next_cursor: page.at.as_ref().map(encode),
            now_ms,
            paused_tools: Vec::new(),
        }
    }
}

/// A keeper's answer to a page, read back: its part, its counts, its
/// paused calls changed within each younger age, and how many of its
/// calls pass the filter when its counts do not say.
fn part_of(v: &mut Value) -> (Part, Tally, [u64; 3], Option<u64>) {
    let rows: Vec<CallSummary> = crate::json::from_value(v["rows"].take()).unwrap_or_default();
    let at = v["at"].as_array().and_then(|a| match a.as_slice() {
        [u, id] => Some(Key {
            updated_ms: u.as_u64()?,
            id: id.as_str()?.to_string(),
        }),
        _ => None,
    });
    let tally: Tally = crate::json::from_value(v["tally"].take()).unwrap_or_default();
    let newer: [u64; 3] = crate::json::from_value(v["newer"].take()).unwrap_or_default();
    let counted = v["matched"].as_u64();
    (Part { rows, at }, tally, newer, counted)
}

/// How many of a keeper's calls pass `filter`: as it counted them
/// (`counted`), or from its counts by status and tool.
fn matched(tally: &Tally, counted: Option<u64>, filter: &Filter) -> usize {
    if let Some(n) = counted {
        return n as usize;
    }
    let statuses = page::statuses(&filter.status);
    tally
        .iter()
        .filter(|(tool, _)| filter.tool.as_ref().is_none_or(|t| t == *tool))
        .map(|(_, n)| statuses.iter().map(|s| n[page::slot(*s)]).sum::<u64>())
        .sum::<u64>() as usize
}

/// A listing's counts from the keepers' summed counts and paused calls
/// changed within each younger age bucket.
fn counts(tally: &Tally, newer: [u64; 3]) -> Counts {
    let mut c = Counts::default();
    let mut paused = 0;
    for s in Status::ALL {
        let n: u64 = tally.values().map(|n| n[page::slot(s)]).sum();
        c.by_status.insert(s.as_str().to_string(), n as usize);
        c.total += n as usize;
        if matches!(s, Status::Waiting | Status::Parked) {
            paused += n;
        }
    }
    for (tool, n) in tally {
        let all: u64 = n.iter().sum();
        if all > 0 {
            c.by_tool.insert(tool.clone(), all as usize);
        }
    }
    let mut younger = 0;
    for (i, (bucket, _)) in AGE_BUCKETS.iter().enumerate() {
        let within = newer.get(i).copied().unwrap_or(paused).min(paused);
        c.paused_by_age.insert(
            (*bucket).to_string(),
            within.saturating_sub(younger) as usize,
        );
        younger = younger.max(within);
    }
    c
}

/// How many of `calls` (all a keeper holds, listed whole: a session's)
/// changed within each younger age bucket while paused.
fn newer_of(calls: &[CallSummary], now_ms: u64) -> [u64; 3] {
    let mut out = [0; 3];
    for c in calls {
        if !matches!(c.status, Status::Waiting | Status::Parked) {
            continue;
        }
        for (slot, (_, max)) in out.iter_mut().zip(AGE_BUCKETS) {
            if c.updated_ms > now_ms.saturating_sub(max) {
                *slot += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_and_a_forged_one_is_refused() {
        let k = Key {
            updated_ms: 42,
            id: "d.s1-ab".into(),
        };
        assert_eq!(decode(&encode(&k)), Ok(k));
        for bad in ["", "50", "!!", &URL_SAFE_NO_PAD.encode("[2,1,\"x\"]")] {
            assert!(decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_key_from_another_keeper_bounds_this_one_by_its_time() {
        let k = |id: &str| Key {
            updated_ms: 5,
            id: id.into(),
        };
        assert_eq!(bound(&k("d.s1-ab"), "d."), (5, "s1-ab".into()));
        assert_eq!(bound(&k("a.x"), "d."), (5, String::new()));
        assert_eq!(bound(&k("t.x"), "d."), (6, String::new()));
    }

    #[test]
    fn counts_sum_the_tallies_and_bucket_the_paused_by_age() {
        let mut t = Tally::new();
        t.insert("a".into(), [3, 1, 1, 2, 0, 0]);
        t.insert("b".into(), [0, 0, 0, 0, 0, 0]);
        let c = counts(&t, [1, 2, 2]);
        assert_eq!(c.total, 7);
        assert_eq!(c.by_status["waiting"], 3);
        assert_eq!(c.by_tool.len(), 1);
        let ages: Vec<usize> = AGE_BUCKETS
            .iter()
            .map(|(b, _)| c.paused_by_age[*b])
            .collect();
        assert_eq!(ages, [1, 1, 0, 2]);
    }
}
