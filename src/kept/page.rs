//! A listing that costs a page: every keeper (a call shard, the index of
//! tasks) stores its rows in the order an operator reads them — by status,
//! then oldest change first (`updated`, then id) — so a page reads at most
//! its `limit` rows per status from each, from where the last page ended
//! ([`Key`]). Parts read in that order are merged by [`merge`] into one
//! page and the key it ends at: every row at or before it was shown or
//! filtered out, in every part, so each part resumes after it. Each keeper
//! also keeps its calls counted per tool and status ([`Tally`]), updated
//! by the write that changes a row, so a listing's counts read no row.
//! Sans-IO: the stores read the rows, the admin job asks the keepers.

use std::collections::BTreeMap;

use super::{CallSummary, Status};

/// A row's place in a listing: when it last changed, then its admin id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    /// Its `updated` (ms since the epoch).
    pub updated_ms: u64,
    /// Its admin id (`d.<call id>`, `t.<h>`, `s.<h>.<stream>`).
    pub id: String,
}

impl Key {
    /// The key of a listed call.
    pub fn of(c: &CallSummary) -> Self {
        Self {
            updated_ms: c.updated_ms,
            id: c.id.clone(),
        }
    }
}

/// What one keeper (or one status of it) gave: rows in order, and, when it
/// may hold more, the key it read up to (`at`: rows after it were not
/// read).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Part {
    /// The rows, in order.
    pub rows: Vec<CallSummary>,
    /// `None`: it holds nothing after its rows; `Some(k)`: rows after `k`
    /// were not read.
    pub at: Option<Key>,
}

/// Merges parts into at most `limit` rows and the key the page ends at
/// (`None`: nothing is left in any part). A part that may hold more bounds
/// the page: no row after its `at` is given, since it may hold rows
/// before them (the page may then be short, its key still says where to
/// go on).
pub fn merge(parts: Vec<Part>, limit: usize) -> Part {
    let frontier = parts.iter().filter_map(|p| p.at.clone()).min();
    let mut rows: Vec<CallSummary> = parts
        .into_iter()
        .flat_map(|p| p.rows)
        .filter(|r| frontier.as_ref().is_none_or(|f| Key::of(r) <= *f))
        .collect();
    rows.sort_unstable_by(|a, b| (a.updated_ms, &a.id).cmp(&(b.updated_ms, &b.id)));
    if rows.len() > limit {
        rows.truncate(limit);
        let at = rows.last().map(Key::of);
        return Part { rows, at };
    }
    Part { rows, at: frontier }
}

/// The statuses a listing reads, in a fixed order (every one when none is
/// asked for).
pub fn statuses(asked: &[Status]) -> Vec<Status> {
    Status::ALL
        .into_iter()
        .filter(|s| asked.is_empty() || asked.contains(s))
        .collect()
}

/// How many rows a keeper reads for one page before it answers with what
/// it has (a filter on a tool or a principal may pass few of them).
pub const SCAN_BUDGET: usize = 500;

/// One keeper's page: for each status, rows after `after` (and changed at
/// or before `until_ms`) read through `fetch(status, after, n)` in batches
/// of `limit`, kept when `admits` passes them, until `limit` pass or
/// [`SCAN_BUDGET`] rows were read; merged.
pub fn read<E>(
    statuses: &[Status],
    after: Option<&Key>,
    limit: usize,
    admits: impl Fn(&CallSummary) -> bool,
    mut fetch: impl FnMut(Status, Option<&Key>, usize) -> Result<Vec<CallSummary>, E>,
) -> Result<Part, E> {
    let limit = limit.max(1);
    let budget = SCAN_BUDGET.max(limit);
    let mut parts = Vec::with_capacity(statuses.len());
    for &status in statuses {
        let mut part = Part::default();
        let mut from = after.cloned();
        let mut read = 0;
        loop {
            let batch = fetch(status, from.as_ref(), limit)?;
            read += batch.len();
            let full = batch.len() >= limit;
            from = batch.last().map(Key::of).or(from);
            part.rows.extend(batch.into_iter().filter(|r| admits(r)));
            if part.rows.len() >= limit {
                part.rows.truncate(limit);
                part.at = part.rows.last().map(Key::of);
                break;
            }
            if !full {
                break;
            }
            if read >= budget {
                part.at = from;
                break;
            }
        }
        parts.push(part);
    }
    Ok(merge(parts, limit))
}

/// A keeper's calls counted per tool, per status ([`Status::ALL`]'s
/// order): what it updates with each write that changes a row's status,
/// so a listing's counts read no row.
pub type Tally = BTreeMap<String, [u64; 6]>;

/// The place of `s` in a [`Tally`]'s counts.
pub fn slot(s: Status) -> usize {
    Status::ALL.iter().position(|x| *x == s).unwrap_or(0)
}

/// Adds `more` into `into`.
pub fn add(into: &mut Tally, more: &Tally) {
    for (tool, n) in more {
        let e = into.entry(tool.clone()).or_default();
        for (a, b) in e.iter_mut().zip(n) {
            *a += b;
        }
    }
}

/// `calls` counted as a [`Tally`] (what a keeper without stored counts,
/// a session, gives).
pub fn tally<'a>(calls: impl IntoIterator<Item = &'a CallSummary>) -> Tally {
    let mut t = Tally::new();
    for c in calls {
        t.entry(c.tool.clone()).or_default()[slot(c.status)] += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::Kind;

    fn row(id: &str, updated_ms: u64, status: Status) -> CallSummary {
        CallSummary {
            id: id.into(),
            kind: Kind::Durable,
            tool: "t".into(),
            status,
            principal: String::new(),
            created_ms: 0,
            updated_ms,
            round: 0,
            waiting_on: Vec::new(),
            note: None,
            code: String::new(),
            version: String::new(),
        }
    }

    #[test]
    fn a_part_that_may_hold_more_bounds_the_page() {
        let a = Part {
            rows: vec![row("a1", 1, Status::Waiting), row("a2", 5, Status::Waiting)],
            at: Some(Key::of(&row("a2", 5, Status::Waiting))),
        };
        let b = Part {
            rows: vec![row("b1", 2, Status::Waiting), row("b2", 9, Status::Waiting)],
            at: None,
        };
        let page = merge(vec![a, b], 10);
        let ids: Vec<&str> = page.rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["a1", "b1", "a2"]);
        assert_eq!(page.at.map(|k| k.id), Some("a2".into()));
    }

    #[test]
    fn reading_by_status_in_batches_gives_each_row_once_in_order() {
        let mut all: Vec<CallSummary> = (0..57)
            .map(|i| {
                let s = Status::ALL[i % 3];
                row(&format!("d.{i:03}"), (i as u64 * 7) % 20, s)
            })
            .collect();
        all.sort_by(|a, b| (a.updated_ms, &a.id).cmp(&(b.updated_ms, &b.id)));
        let fetch = |s: Status, after: Option<&Key>, n: usize| {
            Ok::<_, ()>(
                all.iter()
                    .filter(|r| r.status == s && after.is_none_or(|k| Key::of(r) > *k))
                    .take(n)
                    .cloned()
                    .collect::<Vec<_>>(),
            )
        };
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let page = read(&statuses(&[]), after.as_ref(), 5, |_| true, fetch).expect("in memory");
            seen.extend(page.rows);
            match page.at {
                Some(k) => after = Some(k),
                None => break,
            }
        }
        assert_eq!(seen, all);
    }
}
