//! Limits per principal and per tool, so that one tenant or one runaway
//! agent cannot starve the rest: what may be set ([`Policy`], [`Limits`]),
//! and a principal's meter, which counts exactly and decides
//! ([`meter`]).
//!
//! Where they are enforced (`host`): a new call, or a paused call's next
//! round on the wires the Worker sees it on, asks its principal's meter
//! before anything runs or is stored; a refusal is `-32013` with HTTP 429
//! and `Retry-After`. The rounds' ends reach the meter as notes the
//! server queues ([`crate::server::Server::take_notes`]). With no limit
//! configured none of this happens.

pub mod meter;
mod policy;
pub mod wire;

use std::cell::RefCell;

pub use meter::{Admit, Admitted, Ask, Kind, MeterStore, Note, Refusal, Row, Verdict};
/// Limits read from JSON by hand (an operator's raise).
pub use policy::scoped as read_scoped;
pub use policy::{Applied, Limits, Policy, Rate, Scoped};

use crate::error::McpError;

/// On a request a meter admitted (internal, set by the Worker): the meter's
/// object and the round's lease, released when the round ends.
pub const LEASE_HEADER: &str = "x-durable-mcp-lease";
/// On a new task a limit refused (internal): the [`Refusal`], as JSON.
/// The task is kept `working` and runs when its meter admits it.
pub const LIMITED_HEADER: &str = "x-durable-mcp-limited";

/// A kept call asking its meter to run (a task a limit held back): the
/// host sends `admit` to `meter` and hands the answer back to the object
/// (`host::admitted`).
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    /// The meter's object.
    pub meter: String,
    /// What it is asked.
    pub admit: Admit,
}

/// A meter's storage in memory (the test server's, and unit tests').
#[derive(Debug, Default)]
pub struct MemoryMeter {
    rows: RefCell<std::collections::BTreeMap<(String, String), Row>>,
}

impl MeterStore for MemoryMeter {
    fn count(&self, kind: &str, tool: Option<&str>, now_ms: u64) -> Result<u64, McpError> {
        let rows = self.rows.borrow();
        Ok(rows
            .values()
            .filter(|r| r.kind == kind && r.until > now_ms && tool.is_none_or(|t| r.tool == t))
            .count() as u64)
    }
    fn get(&self, kind: &str, key: &str) -> Result<Option<Row>, McpError> {
        let k = (kind.to_string(), key.to_string());
        Ok(self.rows.borrow().get(&k).cloned())
    }
    fn put(&self, row: &Row) -> Result<(), McpError> {
        let k = (row.kind.clone(), row.key.clone());
        self.rows.borrow_mut().insert(k, row.clone());
        Ok(())
    }
    fn delete(&self, kind: &str, key: &str) -> Result<(), McpError> {
        let k = (kind.to_string(), key.to_string());
        self.rows.borrow_mut().remove(&k);
        Ok(())
    }
    fn expire(&self, now_ms: u64) -> Result<(), McpError> {
        self.rows.borrow_mut().retain(|_, r| r.until > now_ms);
        Ok(())
    }
    fn live(&self, now_ms: u64) -> Result<Vec<Row>, McpError> {
        let rows = self.rows.borrow();
        Ok(rows
            .values()
            .filter(|r| r.until > now_ms)
            .cloned()
            .collect())
    }
}

impl Policy {
    /// Reads the `LIMITS` var: JSON, `{"all": {...}, "tools": {"t": {...}},
    /// "principals": {"name": {"all": {...}, "tools": {...}}}}`, each
    /// `{...}` of `rate` (`"100/60s"`), `held`, `active`, `daily`.
    pub fn parse(text: &str) -> Result<Policy, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("LIMITS is not JSON: {e}"))?;
        policy::policy(&v).map_err(|e| format!("LIMITS is not a valid limits document: {e}"))
    }
}

/// The store of a worker built without the `limits` feature: no meter
/// is ever asked, so it keeps nothing.
#[derive(Debug, Default)]
pub struct NoMeter;

impl NoMeter {
    /// One (whatever storage it is handed).
    pub fn new<T>(_: T) -> Self {
        Self
    }
}

