//! A kept journal as rows that grow with the work, not with its square.
//!
//! A journal kept whole in one row was rewritten (and read back, and
//! parsed) on every round: a call of `n` rounds wrote `n²/2` answers, and
//! died when the row passed SQLite's 2 MB. Here a journal is stored as a
//! small *head* (what changes every round: the round, what is pending,
//! the trail's marks, the code versions) and a *log*: each save appends
//! one delta holding only what the round added or removed — answers,
//! `once` outputs and their inputs, the trail's answer and effect times,
//! the arguments — split into rows of at most [`CHUNK_BYTES`]. Loading
//! replays the deltas in order.
//!
//! What a save compares against is the journal its rows hold, as the
//! keeper's object last wrote or read it, held parsed in a [`Warm`](super::warm::Warm) cache
//! (with the log's [`Manifest`]): a warm round neither reads nor parses
//! what earlier rounds stored, and the comparison walks keys and compares
//! shared values by address, never by content. Without it (a cold
//! object, or after a failed write) a save starts the log over.
//!
//! This module is sans-IO: the stores (`MemoryStore`, and the Worker's
//! SQLite stores) write the [`Rows`] it describes.

use std::rc::Rc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::{Answer, Invocation, Journal, Trail};
use crate::error::McpError;
use crate::vec_map::VecMap;

/// The most a log row holds (SQLite refuses a row over 2 MB; a body is
/// split on a character boundary into rows of at most this).
pub const CHUNK_BYTES: usize = 1_000_000;

/// The most a kept call's log may hold: past it, the round that would
/// grow it fails the call (once, with an error line), and nothing the
/// call stored runs again. A Durable Object has 128 MB of memory, and a
/// call's journal is held in it parsed.
pub const CALL_CAP_BYTES: u64 = 64 * 1024 * 1024;

thread_local! {
    /// The cap this isolate's server was configured with (`MAX_CALL_BYTES`,
    /// [`CALL_CAP_BYTES`] by default). Kept here, where every keeper's
    /// store writes through [`save`], rather than passed through each
    /// store's API: an isolate serves one configuration.
    static CAP: std::cell::Cell<u64> = const { std::cell::Cell::new(CALL_CAP_BYTES) };
}

/// Sets the cap a kept call may hold in this isolate (see [`CALL_CAP_BYTES`]).
pub fn set_call_cap(bytes: u64) {
    CAP.with(|c| c.set(bytes));
}

/// The cap a kept call may hold in this isolate.
pub fn call_cap() -> u64 {
    CAP.with(std::cell::Cell::get)
}

/// What a journal's log holds: how many deltas, how many bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifest {
    /// How many deltas the log holds.
    pub deltas: u32,
    /// How many bytes they hold.
    pub bytes: u64,
    /// The rows are not a log (a journal stored whole by an earlier
    /// release): the next save starts one.
    stale: bool,
}

/// What one save writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// The head, whole (it replaces the last one).
    pub head: String,
    /// Forget the log first: this save writes it all again.
    pub reset: bool,
    /// The delta to append as number `Manifest::deltas - 1` (`None`:
    /// nothing was added or removed). Split it with [`chunks`].
    pub delta: Option<String>,
}

/// The head as stored is the journal's own JSON (without what the log
/// holds, or whole while it is small) with two more fields first: `log`,
/// how many deltas follow it, and `bytes`, theirs. A journal reads it as
/// itself (it ignores fields it does not know), so a record that holds a
/// journal reads whole as it always did; a journal stored whole by an
/// earlier release has no `log`. (No wrapper struct and no untagged enum:
/// each would build another deserializer of the journal's whole type tree
/// into the wasm.)
fn head_json(journal: &Journal, log: u32, bytes: u64) -> Result<String, McpError> {
    let json = serde_json::to_string(journal).map_err(store_error)?;
    let rest = json.strip_prefix('{').unwrap_or("}");
    let sep = if rest == "}" { "" } else { "," };
    Ok(format!("{{\"log\":{log},\"bytes\":{bytes}{sep}{rest}"))
}

