//! A principal's meter: the exact counts its limits are held to, kept in
//! one Durable Object per principal (`meter:<digest>`), so no principal's
//! traffic queues behind another's, and decided here, sans-IO, over a
//! [`MeterStore`].
//!
//! One table of rows, each live until its `until`:
//! - `rate` / `daily`: a fixed window's count of new calls (`key` the scope
//!   and the window's start; `n` the count);
//! - `active`: a round running (`key` its lease), until its lease runs out
//!   (a round that dies unreported frees its place then);
//! - `held`: a call kept paused (`key` the call), until its idle TTL;
//! - `pending`: a new call's round under a `held` limit (`key` its lease):
//!   it may pause, so it holds a place until it ends;
//! - `waiting`: a task a limit held back (listed, not counted);
//! - `raise`: an operator's limits for this principal, over the code's and
//!   the vars'.

use serde::Serialize;
use serde_json::json;

use super::policy::{Applied, Limits, Scoped};
use crate::error::{ErrorKind, McpError};

/// One row of a meter's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// `rate`, `daily`, `active`, `held` or `raise`.
    pub kind: String,
    /// What the row is of (a window, a lease, a call).
    pub key: String,
    /// The tool it counts for.
    pub tool: String,
    /// Its count (a window's); 1 otherwise.
    pub n: u64,
    /// When it stops counting (ms since the epoch).
    pub until: u64,
    /// An operator's limits (`raise`), as JSON.
    pub text: String,
}

/// A meter's storage: synchronous, as a Durable Object's SQLite is.
pub trait MeterStore {
    /// How many live rows of `kind` (of `tool`, if named) there are.
    fn count(&self, kind: &str, tool: Option<&str>, now_ms: u64) -> Result<u64, McpError>;
    /// The row of `kind` at `key`, live or not.
    fn get(&self, kind: &str, key: &str) -> Result<Option<Row>, McpError>;
    /// Writes `row` (replacing the one at its kind and key).
    fn put(&self, row: &Row) -> Result<(), McpError>;
    /// Deletes the row of `kind` at `key`, if any.
    fn delete(&self, kind: &str, key: &str) -> Result<(), McpError>;
    /// Deletes every row that stopped counting by `now_ms`.
    fn expire(&self, now_ms: u64) -> Result<(), McpError>;
    /// Every live row (an operator's view).
    fn live(&self, now_ms: u64) -> Result<Vec<Row>, McpError>;
}

/// The kinds of limit, as a refusal names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// New calls per period.
    Rate,
    /// New calls per UTC day.
    Daily,
    /// Calls held paused at once.
    Held,
    /// Rounds running at once.
    Active,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Rate => "rate",
            Kind::Daily => "daily",
            Kind::Held => "held",
            Kind::Active => "active",
        }
    }
}

/// What a meter is asked (read back by `limits::wire`).
#[derive(Debug, Clone, Serialize)]
// Externally tagged (`{"admit": {...}}`): an internally tagged enum is read
// through serde's buffered content, a second reader of everything.
#[serde(rename_all = "lowercase")]
pub enum Ask {
    /// May this round run?
    Admit(Admit),
    /// Rounds ended and calls paused or went.
    Notes {
        /// What happened, in order.
        notes: Vec<Note>,
    },
    /// The principal's usage against `limits` (the code's and the vars').
    Usage {
        /// The limits the server holds the principal to.
        limits: Scoped,
    },
    /// An operator's limits for this principal, kind by kind over the
    /// code's and the vars' (`null` kinds are left as those say); answered
    /// with the usage, as [`Ask::Usage`] is.
    Raise {
        /// The limits the server holds the principal to.
        limits: Scoped,
        /// The operator's.
        raise: Scoped,
    },
}

/// A round asking to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Admit {
    /// The tool it runs.
    pub tool: String,
    /// Its lease: what the round's end releases.
    pub lease: String,
    /// A new call (`false`: a paused call's next round, held only to
    /// `active`).
    pub new: bool,
    /// The limits the server holds this call to.
    pub limits: Applied,
    /// How long the lease holds if its end is never reported.
    pub lease_ms: u64,
    /// How many new calls to admit at once (the Worker spends the rest
    /// itself, where only windows limit the call): at most what the
    /// windows have left.
    pub want: u32,
}

