//! What an admin request asks for ([`Op`]), and how the filter a listing
//! is narrowed by reads from a query (the API's and the console's alike).

use crate::admin::{Filter, Kind, Status};
use crate::kept::page::Key;

/// The longest page a listing gives.
const MAX_LIMIT: usize = 500;
const DEFAULT_LIMIT: usize = 50;

/// What the operator asked for.
pub(crate) enum Op {
    List {
        filter: Filter,
        limit: usize,
        /// Where the last page ended (see `paging`).
        cursor: Option<Key>,
    },
    Show(String),
    Cancel {
        ids: Option<Vec<String>>,
        filter: Filter,
    },
    /// Pause (`hold`) or resume the calls named.
    Hold {
        ids: Vec<String>,
        hold: bool,
    },
    /// For one call, from outside its client: answer the question pending
    /// under `key` on its behalf (`answer`), or ask again from `key` (no
    /// `answer`: a rewind).
    Outside {
        id: String,
        key: String,
        answer: Option<serde_json::Value>,
    },
    Export(Filter),
    Purge(Filter),
    Tools,
    /// Per tool and version, the unfinished calls on it
    /// (`GET /admin/api/tools/versions`).
    Versions,
    Pause {
        tool: String,
        pause: bool,
    },
    /// Principals' usage against their limits (`GET /admin/api/limits`,
    /// `…/limits/<principal>`); with `raise`, an operator's limits for
    /// that principal first (`POST`).
    Limits {
        principal: Option<String>,
        raise: Option<crate::limits::Scoped>,
    },
    /// A console sign-in link opened: spend it, then sign the browser in.
    Enter(Box<Enter>),
}

/// A sign-in link that verified, and the console cookie it becomes once
/// it is spent (its first use).
pub(crate) struct Enter {
    pub(crate) nonce: String,
    pub(crate) until_ms: u64,
    pub(crate) set_cookie: String,
}

/// Reads a duration: ms, or a number with `s`, `m`, `h` or `d`.
pub(crate) fn duration_ms(s: &str) -> Option<u64> {
    let s = s.trim();
    let (n, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let n: u64 = n.parse().ok()?;
    let factor = match unit {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    Some(n.saturating_mul(factor))
}

/// The query pairs of a path.
pub(crate) fn query(path: &str) -> Vec<(String, String)> {
    path.split_once('?')
        .map(|(_, q)| {
            form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// A filter (and page) from query pairs; `Err` names what does not read.
pub(crate) fn filter_of(
    pairs: &[(String, String)],
) -> Result<(Filter, usize, Option<Key>), String> {
    let mut f = Filter::default();
    let (mut limit, mut cursor) = (DEFAULT_LIMIT, None);
    for (k, v) in pairs {
        if v.is_empty() {
            continue;
        }
        match k.as_str() {
            "tool" => f.tool = Some(v.clone()),
            "principal" => f.principal = Some(v.clone()),
            "status" => {
                for s in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    f.status
                        .push(Status::parse(s).ok_or_else(|| format!("unknown status {s:?}"))?);
                }
            }
            "kind" => f.kind = Some(Kind::parse(v).ok_or_else(|| format!("unknown kind {v:?}"))?),
            "olderThan" | "older_than" => {
                f.older_than_ms = Some(
                    duration_ms(v).ok_or_else(|| format!("olderThan {v:?} is not a duration"))?,
                )
            }
            "limit" => {
                limit = v
                    .parse::<usize>()
                    .map_err(|_| "limit must be a whole number".to_string())?
                    .clamp(1, MAX_LIMIT)
            }
            "cursor" => cursor = Some(super::paging::decode(v)?),
            _ => {}
        }
    }
    Ok((f, limit, cursor))
}
