//! The journal: everything a paused call remembers between rounds.
//!
//! It is small, serde, and versioned. No future is ever serialized: the engine
//! replays the tool from the top and the journal answers what was asked
//! before.

use std::rc::Rc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::trail::{Asked, Mark, RoundEnd, Trail};
use crate::error::McpError;
use crate::vec_map::{VecMap, VecSet};
use sha2::{Digest, Sha256};

/// The journal format version. Bump it when the shape changes; a journal of
/// another version is refused rather than misread.
pub const JOURNAL_VERSION: u32 = 1;

/// One request the server asked the client (or is asking now).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its params, as sent.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
    /// Its [`digest`](Self::digest), kept instead of the params in a
    /// sealed token's journal ([`Journal::compacted`]): an answer there
    /// needs only what was asked to match, and the params (a form's whole
    /// schema) would be sealed, sent, returned and opened on every round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// A digest of the answers the body had read when it asked this (see
    /// [`Answer::inputs`]); not part of what was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<String>,
}

/// The method of a checkpoint: a pause that asks the client nothing.
pub const CHECKPOINT: &str = "durable-mcp/checkpoint";

/// The method of a timer (`cx.sleep`): params `{"ms": n}`. In a task the
/// object's alarm answers it when it is due; elsewhere it is a checkpoint.
pub const TIMER: &str = "durable-mcp/timer";

/// The method of `cx.detach`: where a call that may run as a task becomes one.
pub const DETACH: &str = "durable-mcp/detach";

impl InputRequest {
    /// A request for `method` with `params`.
    pub fn new(method: impl Into<String>, params: Value) -> Self {
        Self {
            method: method.into(),
            params,
            digest: None,
            inputs: None,
        }
    }

    /// True for a checkpoint (see [`Cx::checkpoint`](super::Cx::checkpoint)):
    /// never sent to the client; taken as answered when the client comes back.
    pub fn is_checkpoint(&self) -> bool {
        self.method == CHECKPOINT
    }

    /// True for a pause that asks the client nothing (a checkpoint, a
    /// timer, a detach): the server answers it, never the client.
    pub fn is_internal(&self) -> bool {
        matches!(self.method.as_str(), CHECKPOINT | TIMER | DETACH)
    }

    /// The `elicitationId` of a URL-mode elicitation (`None` for anything
    /// else, and for a request whose params a sealed token dropped): its
    /// answer comes from the page the user was sent to, not the client.
    pub fn url_elicitation_id(&self) -> Option<&str> {
        if self.method != "elicitation/create" || self.params["mode"] != "url" {
            return None;
        }
        self.params["elicitationId"].as_str()
    }

    /// Whether `id` opens this URL elicitation's page: its id, or, when
    /// an approver answers it ([`crate::Cx::elicit_url_from`]), the
    /// approver's (the request keeps only its digest: the client, which
    /// sees the request, gets no link it could spend in the approver's
    /// place).
    pub fn page_link(&self, id: &str) -> bool {
        let Some(own) = self.url_elicitation_id() else {
            return false;
        };
        match self.params["_meta"][APPROVER_META]["link"].as_str() {
            Some(link) => link_digest(id) == link,
            None => own == id,
        }
    }

    /// A timer's duration in milliseconds (`None` for other requests).
    pub fn timer_ms(&self) -> Option<u64> {
        (self.method == TIMER).then(|| self.params["ms"].as_u64().unwrap_or(0))
    }