/// What happened to a principal's round or call, for its meter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Note {
    /// A round ended: its lease is free.
    Release(String),
    /// A task a limit held back waits (`until`: its TTL), or no longer
    /// does (`until` 0): counted nowhere, listed for operators.
    Waiting {
        /// The task (its admin handle).
        call: String,
        /// Its tool.
        tool: String,
        /// When it stops waiting at the latest; 0: now.
        until: u64,
    },
    /// A kept call paused (`until`: its idle TTL) or ended (`until` 0).
    Held {
        /// The call (its admin handle).
        call: String,
        /// Its tool.
        tool: String,
        /// When it stops being held, unless it runs again first; 0: now.
        until: u64,
    },
}

/// Why a round may not run (read back by [`crate::limits::wire::refusal`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    /// The limit reached.
    pub limit: Kind,
    /// `principal` (over all its calls) or `tool` (its calls of `tool`).
    pub scope: String,
    /// The tool called.
    pub tool: String,
    /// The limit's number.
    pub max: u32,
    /// The rate's window, for a rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    /// Seconds to wait before trying again.
    pub retry_after: u64,
    /// When to try again (ms since the epoch).
    pub retry_at: u64,
}

impl Refusal {
    /// The error a client gets (`-32013`, HTTP 429 with `Retry-After`).
    pub fn error(&self) -> McpError {
        let whose = if self.scope == "tool" {
            format!("calls of {:?}", self.tool)
        } else {
            "calls".to_string()
        };
        let what = match self.limit {
            Kind::Rate => format!(
                "at most {} new {whose} per {}",
                self.max,
                self.period.as_deref().unwrap_or("period")
            ),
            Kind::Daily => format!("at most {} new {whose} a day", self.max),
            Kind::Held => format!("at most {} {whose} paused at once", self.max),
            Kind::Active => format!("at most {} {whose} running at once", self.max),
        };
        McpError::new(
            ErrorKind::Limited,
            format!(
                "Too many requests: {what} (the {} limit); retry after {} s",
                self.limit.as_str(),
                self.retry_after
            ),
        )
        .with_data(json!({
            "limit": self.limit,
            "scope": self.scope,
            "tool": self.tool,
            "max": self.max,
            "period": self.period,
            "retryAfter": self.retry_after,
            "retryAt": self.retry_at,
        }))
    }
}

/// A meter's answer to [`Ask::Admit`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Run it.
    Admitted(Admitted),
    /// Not now.
    Refused(Refusal),
}

/// An admission.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Admitted {
    /// Whether its lease was kept (an `active` limit holds): report its
    /// end with [`Note::Release`].
    pub leased: bool,
    /// More new calls admitted with it (of [`Admit::want`]), to be spent
    /// before `until`.
    pub more: u32,
    /// When the windows they were counted in end (ms since the epoch).
    pub until: u64,
}

impl Verdict {
    /// An admission with no lease and nothing more.
    pub fn admitted() -> Verdict {
        Verdict::Admitted(Admitted::default())
    }
}

/// How long a client is told to wait for a place held by paused calls:
/// they go when their clients answer, which the server cannot foresee.
pub const HELD_RETRY_S: u64 = 10;
/// How long a client is told to wait for a running round to end.
pub const ACTIVE_RETRY_S: u64 = 1;
const DAY_MS: u64 = 86_400_000;
const ALL: &str = "*";

/// The limits an operator raised for this principal, if any.
fn raised(store: &dyn MeterStore) -> Result<Scoped, McpError> {
    Ok(store
        .get("raise", "")?
        .and_then(|r| serde_json::from_str::<serde_json::Value>(&r.text).ok())
        .and_then(|v| super::policy::scoped(&v).ok())
        .unwrap_or_default())
}

