//! What the admin API answers, as JSON (camelCase on the wire): the shapes
//! the CLI, the console and scripts read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::{Asked, Mark};

pub use crate::kept::summary::{CallSummary, Kind};
pub use crate::kept::versions::{tally, Policy, Standing, ToolCode, ToolVersions, VersionCalls};
/// Where a call is, as an operator reads it: the kept call's one status.
pub use crate::kept::Status;

/// One answer in a call's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerView {
    /// The key it answers.
    pub key: String,
    /// When it came (ms since the epoch; 0: not known, recorded before
    /// the trail was).
    pub at_ms: u64,
    /// `accepted`, `declined`, `cancelled` (an elicitation), `answered`
    /// (anything else) or `error` (the client reported a failure).
    pub outcome: String,
    /// The value, only where the tool shows this key
    /// (`Tool::admin_shows`); otherwise `"[hidden]"`.
    pub value: Value,
    /// Who answered, when not the call's client (an operator on its
    /// behalf: `operator:<name>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// One `once` effect in a call's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectView {
    /// Its key.
    pub key: String,
    /// When it ran (ms since the epoch; 0: not known).
    pub at_ms: u64,
}

/// One call, whole: `GET /admin/api/calls/<id>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallDetail {
    /// As listed.
    #[serde(flatten)]
    pub summary: CallSummary,
    /// Its arguments (what the client called it with).
    pub arguments: Value,
    /// Each round: when, on which code, how it ended, what it asked.
    pub rounds: Vec<Mark>,
    /// What it asks now.
    pub pending: Vec<Asked>,
    /// The answers it has, values hidden unless the tool shows them.
    pub answers: Vec<AnswerView>,
    /// Its `once` effects.
    pub effects: Vec<EffectView>,
    /// The code versions that ran it, oldest first.
    pub code_versions: Vec<String>,
    /// How long it has waited for the client to answer (ms).
    pub waited_ms: u64,
    /// How long it has existed otherwise: rounds, timers, the server's
    /// own work (ms).
    pub worked_ms: u64,
    /// The W3C trace id its rounds' spans carry.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trace_id: String,
    /// What operators did to it (paused, resumed, answered, asked again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<crate::engine::Note>,
}

/// What a listing is narrowed to (`GET /admin/api/calls?…`, each optional).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Filter {
    /// Only this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Only these statuses (`status=waiting,parked`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<Status>,
    /// Only this principal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Only this wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Kind>,
    /// Only calls unchanged for at least this many ms (`olderThan=3600000`,
    /// or a duration such as `1h` in the query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older_than_ms: Option<u64>,
}

impl Filter {
    /// Whether `c` passes, at `now_ms`.
    pub fn admits(&self, c: &CallSummary, now_ms: u64) -> bool {
        self.tool.as_ref().is_none_or(|t| *t == c.tool)
            && (self.status.is_empty() || self.status.contains(&c.status))
            && self.principal.as_ref().is_none_or(|p| *p == c.principal)
            && self.kind.is_none_or(|k| k == c.kind)
            && self
                .older_than_ms
                .is_none_or(|age| now_ms.saturating_sub(c.updated_ms) >= age)
    }
}

/// Counts over every call the server keeps (not only the page).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Every kept call.
    pub total: usize,
    /// By status (every status named, zeros included).
    pub by_status: BTreeMap<String, usize>,
    /// By tool.
    pub by_tool: BTreeMap<String, usize>,
    /// Paused calls (waiting or parked) by how long they have waited:
    /// `<1m`, `<1h`, `<1d`, `≥1d`.
    pub paused_by_age: BTreeMap<String, usize>,
}

/// The buckets of [`Counts::paused_by_age`], youngest first.
pub const AGE_BUCKETS: [(&str, u64); 4] = [
    ("<1m", 60_000),
    ("<1h", 3_600_000),
    ("<1d", 86_400_000),
    ("≥1d", u64::MAX),
];

impl Counts {
    /// Counts `calls` at `now_ms`.
    pub fn of<'a>(calls: impl IntoIterator<Item = &'a CallSummary>, now_ms: u64) -> Self {
        let mut c = Counts::default();
        for s in Status::ALL {
            c.by_status.insert(s.as_str().to_string(), 0);
        }
        for (b, _) in AGE_BUCKETS {
            c.paused_by_age.insert(b.to_string(), 0);
        }
        for call in calls {
            c.total += 1;
            *c.by_status
                .entry(call.status.as_str().to_string())
                .or_default() += 1;
            *c.by_tool.entry(call.tool.clone()).or_default() += 1;
            if matches!(call.status, Status::Waiting | Status::Parked) {
                let age = now_ms.saturating_sub(call.updated_ms);
                if let Some((b, _)) = AGE_BUCKETS.iter().find(|(_, max)| age < *max) {
                    *c.paused_by_age.entry((*b).to_string()).or_default() += 1;
                }
            }
        }
        c
    }
}

/// `GET /admin/api/calls`: one page of the calls that pass the filter
/// (the longest unchanged first), and counts over all of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    /// The page.
    pub calls: Vec<CallSummary>,
    /// How many pass the filter.
    pub matched: usize,
    /// Counts over every kept call, filter or not.
    pub counts: Counts,
    /// The cursor of the next page (`cursor=`), if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The server's clock when listed (ms since the epoch): ages are
    /// `now - updatedMs`.
    pub now_ms: u64,
    /// Tools paused by an operator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paused_tools: Vec<String>,
}

/// `GET /admin/api/tools/versions`: per tool the code serves and per tool
/// found on kept calls, what the code runs of it and the unfinished calls
/// on each of its versions (every keeper's, finished calls not counted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Versions {
    /// Each tool, by name.
    pub tools: Vec<ToolVersions>,
    /// The server's clock when counted (ms since the epoch).
    pub now_ms: u64,
}

impl Versions {
    /// Counts `calls` against what `code` runs, at `now_ms`.
    pub fn of(code: &[ToolCode], calls: &[CallSummary], now_ms: u64) -> Self {
        let calls = calls
            .iter()
            .map(|c| (c.tool.as_str(), c.version.as_str(), c.status));
        Self {
            tools: tally(code, calls),
            now_ms,
        }
    }
}

/// The outcome for each id of a cancel or a purge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Done {
    /// The ids acted on.
    pub done: Vec<String>,
    /// The ids left alone, and why (already finished, not found).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skipped: BTreeMap<String, String>,
}
