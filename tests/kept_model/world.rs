//! The model's world: the server, the truth kept beside it, and what every
//! step shares (sending, predicting a round, the invariants).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use durable_mcp::http::HttpRequest;
use durable_mcp::testing::{TestReply, TestServer};
use serde_json::{json, Value};

use crate::tool::{self, Code, Rng, DURABLE, EFFECT_KEYS, TASK};

/// The operator's bearer token.
pub(crate) const OPS: &str = "admin-token-0123456789";
/// A claimed round older than this died with its isolate (the config's).
pub(crate) const CLAIM_TIMEOUT_MS: u64 = 60_000;
/// How long a parked task waits before its alarm tries again: under a
/// tick, so a tick runs every task that can go on.
pub(crate) const PARKED_RETRY_MS: u64 = 20_000;
/// Ids come from the test server's per-request randomness, one byte that
/// wraps at 256: no call starts after this many requests, so no two share
/// an id.
pub(crate) const NEW_IDS_UNTIL: u32 = 240;

thread_local! {
    /// How often each interesting thing happened (what the run covered).
    static NOTES: RefCell<BTreeMap<String, u64>> = const { RefCell::new(BTreeMap::new()) };
}

/// Set when a schedule failed: the other threads stop at their next one.
pub(crate) static FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Counts `what` (happening to a call of `kind`, if any).
pub(crate) fn note(kind: Option<Kind>, what: &str) {
    let key = match kind {
        Some(k) => format!("{k:?}: {what}"),
        None => what.to_string(),
    };
    NOTES.with(|n| *n.borrow_mut().entry(key).or_default() += 1);
}

/// What was counted on this thread (and forgets it).
pub(crate) fn take_notes() -> BTreeMap<String, u64> {
    NOTES.with(|n| std::mem::take(&mut *n.borrow_mut()))
}

/// Which keeper holds a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// 2026-07-28 MRTR with `requestState`, kept in a shard.
    Durable,
    /// A 2025-11-25 session's call.
    Session,
    /// A task (the tasks extension).
    Task,
}

impl Kind {
    pub(crate) fn tool(self) -> &'static str {
        match self {
            Kind::Task => TASK,
            _ => DURABLE,
        }
    }
}

/// Where a call is, as the server must keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Truth {
    /// Waiting for the answer to this question.
    Waiting(&'static str),
    /// Its answers taken but its next round not run (a session's call
    /// parked or crashed with them; a task before its alarm's slice).
    Ready,
    Completed,
    Cancelled,
    /// Gone with its session's storage (only a session's call).
    Gone,
}

impl Truth {
    pub(crate) fn live(self) -> bool {
        matches!(self, Truth::Waiting(_) | Truth::Ready)
    }
}

/// What a durable call's client holds.
#[derive(Debug, Default)]
pub(crate) struct DurableClient {
    /// The state to answer its question with.
    pub(crate) state: String,
    /// Every round sent (state, answers) and its result when it got one.
    pub(crate) sent: Vec<(String, Value, Option<Value>)>,
}

/// What a session call's client holds.
#[derive(Debug, Default)]
pub(crate) struct SessionClient {
    pub(crate) sid: String,
    /// The call's stream (`c<n>`).
    pub(crate) stream: String,
    /// The id of the request it was last asked (its answer goes back
    /// with it).
    pub(crate) asked: Value,
    /// Every answer it sent.
    pub(crate) sent: Vec<Value>,
    /// How many events of its stream it read (its `Last-Event-ID`).
    pub(crate) seen: u64,
}

/// What a task's client holds.
#[derive(Debug, Default)]
pub(crate) struct TaskClient {
    pub(crate) task_id: String,
    /// Every `inputResponses` it sent.
    pub(crate) sent: Vec<Value>,
}

#[derive(Debug)]
pub(crate) enum Client {
    Durable(DurableClient),
    Session(SessionClient),
    Task(TaskClient),
}