/// Decides whether a round may run and, if so, counts it. Exact: each
/// check reads the rows it limits, in the one object that keeps them.
pub fn admit(store: &dyn MeterStore, now_ms: u64, a: &Admit) -> Result<Verdict, McpError> {
    store.expire(now_ms)?;
    let raised = raised(store)?;
    let scopes = [
        (ALL, "principal", a.limits.all.overlaid(&raised.all)),
        (
            a.tool.as_str(),
            "tool",
            a.limits
                .tool
                .overlaid(&raised.tools.get(&a.tool).copied().unwrap_or_default()),
        ),
    ];
    let refused = |limit, scope: &str, max, period, retry_at: u64| {
        Verdict::Refused(Refusal {
            limit,
            scope: scope.to_string(),
            tool: a.tool.clone(),
            max,
            period,
            retry_after: retry_at.saturating_sub(now_ms).div_ceil(1000).max(1),
            retry_at,
        })
    };
    let tool_of = |key: &str| (key != ALL).then_some(key).map(str::to_string);
    // What the windows have left, across both scopes: the most admitted
    // at once.
    let mut left = u64::from(a.want.max(1));
    let mut until = u64::MAX;
    if a.new {
        for (key, scope, l) in &scopes {
            for (kind, max, per_ms) in windows(l) {
                let start = now_ms - now_ms % per_ms;
                let n = window_count(store, kind, key, start)?;
                if n >= u64::from(max) {
                    let period = (kind == Kind::Rate).then(|| format!("{}s", per_ms / 1000));
                    return Ok(refused(kind, scope, max, period, start + per_ms));
                }
                left = left.min(u64::from(max) - n);
                until = until.min(start + per_ms);
            }
            if let Some(max) = l.held {
                // A new call under way may pause: it holds a place until
                // its round ends (`pending`), so two at once cannot both
                // take the last one.
                let tool = tool_of(key);
                let held = store.count("held", tool.as_deref(), now_ms)?
                    + store.count("pending", tool.as_deref(), now_ms)?;
                if held >= u64::from(max) {
                    let at = now_ms + HELD_RETRY_S * 1000;
                    return Ok(refused(Kind::Held, scope, max, None, at));
                }
            }
        }
    }
    let mut leased = false;
    for (key, scope, l) in &scopes {
        if let Some(max) = l.active {
            leased = true;
            if store.count("active", tool_of(key).as_deref(), now_ms)? >= u64::from(max) {
                let at = now_ms + ACTIVE_RETRY_S * 1000;
                return Ok(refused(Kind::Active, scope, max, None, at));
            }
        }
    }
    let pending = a.new && scopes.iter().any(|(_, _, l)| l.held.is_some());
    // Only a call limited by windows alone is admitted in a batch: a
    // held or running call is counted one by one.
    let limited_otherwise = leased || pending;
    if !a.new || limited_otherwise || until == u64::MAX {
        left = 1;
    }
    if a.new {
        for (key, _, l) in &scopes {
            for (kind, _, per_ms) in windows(l) {
                let start = now_ms - now_ms % per_ms;
                let n = window_count(store, kind, key, start)?;
                store.put(&Row {
                    kind: kind.as_str().into(),
                    key: window_key(key, start),
                    tool: key.to_string(),
                    n: n + left,
                    until: start + per_ms,
                    text: String::new(),
                })?;
            }
        }
    }
    let until_ms = now_ms.saturating_add(a.lease_ms.max(1));
    for (kind, keep) in [("active", leased), ("pending", pending)] {
        if keep {
            store.put(&Row {
                kind: kind.into(),
                key: a.lease.clone(),
                tool: a.tool.clone(),
                n: 1,
                until: until_ms,
                text: String::new(),
            })?;
        }
    }
    Ok(Verdict::Admitted(Admitted {
        leased: leased || pending,
        more: u32::try_from(left - 1).unwrap_or(0),
        until: if until == u64::MAX { 0 } else { until },
    }))
}

/// The windows a scope's limits count in: (kind, max, length in ms).
fn windows(l: &Limits) -> Vec<(Kind, u32, u64)> {
    let mut w = Vec::new();
    if let Some(max) = l.daily {
        w.push((Kind::Daily, max, DAY_MS));
    }
    if let Some(r) = l.rate {
        w.push((Kind::Rate, r.max, r.window_ms()));
    }
    w
}