/// The format (`v`) a head with a log is written with. A release from
/// before logs would read it as a whole journal missing its answers and
/// outputs — and replay effects — so it is written as a format those
/// releases refuse (a rollback then gets an error, never a misread); a
/// small journal, whole in its head, keeps the format they read.
pub const LOGGED_V: u32 = 2;

/// The journal a head holds, its format restored (see [`LOGGED_V`]), and
/// checked as any stored journal is.
fn readable_head(mut j: Journal, logged: bool) -> Result<Journal, McpError> {
    if logged && j.v == LOGGED_V {
        j.v = crate::engine::JOURNAL_VERSION;
    }
    j.readable()?;
    Ok(j)
}

/// A head's `log` and `bytes`, if it has them.
struct Probe {
    log: Option<u32>,
    bytes: u64,
}

impl Probe {
    /// Read by hand from the head's tree: a derived reader would be one
    /// more struct reader in every worker's wasm for two numbers.
    fn of(head: &Value) -> Result<Self, McpError> {
        let number = |key: &str| match head.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                McpError::internal(format!("storage: a kept journal's `{key}` is not a count"))
            }),
        };
        let log =
            match number("log")? {
                Some(n) => Some(u32::try_from(n).map_err(|_| {
                    McpError::internal("storage: a kept journal's `log` is too large")
                })?),
                None => None,
            };
        Ok(Self {
            log,
            bytes: number("bytes")?.unwrap_or(0),
        })
    }
}

/// A head, or a journal stored whole by an earlier release.
fn read_head(head: &str) -> Result<(Journal, Option<(u32, u64)>), McpError> {
    // The text read once; the probe and the journal each from its tree.
    let v: Value = serde_json::from_str(head).map_err(read_error)?;
    let probe = Probe::of(&v)?;
    let j: Journal = crate::json::from_value(v).map_err(read_error)?;
    let j = readable_head(j, probe.log.is_some_and(|n| n > 0))?;
    Ok((j, probe.log.map(|n| (n, probe.bytes))))
}

/// One delta as written: references into the journal, nothing copied.
/// Each map's entries are in key order already (they come from the
/// journal's maps): written as a JSON object as they are, never gathered
/// into a sorted map first.
#[derive(Serialize, Default)]
struct DeltaOut<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "as_map")]
    a: Vec<(&'a str, &'a Answer)>,
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "as_map")]
    o: Vec<(&'a str, &'a Value)>,
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "as_map")]
    i: Vec<(&'a str, &'a VecMap<String, String>)>,
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "as_map")]
    w: Vec<(&'a str, u64)>,
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "as_map")]
    e: Vec<(&'a str, u64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<&'a Value>,
    #[serde(skip_serializing_if = "Gone::is_empty")]
    gone: Gone,
}

impl DeltaOut<'_> {
    /// Nothing added or removed: no delta to write.
    fn is_empty(&self) -> bool {
        self.a.is_empty()
            && self.o.is_empty()
            && self.i.is_empty()
            && self.w.is_empty()
            && self.e.is_empty()
            && self.x.is_none()
            && self.gone.is_empty()
    }
}

fn as_map<S: serde::Serializer, V: Serialize>(
    entries: &[(&str, V)],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(entries.iter().map(|(k, v)| (k, v)))
}

/// One delta as read back: its maps are the journal's own [`VecMap`]s,
/// so reading one links no other map.
#[derive(Deserialize)]
struct DeltaIn {
    #[serde(default)]
    a: VecMap<String, Answer>,
    #[serde(default)]
    o: VecMap<String, Value>,
    #[serde(default)]
    i: VecMap<String, VecMap<String, String>>,
    #[serde(default)]
    w: VecMap<String, u64>,
    #[serde(default)]
    e: VecMap<String, u64>,
    #[serde(default)]
    x: Option<Value>,
    #[serde(default)]
    gone: Gone,
}

/// The keys a delta removes, by map.
#[derive(Serialize, Deserialize, Default)]
struct Gone {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    a: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    o: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    i: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    w: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    e: Vec<String>,
}

