//! What a principal may do: the limits a tool author sets in code
//! ([`crate::app::Tool::limits`], [`crate::app::Registry::limits`]) and an
//! operator overrides with the `LIMITS` var, field by field.
//!
//! Every limit is per principal (the signed-in subject, the API token's
//! name; on an open server every caller is the one principal `""`), over
//! all of its calls (`all`) or the calls of one tool (`tools`).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

/// The limits of one scope. `None`: no limit of that kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// New calls per period (a fixed window: `"10/60s"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Calls held paused at once (waiting on the client, a person or a
    /// timer, kept by the server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<u32>,
    /// Rounds running at once. A paused call is not running: it holds
    /// nothing here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<u32>,
    /// New calls per UTC day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily: Option<u32>,
}

impl Limits {
    /// No limit of any kind.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `max` new calls in each window of `per` (whole seconds, at
    /// least one).
    pub fn rate(mut self, max: u32, per: std::time::Duration) -> Self {
        let per_s = u32::try_from(per.as_secs().max(1)).unwrap_or(u32::MAX);
        self.rate = Some(Rate { max, per_s });
        self
    }

    /// At most `max` calls held paused at once.
    pub fn held(mut self, max: u32) -> Self {
        self.held = Some(max);
        self
    }

    /// At most `max` rounds running at once.
    pub fn active(mut self, max: u32) -> Self {
        self.active = Some(max);
        self
    }

    /// At most `max` new calls per UTC day.
    pub fn daily(mut self, max: u32) -> Self {
        self.daily = Some(max);
        self
    }

    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.rate.is_some() || self.held.is_some() || self.active.is_some() || self.daily.is_some()
    }

    /// `self`, with each kind `over` sets taken from `over`.
    pub fn overlaid(self, over: &Limits) -> Limits {
        Limits {
            rate: over.rate.or(self.rate),
            held: over.held.or(self.held),
            active: over.active.or(self.active),
            daily: over.daily.or(self.daily),
        }
    }
}

/// `max` new calls per window of `per_s` seconds; written `"max/<n>s"`
/// (`"100/60s"`), or with `m`, `h`, `d` for minutes, hours, days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Calls per window.
    pub max: u32,
    /// The window, in seconds.
    pub per_s: u32,
}

impl Rate {
    /// The window in ms: at least a second (the fields are public, and a
    /// window of none would divide by zero).
    pub fn window_ms(&self) -> u64 {
        u64::from(self.per_s.max(1)) * 1000
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}s", self.max, self.per_s)
    }
}

impl std::str::FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("a rate is `<calls>/<window>` like \"100/60s\", not {s:?}");
        let (max, per) = s.trim().split_once('/').ok_or_else(bad)?;
        let max = max.trim().parse::<u32>().map_err(|_| bad())?;
        let per = per.trim();
        let (n, unit) = match per.find(|c: char| !c.is_ascii_digit()) {
            Some(i) => per.split_at(i),
            None => (per, "s"),
        };
        let n = if n.is_empty() {
            1
        } else {
            n.parse::<u32>().map_err(|_| bad())?
        };
        let scale = match unit {
            "s" => 1,
            "m" | "min" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => return Err(bad()),
        };
        let per_s = n.checked_mul(scale).filter(|p| *p > 0).ok_or_else(bad)?;
        Ok(Rate { max, per_s })
    }
}

impl Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Limits over all of a principal's calls and per tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Scoped {
    /// Over all of the principal's calls.
    #[serde(default, skip_serializing_if = "is_none")]
    pub all: Limits,
    /// Over the principal's calls of each tool named.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, Limits>,
}

fn is_none(l: &Limits) -> bool {
    !l.any()
}

impl Scoped {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.all.any() || self.tools.values().any(Limits::any)
    }

    /// `self` with what `over` sets, kind by kind and tool by tool.
    pub fn overlaid(&self, over: &Scoped) -> Scoped {
        let mut out = self.clone();
        out.all = out.all.overlaid(&over.all);
        for (tool, l) in &over.tools {
            let e = out.tools.entry(tool.clone()).or_default();
            *e = e.overlaid(l);
        }
        out
    }

    /// What holds for `tool`: the limits over all calls, and the tool's.
    pub fn for_tool(&self, tool: &str) -> Applied {
        Applied {
            all: self.all,
            tool: self.tools.get(tool).copied().unwrap_or_default(),
        }
    }
}