fn window_key(scope: &str, start: u64) -> String {
    format!("{scope}@{start}")
}

fn window_count(
    store: &dyn MeterStore,
    kind: Kind,
    scope: &str,
    start: u64,
) -> Result<u64, McpError> {
    Ok(store
        .get(kind.as_str(), &window_key(scope, start))?
        .map_or(0, |r| r.n))
}

/// Takes what happened in: a round's lease freed, a call held or let go.
pub fn note(store: &dyn MeterStore, now_ms: u64, notes: &[Note]) -> Result<(), McpError> {
    for n in notes {
        match n {
            Note::Release(lease) => {
                store.delete("active", lease)?;
                store.delete("pending", lease)?;
            }
            Note::Held { call, tool, until } => kept(store, now_ms, "held", call, tool, *until)?,
            Note::Waiting { call, tool, until } => {
                kept(store, now_ms, "waiting", call, tool, *until)?
            }
        }
    }
    Ok(())
}

/// A call's row of `kind` kept until `until`, or gone (`until` passed).
fn kept(
    store: &dyn MeterStore,
    now_ms: u64,
    kind: &str,
    call: &str,
    tool: &str,
    until: u64,
) -> Result<(), McpError> {
    if until <= now_ms {
        return store.delete(kind, call);
    }
    store.put(&Row {
        kind: kind.into(),
        key: call.to_string(),
        tool: tool.to_string(),
        n: 1,
        until,
        text: String::new(),
    })
}

/// Keeps an operator's limits for this principal.
pub fn raise(store: &dyn MeterStore, limits: &Scoped) -> Result<(), McpError> {
    let text = serde_json::to_string(limits).map_err(|e| McpError::internal(e.to_string()))?;
    store.put(&Row {
        kind: "raise".into(),
        key: String::new(),
        tool: String::new(),
        n: 0,
        until: u64::MAX,
        text,
    })
}

