//! The journal: everything a paused call remembers between rounds.
//!
//! It is small, serde, and versioned. No future is ever serialized: the engine
//! replays the tool from the top and the journal answers what was asked
//! before.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::McpError;
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
}

/// The state of one call between rounds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    /// [`JOURNAL_VERSION`].
    pub v: u32,
    /// How many rounds have completed (0 before the first answer).
    pub round: u32,
    /// Answers by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub answers: BTreeMap<String, Answer>,
    /// Requests sent in the last round and not answered yet, by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pending: BTreeMap<String, InputRequest>,
    /// Memoized outputs of `cx.once` side effects, by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub once: BTreeMap<String, Value>,
}

impl Journal {
    /// An empty journal for a new call.
    pub fn new() -> Self {
        Self {
            v: JOURNAL_VERSION,
            ..Self::default()
        }
    }

    /// This journal as a sealed token keeps it: each pending request that
    /// goes to the client holds its digest instead of its params. Only the
    /// next round's answers are matched against it, and the replay asks
    /// every question again in full; a journal the server keeps (a task's,
    /// a durable call's, a session's) stays whole, since it is shown again.
    pub fn compacted(mut self) -> Self {
        for request in self.pending.values_mut() {
            if !request.is_internal() && request.digest.is_none() {
                request.digest = Some(request.digest());
                request.params = Value::Null;
            }
        }
        self
    }

    /// Refuses an answer to a pending request whose shape does not fit
    /// what was asked (an elicitation without a valid `action`, a sampling
    /// result without `role` and `content`, roots that are not a list):
    /// `-32602` naming the key. Answers to keys that are not pending are
    /// not checked (they are offered, and taken only if they fit).
    pub fn check_answers(
        &self,
        answers: &[(String, Result<Value, Value>)],
    ) -> Result<(), McpError> {
        for (key, answer) in answers {
            if let (Some(req), Ok(v)) = (self.pending.get(key), answer) {
                if !answer_shape_ok(&req.method, v) {
                    return Err(McpError::invalid_params(format!(
                        "Invalid params: the answer to {key:?} does not fit {}: {}",
                        req.method,
                        expected_shape(&req.method)
                    )));
                }
            }
        }
        Ok(())
    }

    /// Records client answers to pending requests. Keys that were not asked
    /// are ignored (MRTR: extra keys are ignored). Returns how many were taken.
    pub fn accept_answers(
        &mut self,
        answers: impl IntoIterator<Item = (String, Result<Value, Value>)>,
    ) -> usize {
        let mut taken = 0;
        for (key, outcome) in answers {
            if let Some(req) = self.pending.get(&key) {
                if outcome
                    .as_ref()
                    .map_or(true, |v| answer_shape_ok(&req.method, v))
                {
                    let asked = req.digest();
                    self.pending.remove(&key);
                    self.answers.insert(key, Answer { asked, outcome });
                    taken += 1;
                }
            }
        }
        taken
    }
}

/// Whether `value` has the shape of a result of `method`. An answer of the
/// wrong shape is not taken, so the request is asked again.
pub fn answer_shape_ok(method: &str, value: &Value) -> bool {
    match method {
        "elicitation/create" => {
            matches!(
                value.get("action").and_then(Value::as_str),
                Some("accept" | "decline" | "cancel")
            ) && value.get("content").is_none_or(Value::is_object)
        }
        "sampling/createMessage" => value.get("role").is_some() && value.get("content").is_some(),
        "roots/list" => value.get("roots").is_some_and(Value::is_array),
        _ => value.is_object(),
    }
}

/// What a fitting answer to `method` looks like, for error messages.
fn expected_shape(method: &str) -> &'static str {
    match method {
        "elicitation/create" => {
            "an object with action \"accept\", \"decline\" or \"cancel\" (and an object content)"
        }
        "sampling/createMessage" => "an object with role and content",
        "roots/list" => "an object with a roots array",
        _ => "an object",
    }
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
        j.once.insert("ticket".into(), json!("T-1"));
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
        assert_eq!(compact.pending["f"].digest(), form.digest());
        assert_eq!(compact.pending["t"].timer_ms(), Some(5));
        let answer = || [("f".to_string(), Ok(json!({"action": "accept"})))];
        assert_eq!(whole.accept_answers(answer()), 1);
        assert_eq!(compact.accept_answers(answer()), 1);
        assert_eq!(compact.answers, whole.answers);
        // A changed question no longer matches the recorded answer.
        let changed = InputRequest::new("elicitation/create", json!({"message": "!", "s": [1]}));
        assert_ne!(compact.answers["f"].asked, changed.digest());
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