impl Gone {
    fn is_empty(&self) -> bool {
        self.a.is_empty()
            && self.o.is_empty()
            && self.i.is_empty()
            && self.w.is_empty()
            && self.e.is_empty()
    }
}

/// The same answer: the one the rows hold (shared, so by address), or
/// one recorded again alike.
fn same_answer(a: &Rc<Answer>, b: &Rc<Answer>) -> bool {
    Rc::ptr_eq(a, b)
        || (a.asked == b.asked && a.inputs == b.inputs && a.by == b.by && a.seen() == b.seen())
}

/// Entries new or changed in `now` since `was` (key and value, in key
/// order), and the keys gone: one walk of both (sorted) maps.
fn changed<'a, V>(
    was: &VecMap<String, V>,
    now: &'a VecMap<String, V>,
    same: impl Fn(&V, &V) -> bool,
) -> (Vec<(&'a str, &'a V)>, Vec<String>) {
    use std::cmp::Ordering;
    let (mut put, mut gone) = (Vec::new(), Vec::new());
    let mut old = was.iter().peekable();
    for (k, v) in now {
        loop {
            match old.peek() {
                Some((o, _)) if o.as_str() < k.as_str() => {
                    gone.push((*o).clone());
                    old.next();
                }
                _ => break,
            }
        }
        match old.peek().map(|(o, w)| (o.as_str().cmp(k), w)) {
            Some((Ordering::Equal, w)) => {
                if !same(w, v) {
                    put.push((k.as_str(), v));
                }
                old.next();
            }
            _ => put.push((k.as_str(), v)),
        }
    }
    gone.extend(old.map(|(o, _)| o.clone()));
    (put, gone)
}

/// The journal less what the log holds (the arguments are named by
/// their tool alone: a listing reads heads only).
fn head_of(j: &Journal) -> Journal {
    Journal {
        v: j.v,
        round: j.round,
        answers: VecMap::new(),
        pending: j.pending.clone(),
        once: VecMap::new(),
        once_inputs: VecMap::new(),
        patches: j.patches.clone(),
        code: j.code.clone(),
        opened: j.opened.clone(),
        invocation: j.invocation.as_ref().map(|i| Invocation {
            tool: i.tool.clone(),
            arguments: Value::Null,
        }),
        trail: j.trail.as_ref().map(|t| {
            Box::new(Trail {
                owner: t.owner.clone(),
                started_ms: t.started_ms,
                trace_id: t.trace_id.clone(),
                marks: t.marks.clone(),
                answered: VecMap::new(),
                effects: VecMap::new(),
                waited_ms: t.waited_ms,
                notes: t.notes.clone(),
                moved_at: t.moved_at.clone(),
            })
        }),
        held: j.held.clone(),
    }
}

fn store_error(e: serde_json::Error) -> McpError {
    McpError::internal(format!("storage: a kept journal does not write: {e}"))
}

fn read_error(e: serde_json::Error) -> McpError {
    McpError::internal(format!("storage: a kept journal does not read: {e}"))
}

/// The most a journal held whole in its head may grow to (its deltas'
/// bytes, as written): a call this small is one row, as it always was
/// (a row written per round is what Cloudflare bills); past it, the call
/// moves to a log, once.
pub const INLINE_BYTES: u64 = 32 * 1024;

/// What storing `journal` writes over rows that hold `base` (the
/// journal as they hold it, and their log; `None`: unknown, so the log
/// starts over), and the log after. A call whose log would pass
/// [`call_cap`] is refused.
pub fn save(
    journal: &Journal,
    base: Option<(&Journal, &Manifest)>,
) -> Result<(Rows, Manifest), McpError> {
    let base = base.filter(|(_, m)| !m.stale);
    let reset = base.is_none();
    let empty = Journal::default();
    let (was, log) = match base {
        Some((was, log)) => (was, log.clone()),
        None => (&empty, Manifest::default()),
    };
    let delta = delta_json(was, journal)?;
    let added = delta.as_ref().map_or(0, |d| d.len() as u64);
    // Small: whole in its head, one row.
    let inline = log.deltas == 0 && log.bytes + added <= INLINE_BYTES;
    let (next, delta) = if inline {
        let next = Manifest {
            bytes: log.bytes + added,
            ..Manifest::default()
        };
        (next, None)
    } else {
        appended(journal, &log, delta, reset)?
    };
    within_cap(&next)?;
    let head = if inline {
        head_json(journal, next.deltas, next.bytes)?
    } else {
        let stripped = Journal {
            v: LOGGED_V,
            ..head_of(journal)
        };
        head_json(&stripped, next.deltas, next.bytes)?
    };
    Ok((Rows { head, reset, delta }, next))
}

