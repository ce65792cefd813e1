//! The durable wire's client: 2026-07-28 rounds carrying `requestState`,
//! the call kept in a shard (its row may be lost: the token rebuilds it).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use durable_mcp::store::CallStore;
use durable_mcp::testing::TestReply;
use serde_json::{json, Value};

use crate::tool::{self, DURABLE};
use crate::world::{accept, declined, note, Call, Client, DurableClient, Kind, Model, Truth};

/// The call id a state names.
fn sid_of(state: &str) -> String {
    let payload = state.split('.').nth(1).unwrap_or_default();
    let bytes = URL_SAFE_NO_PAD.decode(payload).unwrap_or_default();
    let claims: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    claims["sid"].as_str().unwrap_or_default().to_string()
}

impl Model {
    fn round(&mut self, arg: u64, state: &str, answers: &Value) -> TestReply {
        self.call(
            "tools/call",
            json!({"name": DURABLE, "arguments": {"call": arg},
                   "requestState": state, "inputResponses": answers}),
            false,
        )
    }

    pub(crate) fn start_durable(&mut self, arg: u64) {
        let r = self.call(
            "tools/call",
            json!({"name": DURABLE, "arguments": {"call": arg}}),
            false,
        );
        if !self.code.serves() || self.paused.contains(DURABLE) {
            if r.json.get("error").is_none() {
                self.fail(format!("a new call of a paused or gone tool: {}", r.text));
            }
            return;
        }
        let res = &r.json["result"];
        let Some(state) = res["requestState"].as_str() else {
            self.fail(format!("a new call did not pause: {}", r.json));
        };
        if res["inputRequests"].get("a").is_none() {
            self.fail(format!("a new call asked another question: {}", r.json));
        }
        let client = DurableClient {
            state: state.to_string(),
            sent: Vec::new(),
        };
        let id = format!("d.{}", sid_of(state));
        let patched = self.code == tool::Code::V3;
        self.calls.push(Call::new(
            Kind::Durable,
            arg,
            id,
            patched,
            Client::Durable(client),
        ));
    }

    /// The client answers the question it was asked (`crash`: the round's
    /// isolate dies in its effect, if it runs one).
    pub(crate) fn answer_durable(&mut self, i: usize, crash: bool) {
        let Truth::Waiting(key) = self.calls[i].truth else {
            return self.retry_durable(i);
        };
        let (arg, state) = (self.calls[i].arg, self.calls[i].durable().state.clone());
        let a = json!({ key: accept() });
        let live = self.claim_live(i);
        let blocked = self.blocked(i);
        let crash = crash && !live && !blocked && self.runs_effect(i, Some(key));
        let Some(r) = self.crash_or(i, crash, |m| m.round(arg, &state, &a)) else {
            return self.claim_left(i);
        };
        let result = r.json.get("result").cloned();
        self.calls[i].durable_mut().sent.push((state, a, result));
        if self.refused(i, &r, live, blocked) {
            return;
        }
        self.calls[i].answered.push(key);
        self.ran_round(i);
        self.read_durable(i, &r);
    }

    /// A round crashed in call `i`'s effect: its claim stays behind, its
    /// row otherwise as it was (a lost row rebuilt, claimed).
    fn claim_left(&mut self, i: usize) {
        let now = self.now();
        let c = &mut self.calls[i];
        c.claimed_at = Some(now);
        if c.lost {
            note(Some(Kind::Durable), "crashed rebuilt");
        }
        c.lost = false;
    }

    /// Whether call `i`'s round was refused rather than run: its tool
    /// gone, a live claim, or a block (which parks it).
    fn refused(&mut self, i: usize, r: &TestReply, live: bool, blocked: bool) -> bool {
        let arg = self.calls[i].arg;
        if live {
            // Another round holds the call: refused, nothing run.
            if r.json.get("error").is_none() {
                self.fail(format!("call {arg}: a claimed round ran again: {}", r.text));
            }
            note(Some(Kind::Durable), "refused while a claim lives");
            return true;
        }
        if blocked {
            if !matches!(r.status, 409 | 503) {
                self.fail(format!("call {arg}: a blocked round answered: {}", r.text));
            }
            // Parked: its row is written (again, if it was lost, and any
            // dead claim released), so an operator lists it so.
            note(Some(Kind::Durable), "parked");
            let c = &mut self.calls[i];
            c.parked = true;
            c.lost = false;
            c.claimed_at = None;
        }
        blocked
    }