/// A principal's usage against its limits, for operators: per scope, the
/// limits that hold (the operator's over `limits`) and what counts now.
pub fn usage(
    store: &dyn MeterStore,
    now_ms: u64,
    limits: &Scoped,
) -> Result<serde_json::Value, McpError> {
    store.expire(now_ms)?;
    let raised = raised(store)?;
    let held = limits.overlaid(&raised);
    let rows = store.live(now_ms)?;
    let mut tools: Vec<String> = held.tools.keys().cloned().collect();
    tools.extend(
        rows.iter()
            .filter(|r| r.kind != "raise" && r.tool != ALL && !r.tool.is_empty())
            .map(|r| r.tool.clone()),
    );
    tools.sort_unstable();
    tools.dedup();
    let used = |scope: &str, l: &Limits| {
        let of = |kind: &str| {
            rows.iter()
                .filter(|r| r.kind == kind && (scope == ALL || r.tool == scope))
                .map(|r| r.n)
                .sum::<u64>()
        };
        let window = |kind: Kind, per_ms: u64| {
            let start = now_ms - now_ms % per_ms;
            rows.iter()
                .find(|r| r.kind == kind.as_str() && r.key == window_key(scope, start))
                .map_or(0, |r| r.n)
        };
        json!({
            "limits": l,
            "rate": l.rate.map_or(0, |r| window(Kind::Rate, r.window_ms())),
            "daily": window(Kind::Daily, DAY_MS),
            "held": of("held"),
            "active": of("active"),
            "waiting": of("waiting"),
        })
    };
    let per_tool: serde_json::Map<String, serde_json::Value> = tools
        .iter()
        .map(|t| {
            let l = held.tools.get(t).copied().unwrap_or_default();
            (t.clone(), used(t, &l))
        })
        .collect();
    let waiting: Vec<&str> = rows
        .iter()
        .filter(|r| r.kind == "waiting")
        .map(|r| r.key.as_str())
        .collect();
    Ok(json!({
        "all": used(ALL, &held.all),
        "tools": per_tool,
        "raised": raised,
        "waiting": waiting,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MemoryMeter;

    fn admit_one(m: &MemoryMeter, now: u64, lease: &str, new: bool, limits: Applied) -> Verdict {
        let a = Admit {
            tool: "t".into(),
            lease: lease.into(),
            new,
            limits,
            lease_ms: 60_000,
            want: 1,
        };
        admit(m, now, &a).expect("a memory meter")
    }

    fn ok(v: &Verdict) -> bool {
        matches!(v, Verdict::Admitted(_))
    }

    fn refused(v: &Verdict) -> Option<(Kind, &str)> {
        match v {
            Verdict::Refused(r) => Some((r.limit, r.scope.as_str())),
            Verdict::Admitted(_) => None,
        }
    }

    #[test]
    fn each_kind_trips_at_its_number() {
        let m = MemoryMeter::default();
        let rate = Applied {
            all: Limits::new().rate(3, std::time::Duration::from_secs(60)),
            tool: Limits::new(),
        };
        let t0 = 60_000 * 1000;
        for i in 0..3 {
            assert!(ok(&admit_one(&m, t0 + i, &format!("l{i}"), true, rate)));
            note(&m, t0 + i, &[Note::Release(format!("l{i}"))]).expect("a memory meter");
        }
        let v = admit_one(&m, t0 + 5, "l3", true, rate);
        assert_eq!(refused(&v), Some((Kind::Rate, "principal")));
        let Verdict::Refused(r) = &v else {
            unreachable!()
        };
        assert_eq!(r.retry_at, t0 + 60_000);
        assert_eq!(r.retry_after, 60);
        // A paused call's next round is not a new call.
        assert!(ok(&admit_one(&m, t0 + 6, "l4", false, rate)));
        // The next window opens.
        assert!(ok(&admit_one(&m, t0 + 60_000, "l5", true, rate)));

        let m = MemoryMeter::default();
        let active = Applied {
            all: Limits::new(),
            tool: Limits::new().active(2),
        };
        assert!(ok(&admit_one(&m, 1, "a", true, active)));
        assert!(ok(&admit_one(&m, 1, "b", false, active)));
        assert_eq!(
            refused(&admit_one(&m, 1, "c", true, active)),
            Some((Kind::Active, "tool"))
        );
        note(&m, 2, &[Note::Release("a".into())]).expect("a memory meter");
        assert!(ok(&admit_one(&m, 2, "c", true, active)));
        // A lease never released frees its place when it runs out.
        assert!(ok(&admit_one(&m, 61_000, "d", true, active)));

        let m = MemoryMeter::default();
        let held = Applied {
            all: Limits::new().held(1),
            tool: Limits::new(),
        };
        assert!(ok(&admit_one(&m, 1, "a", true, held)));
        // While it runs, another new call cannot take the last place too.
        assert_eq!(
            refused(&admit_one(&m, 1, "z", true, held)),
            Some((Kind::Held, "principal"))
        );
        let paused = Note::Held {
            call: "c1".into(),
            tool: "t".into(),
            until: 1000,
        };
        note(&m, 1, &[Note::Release("a".into()), paused]).expect("a memory meter");
        assert_eq!(
            refused(&admit_one(&m, 2, "b", true, held)),
            Some((Kind::Held, "principal"))
        );
        // Its next round still runs, and once it ends there is room again.
        assert!(ok(&admit_one(&m, 3, "c", false, held)));
        let ended = Note::Held {
            call: "c1".into(),
            tool: "t".into(),
            until: 0,
        };
        note(&m, 4, &[Note::Release("c".into()), ended]).expect("a memory meter");
        assert!(ok(&admit_one(&m, 5, "d", true, held)));

        let m = MemoryMeter::default();
        let daily = Applied {
            all: Limits::new(),
            tool: Limits::new().daily(1),
        };
        assert!(ok(&admit_one(&m, 5, "a", true, daily)));
        let v = admit_one(&m, 6, "b", true, daily);
        assert_eq!(refused(&v), Some((Kind::Daily, "tool")));
        assert!(!ok(&v));
        assert!(ok(&admit_one(&m, DAY_MS, "c", true, daily)));
    }

    #[test]
    fn a_window_only_call_is_admitted_in_a_batch_never_past_its_number() {
        let m = MemoryMeter::default();
        let rate = Applied {
            all: Limits::new().rate(10, std::time::Duration::from_secs(60)),
            tool: Limits::new(),
        };
        let want = |lease: &str, want: u32| Admit {
            tool: "t".into(),
            lease: lease.into(),
            new: true,
            limits: rate,
            lease_ms: 60_000,
            want,
        };
        let Verdict::Admitted(a) = admit(&m, 1000, &want("a", 4)).expect("a memory meter") else {
            panic!("refused")
        };
        assert_eq!((a.leased, a.more, a.until), (false, 3, 60_000));
        let Verdict::Admitted(a) = admit(&m, 1000, &want("b", 64)).expect("a memory meter") else {
            panic!("refused")
        };
        assert_eq!(a.more, 5, "only what the window has left");
        assert!(!ok(&admit(&m, 1000, &want("c", 1)).expect("a memory meter")));
        // A call held to `active` is counted one by one, with its lease.
        let active = Applied {
            all: Limits::new().active(5),
            tool: Limits::new().daily(100),
        };
        let a = Admit {
            limits: active,
            ..want("d", 8)
        };
        let Verdict::Admitted(a) = admit(&m, 1000, &a).expect("a memory meter") else {
            panic!("refused")
        };
        assert_eq!((a.leased, a.more), (true, 0));
    }

    #[test]
    fn an_operator_raises_a_limit_for_one_principal() {
        let m = MemoryMeter::default();
        let limits = Applied {
            all: Limits::new().active(1),
            tool: Limits::new(),
        };
        assert!(ok(&admit_one(&m, 1, "a", true, limits)));
        assert!(refused(&admit_one(&m, 1, "b", true, limits)).is_some());
        let up = Scoped {
            all: Limits::new().active(2),
            tools: Default::default(),
        };
        raise(&m, &up).expect("a memory meter");
        assert!(ok(&admit_one(&m, 1, "b", true, limits)));
        let u = usage(
            &m,
            1,
            &Scoped {
                all: limits.all,
                tools: Default::default(),
            },
        )
        .expect("a memory meter");
        assert_eq!(u["all"]["active"], 2);
        assert_eq!(u["all"]["limits"]["active"], 2);
        assert_eq!(u["tools"]["t"]["active"], 2);
    }

    #[test]
    fn a_rate_built_with_no_window_counts_in_one_second() {
        // `Rate`'s fields are public: a zero window must not divide by zero.
        let m = MemoryMeter::default();
        let zero = Limits {
            rate: Some(crate::limits::Rate { max: 1, per_s: 0 }),
            ..Limits::new()
        };
        let limits = Applied {
            all: zero,
            tool: Limits::new(),
        };
        assert!(ok(&admit_one(&m, 1, "a", true, limits)));
        assert!(refused(&admit_one(&m, 2, "b", true, limits)).is_some());
        let scoped = Scoped {
            all: zero,
            tools: Default::default(),
        };
        assert_eq!(
            usage(&m, 3, &scoped).expect("a memory meter")["all"]["rate"],
            1
        );
    }

    #[test]
    fn a_refusal_says_what_and_when() {
        let r = Refusal {
            limit: Kind::Rate,
            scope: "tool".into(),
            tool: "search".into(),
            max: 10,
            period: Some("60s".into()),
            retry_after: 7,
            retry_at: 7000,
        };
        let e = r.error();
        assert_eq!(e.code(), -32013);
        assert_eq!(e.http_status(), 429);
        assert!(
            e.message
                .contains("at most 10 new calls of \"search\" per 60s"),
            "{}",
            e.message
        );
        let d = e.data.expect("a memory meter");
        assert_eq!(
            (d["limit"].as_str(), d["retryAfter"].as_u64()),
            (Some("rate"), Some(7))
        );
    }
}