/// [`delta_between`] as written (`None`: nothing changed).
fn delta_json(was: &Journal, now: &Journal) -> Result<Option<String>, McpError> {
    delta_between(was, now)
        .map(|d| serde_json::to_string(&d).map_err(store_error))
        .transpose()
}

/// The log after a save that writes one (the journal is past
/// [`INLINE_BYTES`]), and the delta it appends: the round's `delta`,
/// or all the journal holds when its log starts (after a `reset`,
/// `delta` already is that).
fn appended(
    journal: &Journal,
    log: &Manifest,
    delta: Option<String>,
    reset: bool,
) -> Result<(Manifest, Option<String>), McpError> {
    if log.deltas == 0 {
        // Grown past it: its log starts with all it holds.
        let all = if reset {
            delta
        } else {
            delta_json(&Journal::default(), journal)?
        };
        let next = Manifest {
            deltas: u32::from(all.is_some()),
            bytes: all.as_ref().map_or(0, |d| d.len() as u64),
            stale: false,
        };
        return Ok((next, all));
    }
    let next = Manifest {
        deltas: log.deltas + u32::from(delta.is_some()),
        bytes: log.bytes + delta.as_ref().map_or(0, |d| d.len() as u64),
        stale: false,
    };
    Ok((next, delta))
}

/// Refuses a log past [`call_cap`]: the call cannot go on.
fn within_cap(next: &Manifest) -> Result<(), McpError> {
    let cap = call_cap();
    if next.bytes > cap {
        return Err(McpError::internal(format!(
            "The call has grown past the {cap} bytes a kept call may hold \
             (its answers and effects' outputs; MAX_CALL_BYTES): it cannot go on"
        )));
    }
    Ok(())
}

/// What `now` added to or removed from `was` (`None`: nothing).
fn delta_between<'a>(was: &Journal, now: &'a Journal) -> Option<DeltaOut<'a>> {
    let mut delta = DeltaOut::default();
    let (put, gone) = changed(&was.answers, &now.answers, same_answer);
    delta.a = put.into_iter().map(|(k, v)| (k, &**v)).collect();
    delta.gone.a = gone;
    let (put, gone) = changed(&was.once, &now.once, |a, b| Rc::ptr_eq(a, b) || a == b);
    delta.o = put.into_iter().map(|(k, v)| (k, &**v)).collect();
    delta.gone.o = gone;
    // An effect's inputs are recorded with it, once.
    let (put, gone) = changed(&was.once_inputs, &now.once_inputs, |_, _| true);
    delta.i = put;
    delta.gone.i = gone;
    trail_delta(was, now, &mut delta);
    if arguments(was).is_none_or(Value::is_null) {
        delta.x = arguments(now).filter(|a| !a.is_null());
    }
    (!delta.is_empty()).then_some(delta)
}

/// The trail's answer and effect times `now` added or removed, into `delta`.
fn trail_delta<'a>(was: &Journal, now: &'a Journal, delta: &mut DeltaOut<'a>) {
    let (answered, effects) = trail_times(now);
    let (was_answered, was_effects) = trail_times(was);
    let (put, gone) = changed(was_answered, answered, |a, b| a == b);
    delta.w = put.into_iter().map(|(k, v)| (k, *v)).collect();
    delta.gone.w = gone;
    let (put, gone) = changed(was_effects, effects, |a, b| a == b);
    delta.e = put.into_iter().map(|(k, v)| (k, *v)).collect();
    delta.gone.e = gone;
}

