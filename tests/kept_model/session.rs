//! A 2025-11-25 session's client: `initialize` (the session id header),
//! `tools/call` answered on the call's stream, the server's elicitation
//! requests answered by POSTing JSON-RPC responses, the stream resumed
//! with `Last-Event-ID`, `notifications/cancelled`.

use durable_mcp::admin::summary::session_call_id;
use durable_mcp::session::SessionStore;
use durable_mcp::testing::TestReply;
use serde_json::{json, Value};

use crate::tool::{self, DURABLE};
use crate::world::{accept, note, Call, Client, Kind, Model, SessionClient, Truth};

/// What a client read on a call's stream.
#[derive(Debug, Default)]
struct Heard {
    /// A question: its key and its request's id.
    asked: Option<(String, Value)>,
    /// The call's own response (its result or error).
    end: Option<Value>,
    /// A log message (the call parked).
    logged: bool,
}

fn heard(messages: &[Value], request_id: u64) -> Heard {
    let mut h = Heard::default();
    for m in messages {
        if m["method"] == "elicitation/create" {
            // Our requests' ids are `<stream>/<round>/<key>`.
            let id = m["id"].as_str().unwrap_or_default();
            let key = id.rsplit('/').next().unwrap_or_default().to_string();
            h.asked = Some((key, m["id"].clone()));
        } else if m["id"] == request_id {
            h.end = Some(m.clone());
        } else if m["method"] == "notifications/message" {
            h.logged = true;
        }
    }
    h
}