#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) kind: Kind,
    /// The tool's `call` argument (effects are counted under it; a
    /// session's JSON-RPC id).
    pub(crate) arg: u64,
    pub(crate) admin_id: String,
    /// It started on V3 (it records the patch).
    pub(crate) patched: bool,
    /// The questions whose answers the server took, in order.
    pub(crate) answered: Vec<&'static str>,
    /// How many of its effects must have run (each once, in order).
    pub(crate) effects: u8,
    pub(crate) truth: Truth,
    /// Its last round parked (a paused tool, a held call, the tool gone).
    pub(crate) parked: bool,
    /// Paused by an operator (this call alone).
    pub(crate) held: bool,
    /// A durable call whose row was lost: unlisted until its next round
    /// rebuilds it from its token.
    pub(crate) lost: bool,
    pub(crate) purged: bool,
    /// A round claimed it and died (its isolate crashed), at this time.
    pub(crate) claimed_at: Option<u64>,
    /// Its final result, once seen.
    pub(crate) result: Option<Value>,
    /// A round of it crashed and none has run since (counted when one
    /// does: a claim taken over, a slice retried).
    pub(crate) crashed: bool,
    pub(crate) client: Client,
}

impl Call {
    pub(crate) fn new(
        kind: Kind,
        arg: u64,
        admin_id: String,
        patched: bool,
        client: Client,
    ) -> Self {
        Call {
            kind,
            arg,
            admin_id,
            patched,
            answered: Vec::new(),
            effects: 0,
            truth: Truth::Waiting("a"),
            parked: false,
            held: false,
            lost: false,
            purged: false,
            claimed_at: None,
            result: None,
            crashed: false,
            client,
        }
    }

    pub(crate) fn durable(&self) -> &DurableClient {
        match &self.client {
            Client::Durable(d) => d,
            _ => unreachable!("not a durable call"),
        }
    }

    pub(crate) fn durable_mut(&mut self) -> &mut DurableClient {
        match &mut self.client {
            Client::Durable(d) => d,
            _ => unreachable!("not a durable call"),
        }
    }

    pub(crate) fn session(&self) -> &SessionClient {
        match &self.client {
            Client::Session(s) => s,
            _ => unreachable!("not a session's call"),
        }
    }

    pub(crate) fn session_mut(&mut self) -> &mut SessionClient {
        match &mut self.client {
            Client::Session(s) => s,
            _ => unreachable!("not a session's call"),
        }
    }

    pub(crate) fn task(&self) -> &TaskClient {
        match &self.client {
            Client::Task(t) => t,
            _ => unreachable!("not a task"),
        }
    }

    pub(crate) fn task_mut(&mut self) -> &mut TaskClient {
        match &mut self.client {
            Client::Task(t) => t,
            _ => unreachable!("not a task"),
        }
    }

    /// The status the operator's listing must show (`None`: unlisted).
    pub(crate) fn listed(&self) -> Option<&'static str> {
        if self.purged || self.lost || self.truth == Truth::Gone {
            return None;
        }
        Some(match self.truth {
            Truth::Completed => "completed",
            Truth::Cancelled => "cancelled",
            // A round claimed it (kept.rs: Claim → working) and has not
            // ended: working until a retry takes the claim over.
            _ if self.claimed_at.is_some() => "working",
            _ if self.held || self.parked => "parked",
            Truth::Waiting(_) => "waiting",
            // A task whose slice is due.
            _ => "working",
        })
    }
}

/// What a client answers: accepted, `ok`.
pub(crate) fn accept() -> Value {
    json!({"action": "accept", "content": {"ok": true}})
}

/// Other answers to the same questions: a stale retry's.
pub(crate) fn declined(answers: &Value) -> Value {
    let keys = answers.as_object().into_iter().flatten();
    Value::Object(
        keys.map(|(k, _)| (k.clone(), json!({"action": "decline"})))
            .collect(),
    )
}