/// A journal's trail's answer and effect times (none without a trail).
fn trail_times(j: &Journal) -> (&VecMap<String, u64>, &VecMap<String, u64>) {
    static NO_TIMES: VecMap<String, u64> = VecMap::new();
    j.trail
        .as_deref()
        .map_or((&NO_TIMES, &NO_TIMES), |t| (&t.answered, &t.effects))
}

/// The arguments a journal's call was invoked with (a head holds none).
fn arguments(j: &Journal) -> Option<&Value> {
    j.invocation.as_ref().map(|i| &i.arguments)
}

/// How many deltas the head `head` says follow it (0 for a journal
/// stored whole): what a store reads after it.
pub fn deltas_of(head: &str) -> Result<u32, McpError> {
    let v: Value = serde_json::from_str(head).map_err(read_error)?;
    Probe::of(&v).map(|p| p.log.unwrap_or(0))
}

/// The head's journal alone, without reading its log: what a listing
/// shows (its tool, trail, status) needs nothing more.
pub fn head_only(head: &str) -> Result<Journal, McpError> {
    read_head(head).map(|(j, _)| j)
}

/// The journal a head and its deltas (whole bodies, in order) hold, and
/// their manifest.
pub fn load(
    head: &str,
    deltas: impl IntoIterator<Item = String>,
) -> Result<(Journal, Manifest), McpError> {
    let (j, log) = read_head(head)?;
    match log {
        Some((count, bytes)) => logged(j, count, bytes, deltas),
        // Stored whole: the next save writes it as a log from scratch.
        None => Ok((j, stale())),
    }
}

fn logged(
    mut j: Journal,
    count: u32,
    bytes: u64,
    deltas: impl IntoIterator<Item = String>,
) -> Result<(Journal, Manifest), McpError> {
    let mut seen = 0;
    for body in deltas {
        apply(&mut j, crate::json::from_str(&body).map_err(read_error)?);
        seen += 1;
    }
    if seen != count {
        return Err(McpError::internal(format!(
            "storage: a kept journal's log holds {seen} deltas of {count}"
        )));
    }
    Ok((
        j,
        Manifest {
            deltas: count,
            bytes,
            stale: false,
        },
    ))
}

/// The manifest of rows that are not a log: a save over it writes
/// everything again.
fn stale() -> Manifest {
    Manifest {
        stale: true,
        ..Manifest::default()
    }
}

fn apply(j: &mut Journal, d: DeltaIn) {
    for k in d.gone.a {
        j.answers.remove(&k);
    }
    for k in d.gone.o {
        j.once.remove(&k);
    }
    for k in d.gone.i {
        j.once_inputs.remove(&k);
    }
    for (k, mut a) in d.a {
        // Kept from now on: a replay reads it on every round.
        if a.seen.is_none() {
            a.seen = Some(a.seen());
        }
        j.answers.insert(k, Rc::new(a));
    }
    j.once.extend(d.o.into_iter().map(|(k, v)| (k, Rc::new(v))));
    j.once_inputs.extend(d.i);
    if let (Some(args), Some(inv)) = (d.x, j.invocation.as_mut()) {
        inv.arguments = args;
    }
    let touches_trail =
        !(d.w.is_empty() && d.e.is_empty() && d.gone.w.is_empty() && d.gone.e.is_empty());
    if touches_trail {
        let t = j.trail.get_or_insert_with(Default::default);
        for k in d.gone.w {
            t.answered.remove(&k);
        }
        for k in d.gone.e {
            t.effects.remove(&k);
        }
        t.answered.extend(d.w);
        t.effects.extend(d.e);
    }
}

/// The `v` of the empty journal a record is written with, whose place
/// in the record's JSON the head takes (see [`save_record`]).
const HOLE: u32 = u32::MAX - 7;