impl Model {
    /// Opens a session (`initialize`, `notifications/initialized`).
    fn open_session(&mut self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "kept-model", "version": "1"}}});
        let r = self.session_request(None, Some(init), None);
        let Some(sid) = r.header("mcp-session-id").map(str::to_string) else {
            self.fail(format!("initialize: {} {}", r.status, r.text));
        };
        let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.session_request(Some(&sid), Some(ready), None);
        self.session = Some(sid.clone());
        sid
    }

    pub(crate) fn start_session(&mut self, arg: u64) {
        let sid = match self.session.clone() {
            Some(sid) => sid,
            None => self.open_session(),
        };
        let body = json!({"jsonrpc": "2.0", "id": arg, "method": "tools/call",
                          "params": {"name": DURABLE, "arguments": {"call": arg}}});
        let r = self.session_request(Some(&sid), Some(body), None);
        if !self.code.serves() || self.paused.contains(DURABLE) {
            if r.json.get("error").is_none() || !r.events.is_empty() {
                self.fail(format!(
                    "a session call of a paused or gone tool: {}",
                    r.text
                ));
            }
            return;
        }
        let h = heard(&r.events, arg);
        let Some((_, id)) = h.asked.filter(|(k, _)| k == "a") else {
            self.fail(format!("a session call did not ask a: {:?}", r.events));
        };
        let stream = id.as_str().unwrap_or_default();
        let stream = stream.split('/').next().unwrap_or_default().to_string();
        let admin_id = self.session_admin_id(&sid, arg);
        let client = SessionClient {
            sid,
            stream,
            asked: id,
            sent: Vec::new(),
            seen: 0,
        };
        let patched = self.code == tool::Code::V3;
        let call = Call::new(
            Kind::Session,
            arg,
            admin_id,
            patched,
            Client::Session(client),
        );
        self.calls.push(call);
        self.read_to_end(self.calls.len() - 1);
    }

    /// The client read its stream to its last event: that event's id
    /// (the session's log numbers its events across its streams; the
    /// test server's replies drop the SSE ids, so it is read from the
    /// session's storage).
    fn read_to_end(&mut self, i: usize) {
        let (sid, stream) = {
            let s = self.calls[i].session();
            (s.sid.clone(), s.stream.clone())
        };
        let last = self
            .s
            .objects
            .get(&format!("session:{sid}"))
            .and_then(|o| o.session.events_after(&stream, 0).ok())
            .and_then(|e| e.last().map(|(lsn, _)| *lsn));
        if let Some(lsn) = last {
            self.calls[i].session_mut().seen = lsn;
        }
    }

    /// The admin id of the session's call `arg`: as an operator's listing
    /// names it (its call id is the server's, read from the session's
    /// storage).
    fn session_admin_id(&self, sid: &str, arg: u64) -> String {
        let calls = self
            .s
            .objects
            .get(&format!("session:{sid}"))
            .and_then(|o| o.session.calls().ok())
            .unwrap_or_default();
        match calls.iter().find(|c| c.request_id == arg) {
            Some(c) => session_call_id(sid, &c.call_id),
            None => self.fail(format!("the session keeps no call {arg}")),
        }
    }

    /// What was pushed to call `i`'s stream since push `before` (its
    /// client reads it), and the client's place moved past it.
    fn heard_pushed(&mut self, i: usize, before: usize) -> Heard {
        let (stream, arg) = (self.calls[i].session().stream.clone(), self.calls[i].arg);
        let pushed: Vec<Value> = self.s.pushes[before..]
            .iter()
            .filter(|p| p.stream == stream)
            .flat_map(|p| &p.events)
            .filter_map(|e| serde_json::from_str(&e.data).ok())
            .collect();
        self.read_to_end(i);
        heard(&pushed, arg)
    }

    /// POSTs `message` to call `i`'s session; returns the reply and what
    /// it pushed to the call's stream.
    fn session_post(&mut self, i: usize, message: Value) -> (TestReply, Heard) {
        let sid = self.calls[i].session().sid.clone();
        let before = self.s.pushes.len();
        let r = self.session_request(Some(&sid), Some(message), None);
        (r, self.heard_pushed(i, before))
    }

    /// Comes back to call `i`'s stream (GET after what it read).
    fn session_get(&mut self, i: usize) -> (TestReply, Heard) {
        let (sid, last, arg) = {
            let c = &self.calls[i];
            let s = c.session();
            (s.sid.clone(), format!("{}:{}", s.stream, s.seen), c.arg)
        };
        let r = self.session_request(Some(&sid), None, Some(last));
        let h = heard(&r.events, arg);
        self.read_to_end(i);
        (r, h)
    }

    /// The client answers what it was asked (`crash`: the round's isolate
    /// dies in its effect, if it runs one); a call that took its answer
    /// but did not go on is come back to.
    pub(crate) fn answer_session(&mut self, i: usize, crash: bool) {
        let key = match self.calls[i].truth {
            Truth::Waiting(key) => key,
            Truth::Ready => return self.come_back(i),
            _ => return self.retry_session(i),
        };
        let arg = self.calls[i].arg;
        let id = self.calls[i].session().asked.clone();
        let message = json!({"jsonrpc": "2.0", "id": id, "result": accept()});
        self.calls[i].session_mut().sent.push(message.clone());
        let blocked = self.blocked(i);
        let crash = crash && !blocked && self.runs_effect(i, Some(key));
        let sent = self.crash_or(i, crash, |m| m.session_post(i, message));
        // Its answer is taken whatever the round does next.
        self.calls[i].answered.push(key);
        let Some((r, h)) = sent else {
            // The answer and the round's claim are stored; the round died.
            let now = self.now();
            let c = &mut self.calls[i];
            c.truth = Truth::Ready;
            c.claimed_at = Some(now);
            return;
        };
        if r.status != 202 {
            self.fail(format!(
                "call {arg}: an answer refused: {} {}",
                r.status, r.text
            ));
        }
        self.after_session_round(i, blocked, &h);
    }

    /// What a round that was let run did: parked (blocked), or went on.
    fn after_session_round(&mut self, i: usize, blocked: bool, h: &Heard) {
        let arg = self.calls[i].arg;
        if blocked {
            if !h.logged || h.asked.is_some() || h.end.is_some() {
                self.fail(format!("call {arg}: a blocked round said {h:?}"));
            }
            note(Some(Kind::Session), "parked");
            let c = &mut self.calls[i];
            c.truth = Truth::Ready;
            c.parked = true;
            c.claimed_at = None;
            return;
        }
        self.ran_round(i);
        match (self.calls[i].truth, &h.asked, &h.end) {
            (Truth::Waiting(k), Some((key, id)), None) if key == k => {
                self.calls[i].session_mut().asked = id.clone();
            }
            (Truth::Completed, None, Some(end)) if end.get("result").is_some() => {
                self.calls[i].result = Some(end["result"].clone());
            }
            (truth, _, _) => self.fail(format!("call {arg} ({truth:?}) heard {h:?}")),
        }
    }

    /// A call that took its answer but did not go on (parked, or its
    /// round crashed): its client comes back, resuming its stream or
    /// sending its answer again; it goes on unless a live claim or a
    /// block stops it.
    fn come_back(&mut self, i: usize) {
        let arg = self.calls[i].arg;
        let live = self.claim_live(i);
        let blocked = self.blocked(i);
        let last = self.calls[i].session().sent.last().cloned();
        let (r, h) = match last {
            Some(m) if self.rng.one_in(2) => self.session_post(i, m),
            _ => self.session_get(i),
        };
        if r.status >= 300 {
            self.fail(format!(
                "call {arg}: coming back refused: {} {}",
                r.status, r.text
            ));
        }
        if live {
            // Its round may be running elsewhere: nothing runs.
            if h.asked.is_some() || h.end.is_some() || h.logged {
                self.fail(format!("call {arg}: a claimed round ran again: {h:?}"));
            }
            note(Some(Kind::Session), "refused while a claim lives");
            return;
        }
        self.after_session_round(i, blocked, &h);
    }

    /// Sends again an answer sent before (exactly, or with other
    /// answers), or resumes the stream: a call that is not ready to go on
    /// hears nothing new; a gone session answers 404.
    pub(crate) fn retry_session(&mut self, i: usize) {
        let (arg, truth) = (self.calls[i].arg, self.calls[i].truth);
        if truth == Truth::Ready {
            return self.come_back(i);
        }
        let sent = self.calls[i].session().sent.clone();
        let (r, h) = if sent.is_empty() || self.rng.one_in(3) {
            self.session_get(i)
        } else {
            let mut m = sent[self.rng.below(sent.len() as u64) as usize].clone();
            if self.rng.one_in(3) {
                m["result"] = json!({"action": "decline"});
            }
            self.session_post(i, m)
        };
        if truth == Truth::Gone {
            if r.status != 404 {
                self.fail(format!(
                    "call {arg} of a gone session: {} {}",
                    r.status, r.text
                ));
            }
            return;
        }
        // An operator's cancel's error may be read now; nothing else.
        let cancelled = h.end.as_ref().is_some_and(|e| e["error"]["code"] == -32800);
        if h.asked.is_some()
            || (h.end.is_some() && !(cancelled && truth == Truth::Cancelled))
            || r.status >= 300
        {
            self.fail(format!(
                "call {arg} ({truth:?}) retried: {} {h:?}",
                r.status
            ));
        }
    }

    /// The client cancels its request (`notifications/cancelled`).
    pub(crate) fn cancel_session(&mut self, i: usize) {
        let (arg, truth) = (self.calls[i].arg, self.calls[i].truth);
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": arg, "reason": "the user left"}});
        let (r, h) = self.session_post(i, cancel);
        match truth {
            Truth::Gone if r.status == 404 => {}
            Truth::Gone => self.fail(format!("cancel in a gone session: {}", r.text)),
            _ if r.status != 202 || h.asked.is_some() => {
                self.fail(format!("call {arg}: cancel answered {} {h:?}", r.status))
            }
            Truth::Waiting(_) | Truth::Ready => {
                note(Some(Kind::Session), "cancelled by its client");
                let c = &mut self.calls[i];
                c.truth = Truth::Cancelled;
                c.claimed_at = None;
            }
            _ => {}
        }
    }

    /// After an operator cancelled call `i`: its client reads the error on
    /// its stream.
    pub(crate) fn heard_cancel(&mut self, i: usize, pushes_before: usize) {
        let h = self.heard_pushed(i, pushes_before);
        if h.end.as_ref().map(|e| &e["error"]["code"]) != Some(&json!(-32800)) {
            let arg = self.calls[i].arg;
            self.fail(format!("call {arg}: an operator's cancel said {h:?}"));
        }
    }

    /// The session's storage is lost (it expired, or the platform lost
    /// it): its calls are gone with it; a new session call opens another.
    pub(crate) fn lose_session(&mut self, i: usize) {
        note(Some(Kind::Session), "its session lost");
        let sid = self.calls[i].session().sid.clone();
        self.s.objects.remove(&format!("session:{sid}"));
        for c in &mut self.calls {
            if c.kind == Kind::Session && c.session().sid == sid {
                c.truth = Truth::Gone;
            }
        }
        if self.session.as_deref() == Some(sid.as_str()) {
            self.session = None;
        }
    }
}