pub(crate) struct Model {
    pub(crate) s: TestServer,
    pub(crate) rng: Rng,
    pub(crate) calls: Vec<Call>,
    /// Tools an operator paused.
    pub(crate) paused: BTreeSet<&'static str>,
    pub(crate) code: Code,
    /// The session new session calls go to.
    pub(crate) session: Option<String>,
    pub(crate) seed: u64,
    pub(crate) log: Vec<String>,
    /// Requests sent (see [`NEW_IDS_UNTIL`]).
    pub(crate) sent: u32,
}

impl Model {
    pub(crate) fn new(seed: u64) -> Self {
        let code = Code::V1;
        let s = TestServer::with_config(code.registry(), |c| {
            c.admin_tokens =
                durable_mcp::auth::parse_api_tokens(&format!("ops:{OPS}")).expect("tokens");
            c.parked_retry_ms = PARKED_RETRY_MS;
            c.claim_timeout_ms = CLAIM_TIMEOUT_MS;
            // A few shards (each listing asks every one): calls spread
            // over several, operators' requests fanned out to them.
            c.call_shards = 4;
        });
        Model {
            s,
            rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            calls: Vec::new(),
            paused: BTreeSet::new(),
            code,
            session: None,
            seed,
            log: Vec::new(),
            sent: 0,
        }
    }

    /// Fails naming the seed and every step so far.
    pub(crate) fn fail(&self, what: String) -> ! {
        FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
        panic!(
            "seed {}: {what}\nsteps:\n  {}",
            self.seed,
            self.log.join("\n  ")
        );
    }

    pub(crate) fn now(&self) -> u64 {
        self.s.now_ms
    }

    /// Whether a new call may start (see [`NEW_IDS_UNTIL`]).
    pub(crate) fn may_start(&self) -> bool {
        self.sent < NEW_IDS_UNTIL
    }

    pub(crate) fn admin(&mut self, method: &str, path: &str, body: Value) -> TestReply {
        self.sent += 1;
        let body = Some(&body).filter(|b| !b.is_null());
        self.s.admin(OPS, method, path, body)
    }