/// A record that holds a journal (a session's call, a task) as its row
/// holds it: the record's JSON with the journal's head in place of the
/// journal; with what to append to the log, and the log after. `bare`
/// makes the record with the journal it is given (an empty one, marked,
/// whose place the head takes: the record is written as JSON once, by
/// the serializer it has anyway).
pub fn save_record<T: Serialize>(
    bare: impl FnOnce(Journal) -> T,
    journal: &Journal,
    base: Option<(&Journal, &Manifest)>,
) -> Result<(String, Rows, Manifest), McpError> {
    let (rows, manifest) = save(journal, base)?;
    let hole = Journal {
        v: HOLE,
        ..Journal::default()
    };
    let json = serde_json::to_string(&bare(hole)).map_err(store_error)?;
    let marked = format!("\"journal\":{{\"v\":{HOLE},\"round\":0}}");
    let Some(at) = json.find(&marked) else {
        return Err(McpError::internal(
            "storage: a kept record has no place for its journal",
        ));
    };
    let mut out = String::with_capacity(json.len() + rows.head.len());
    out.push_str(&json[..at]);
    out.push_str("\"journal\":");
    out.push_str(&rows.head);
    out.push_str(&json[at + marked.len()..]);
    Ok((out, rows, manifest))
}

/// The record a row holds (see [`save_record`]; a record stored whole by
/// an earlier release reads too): `deltas(n)` reads its log's `n` deltas;
/// `journal` is the record's journal.
pub fn load_record<T: serde::de::DeserializeOwned>(
    json: &str,
    deltas: impl FnOnce(u32) -> Result<Vec<String>, McpError>,
    journal: impl Fn(&mut T) -> &mut Journal,
) -> Result<(T, Manifest), McpError> {
    // The record reads whole, its journal the head (see `head_json`).
    let v: Value = serde_json::from_str(json).map_err(read_error)?;
    let probe = match v.get("journal") {
        Some(head) => Probe::of(head)?,
        None => return Err(McpError::internal("storage: a record has no journal")),
    };
    let mut t: T = crate::json::from_value(v).map_err(read_error)?;
    let head = readable_head(
        std::mem::take(journal(&mut t)),
        probe.log.is_some_and(|n| n > 0),
    )?;
    let Some(count) = probe.log else {
        // Stored whole.
        *journal(&mut t) = head;
        return Ok((t, stale()));
    };
    let log = if count > 0 {
        deltas(count)?
    } else {
        Vec::new()
    };
    let (j, manifest) = logged(head, count, probe.bytes, log)?;
    *journal(&mut t) = j;
    Ok((t, manifest))
}

/// A record that holds a journal and is stored as one row (a session's
/// call, a task), its journal's log beside it ([`save_record`],
/// [`load_record`]).
pub trait Record: Serialize + serde::de::DeserializeOwned + Clone {
    /// Its journal.
    fn journal(&self) -> &Journal;
    /// Its journal, to change.
    fn journal_mut(&mut self) -> &mut Journal;

    /// The record as its row holds it (its journal's head in place of its
    /// journal) over rows holding `base`, with what to append to its log,
    /// and the log after.
    fn rows(
        &self,
        base: Option<(&Journal, &Manifest)>,
    ) -> Result<(String, Rows, Manifest), McpError> {
        let bare = |journal| {
            let mut r = self.clone();
            *r.journal_mut() = journal;
            r
        };
        save_record(bare, self.journal(), base)
    }

    /// The record a row holds (one stored whole by an earlier release
    /// reads too); `deltas(n)` reads its log's `n` deltas.
    fn from_row(
        row: &str,
        deltas: impl FnOnce(u32) -> Result<Vec<String>, McpError>,
    ) -> Result<(Self, Manifest), McpError> {
        load_record(row, deltas, Self::journal_mut)
    }
}