    /// Answers for the pending internal pauses of `pending` (checkpoints,
    /// and outside a task timers and detaches): the client came back.
    pub fn checkpoints_passed<'a>(
        pending: impl IntoIterator<Item = (&'a String, &'a InputRequest)>,
    ) -> Vec<(String, Result<Value, Value>)> {
        pending
            .into_iter()
            .filter(|(_, r)| r.is_internal())
            .map(|(k, _)| (k.clone(), Ok(serde_json::json!({}))))
            .collect()
    }

    /// A digest of method and params, to notice a replay that asks something else.
    pub fn digest(&self) -> String {
        if let Some(digest) = &self.digest {
            return digest.clone();
        }
        // A tuple serializes as the array `[method, params]`: the same bytes
        // as building that array, without copying the params into it.
        digest_bytes(&serde_json::to_vec(&(&self.method, &self.params)).unwrap_or_default())
    }

    /// The JSON form of an input request in a 2026-07-28 result
    /// (`inputRequests`): as [`into_json`](Self::into_json), less a URL
    /// elicitation's `elicitationId`, which that revision dropped (the id
    /// still travels in the URL, where the page reads it).
    pub fn into_modern_json(mut self) -> Value {
        if self.url_elicitation_id().is_some() {
            if let Some(p) = self.params.as_object_mut() {
                p.remove("elicitationId");
            }
        }
        self.into_json()
    }

    /// The JSON form used on the wire (`{method, params}`).
    pub fn to_json(&self) -> Value {
        self.clone().into_json()
    }

    /// [`to_json`](Self::to_json), without copying the params.
    pub fn into_json(self) -> Value {
        let mut v = serde_json::Map::new();
        v.insert("method".into(), Value::String(self.method));
        if !self.params.is_null() {
            v.insert("params".into(), self.params);
        }
        Value::Object(v)
    }
}

/// A recorded answer to one input request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// [`InputRequest::digest`] of the request it answers.
    pub asked: String,
    /// `Ok(result)` from the client, or `Err(error)` when the client reported a
    /// failure for that step (saga `completedSteps[].error`).
    pub outcome: Result<Value, Value>,
    /// A digest of the answers the body had read when it asked (keys and
    /// values): a question asked otherwise because one of those changed
    /// (asked again after a deploy, answered differently) is a new
    /// question, not a reworded one, and its old answer is not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<String>,
    /// A short digest of the outcome's value, made once when the answer is
    /// recorded: every later round's replay reads the answer again and
    /// notes what it read ([`Answer::seen`]), and hashing a large answer
    /// on each of them made a long call's cost grow with the square of its
    /// length. Absent in journals written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<String>,
    /// Who answered, when it was not the call's client: an operator
    /// (`operator`, or `operator:<name>`) who answered on the call's
    /// behalf ([`super::Outside::Answer`]). The tool reads it with
    /// `Cx::answered_by`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl Answer {
    /// The answer `outcome` to the question whose digest is `asked`.
    pub fn new(asked: String, outcome: Result<Value, Value>, inputs: Option<String>) -> Self {
        let seen = Some(short_digest(outcome.as_ref().unwrap_or_else(|e| e)));
        Self {
            asked,
            outcome,
            inputs,
            seen,
            by: None,
        }
    }

    /// The short digest of its value: the kept one, or made now for an
    /// answer recorded before it was kept.
    pub fn seen(&self) -> String {
        self.seen
            .clone()
            .unwrap_or_else(|| short_digest(self.outcome.as_ref().unwrap_or_else(|e| e)))
    }
}

/// A short digest of `v`, to tell whether an answer changed between two
/// runs of one call (not a security check: 64 bits keep the journal small;
/// it travels in sealed tokens).
pub(crate) fn short_digest(v: &Value) -> String {
    let mut d = digest_json(v);
    d.truncate(16);
    d
}

