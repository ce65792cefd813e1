//! What `calls list`, `calls cancel --filter`, `calls export` and `calls
//! purge` narrow to, and how each travels: as a listing's query
//! (`tool=&status=a,b&…&olderThan=<ms>`) or as a cancel's JSON body
//! (`{"filter": {tool, status: [...], principal, kind, olderThanMs}}`).

use serde_json::{json, Map, Value};
use url::Url;

use super::super::Usage;

/// The statuses the server reports, in the order summaries show them.
pub(crate) const STATUSES: [&str; 6] = [
    "waiting",
    "working",
    "parked",
    "completed",
    "failed",
    "cancelled",
];

/// The statuses nothing happens to any more: the only ones a purge may
/// name (a paused call is cancelled first, so its client hears of it).
pub(crate) const FINAL: [&str; 3] = ["completed", "failed", "cancelled"];

/// The wires a call can be kept for.
const KINDS: [&str; 3] = ["durable", "session", "task"];

/// Each field optional; empty is "every call".
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Filter {
    pub(crate) tool: Option<String>,
    pub(crate) status: Vec<String>,
    pub(crate) principal: Option<String>,
    pub(crate) kind: Option<String>,
    pub(crate) older_than_ms: Option<u64>,
}

impl Filter {
    /// Narrows to nothing: a cancel with it would stop every kept call.
    pub(crate) fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The filter as a listing's (or an export's) query pairs. The age
    /// goes as ms, which every server reads, whatever was typed.
    pub(crate) fn to_query(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if let Some(t) = &self.tool {
            q.push(("tool", t.clone()));
        }
        if !self.status.is_empty() {
            q.push(("status", self.status.join(",")));
        }
        if let Some(p) = &self.principal {
            q.push(("principal", p.clone()));
        }
        if let Some(k) = &self.kind {
            q.push(("kind", k.clone()));
        }
        if let Some(ms) = self.older_than_ms {
            q.push(("olderThan", ms.to_string()));
        }
        q
    }

    /// The filter as `POST calls/cancel` reads it (the server's `Filter`,
    /// camelCase; absent fields left out rather than sent as null).
    pub(crate) fn to_json(&self) -> Value {
        let mut m = Map::new();
        if let Some(t) = &self.tool {
            m.insert("tool".into(), json!(t));
        }
        if !self.status.is_empty() {
            m.insert("status".into(), json!(self.status));
        }
        if let Some(p) = &self.principal {
            m.insert("principal".into(), json!(p));
        }
        if let Some(k) = &self.kind {
            m.insert("kind".into(), json!(k));
        }
        if let Some(ms) = self.older_than_ms {
            m.insert("olderThanMs".into(), json!(ms));
        }
        Value::Object(m)
    }
}

/// Sets `pairs` as `url`'s query, form-encoded; none leaves no `?`.
pub(crate) fn with_query(url: &mut Url, pairs: &[(&str, String)]) {
    if !pairs.is_empty() {
        url.query_pairs_mut()
            .extend_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
    }
}

/// `--status a,b`: each a status the server knows (a typo would otherwise
/// match nothing, or be ignored by the server and match everything).
pub(crate) fn statuses(s: &str) -> Result<Vec<String>, Usage> {
    let mut out: Vec<String> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if !STATUSES.contains(&part) {
            return Err(Usage(format!(
                "--status {part}: expected some of {}",
                STATUSES.join(",")
            )));
        }
        if !out.iter().any(|o| o == part) {
            out.push(part.to_string());
        }
    }
    if out.is_empty() {
        return Err(Usage("--status needs at least one status".into()));
    }
    Ok(out)
}

/// `--kind`: one of the wires.
pub(crate) fn kind(s: &str) -> Result<String, Usage> {
    if KINDS.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(Usage(format!("--kind {s}: expected {}", KINDS.join("|"))))
    }
}

/// A duration as ms: a plain number is ms; else a number and one unit,
/// `ms`, `s`, `m`, `h` or `d` (`90s`, `15m`, `2h`, `7d`).
pub(crate) fn duration_ms(s: &str) -> Result<u64, Usage> {
    let bad = || {
        Usage(format!(
            "{s}: expected a duration such as 90s, 15m, 2h, 7d (or ms)"
        ))
    };
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let per = match unit {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    n.checked_mul(per).ok_or_else(bad)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_ms_and_each_unit_and_refuse_the_rest() {
        assert_eq!(duration_ms("1500").ok(), Some(1_500));
        assert_eq!(duration_ms("250ms").ok(), Some(250));
        assert_eq!(duration_ms("90s").ok(), Some(90_000));
        assert_eq!(duration_ms("15m").ok(), Some(900_000));
        assert_eq!(duration_ms("2h").ok(), Some(7_200_000));
        assert_eq!(duration_ms("7d").ok(), Some(604_800_000));
        assert_eq!(duration_ms("0").ok(), Some(0));
        for bad in [
            "",
            "h",
            "1.5h",
            "-1h",
            "2w",
            "1h30m",
            "99999999999999999999d",
        ] {
            assert!(duration_ms(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn statuses_and_kinds_are_checked() {
        assert_eq!(
            statuses("waiting, parked,waiting").ok(),
            Some(vec!["waiting".to_string(), "parked".to_string()])
        );
        assert!(statuses("waitng").is_err());
        assert!(statuses(",").is_err());
        assert_eq!(kind("task").ok(), Some("task".to_string()));
        assert!(kind("tasks").is_err());
    }

    fn full() -> Filter {
        Filter {
            tool: Some("deploy now".into()),
            status: vec!["waiting".into(), "parked".into()],
            principal: Some("ada&bob".into()),
            kind: Some("durable".into()),
            older_than_ms: Some(3_600_000),
        }
    }

    #[test]
    fn a_filter_becomes_a_query_with_the_age_in_ms() {
        let mut url = Url::parse("http://h:8787/admin/api/calls").unwrap();
        with_query(&mut url, &full().to_query());
        assert_eq!(
            url.query(),
            Some(
                "tool=deploy+now&status=waiting%2Cparked&principal=ada%26bob&kind=durable&olderThan=3600000"
            )
        );
        let mut url = Url::parse("http://h:8787/admin/api/calls").unwrap();
        with_query(&mut url, &Filter::default().to_query());
        assert_eq!(url.as_str(), "http://h:8787/admin/api/calls");
    }

    #[test]
    fn a_filter_becomes_a_cancel_body_without_nulls() {
        assert_eq!(
            full().to_json(),
            json!({
                "tool": "deploy now",
                "status": ["waiting", "parked"],
                "principal": "ada&bob",
                "kind": "durable",
                "olderThanMs": 3_600_000
            })
        );
        let only_tool = Filter {
            tool: Some("refund".into()),
            ..Filter::default()
        };
        assert_eq!(only_tool.to_json(), json!({"tool": "refund"}));
        assert!(!only_tool.is_empty());
        assert!(Filter::default().is_empty());
    }
}