/// The limits one call is held to: over all of its principal's calls,
/// and over its tool's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// Over all of the principal's calls.
    pub all: Limits,
    /// Over the principal's calls of this tool.
    pub tool: Limits,
}

/// Every limit the server enforces: for every principal (`all`, `tools`),
/// then each named principal's own (`principals`), laid over them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// For every principal, over all of its calls.
    pub all: Limits,
    /// For every principal, over its calls of each tool named.
    pub tools: BTreeMap<String, Limits>,
    /// Each principal named (its principal string: an API token's name),
    /// over the rest.
    pub principals: Vec<(String, Scoped)>,
}

impl Policy {
    /// Whether any limit is set: with none, nothing is metered and no
    /// request pays for it.
    pub fn any(&self) -> bool {
        // A constant without the feature: everything limits do after this
        // is left out of the build.
        cfg!(any(feature = "limits", not(target_arch = "wasm32")))
            && (self.any_for_every() || self.principals.iter().any(|(_, s)| s.any()))
    }

    /// Whether any limit is set for every principal (not only named ones).
    pub fn any_for_every(&self) -> bool {
        cfg!(any(feature = "limits", not(target_arch = "wasm32")))
            && (self.all.any() || self.tools.values().any(Limits::any))
    }

    /// The limits for every principal, as one scope's.
    pub fn every(&self) -> Scoped {
        Scoped {
            all: self.all,
            tools: self.tools.clone(),
        }
    }

    /// `self` (the code's) with what `over` (the `LIMITS` var) sets.
    pub fn overlaid(&self, over: &Policy) -> Policy {
        let mut out = Policy {
            all: self.all.overlaid(&over.all),
            tools: self.every().overlaid(&over.every()).tools,
            principals: self.principals.clone(),
        };
        for (p, s) in &over.principals {
            match out.principals.iter_mut().find(|(q, _)| q == p) {
                Some((_, e)) => *e = e.overlaid(s),
                None => out.principals.push((p.clone(), s.clone())),
            }
        }
        out
    }

    /// What `principal`'s calls of `tool` are held to, made without
    /// copying the policy (every metered call asks).
    pub fn applied(&self, principal: &str, tool: &str) -> Applied {
        let tool_of = |s: &Scoped| s.tools.get(tool).copied().unwrap_or_default();
        let mut a = Applied {
            all: self.all,
            tool: self.tools.get(tool).copied().unwrap_or_default(),
        };
        if let Some(own) = self.own(principal) {
            a.all = a.all.overlaid(&own.all);
            a.tool = a.tool.overlaid(&tool_of(own));
        }
        a
    }

    /// `principal`'s own limits, if `LIMITS` names it (a short list: read
    /// through, not indexed).
    pub fn own(&self, principal: &str) -> Option<&Scoped> {
        self.principals
            .iter()
            .find(|(p, _)| p == principal)
            .map(|(_, s)| s)
    }

    /// What `principal`'s calls are held to.
    pub fn for_principal(&self, principal: &str) -> Scoped {
        match self.own(principal) {
            Some(own) => self.every().overlaid(own),
            None => self.every(),
        }
    }
}

// Read by hand over the JSON value reader every worker links (see
// `limits::wire`).

pub(super) type Read<T> = Result<T, String>;

pub(super) fn object<'v>(v: &'v Value, what: &str) -> Read<&'v Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| format!("{what} must be an object"))
}

/// Refuses a key `known` does not name: a misspelt limit must not read as
/// no limit.
pub(super) fn only(m: &Map<String, Value>, known: &[&str], what: &str) -> Read<()> {
    match m.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "unknown field `{k}` in {what}; expected one of {}",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

pub(super) fn count(v: &Value, what: &str) -> Read<Option<u32>> {
    match v {
        Value::Null => Ok(None),
        v => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| format!("{what} must be a whole number")),
    }
}