/// The state of one call between rounds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    /// [`JOURNAL_VERSION`].
    pub v: u32,
    /// How many rounds have completed (0 before the first answer).
    pub round: u32,
    /// Answers by key. Shared: a journal is copied (to keep the call as a
    /// round found it, to seal it, to keep it warm) and a copy must not
    /// grow with the call's length.
    #[serde(default, skip_serializing_if = "VecMap::is_empty")]
    pub answers: VecMap<String, Rc<Answer>>,
    /// Requests sent in the last round and not answered yet, by key.
    #[serde(default, skip_serializing_if = "VecMap::is_empty")]
    pub pending: VecMap<String, InputRequest>,
    /// Memoized outputs of `cx.once` side effects, by key.
    #[serde(default, skip_serializing_if = "VecMap::is_empty")]
    pub once: VecMap<String, Rc<Value>>,
    /// For each `once` effect, the answers the run had read when it ran
    /// (key and a digest of the value: what its output may depend on; see
    /// `Cx::once`).
    #[serde(default, skip_serializing_if = "VecMap::is_empty")]
    pub once_inputs: VecMap<String, VecMap<String, String>>,
    /// The changes (`cx.patched`) the code that started the call had.
    #[serde(default, skip_serializing_if = "VecSet::is_empty")]
    pub patches: VecSet<String>,
    /// The code versions that ran the call, oldest first: the one that
    /// started it, then each one that ran a later round when it differed
    /// from the one before (`tool=<Tool::version>;worker=<version id>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code: Vec<String>,
    /// Keys of pending URL elicitations whose link a browser has already
    /// exchanged for a page pass (a link opens once on a server with
    /// sign-in).
    #[serde(default, skip_serializing_if = "VecSet::is_empty")]
    pub opened: VecSet<String>,
    /// The tool and arguments, where the server keeps a durable call's
    /// journal (a session's call and a task keep them beside it; a token
    /// never carries them here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation: Option<Invocation>,
    /// What an operator reads of the call's past (see [`Trail`]): kept
    /// where the server keeps the journal, never in a token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trail: Option<Box<Trail>>,
    /// Paused by an operator (why, and by whom): every round of the call
    /// parks until it is resumed. Kept calls only, never in a token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
}

/// What a kept call runs: its tool and arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    /// The tool's name.
    pub tool: String,
    /// The call's arguments.
    pub arguments: Value,
}

/// The tool version one of [`Journal::code`]'s entries names
/// (`tool=<version>;worker=<id>`): none where the tool declared none
/// (`tool=-`).
pub fn tool_version(code: &str) -> Option<&str> {
    code.split(';')
        .find_map(|part| part.strip_prefix("tool="))
        .filter(|v| *v != "-")
}

impl Journal {
    /// An empty journal for a new call.
    pub fn new() -> Self {
        Self {
            v: JOURNAL_VERSION,
            ..Self::default()
        }
    }

    /// The tool version whose body ran the call's last round (none for a
    /// new call, or a tool that declared no version): a pinned call's
    /// next round runs on it.
    pub fn tool_version(&self) -> Option<&str> {
        self.code.last().and_then(|c| tool_version(c))
    }

    /// Whether this release reads this journal: its format `v` is one this
    /// release knows (older formats stay readable; a newer one was written
    /// by a newer deploy and is refused, not misread).
    pub fn readable(&self) -> Result<(), McpError> {
        if self.v == 0 || self.v > JOURNAL_VERSION {
            return Err(McpError::internal(format!(
                "a paused call's journal has format {} and this release reads up to {JOURNAL_VERSION}: \
                 it was written by a newer release",
                self.v
            )));
        }
        Ok(())
    }

    /// This journal as a sealed token keeps it: each pending request that
    /// goes to the client holds its digest instead of its params. Only the
    /// next round's answers are matched against it, and the replay asks
    /// every question again in full; a journal the server keeps (a task's,
    /// a durable call's, a session's) stays whole, since it is shown again.
    pub fn compacted(mut self) -> Self {
        // The request carries the tool and arguments already; the trail
        // and an operator's pause are for kept calls only.
        self.invocation = None;
        self.trail = None;
        self.held = None;
        for request in self.pending.values_mut() {
            // A URL elicitation keeps its (small) params: its id is what
            // tells the user's consent from the page's completion.
            if !request.is_internal()
                && request.digest.is_none()
                && request.url_elicitation_id().is_none()
            {
                request.digest = Some(request.digest());
                request.params = Value::Null;
            }
        }
        self
    }