    /// A 2026-07-28 request (`_meta` declaring tasks when `tasks`).
    pub(crate) fn call(&mut self, method: &str, mut params: Value, tasks: bool) -> TestReply {
        self.sent += 1;
        if tasks {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities":
                    {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
            });
        }
        self.s.call(method, params)
    }

    /// A 2025-11-25 request: a POST to session `sid` (none: `initialize`),
    /// or a GET of a call's stream after `last` (`Last-Event-ID`).
    pub(crate) fn session_request(
        &mut self,
        sid: Option<&str>,
        body: Option<Value>,
        last: Option<String>,
    ) -> TestReply {
        self.sent += 1;
        let mut headers: Vec<(String, String)> = vec![
            ("host".into(), "localhost:8787".into()),
            ("mcp-protocol-version".into(), "2025-11-25".into()),
        ];
        if let Some(sid) = sid {
            headers.push(("mcp-session-id".into(), sid.to_string()));
        }
        let (method, accept) = match &body {
            Some(_) => {
                headers.push(("content-type".into(), "application/json".into()));
                ("POST", "application/json, text/event-stream")
            }
            None => ("GET", "text/event-stream"),
        };
        headers.push(("accept".into(), accept.into()));
        if let Some(last) = last {
            headers.push(("last-event-id".into(), last));
        }
        self.s.send(HttpRequest {
            method: method.into(),
            path: "/mcp".into(),
            headers,
            body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        })
    }

    /// Whether call `i`'s next round parks rather than runs.
    pub(crate) fn blocked(&self, i: usize) -> bool {
        let c = &self.calls[i];
        !self.code.serves() || self.paused.contains(c.kind.tool()) || c.held
    }

    /// Whether a crashed round's claim on call `i` still stands (its
    /// isolate might yet be running it): no retry may run it.
    pub(crate) fn claim_live(&self, i: usize) -> bool {
        self.calls[i]
            .claimed_at
            .is_some_and(|at| self.now().saturating_sub(at) < CLAIM_TIMEOUT_MS)
    }

    /// Whether call `i`'s next round, with `key` answered too, runs an
    /// effect (so it awaits, and a crash can land in it).
    pub(crate) fn runs_effect(&self, i: usize, key: Option<&str>) -> bool {
        let c = &self.calls[i];
        let due = c
            .answered
            .iter()
            .copied()
            .chain(key)
            .filter(|k| EFFECT_KEYS.contains(k))
            .count();
        due > usize::from(c.effects)
    }

    /// Call `i`'s round ran under the current code: its effects ran for
    /// every answer taken, and it asks its next question or completes.
    pub(crate) fn ran_round(&mut self, i: usize) {
        let code = self.code;
        let c = &mut self.calls[i];
        if std::mem::take(&mut c.crashed) {
            note(Some(c.kind), "a round ran after one crashed");
        }
        if c.lost {
            note(Some(c.kind), "rebuilt from its token");
        }
        if c.parked {
            note(Some(c.kind), "went on after it parked");
        }
        let due = c.answered.iter().filter(|k| EFFECT_KEYS.contains(k));
        c.effects = due.count() as u8;
        c.parked = false;
        c.lost = false;
        c.claimed_at = None;
        let next = code
            .questions(c.patched)
            .iter()
            .find(|k| !c.answered.contains(k));
        c.truth = match next {
            Some(k) => Truth::Waiting(k),
            None => Truth::Completed,
        };
        match c.truth {
            Truth::Waiting("c") => note(Some(c.kind), "asked c (patched)"),
            Truth::Completed if c.patched && !c.answered.contains(&"c") => {
                note(Some(c.kind), "completed (patched, on code without it)");
            }
            Truth::Completed => note(Some(c.kind), "completed"),
            _ => {}
        }
    }

    /// Sends what `send` sends for call `i`, its next effect made to crash
    /// its isolate when `crash`: the reply, or `None` when it crashed (as
    /// asked: a round asked to crash must, and no other may).
    pub(crate) fn crash_or<T: std::fmt::Debug>(
        &mut self,
        i: usize,
        crash: bool,
        send: impl FnOnce(&mut Self) -> T,
    ) -> Option<T> {
        let arg = self.calls[i].arg;
        tool::crash_next(crash.then_some(arg));
        let r = tool::crashing(|| send(self));
        tool::crash_next(None);
        match (r, crash) {
            (Err(()), true) => {
                self.crashed(i);
                None
            }
            (Err(()), false) => self.fail(format!("call {arg}: a round crashed unasked")),
            (Ok(r), true) => self.fail(format!("call {arg}: the round ran no effect: {r:?}")),
            (Ok(r), false) => Some(r),
        }
    }

    /// Call `i`'s round crashed; the isolate died: the objects' warm
    /// copies went with it.
    pub(crate) fn crashed(&mut self, i: usize) {
        note(Some(self.calls[i].kind), "crashed in its effect");
        self.calls[i].crashed = true;
        for o in self.s.objects.values() {
            o.call.evict();
        }
    }

    /// No effect ran twice, none ran before its answer was taken, and
    /// every one a completed call needed ran once.
    pub(crate) fn check_effects(&self) {
        for c in &self.calls {
            for e in 1..=2u8 {
                let runs = tool::ran(c.arg, e);
                let expected = u32::from(e <= c.effects);
                if runs != expected {
                    self.fail(format!(
                        "call {} ({:?}, {:?}) ran effect {e} {runs} times, not {expected}",
                        c.arg, c.kind, c.truth
                    ));
                }
            }
            if c.truth == Truth::Completed && c.effects != 2 {
                self.fail(format!("call {} completed without its effects", c.arg));
            }
        }
    }
}
