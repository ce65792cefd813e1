//! The admin API's answers as this CLI reads them: the server's
//! `admin::model` shapes (camelCase on the wire), mirrored rather than
//! shared (the client crate does not depend on the server's). Every field
//! has a default and kinds and statuses stay strings, so a server a version
//! ahead (a new status, a new field) still lists; `--json` prints the
//! answer as it came, whatever this reads of it.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One call in a listing.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct CallSummary {
    pub(crate) id: String,
    pub(crate) kind: String,
    pub(crate) tool: String,
    pub(crate) status: String,
    pub(crate) principal: String,
    pub(crate) created_ms: u64,
    pub(crate) updated_ms: u64,
    pub(crate) round: u32,
    pub(crate) waiting_on: Vec<String>,
    pub(crate) note: Option<String>,
    pub(crate) code: String,
}

/// Counts over every kept call, filter or not.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Counts {
    pub(crate) total: usize,
    pub(crate) by_status: BTreeMap<String, usize>,
    pub(crate) by_tool: BTreeMap<String, usize>,
    pub(crate) paused_by_age: BTreeMap<String, usize>,
}

/// `GET calls`: one page.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Listing {
    pub(crate) calls: Vec<CallSummary>,
    pub(crate) matched: usize,
    pub(crate) counts: Counts,
    pub(crate) next_cursor: Option<String>,
    pub(crate) now_ms: u64,
    pub(crate) paused_tools: Vec<String>,
}

/// One question a round asked (or the call asks now).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Asked {
    pub(crate) key: String,
    pub(crate) method: String,
    pub(crate) message: Option<String>,
}

/// One round, as it ended. The server's `Mark` may come snake_case
/// (`at_ms`): both spellings are read.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Mark {
    pub(crate) round: u32,
    #[serde(alias = "at_ms")]
    pub(crate) at_ms: u64,
    pub(crate) code: String,
    pub(crate) end: String,
    pub(crate) asked: Vec<Asked>,
    pub(crate) why: Option<String>,
}

/// One answer in a call's history; `value` is `"[hidden]"` unless the
/// tool shows that key.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct AnswerView {
    pub(crate) key: String,
    pub(crate) at_ms: u64,
    pub(crate) outcome: String,
    pub(crate) value: Value,
    /// Who answered, when not the call's client.
    pub(crate) by: Option<String>,
}

/// One `once` effect in a call's history.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct EffectView {
    pub(crate) key: String,
    pub(crate) at_ms: u64,
}

/// `GET calls/<id>`: one call, whole.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct CallDetail {
    #[serde(flatten)]
    pub(crate) summary: CallSummary,
    pub(crate) arguments: Value,
    pub(crate) rounds: Vec<Mark>,
    pub(crate) pending: Vec<Asked>,
    pub(crate) answers: Vec<AnswerView>,
    pub(crate) effects: Vec<EffectView>,
    pub(crate) code_versions: Vec<String>,
    pub(crate) waited_ms: u64,
    pub(crate) worked_ms: u64,
    pub(crate) trace_id: String,
    pub(crate) notes: Vec<Note>,
}

/// One thing an operator did to a call.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Note {
    pub(crate) at_ms: u64,
    pub(crate) what: String,
}

/// What a cancel or a purge did, id by id.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Done {
    pub(crate) done: Vec<String>,
    pub(crate) skipped: BTreeMap<String, String>,
}

/// `GET tools`: each tool and whether an operator paused it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Tools {
    pub(crate) tools: Vec<ToolState>,
}

/// One tool's state (also `POST tools/<name>/pause`'s answer, as
/// `{"tool", "paused"}`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ToolState {
    #[serde(alias = "tool")]
    pub(crate) name: String,
    pub(crate) paused: bool,
}

/// `GET tools/versions`: per tool, what the server's code runs of it and
/// the unfinished calls on each version.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Versions {
    pub(crate) tools: Vec<ToolVersions>,
    pub(crate) now_ms: u64,
}

/// One tool's versions.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ToolVersions {
    pub(crate) tool: String,
    pub(crate) served: bool,
    pub(crate) current: Option<String>,
    /// `pinned` or `upgrade` (absent: not served).
    pub(crate) policy: Option<String>,
    pub(crate) keeps: Vec<String>,
    pub(crate) versions: Vec<VersionCalls>,
}

/// One version: what the code does with its calls, and how many there are.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct VersionCalls {
    pub(crate) version: String,
    /// `current`, `kept`, `upgrades` or `missing`.
    pub(crate) standing: String,
    pub(crate) waiting: usize,
    pub(crate) working: usize,
    pub(crate) parked: usize,
}