    /// Refuses an answer to a pending request that does not fit what was
    /// asked — in shape or in type: an elicitation without a valid
    /// `action`, or whose form values break the form's schema; a sampling
    /// result whose `role` is not a role or whose `content` is not content;
    /// roots that are not a list of roots: `-32602` naming the key and why.
    /// The question stays open for a corrected answer. Answers to keys that
    /// are not pending are not checked here (they are offered, and taken
    /// only if they fit).
    pub fn check_answers(
        &self,
        answers: &[(String, Result<Value, Value>)],
    ) -> Result<(), McpError> {
        for (key, answer) in answers {
            if let (Some(req), Ok(v)) = (self.pending.get(key), answer) {
                answer_fits(req, v).map_err(|why| unfit(key, &req.method, &why))?;
            }
        }
        Ok(())
    }

    /// Records client answers to pending requests. Keys that were not asked
    /// are ignored (MRTR: extra keys are ignored). Returns how many were taken.
    ///
    /// A client's `accept` of a URL-mode elicitation is the user's consent
    /// to open the page, not its outcome: the request stays pending until
    /// the page completes it ([`Journal::complete_url`]). Its `decline` and
    /// `cancel` are answers (the user will not go).
    pub fn accept_answers(
        &mut self,
        answers: impl IntoIterator<Item = (String, Result<Value, Value>)>,
    ) -> usize {
        let mut taken = 0;
        for (key, outcome) in answers {
            if let Some(req) = self.pending.get(&key) {
                let consent = req.url_elicitation_id().is_some()
                    && outcome.as_ref().is_ok_and(|v| v["action"] == "accept");
                if !consent
                    && outcome
                        .as_ref()
                        .map_or(true, |v| answer_fits(req, v).is_ok())
                {
                    let asked = req.digest();
                    let inputs = req.inputs.clone();
                    self.pending.remove(&key);
                    self.answers
                        .insert(key, Rc::new(Answer::new(asked, outcome, inputs)));
                    taken += 1;
                }
            }
        }
        taken
    }

    /// Records a round that ended in `end` at `now_ms` in the journal's
    /// [`Trail`]: the round, what is pending now (a paused round's
    /// questions), and the time of each answer and effect that appeared
    /// since the last mark. `owner` is kept from the first mark on.
    pub fn mark(&mut self, now_ms: u64, end: RoundEnd, why: Option<&str>, owner: &str) {
        let asked = if end == RoundEnd::Paused {
            self.pending
                .iter()
                .map(|(key, r)| Asked {
                    key: key.clone(),
                    method: r.method.clone(),
                    message: r.params["message"].as_str().map(str::to_string),
                })
                .collect()
        } else {
            Vec::new()
        };
        let mark = Mark {
            round: self.round.max(1),
            at_ms: now_ms,
            code: self.code.last().cloned().unwrap_or_default(),
            end,
            asked,
            why: why.map(str::to_string),
        };
        let trail = self
            .trail
            .get_or_insert_with(|| Box::new(Trail::new(owner, now_ms)));
        trail.record(mark, self.answers.keys(), self.once.keys());
    }

    /// When the call last changed, per its trail (0 without one).
    pub fn last_marked_ms(&self) -> u64 {
        self.trail
            .as_ref()
            .and_then(|t| t.last())
            .map_or(0, |m| m.at_ms)
    }

    /// Whether nothing of the call is recorded yet: its first run.
    pub fn is_fresh(&self) -> bool {
        self.code.is_empty()
            && self.answers.is_empty()
            && self.pending.is_empty()
            && self.once.is_empty()
    }

    /// The URL elicitation pending under `key` with this id, if any.
    pub fn pending_url(&self, key: &str, elicitation_id: &str) -> Option<&InputRequest> {
        self.pending
            .get(key)
            .filter(|r| r.page_link(elicitation_id))
    }

    /// Marks the link of the URL elicitation pending under `key` as
    /// opened: true the first time, false once opened or when nothing with
    /// that id is pending.
    pub fn open_link(&mut self, key: &str, elicitation_id: &str) -> bool {
        self.pending_url(key, elicitation_id).is_some() && self.opened.insert(key.to_string())
    }
}

/// Whether `value` has the shape of a result of `method` (what can be
/// checked without the request's params). An answer of the wrong shape is
/// not taken, so the request is asked again.
pub fn answer_shape_ok(method: &str, value: &Value) -> bool {
    answer_fits(&InputRequest::new(method, Value::Null), value).is_ok()
}