    /// The reply to a round that ran must be what the truth says now.
    fn read_durable(&mut self, i: usize, r: &TestReply) {
        let arg = self.calls[i].arg;
        let res = &r.json["result"];
        match (self.calls[i].truth, res["resultType"].as_str()) {
            (Truth::Waiting(k), Some("input_required"))
                if res["inputRequests"].get(k).is_some() =>
            {
                let state = res["requestState"].as_str().unwrap_or_default();
                self.calls[i].durable_mut().state = state.to_string();
            }
            (Truth::Completed, Some("complete")) => self.calls[i].result = Some(res.clone()),
            (truth, _) => self.fail(format!("call {arg} ({truth:?}): {}", r.text)),
        }
    }

    /// Sends again something sent before for call `i`: the answer the
    /// truth allows, and never a call brought back.
    pub(crate) fn retry_durable(&mut self, i: usize) {
        let c = &self.calls[i];
        let d = c.durable();
        if d.sent.is_empty() {
            return;
        }
        let n = self.rng.below(d.sent.len() as u64) as usize;
        let stale = self.rng.one_in(4);
        let (state, mut a, _) = d.sent[n].clone();
        // What this very request was answered with, any time it was.
        let before = d
            .sent
            .iter()
            .find(|(s, x, r)| *s == state && *x == a && r.is_some())
            .and_then(|(_, _, r)| r.clone());
        if matches!(c.truth, Truth::Waiting(_)) && (state == d.state || c.lost) {
            // The round it waits on (an earlier try was refused): an
            // answer. With its row lost, only its latest token can rebuild
            // it (an older one knows nothing of the effects run since: no
            // server can tell, with the storage gone).
            return self.answer_durable(i, false);
        }
        if stale {
            a = declined(&a);
        }
        let (arg, truth, last) = (c.arg, c.truth, state == d.state);
        let result = c.result.clone();
        let r = self.round(arg, &state, &a);
        let code = r.json["error"]["code"].as_i64();
        match truth {
            Truth::Cancelled if code != Some(-32800) => {
                self.fail(format!("call {arg} (cancelled) retried: {}", r.text));
            }
            Truth::Cancelled => {}
            // Its final round again, exactly: its result again.
            Truth::Completed if !stale && last => {
                if r.json.get("result") != result.as_ref() {
                    self.fail(format!("call {arg} (completed) exact retry: {}", r.text));
                }
            }
            _ => {
                // An earlier round, or other answers: the reply it got,
                // or refused; never a question of a finished call.
                let again = r.json.get("result").is_some()
                    && r.json.get("result") == before.as_ref()
                    && !stale;
                if !again && r.json.get("error").is_none() {
                    self.fail(format!(
                        "call {arg} retried (round {n}, stale {stale}): {}",
                        r.text
                    ));
                }
            }
        }
    }

    /// Loses a waiting durable call's row (evicted, another deployment):
    /// its token carries what it needs; its recorded effects must not run
    /// again.
    pub(crate) fn lose_durable(&mut self, i: usize) {
        let c = &self.calls[i];
        if !matches!(c.truth, Truth::Waiting(_)) {
            return;
        }
        let call_id = c.admin_id.trim_start_matches("d.").to_string();
        for o in self.s.objects.values() {
            let _ = o.call.delete(&call_id);
        }
        // Its pause and any dead claim went with its row.
        note(Some(Kind::Durable), "row lost");
        let c = &mut self.calls[i];
        c.lost = true;
        c.held = false;
        c.claimed_at = None;
    }
}
