//! A model test of the kept call (issue 42): seeded random schedules of
//! what clients and operators do to durable calls — answers, exact and
//! stale retries, cancels, purges, a tool paused and resumed, one call
//! paused and resumed, storage lost under a waiting call, objects evicted
//! (their warm copies gone: the next round reads its log back), time
//! passing with the objects' alarms — driven
//! through `TestServer`, with the truth kept beside it. After every step:
//! no effect ran twice, no finished call came back, and every answer is
//! the one the truth allows; after every schedule the operator's listing
//! equals the truth. Bounded: `KEPT_MODEL_SCHEDULES` schedules (default
//! 10,000) or `KEPT_MODEL_SECONDS` (default 120), whichever ends first; a
//! failure names its seed.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use durable_mcp::store::CallStore;
use durable_mcp::testing::{TestReply, TestServer};
use durable_mcp::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

const OPS: &str = "admin-token-0123456789";

thread_local! {
    /// Effect runs by (call, effect).
    static RUNS: RefCell<BTreeMap<(u64, u8), u32>> = const { RefCell::new(BTreeMap::new()) };
}

fn ran(call: u64, effect: u8) -> u32 {
    RUNS.with(|r| r.borrow().get(&(call, effect)).copied().unwrap_or(0))
}

/// Asks `a`, runs effect 1, asks `b`, runs effect 2, completes.
async fn two_steps(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    let call = args["call"].as_u64().unwrap_or(0);
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    cx.elicit_with("a", form("First?", schema.clone())).await?;
    cx.once("e1", async || {
        RUNS.with(|r| *r.borrow_mut().entry((call, 1)).or_default() += 1);
        Ok(1u8)
    })
    .await?;
    cx.elicit_with("b", form("Second?", schema)).await?;
    cx.once("e2", async || {
        RUNS.with(|r| *r.borrow_mut().entry((call, 2)).or_default() += 1);
        Ok(2u8)
    })
    .await?;
    Ok(text(format!("done {call}")))
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Truth {
    /// Waiting for its answer to `a` (0) or `b` (1).
    Waiting(u8),
    Completed,
    Cancelled,
}

#[derive(Debug)]
struct Call {
    /// The tool's `call` argument (effects are counted under it).
    arg: u64,
    admin_id: String,
    truth: Truth,
    /// Its tool was paused when a round came: listed parked.
    parked: bool,
    /// Paused by an operator (this call alone): listed parked, every
    /// round parks.
    held: bool,
    purged: bool,
    /// Its row was lost: unlisted (and unknown to an operator) until its
    /// next round rebuilds it from its token.
    lost: bool,
    /// The state to answer next with.
    state: String,
    /// Every request sent for it (state, answers) and the reply it got
    /// when that reply was a result or a question.
    sent: Vec<(String, Value, Option<Value>)>,
    /// The final result, once completed.
    result: Option<Value>,
}

struct Model {
    s: TestServer,
    rng: Rng,
    calls: Vec<Call>,
    paused: bool,
    seed: u64,
    log: Vec<String>,
}

fn answers(key: &str, ok: bool) -> Value {
    json!({ key: {"action": "accept", "content": {"ok": ok}} })
}

fn sid_of(state: &str) -> String {
    let payload = state.split('.').nth(1).unwrap_or_default();
    let bytes = URL_SAFE_NO_PAD.decode(payload).unwrap_or_default();
    let claims: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    claims["sid"].as_str().unwrap_or_default().to_string()
}

fn c_held(c: &Call) -> bool {
    c.held
}

impl Model {
    fn new(seed: u64) -> Self {
        let mut r = Registry::new();
        r.tool(Tool::new("two_steps", two_steps).durable());
        let s = TestServer::with_config(r, |c| {
            c.admin_tokens =
                durable_mcp::auth::parse_api_tokens(&format!("ops:{OPS}")).expect("tokens");
        });
        Model {
            s,
            rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            calls: Vec::new(),
            paused: false,
            seed,
            log: Vec::new(),
        }
    }

    fn fail(&self, what: String) -> ! {
        panic!(
            "seed {}: {what}\nsteps:\n  {}",
            self.seed,
            self.log.join("\n  ")
        );
    }

    fn admin(&mut self, method: &str, path: &str, body: Value) -> TestReply {
        let body = Some(&body).filter(|b| !b.is_null());
        self.s.admin(OPS, method, path, body)
    }

    fn round(&mut self, arg: u64, state: &str, answers: &Value) -> TestReply {
        self.s.call_tool(
            "two_steps",
            json!({"call": arg}),
            json!({"requestState": state, "inputResponses": answers}),
        )
    }

    fn check_effects(&self) {
        for c in &self.calls {
            for e in [1, 2] {
                if ran(c.arg, e) > 1 {
                    self.fail(format!(
                        "call {} ran effect {e} {} times",
                        c.arg,
                        ran(c.arg, e)
                    ));
                }
            }
        }
    }

    fn start(&mut self, arg: u64) {
        let r = self
            .s
            .call_tool("two_steps", json!({"call": arg}), json!({}));
        if self.paused {
            if r.status != 503 {
                self.fail(format!("a new call of a paused tool: {}", r.text));
            }
            return;
        }
        let Some(state) = r.json["result"]["requestState"].as_str() else {
            self.fail(format!("a new call did not pause: {}", r.json));
        };
        let admin_id = format!("d.{}", sid_of(state));
        self.calls.push(Call {
            arg,
            admin_id,
            truth: Truth::Waiting(0),
            parked: false,
            held: false,
            purged: false,
            lost: false,
            state: state.to_string(),
            sent: Vec::new(),
            result: None,
        });
    }

    fn answer(&mut self, i: usize) {
        let (arg, state, truth) = {
            let c = &self.calls[i];
            (c.arg, c.state.clone(), c.truth)
        };
        let Truth::Waiting(step) = truth else {
            return self.retry(i);
        };
        let key = if step == 0 { "a" } else { "b" };
        let a = answers(key, true);
        let r = self.round(arg, &state, &a);
        let reply = if r.json.get("result").is_some() {
            Some(r.json["result"].clone())
        } else {
            None
        };
        self.calls[i].sent.push((state, a, reply));
        if self.paused || self.calls[i].held {
            if r.status != 503 {
                self.fail(format!("call {arg}: a round of a paused tool: {}", r.text));
            }
            // Parked: its row is written (again, if it was lost), so an
            // operator lists it so.
            self.calls[i].parked = true;
            self.calls[i].lost = false;
            return;
        }
        let c = &mut self.calls[i];
        c.parked = false;
        c.lost = false;
        match (step, r.json["result"]["resultType"].as_str()) {
            (0, Some("input_required")) => {
                c.state = r.json["result"]["requestState"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                c.truth = Truth::Waiting(1);
            }
            (1, Some("complete")) => {
                c.truth = Truth::Completed;
                c.result = Some(r.json["result"].clone());
            }
            _ => self.fail(format!("call {arg} at step {step}: {}", r.text)),
        }
    }

    /// Sends again something sent before for call `i`: the answer the
    /// truth allows, and never a call brought back.
    fn retry(&mut self, i: usize) {
        let c = &self.calls[i];
        if c.sent.is_empty() {
            return;
        }
        let n = self.rng.below(c.sent.len() as u64) as usize;
        let stale = self.rng.below(4) == 0;
        let (state, mut a, _) = c.sent[n].clone();
        // What this very request was answered with, any time it was.
        let before = c
            .sent
            .iter()
            .find(|(s, x, r)| *s == state && *x == a && r.is_some())
            .and_then(|(_, _, r)| r.clone());
        if matches!(c.truth, Truth::Waiting(_)) && (state == c.state || c.lost) {
            // The round it waits on (an earlier try was refused): an
            // answer. With its row lost, only its latest token can rebuild
            // it (an older one knows nothing of the effects run since: no
            // server can tell, with the storage gone).
            return self.answer(i);
        }
        if stale {
            // Other answers to an answered round.
            a = json!({"a": {"action": "decline"}, "b": {"action": "decline"}});
        }
        let (arg, truth, last) = (c.arg, c.truth, state == c.state);
        let result = c.result.clone();
        let r = self.round(arg, &state, &a);
        let code = r.json["error"]["code"].as_i64();
        match truth {
            Truth::Cancelled => {
                if code != Some(-32800) {
                    self.fail(format!("call {arg} (cancelled) retried: {}", r.text));
                }
            }
            _ if (self.paused || c_held(&self.calls[i])) && r.status == 503 => {}
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
        if truth != Truth::Completed && truth != Truth::Cancelled {
            // A retry of a waiting call's current round may have moved it.
            if let Some("complete") = r.json["result"]["resultType"].as_str() {
                self.calls[i].truth = Truth::Completed;
                self.calls[i].result = Some(r.json["result"].clone());
            }
        }
    }

    fn cancel(&mut self, i: usize) {
        let id = self.calls[i].admin_id.clone();
        let r = self.admin("POST", "/admin/api/calls/cancel", json!({"ids": [id]}));
        let done = r.json["done"]
            .as_array()
            .is_some_and(|d| d.contains(&json!(id)));
        let c = &mut self.calls[i];
        match c.truth {
            Truth::Waiting(_) if c.lost => {
                if done {
                    let text = r.text.clone();
                    self.fail(format!("cancel of a call whose row is lost: {text}"));
                }
            }
            Truth::Waiting(_) if !c.purged => {
                if !done {
                    let text = r.text.clone();
                    self.fail(format!("cancel of a waiting call: {text}"));
                }
                c.truth = Truth::Cancelled;
            }
            _ => {
                if done {
                    let text = r.text.clone();
                    self.fail(format!("cancel of a finished call answered done: {text}"));
                }
            }
        }
    }

    fn purge(&mut self) {
        let r = self.admin("POST", "/admin/api/purge", json!({}));
        let done: Vec<String> = r.json["done"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        for c in &mut self.calls {
            let finished = matches!(c.truth, Truth::Completed | Truth::Cancelled);
            let expected = finished && !c.purged;
            if done.contains(&c.admin_id) != expected {
                let text = r.text.clone();
                let id = c.admin_id.clone();
                self.fail(format!("purge of {id} (expected {expected}): {text}"));
            }
            c.purged |= finished;
        }
        // A status that is not final: refused, nothing purged.
        let r = self.admin("POST", "/admin/api/purge", json!({"status": ["waiting"]}));
        if r.status != 400 {
            self.fail(format!("purge of waiting calls: {}", r.text));
        }
    }

    fn pause(&mut self, pause: bool) {
        let what = if pause { "pause" } else { "resume" };
        let r = self.admin(
            "POST",
            &format!("/admin/api/tools/two_steps/{what}"),
            Value::Null,
        );
        if r.status != 200 {
            self.fail(format!("{what}: {}", r.text));
        }
        self.paused = pause;
    }

    /// An operator pauses (`hold`) or resumes call `i` alone.
    fn hold(&mut self, i: usize, hold: bool) {
        let id = self.calls[i].admin_id.clone();
        let what = if hold { "pause" } else { "resume" };
        let r = self.admin(
            "POST",
            &format!("/admin/api/calls/{what}"),
            json!({"ids": [id]}),
        );
        let done = r.json["done"]
            .as_array()
            .is_some_and(|d| d.contains(&json!(id)));
        let c = &self.calls[i];
        let live = matches!(c.truth, Truth::Waiting(_)) && !c.lost && !c.purged;
        let expected = live && (hold || c.held);
        if done != expected {
            let text = r.text.clone();
            self.fail(format!(
                "{what} of call {} (expected {expected}): {text}",
                c.arg
            ));
        }
        if done {
            self.calls[i].held = hold;
        }
    }

    /// The objects are evicted: their warm copies of the calls go, and the
    /// next round of each reads its row and log back.
    fn evict(&mut self) {
        for o in self.s.objects.values() {
            o.call.evict();
        }
    }

    /// Loses a waiting call's row (eviction, another deployment): its
    /// token carries what it needs; its recorded effect must not run again.
    fn lose(&mut self, i: usize) {
        let c = &self.calls[i];
        if !matches!(c.truth, Truth::Waiting(_)) {
            return;
        }
        let call_id = c.admin_id.trim_start_matches("d.").to_string();
        for o in self.s.objects.values() {
            let _ = o.call.delete(&call_id);
        }
        // Its pause went with its row.
        self.calls[i].lost = true;
        self.calls[i].held = false;
    }

    fn tick(&mut self) {
        self.s.now_ms += 30_000;
        self.s.fire_alarms();
    }

    /// The operator's listing against the truth.
    fn check_listing(&mut self) {
        let l = self
            .admin("GET", "/admin/api/calls?limit=500", Value::Null)
            .json;
        let listed: BTreeMap<String, String> = l["calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["id"].as_str().unwrap_or_default().to_string(),
                    c["status"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        let mut expected = BTreeMap::new();
        for c in &self.calls {
            if c.purged || c.lost {
                continue;
            }
            let status = match c.truth {
                Truth::Waiting(_) if c.parked || c.held => "parked",
                Truth::Waiting(_) => "waiting",
                Truth::Completed => "completed",
                Truth::Cancelled => "cancelled",
            };
            expected.insert(c.admin_id.clone(), status.to_string());
        }
        if listed != expected {
            self.fail(format!(
                "the listing {listed:?} is not the truth {expected:?}"
            ));
        }
        if l["calls"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["tool"] != "two_steps"))
        {
            self.fail(format!("a call listed with another tool: {l}"));
        }
    }

    fn step(&mut self, next_arg: &mut u64) {
        let n = self.calls.len();
        let i = self.rng.below(n as u64) as usize;
        let what = match self.rng.below(24) {
            0..=2 => "start",
            3..=8 => "answer",
            9..=11 => "retry",
            12..=13 => "cancel",
            14 => "purge",
            15 => "pause",
            16 => "resume",
            17 => "lose",
            18 => "hold",
            19 => "release",
            20 => "evict",
            _ => "tick",
        };
        let what = if n == 0 && !matches!(what, "pause" | "resume" | "tick" | "evict") {
            "start"
        } else {
            what
        };
        self.log.push(format!("{what} {i}"));
        match what {
            "start" => {
                *next_arg += 1;
                self.start(*next_arg);
            }
            "answer" => self.answer(i),
            "retry" => self.retry(i),
            "cancel" => self.cancel(i),
            "purge" => self.purge(),
            "pause" => self.pause(true),
            "resume" => self.pause(false),
            "lose" => self.lose(i),
            "hold" => self.hold(i, true),
            "release" => self.hold(i, false),
            "evict" => self.evict(),
            _ => self.tick(),
        }
        self.check_effects();
    }
}

#[test]
fn random_schedules_keep_every_promise() {
    let schedules: u64 = std::env::var("KEPT_MODEL_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let seconds: u64 = std::env::var("KEPT_MODEL_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut next_arg = 0u64;
    let mut ran_schedules = 0;
    let mut steps = 0;
    for seed in 1..=schedules {
        if Instant::now() > deadline {
            break;
        }
        let mut m = Model::new(seed);
        let length = 8 + m.rng.below(16);
        for _ in 0..length {
            m.step(&mut next_arg);
            steps += 1;
        }
        // Resume, and every waiting call can still finish.
        if m.paused {
            m.pause(false);
        }
        m.check_listing();
        for i in 0..m.calls.len() {
            if m.calls[i].held {
                m.hold(i, false);
            }
        }
        m.check_listing();
        for i in 0..m.calls.len() {
            for _ in 0..2 {
                if matches!(m.calls[i].truth, Truth::Waiting(_)) {
                    m.answer(i);
                }
            }
            if matches!(m.calls[i].truth, Truth::Waiting(_)) {
                m.fail(format!("call {} could not finish", m.calls[i].arg));
            }
        }
        m.check_effects();
        m.check_listing();
        ran_schedules += 1;
    }
    println!("kept model: {ran_schedules} schedules, {steps} steps");
    assert!(
        ran_schedules >= schedules.min(1_000),
        "only {ran_schedules} schedules in {seconds} s"
    );
}