pub(super) fn text<'v>(v: &'v Value, what: &str) -> Read<&'v str> {
    v.as_str().ok_or_else(|| format!("{what} must be a string"))
}

pub(super) fn number(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// One scope's limits: `{"rate": "100/60s", "held": 5, "active": 2,
/// "daily": 1000}` (each optional).
pub(super) fn limits(v: &Value) -> Read<Limits> {
    if v.is_null() {
        return Ok(Limits::default());
    }
    let m = object(v, "a scope's limits")?;
    only(m, &["rate", "held", "active", "daily"], "a scope's limits")?;
    let rate = match &v["rate"] {
        Value::Null => None,
        r => Some(text(r, "rate")?.parse()?),
    };
    Ok(Limits {
        rate,
        held: count(&v["held"], "held")?,
        active: count(&v["active"], "active")?,
        daily: count(&v["daily"], "daily")?,
    })
}

pub(super) fn tools(v: &Value) -> Read<std::collections::BTreeMap<String, Limits>> {
    if v.is_null() {
        return Ok(Default::default());
    }
    let mut out = std::collections::BTreeMap::new();
    for (tool, l) in object(v, "tools")? {
        out.insert(tool.clone(), limits(l)?);
    }
    Ok(out)
}

/// `{"all": {...}, "tools": {"t": {...}}}`.
pub fn scoped(v: &Value) -> Read<Scoped> {
    if v.is_null() {
        return Ok(Scoped::default());
    }
    only(object(v, "limits")?, &["all", "tools"], "limits")?;
    Ok(Scoped {
        all: limits(&v["all"])?,
        tools: tools(&v["tools"])?,
    })
}

/// The `LIMITS` var: a [`Scoped`] and `principals`, each a [`Scoped`].
pub(super) fn policy(v: &Value) -> Read<Policy> {
    only(
        object(v, "LIMITS")?,
        &["all", "tools", "principals"],
        "LIMITS",
    )?;
    let mut principals = Vec::new();
    if !v["principals"].is_null() {
        for (p, s) in object(&v["principals"], "principals")? {
            principals.push((p.clone(), scoped(s)?));
        }
    }
    Ok(Policy {
        all: limits(&v["all"])?,
        tools: tools(&v["tools"])?,
        principals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_as_written() {
        let r: Rate = "100/60s".parse().expect("as written");
        assert_eq!((r.max, r.per_s), (100, 60));
        assert_eq!("5/m".parse::<Rate>().expect("as written").per_s, 60);
        assert_eq!("5/2h".parse::<Rate>().expect("as written").per_s, 7200);
        assert_eq!("5/10".parse::<Rate>().expect("as written").per_s, 10);
        assert!("5/0s".parse::<Rate>().is_err());
        assert!("five/s".parse::<Rate>().is_err());
        assert!("5/1w".parse::<Rate>().is_err());
        assert_eq!(r.to_string(), "100/60s");
    }

    #[test]
    fn the_var_lays_over_the_code_kind_by_kind() {
        let code = Policy {
            all: Limits::new().held(5).daily(100),
            tools: [("slow".to_string(), Limits::new().active(1))].into(),
            principals: Default::default(),
        };
        let var = Policy::parse(
            r#"{"all": {"daily": 10}, "tools": {"slow": {"rate": "2/60s"}},
                "principals": {"ada": {"all": {"held": 1}}}}"#,
        )
        .expect("as written");
        let p = code.overlaid(&var);
        assert_eq!(p.all, Limits::new().held(5).daily(10));
        let slow = p.every().for_tool("slow").tool;
        assert_eq!(slow.active, Some(1));
        assert_eq!(slow.rate, Some(Rate { max: 2, per_s: 60 }));
        assert_eq!(p.for_principal("ada").all.held, Some(1));
        assert_eq!(p.for_principal("ada").all.daily, Some(10));
        assert_eq!(p.for_principal("bob").all.held, Some(5));
        for who in ["ada", "bob"] {
            assert_eq!(
                p.applied(who, "slow"),
                p.for_principal(who).for_tool("slow")
            );
        }
        assert!(p.any());
        assert!(!Policy::default().any());
        assert!(Policy::parse(r#"{"all": {"hled": 1}}"#).is_err());
    }
}