impl MeterStore for NoMeter {
    fn count(&self, _: &str, _: Option<&str>, _: u64) -> Result<u64, McpError> {
        Ok(0)
    }
    fn get(&self, _: &str, _: &str) -> Result<Option<Row>, McpError> {
        Ok(None)
    }
    fn put(&self, _: &Row) -> Result<(), McpError> {
        Ok(())
    }
    fn delete(&self, _: &str, _: &str) -> Result<(), McpError> {
        Ok(())
    }
    fn expire(&self, _: u64) -> Result<(), McpError> {
        Ok(())
    }
    fn live(&self, _: u64) -> Result<Vec<Row>, McpError> {
        Ok(Vec::new())
    }
}

/// The object keeping `principal`'s meter: named by a digest, so that no
/// principal's name is an object's name.
pub fn meter_name(principal: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(principal.as_bytes());
    format!("meter:{}", crate::engine::hex(&d[..16]))
}

/// What an isolate holds of its principals' meters, for calls limited by
/// windows alone (`rate`, `daily`): admissions a meter granted ahead, and
/// refusals until their window ends. Spent here, they cost no request.
/// Exact within an isolate; across isolates a principal may be refused
/// while another isolate still holds admissions of the same window (never
/// admitted past its number).
#[derive(Debug, Default)]
pub struct Spare {
    /// By key (a principal and a tool): a short list in an isolate, read
    /// through (a map per value type costs its own code).
    held: RefCell<Vec<(String, Held)>>,
    /// Refusals answered here since their window's first (which was
    /// logged), whose window has ended: each to be logged once, under its
    /// own key, with how many there were ([`Spare::quieted`]).
    quieted: RefCell<Vec<(String, Refusal, u32)>>,
}

#[derive(Debug)]
enum Held {
    /// Admissions left until `until`; `asking`: one request is on its way
    /// for more (asked when half of `batch` is left, so that the requests
    /// meanwhile still spend what is here).
    Left {
        n: u32,
        until: u64,
        batch: u32,
        asking: bool,
    },
    /// A window's refusal, and how many requests it refused here since
    /// the one that was logged.
    Refused(Refusal, u32),
}

/// How many new calls a window-limited call asks its meter for at once:
/// a quarter of its smallest window, between 1 and 1,024. (A sixteenth
/// asked a small limit's meter every few calls: `50/1s` asked 18 times a
/// second, and those requests, not the refusals, were what a principal
/// over its limit cost the others on a busy object. Across isolates a
/// quarter still leaves room for four to share a window.)
pub fn batch(limits: &Applied) -> u32 {
    let maxes = [limits.all, limits.tool].into_iter().flat_map(|l| {
        let rate = l.rate.map(|r| r.max);
        rate.into_iter().chain(l.daily)
    });
    maxes.map(|m| (m / 4).clamp(1, 1024)).min().unwrap_or(1)
}

/// Whether only windows limit a call under `limits` (then it may be
/// admitted from an isolate's [`Spare`]).
pub fn windows_only(limits: &Applied) -> bool {
    let only = |l: &Limits| l.held.is_none() && l.active.is_none();
    only(&limits.all) && only(&limits.tool) && (limits.all.any() || limits.tool.any())
}

impl Spare {
    /// Takes an admission for `key` (a meter and a tool) at `now_ms`:
    /// `Some(Ok)` one held ahead, `Some(Err)` a refusal still in force,
    /// `None` ask the meter.
    pub fn take(&self, key: &str, now_ms: u64) -> Option<Result<(), Refusal>> {
        let mut held = self.held.borrow_mut();
        // Any window's refusals that are over are handed over now, not
        // only at their own key's next call (which may never come).
        let mut i = 0;
        while i < held.len() {
            match &held[i].1 {
                Held::Refused(r, n) if r.retry_at <= now_ms && held[i].0 != key => {
                    if *n > 0 {
                        self.quieted
                            .borrow_mut()
                            .push((held[i].0.clone(), r.clone(), *n));
                    }
                    held.swap_remove(i);
                }
                _ => i += 1,
            }
        }
        let at = held.iter().position(|(k, _)| k == key)?;
        let answer = match &mut held[at].1 {
            Held::Left {
                n,
                until,
                batch,
                asking,
            } if *until > now_ms && *n > 0 => {
                if *n <= *batch / 2 && !*asking {
                    // This one asks for more; the ones meanwhile spend these.
                    *asking = true;
                    return None;
                }
                *n -= 1;
                Some(Ok(()))
            }
            Held::Refused(r, n) if r.retry_at > now_ms => {
                *n += 1;
                Some(Err(r.clone()))
            }
            _ => None,
        };
        if answer.is_none() {
            if let (k, Held::Refused(r, n)) = held.swap_remove(at) {
                if n > 0 {
                    self.quieted.borrow_mut().push((k, r, n));
                }
            }
        }
        answer
    }