/// Whether `value` answers `request`, in shape and in type, or why not.
/// A form's answer is held to the form's `requestedSchema` when the
/// request still has its params (a sealed token's journal keeps only a
/// digest: there the replay, which asks again in full, checks it).
pub fn answer_fits(request: &InputRequest, value: &Value) -> Result<(), String> {
    let Some(answer) = value.as_object() else {
        return Err("the answer is not an object".into());
    };
    match request.method.as_str() {
        "elicitation/create" => elicitation_fits(answer, &request.params),
        "sampling/createMessage" => sampling_fits(answer),
        "roots/list" => {
            let Some(Value::Array(roots)) = answer.get("roots") else {
                return Err("roots must be a list".into());
            };
            for (i, root) in roots.iter().enumerate() {
                let uri = root.get("uri").and_then(Value::as_str);
                let name_ok = root.get("name").is_none_or(Value::is_string);
                if uri.is_none() || !name_ok {
                    return Err(format!(
                        "roots[{i}] is {root}, not a root (an object with a string uri)"
                    ));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn elicitation_fits(answer: &serde_json::Map<String, Value>, params: &Value) -> Result<(), String> {
    let action = answer.get("action").and_then(Value::as_str);
    if !matches!(action, Some("accept" | "decline" | "cancel")) {
        return Err("action must be \"accept\", \"decline\" or \"cancel\"".into());
    }
    let empty = Value::Object(Default::default());
    let content = match answer.get("content") {
        None | Some(Value::Null) => &empty,
        Some(c @ Value::Object(fields)) => {
            for (name, v) in fields {
                form_value(v).map_err(|why| format!("content.{name} {why}"))?;
            }
            c
        }
        Some(v) => return Err(format!("content is {v}, not an object")),
    };
    match (action, params.get("requestedSchema")) {
        (Some("accept"), Some(schema)) => {
            crate::schema::check(content, schema).map_err(|why| why.replacen('$', "content", 1))
        }
        _ => Ok(()),
    }
}

fn sampling_fits(answer: &serde_json::Map<String, Value>) -> Result<(), String> {
    match answer.get("role").and_then(Value::as_str) {
        Some("user" | "assistant") => {}
        _ => return Err("role must be \"user\" or \"assistant\"".into()),
    }
    match answer.get("content") {
        Some(Value::Array(blocks)) if !blocks.is_empty() => {
            for (i, b) in blocks.iter().enumerate() {
                content_block(b).map_err(|why| format!("content[{i}] {why}"))?;
            }
        }
        Some(b @ Value::Object(_)) => content_block(b).map_err(|why| format!("content {why}"))?,
        Some(v) => return Err(format!("content is {v}, not a content block")),
        None => return Err("content is missing".into()),
    }
    for k in ["model", "stopReason"] {
        if let Some(v) = answer.get(k).filter(|v| !v.is_string() && !v.is_null()) {
            return Err(format!("{k} is {v}, not a string"));
        }
    }
    Ok(())
}

/// A form field's value: what MCP forms carry (a string, number or
/// boolean, or a list of strings for a multi-select).
fn form_value(v: &Value) -> Result<(), String> {
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) => Ok(()),
        Value::Array(items) if items.iter().all(Value::is_string) => Ok(()),
        v => Err(format!(
            "is {v}, not a string, number, boolean or list of strings"
        )),
    }
}

/// A sampling content block: an object with a string `type`, and a string
/// `text` when it is text.
fn content_block(b: &Value) -> Result<(), String> {
    match b.get("type").and_then(Value::as_str) {
        None => Err(format!("is {b}, not a content block (no type)")),
        Some("text") if !b.get("text").is_some_and(Value::is_string) => {
            Err("is a text block without a string text".into())
        }
        Some(_) => Ok(()),
    }
}

/// The `-32602` for an answer to `key` that does not fit `method`.
pub(crate) fn unfit(key: &str, method: &str, why: &str) -> McpError {
    McpError::invalid_params(format!(
        "Invalid params: the answer to {key:?} does not fit {method}: {why}; \
         the question is still open: answer it again"
    ))
}

/// Where a URL elicitation's request names the principal whose page it is
/// when that is not the caller ([`crate::Cx::elicit_url_from`]): the
/// client can show whom the call waits for.
pub const APPROVER_META: &str = "io.durable-mcp/approver";

/// The digest an approver's link is kept under.
pub(super) fn link_digest(id: &str) -> String {
    hex(&Sha256::digest(id.as_bytes()))
}

/// SHA-256 of the canonical JSON form of `value`, hex encoded. serde_json
/// without `preserve_order` sorts object keys, so equal values digest equal.
pub fn digest_json(value: &Value) -> String {
    digest_bytes(&serde_json::to_vec(value).unwrap_or_default())
}

fn digest_bytes(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`. (A `format!` per byte cost a percent of a
/// stateless call: ids and digests are made on every request.)
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hex_and_digests_are_stable() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        let r = InputRequest::new("elicitation/create", json!({"message": "?", "a": [1, 2]}));
        assert_eq!(r.digest(), digest_json(&json!([r.method, r.params])));
        // SHA-256 of the three bytes `"x"`.
        assert_eq!(
            digest_json(&json!("x")),
            "ba2df4903a2c14e86dc3bcca58911b44ac1d2514b7227bf6eb08cfb978f55a1b"
        );
    }

    #[test]
    fn a_journal_round_trips_through_json() {
        let mut j = Journal::new();
        j.pending.insert(
            "t".into(),
            InputRequest::new("elicitation/create", json!({"message": "?"})),
        );
        j.accept_answers([(
            "t".to_string(),
            Ok(json!({"action": "accept", "content": {"x": 1}})),
        )]);
        j.once.insert("ticket".into(), json!("T-1").into());
        j.round = 2;
        let text = serde_json::to_string(&j).expect("serializes");
        assert_eq!(serde_json::from_str::<Journal>(&text).expect("parses"), j);
    }

    #[test]
    fn unknown_keys_and_wrong_shapes_are_not_taken() {
        let mut j = Journal::new();
        j.pending.insert(
            "a".into(),
            InputRequest::new("elicitation/create", Value::Null),
        );
        assert_eq!(
            j.accept_answers([("zzz".to_string(), Ok(json!({"action": "accept"})))]),
            0
        );
        assert_eq!(
            j.accept_answers([("a".to_string(), Ok(json!({"action": "maybe"})))]),
            0
        );
        assert!(j.pending.contains_key("a"));
        assert_eq!(
            j.accept_answers([("a".to_string(), Ok(json!({"action": "decline"})))]),
            1
        );
        assert!(j.pending.is_empty());
    }

    #[test]
    fn a_compacted_journal_answers_as_the_whole_one_does() {
        let form = InputRequest::new("elicitation/create", json!({"message": "?", "s": [1]}));
        let timer = InputRequest::new(TIMER, json!({"ms": 5}));
        let mut whole = Journal::new();
        whole.pending.insert("f".into(), form.clone());
        whole.pending.insert("t".into(), timer.clone());
        let text = serde_json::to_string(&whole.clone().compacted()).expect("serializes");
        // The form's params stay out of the token; a timer keeps its duration.
        assert!(!text.contains("message"), "{text}");
        let mut compact: Journal = serde_json::from_str(&text).expect("parses");
        assert_eq!(
            compact.pending.get("f").map(|r| r.digest()),
            Some(form.digest())
        );
        assert_eq!(compact.pending.get("t").and_then(|r| r.timer_ms()), Some(5));
        let answer = || [("f".to_string(), Ok(json!({"action": "accept"})))];
        assert_eq!(whole.accept_answers(answer()), 1);
        assert_eq!(compact.accept_answers(answer()), 1);
        assert_eq!(compact.answers, whole.answers);
        // A changed question no longer matches the recorded answer.
        let changed = InputRequest::new("elicitation/create", json!({"message": "!", "s": [1]}));
        let f = compact.answers.get("f").expect("the answer under f");
        assert_ne!(f.asked, changed.digest());
    }

    #[test]
    fn answers_of_the_right_keys_but_the_wrong_types_do_not_fit() {
        let sample = InputRequest::new("sampling/createMessage", Value::Null);
        let roots = InputRequest::new("roots/list", Value::Null);
        let form = InputRequest::new(
            "elicitation/create",
            json!({"mode": "form", "message": "?", "requestedSchema": {
                "type": "object",
                "properties": {"target": {"type": "string", "enum": ["staging", "production"]}},
                "required": ["target"]
            }}),
        );
        let text = json!({"type": "text", "text": "yes"});
        let fits = |r: &InputRequest, v: Value| answer_fits(r, &v);
        assert_eq!(
            fits(&sample, json!({"role": "assistant", "content": text})),
            Ok(())
        );
        assert_eq!(
            fits(&sample, json!({"role": "assistant", "content": [text]})),
            Ok(())
        );
        for bad in [
            json!({"role": "assistant", "content": "yes"}),
            json!({"role": "assistant", "content": null}),
            json!({"role": "assistant", "content": []}),
            json!({"role": "assistant", "content": {"type": "text", "text": 5}}),
            json!({"role": 5, "content": text}),
            json!({"role": "assistant", "content": text, "model": 7}),
            json!("yes"),
        ] {
            assert!(fits(&sample, bad.clone()).is_err(), "{bad}");
        }
        assert_eq!(
            fits(&roots, json!({"roots": [{"uri": "file:///a"}]})),
            Ok(())
        );
        for bad in [
            json!({"roots": [5]}),
            json!({"roots": [{"uri": 5}]}),
            json!({"roots": {}}),
        ] {
            assert!(fits(&roots, bad.clone()).is_err(), "{bad}");
        }
        let accept = |content: Value| json!({"action": "accept", "content": content});
        assert_eq!(fits(&form, accept(json!({"target": "staging"}))), Ok(()));
        assert_eq!(fits(&form, json!({"action": "decline"})), Ok(()));
        let why = fits(&form, accept(json!({"target": 5}))).expect_err("a number");
        assert!(why.contains("content.target"), "{why}");
        let why = fits(&form, accept(json!({"target": "mars"}))).expect_err("not an option");
        assert!(why.contains("not one of"), "{why}");
        assert!(fits(&form, accept(json!({}))).is_err(), "required");
        assert!(fits(&form, accept(json!({"target": {"a": 1}}))).is_err());
        // Without the params (a token's compacted journal) only the shape is
        // checked here; the replay checks the rest.
        let compact = InputRequest::new("elicitation/create", Value::Null);
        assert_eq!(fits(&compact, accept(json!({"target": "mars"}))), Ok(()));
        assert!(fits(&compact, accept(json!({"target": {"a": 1}}))).is_err());
    }

    #[test]
    fn a_wrong_typed_answer_is_refused_naming_its_key_and_stays_pending() {
        let mut j = Journal::new();
        j.pending.insert(
            "verdict".into(),
            InputRequest::new("sampling/createMessage", Value::Null),
        );
        let bad = [(
            "verdict".to_string(),
            Ok(json!({"role": "assistant", "content": "yes"})),
        )];
        let e = j.check_answers(&bad).expect_err("refused");
        assert_eq!(e.code(), -32602);
        assert!(e.message.contains("\"verdict\""), "{}", e.message);
        assert_eq!(j.accept_answers(bad), 0);
        assert!(j.pending.contains_key("verdict"));
        let good = json!({"role": "assistant", "content": {"type": "text", "text": "yes"}});
        assert_eq!(j.accept_answers([("verdict".to_string(), Ok(good))]), 1);
    }

    #[test]
    fn digests_ignore_key_order() {
        assert_eq!(
            digest_json(&json!({"a": 1, "b": 2})),
            digest_json(&json!({"b": 2, "a": 1}))
        );
        assert_ne!(digest_json(&json!({"a": 1})), digest_json(&json!({"a": 2})));
    }
}