/// `body` as rows of at most [`CHUNK_BYTES`], cut on character
/// boundaries (one empty row for an empty body).
pub fn chunks(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = body;
    while rest.len() > CHUNK_BYTES {
        let mut cut = CHUNK_BYTES;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (a, b) = rest.split_at(cut);
        out.push(a);
        rest = b;
    }
    out.push(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_heads_probe_reads_its_counts_and_refuses_what_is_not_one() {
        let p = Probe::of(&json!({"log": 3, "bytes": 70, "v": 2})).expect("reads");
        assert_eq!((p.log, p.bytes), (Some(3), 70));
        let whole = Probe::of(&json!({"v": 1, "answers": {}})).expect("reads");
        assert_eq!((whole.log, whole.bytes), (None, 0));
        let null = Probe::of(&json!({"log": null, "bytes": null})).expect("reads");
        assert_eq!((null.log, null.bytes), (None, 0));
        for bad in [
            json!({"log": "3"}),
            json!({"log": -1}),
            json!({"log": 1u64 << 40}),
            json!({"bytes": 1.5}),
        ] {
            assert!(Probe::of(&bad).is_err(), "{bad}");
        }
        assert!(
            load_record::<Value>("{\"v\": 1}", |_| Ok(Vec::new()), |_| unreachable!()).is_err()
        );
    }

    fn answered(j: &mut Journal, key: &str, value: Value) {
        j.answers.insert(
            key.to_string(),
            Rc::new(Answer::new(format!("asked-{key}"), Ok(value), None)),
        );
    }

    /// Saves `j` over `base`, and reads back what the rows hold.
    fn round_trip(
        j: &Journal,
        base: Option<(&Journal, &Manifest)>,
        log: &mut Vec<String>,
    ) -> (Journal, Manifest, Rows) {
        let (rows, m) = save(j, base).expect("ok");
        if rows.reset {
            log.clear();
        }
        if let Some(d) = &rows.delta {
            log.push(d.clone());
        }
        let (back, m2) = load(&rows.head, log.clone()).expect("ok");
        assert_eq!(m, m2, "the manifest written is the one read back");
        (back, m, rows)
    }

    #[test]
    fn a_round_writes_what_it_added_and_reads_back_whole() {
        let mut j = Journal::new();
        j.invocation = Some(Invocation {
            tool: "t".into(),
            arguments: json!({"big": "x".repeat(1000)}),
        });
        let mut log = Vec::new();
        let (back, mut m, _) = round_trip(&j, None, &mut log);
        assert_eq!(back, j);
        // What the rows hold, as a warm object keeps it.
        let mut held = j.clone();
        let mut sizes = Vec::new();
        for n in 0..50 {
            answered(&mut j, &format!("k{n}"), json!("y".repeat(40_000)));
            j.once.insert(format!("e{n}"), Rc::new(json!(n)));
            j.trail
                .get_or_insert_with(Default::default)
                .answered
                .insert(format!("k{n}"), n);
            j.round = n as u32;
            let (back, next, rows) = round_trip(&j, Some((&held, &m)), &mut log);
            assert!(!rows.reset);
            sizes.push(rows.delta.as_ref().expect("ok").len() + rows.head.len());
            assert_eq!(back, j);
            (m, held) = (next, j.clone());
        }
        // The bytes a round writes do not grow with the round number.
        assert!(sizes[49] <= sizes[1] + 64, "{sizes:?}");
        // Asked again: the answer goes, and comes back changed.
        j.answers.remove("k3");
        let (back, next, _) = round_trip(&j, Some((&held, &m)), &mut log);
        assert_eq!(back, j);
        held = j.clone();
        answered(&mut j, "k3", json!("changed"));
        let (back, next, _) = round_trip(&j, Some((&held, &next)), &mut log);
        assert_eq!(back, j);
        // Nothing changed: no delta; and an answer recorded again alike is
        // the same answer.
        let (rows, _) = save(&j, Some((&back, &next))).expect("ok");
        assert!(rows.delta.is_none());
    }

    #[test]
    fn a_journal_stored_whole_still_reads_and_is_written_again() {
        let mut j = Journal::new();
        answered(&mut j, "a", json!(1));
        let whole = serde_json::to_string(&j).expect("ok");
        let (back, m) = load(&whole, Vec::new()).expect("ok");
        assert_eq!(back, j);
        let (rows, _) = save(&back, Some((&back, &m))).expect("ok");
        assert!(rows.reset);
        let (again, _) = load(&rows.head, rows.delta).expect("ok");
        assert_eq!(again, j);
    }

    #[test]
    fn a_log_missing_a_delta_is_refused() {
        let mut j = Journal::new();
        answered(&mut j, "a", json!("a".repeat(40_000)));
        let (rows, _) = save(&j, None).expect("ok");
        assert!(load(&rows.head, Vec::new()).is_err());
    }

    #[test]
    fn a_small_journal_is_one_row_until_it_grows() {
        let mut j = Journal::new();
        answered(&mut j, "a", json!(1));
        let mut log = Vec::new();
        let (back, m, rows) = round_trip(&j, None, &mut log);
        assert_eq!((back, rows.delta, m.deltas), (j.clone(), None, 0));
        let held = j.clone();
        answered(&mut j, "b", json!("b".repeat(40_000)));
        let (back, m, rows) = round_trip(&j, Some((&held, &m)), &mut log);
        assert_eq!(back, j);
        assert_eq!(m.deltas, 1);
        // The log starts with all the journal holds, the first answer too.
        assert!(rows.delta.is_some_and(|d| d.contains("\"a\"")));
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Rec {
        name: String,
        journal: Journal,
        after: u32,
    }

    #[test]
    fn a_record_reads_back_whole_cold_small_large_and_as_stored_before() {
        let mut rec = Rec {
            name: "r".into(),
            journal: Journal::new(),
            after: 7,
        };
        for size in [10, 40_000] {
            answered(
                &mut rec.journal,
                &format!("k{size}"),
                json!("q".repeat(size)),
            );
            let (row, rows, _) = save_record(
                |journal| Rec {
                    journal,
                    ..rec.clone()
                },
                &rec.journal,
                None,
            )
            .expect("saved");
            let (back, m) = load_record(
                &row,
                |_| Ok(rows.delta.clone().into_iter().collect()),
                |r: &mut Rec| &mut r.journal,
            )
            .expect("read");
            assert_eq!(back, rec, "{size}");
            assert_eq!(m.deltas, u32::from(rows.delta.is_some()));
        }
        // A record stored whole by an earlier release.
        let whole = serde_json::to_string(&rec).expect("json");
        let (back, _) =
            load_record(&whole, |_| Ok(Vec::new()), |r: &mut Rec| &mut r.journal).expect("read");
        assert_eq!(back, rec);
    }

    #[test]
    fn a_head_with_a_log_is_a_format_earlier_releases_refuse() {
        let mut j = Journal::new();
        answered(&mut j, "a", json!("a".repeat(40_000)));
        let (rows, _) = save(&j, None).expect("saved");
        // What a release before logs reads: a journal, of a newer format.
        let as_before: Journal = serde_json::from_str(&rows.head).expect("json");
        assert_eq!(as_before.v, LOGGED_V);
        assert!(as_before.readable().is_err());
        // This release reads it back whole, at the journal's own format.
        let (back, _) = load(&rows.head, rows.delta).expect("read");
        assert_eq!(back, j);
        // Small, whole in its head: the format every release reads.
        let (rows, _) = save(&Journal::new(), None).expect("saved");
        let small: Journal = serde_json::from_str(&rows.head).expect("json");
        assert!(small.readable().is_ok());
    }

    #[test]
    fn chunks_cut_on_characters_and_join_back() {
        let body = "é".repeat(CHUNK_BYTES);
        let parts = chunks(&body);
        assert!(parts.len() >= 2);
        assert!(parts.iter().all(|p| p.len() <= CHUNK_BYTES));
        assert_eq!(parts.concat(), body);
        assert_eq!(chunks(""), vec![""]);
    }

    #[test]
    fn past_the_cap_a_save_is_refused() {
        let mut j = Journal::new();
        let m = Manifest {
            bytes: CALL_CAP_BYTES - 10,
            deltas: 1,
            ..Manifest::default()
        };
        let held = j.clone();
        answered(&mut j, "a", json!("z".repeat(100)));
        let e = save(&j, Some((&held, &m))).expect_err("refused");
        assert!(e.message.contains("grown past"), "{}", e.message);
    }
}