    /// The refusals answered here whose window has ended, each with its key
    /// (another principal's, it may be: any call hands over every window
    /// that is over) and how many requests it refused after the first: a
    /// request refused from here writes no line of its own (a principal
    /// looping against its limit would otherwise write one per request, at
    /// the cost of a request's work), and the window's count is logged
    /// once it is over.
    pub fn quieted(&self) -> Vec<(String, Refusal, u32)> {
        std::mem::take(&mut *self.quieted.borrow_mut())
    }

    /// Keeps what a meter answered for `key`: admissions granted ahead, or
    /// a window's refusal (a refusal for `held` or `active` is not kept:
    /// those free up at any moment).
    pub fn keep(&self, key: &str, verdict: &Verdict) {
        let mut held = self.held.borrow_mut();
        let at = held.iter().position(|(k, _)| k == key);
        let entry = match verdict {
            Verdict::Admitted(a) if a.more > 0 => {
                // Added to what is left of the same windows.
                let left = match at.map(|i| &held[i].1) {
                    Some(Held::Left { n, until, .. }) if *until == a.until => *n,
                    _ => 0,
                };
                Held::Left {
                    n: left.saturating_add(a.more),
                    until: a.until,
                    batch: a.more + 1,
                    asking: false,
                }
            }
            Verdict::Refused(r) if matches!(r.limit, Kind::Rate | Kind::Daily) => {
                Held::Refused(r.clone(), 0)
            }
            _ => {
                if let Some(Held::Left { asking, .. }) = at.map(|i| &mut held[i].1) {
                    *asking = false;
                }
                return;
            }
        };
        match at {
            Some(i) => held[i].1 = entry,
            None => held.push((key.to_string(), entry)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(more: u32, until: u64) -> Verdict {
        Verdict::Admitted(Admitted {
            leased: false,
            more,
            until,
        })
    }

    #[test]
    fn an_isolate_spends_a_batch_and_asks_for_more_before_it_runs_out() {
        let spare = Spare::default();
        assert_eq!(spare.take("k", 0), None);
        spare.keep("k", &granted(7, 1000));
        // 7 held, batch 8: spent down to 4, then one request asks.
        for _ in 0..3 {
            assert_eq!(spare.take("k", 1), Some(Ok(())));
        }
        assert_eq!(spare.take("k", 1), None, "the one that asks for more");
        for _ in 0..4 {
            assert_eq!(
                spare.take("k", 1),
                Some(Ok(())),
                "the others spend the rest"
            );
        }
        assert_eq!(spare.take("k", 1), None, "none left");
        spare.keep("k", &granted(7, 1000));
        assert_eq!(spare.take("k", 1000), None, "the window ended");
    }

    #[test]
    fn a_kept_refusal_counts_what_it_refuses_and_hands_it_over_when_its_window_ends() {
        let spare = Spare::default();
        let r = Refusal {
            limit: Kind::Rate,
            scope: "principal".into(),
            tool: "t".into(),
            max: 5,
            period: Some("1s".into()),
            retry_after: 1,
            retry_at: 2000,
        };
        spare.keep("k", &Verdict::Refused(r.clone()));
        for _ in 0..4 {
            assert_eq!(spare.take("k", 1500), Some(Err(r.clone())));
        }
        assert!(spare.quieted().is_empty(), "the window is not over");
        assert_eq!(spare.take("k", 2000), None, "over: ask the meter");
        assert_eq!(spare.quieted(), vec![("k".to_string(), r.clone(), 4)]);
        assert!(spare.quieted().is_empty(), "handed over once");
        // A refusal that refused nothing more hands nothing over.
        spare.keep("k", &Verdict::Refused(r.clone()));
        assert_eq!(spare.take("k", 3000), None);
        assert!(spare.quieted().is_empty());
        // Another key's call hands over a window that is over.
        spare.keep("k", &Verdict::Refused(r.clone()));
        assert_eq!(spare.take("k", 1000), Some(Err(r.clone())));
        assert_eq!(spare.take("other", 2500), None);
        // Under its own key, not the caller's: its line names its principal.
        assert_eq!(spare.quieted(), vec![("k".to_string(), r.clone(), 1)]);
    }
}
