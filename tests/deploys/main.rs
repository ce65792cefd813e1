//! Paused calls across a deploy that changes the tool's code (issue 31),
//! natively through `durable_mcp::testing`.
//!
//! A v1 `deploy` like the quickstart's (a form under key `target`, a
//! sampling under key `verdict`, a ticket opened once under `cx.once`
//! ("ticket"), then "Deployed <service> to <target> (ticket <ticket>)"),
//! a variant that opens the ticket before the sampling (so a call paused at
//! the sampling holds a recorded `once`), and a twin that sleeps 60 s after
//! the ticket. Each test starts a call on v1, answers up to a pause point
//! (the form, the sampling, holding a `once`, mid-sleep), replaces the
//! registry with v2 on the same storage and keys (a deploy), and carries on
//! as a real client would: on every wire where the tool's shape allows —
//! plain stateless MRTR (no `once`), durable MRTR, the saga methods, the
//! streamless sketch, the 2025-11-25 session wire and tasks.
//!
//! What a deploy must do (issue 31): wording and shape changes that keep
//! the meaning continue (a recorded answer that no longer fits is asked
//! again); a real divergence (a renamed effect, a renamed question an
//! effect depended on, an effect output of another type, the tool gone)
//! never ends the call and never runs an effect twice — `-32050` (HTTP 409)
//! naming the tool and the key on the request/response wires, a session
//! call kept open with an error log on its stream, a task kept working with
//! a status message — and the same request after a rollback continues it.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use durable_mcp::http::HttpRequest;
use durable_mcp::testing::{TestReply, TestServer};
use durable_mcp::{ask, form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Map, Value};

mod pinning;

const TOOL: &str = "deploy";
const TASKS: &str = "io.modelcontextprotocol/tasks";
/// The call's JSON-RPC id on the session wire.
const SESSION_CALL_ID: u64 = 5;
/// How long the twin sleeps on v1.
const SLEEP_MS: u64 = 60_000;

// ---------------------------------------------------------------------------
// The tool, v1 and its v2s
// ---------------------------------------------------------------------------

/// The wires a call can be paused on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wire {
    /// 2026-07-28 MRTR, a stateless tool (its journal in `requestState`).
    Mrtr,
    /// 2026-07-28 MRTR, `Tool::durable` (its journal in a Durable Object).
    Durable,
    /// `tools/callSaga` / `tools/resumeSaga` (seed 000), a durable tool.
    Saga,
    /// The streamless sketch (seed 002), a durable tool.
    Sketch,
    /// The 2025-11-25 session wire.
    Session,
    /// The tasks extension (`Tool::task`).
    Task,
}

impl Wire {
    /// Whether the tool may use `cx.once` here.
    fn has_once(self) -> bool {
        self != Wire::Mrtr
    }

    /// Whether a divergence is answered with an error to the request (the
    /// request/response wires) rather than kept open (sessions, tasks).
    fn answers_errors(self) -> bool {
        !matches!(self, Wire::Session | Wire::Task)
    }
}

/// A field the form gains in v2.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Extra {
    None,
    /// `note`, not required: a recorded answer still fits.
    Optional,
    /// `approver`, required: a recorded answer no longer fits.
    Required,
}

/// What the `once` effect returns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OnceOut {
    /// A ticket string (v1).
    Text,
    /// A number (a v2 whose recorded output no longer decodes).
    Number,
}

/// One version of the tool's code.
#[derive(Clone, Debug)]
struct Shape {
    /// The form's key ("target"; renamed "destination").
    ask_key: &'static str,
    /// The form's message reworded.
    reworded: bool,
    extra: Extra,
    /// A "confirm" form inserted before the sampling.
    confirm: bool,
    /// The sampling step ("verdict").
    sample: bool,
    /// The ticket opened with `cx.once` (else made up, for stateless MRTR).
    once: bool,
    /// The ticket opened before the sampling (after the form).
    once_early: bool,
    once_key: &'static str,
    once_out: OnceOut,
    /// `cx.sleep("wait", …)` after the ticket.
    sleep_ms: Option<u64>,
    durable: bool,
    task: bool,
    /// `Tool::version`.
    version: Option<&'static str>,
    /// The "confirm" form asked only when `cx.patched("ask-confirm")`
    /// (and the tool declares that patch).
    patched_confirm: bool,
    /// `Tool::pinned`.
    pinned: bool,
    /// `cx.upgrade_point("after-form")` once the form is answered.
    upgrade_point: bool,
}

impl Shape {
    /// The quickstart's deploy as `wire` serves it.
    fn v1(wire: Wire) -> Self {
        Shape {
            ask_key: "target",
            reworded: false,
            extra: Extra::None,
            confirm: false,
            sample: true,
            once: wire.has_once(),
            once_early: false,
            once_key: "ticket",
            once_out: OnceOut::Text,
            sleep_ms: None,
            durable: matches!(
                wire,
                Wire::Durable | Wire::Saga | Wire::Sketch | Wire::Session
            ),
            task: wire == Wire::Task,
            version: None,
            patched_confirm: false,
            pinned: false,
            upgrade_point: false,
        }
    }

    /// The variant that opens its ticket right after the form, before the
    /// sampling: paused at the sampling, a call holds a recorded `once`.
    fn early(wire: Wire) -> Self {
        Shape {
            once_early: true,
            ..Shape::v1(wire)
        }
    }

    /// The twin that sleeps 60 s after the ticket.
    fn sleeper(wire: Wire) -> Self {
        Shape {
            sleep_ms: Some(SLEEP_MS),
            ..Shape::v1(wire)
        }
    }
}

fn form_schema(extra: Extra) -> Value {
    let mut properties = json!({
        "target": {"type": "string", "title": "Target", "description": "Where to deploy",
                   "enum": ["staging", "production"]},
    });
    let mut required = vec!["target"];
    match extra {
        Extra::None => {}
        Extra::Optional => {
            properties["note"] = json!({"type": "string", "description": "A note for the log"});
        }
        Extra::Required => {
            properties["approver"] = json!({"type": "string", "description": "Who approved it"});
            required.push("approver");
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

async fn open_ticket(
    cx: &Cx,
    shape: &Shape,
    counter: &Rc<Cell<u32>>,
    target: &str,
) -> Result<String, ToolError> {
    let c = counter.clone();
    match shape.once_out {
        OnceOut::Text => {
            cx.once(shape.once_key, async || {
                c.set(c.get() + 1);
                Ok(format!("T-{target}-{}", c.get()))
            })
            .await
        }
        OnceOut::Number => {
            let n: u64 = cx
                .once(shape.once_key, async || {
                    c.set(c.get() + 1);
                    Ok(u64::from(c.get()))
                })
                .await?;
            Ok(format!("T-{target}-{n}"))
        }
    }
}

/// The body of `shape`.
fn deploy_body(
    shape: Shape,
    counter: Rc<Cell<u32>>,
) -> impl AsyncFn(&mut Cx, Value) -> Result<CallToolResult, ToolError> + 'static {
    async move |cx: &mut Cx, args: Value| -> Result<CallToolResult, ToolError> {
        let service = args["service"].as_str().unwrap_or("?").to_string();
        let message = if shape.reworded {
            format!("Pick the environment {service} goes to.")
        } else {
            format!("Where should {service} be deployed?")
        };
        let answer = cx
            .elicit_with(shape.ask_key, form(message, form_schema(shape.extra)))
            .await?;
        if !answer.accepted() {
            return Ok(text(format!("Deployment of {service} cancelled.")));
        }
        let target = answer
            .content
            .as_ref()
            .and_then(|c| c.get("target"))
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        if shape.upgrade_point {
            cx.upgrade_point("after-form")?;
        }
        let mut ticket = format!("T-{target}-0");
        if shape.once && shape.once_early {
            ticket = open_ticket(cx, &shape, &counter, &target).await?;
        }
        if shape.confirm || (shape.patched_confirm && cx.patched("ask-confirm")) {
            let ok = cx
                .elicit_with(
                    "confirm",
                    form(
                        format!("Deploy {service} to {target}?"),
                        json!({"type": "object", "properties": {}}),
                    ),
                )
                .await?;
            if !ok.accepted() {
                return Ok(text(format!("Deployment of {service} not confirmed.")));
            }
        }
        if shape.sample {
            let verdict = cx
                .sample(
                    "verdict",
                    ask(
                        format!(
                            "Is it safe to deploy {service} to {target} right now? Answer yes or no."
                        ),
                        50,
                    ),
                )
                .await?;
            if !verdict.text().to_ascii_lowercase().contains("yes") {
                return Ok(text(format!("Not deploying {service} to {target}.")));
            }
        }
        if shape.once && !shape.once_early {
            ticket = open_ticket(cx, &shape, &counter, &target).await?;
        }
        if let Some(ms) = shape.sleep_ms {
            cx.sleep("wait", Duration::from_millis(ms)).await?;
        }
        Ok(text(format!(
            "Deployed {service} to {target} (ticket {ticket})."
        )))
    }
}

/// The tool of `shape`, its wire and version flags applied.
fn deploy_tool(shape: Shape, counter: Rc<Cell<u32>>) -> Tool {
    with_flags(Tool::new(TOOL, deploy_body(shape.clone(), counter)), &shape)
}

/// `tool` with the wire, version and policy `shape` declares.
fn with_flags(tool: Tool, shape: &Shape) -> Tool {
    let (durable, task, version) = (shape.durable, shape.task, shape.version);
    let mut tool = tool.description("Deploys a service.");
    if durable {
        tool = tool.durable();
    }
    if task {
        tool = tool.task();
    }
    if let Some(v) = version {
        tool = tool.version(v);
    }
    if shape.patched_confirm {
        tool = tool.patch("ask-confirm");
    }
    if shape.pinned {
        tool = tool.pinned();
    }
    tool
}

async fn noop(_: &mut Cx, _: Value) -> Result<CallToolResult, ToolError> {
    Ok(text("ok"))
}

/// A registry serving `shape` (and another tool, so it is never empty).
fn registry(shape: &Shape, counter: &Rc<Cell<u32>>) -> Registry {
    let mut r = Registry::new();
    r.tool(deploy_tool(shape.clone(), counter.clone()))
        .tool(Tool::new("noop", noop));
    r
}

/// A deploy that no longer serves `deploy`.
fn without_the_tool() -> Registry {
    let mut r = Registry::new();
    r.tool(Tool::new("noop", noop));
    r
}

/// What v1 answers for a call deployed to `target` (its ticket the first
/// and only one opened).
fn deployed(wire: Wire, target: &str) -> String {
    let n = u32::from(wire.has_once());
    format!("Deployed api to {target} (ticket T-{target}-{n}).")
}

// ---------------------------------------------------------------------------
// A client per wire
// ---------------------------------------------------------------------------

/// Where a call stands, as its client sees it.
#[derive(Debug, Clone)]
enum Step {
    /// It waits for these requests (key → `{method, params}`); none: it
    /// paused without asking (a checkpoint, a sleep) or is working.
    Asks(BTreeMap<String, Value>),
    /// It completed with this text.
    Done(String),
    /// It ended (or the request was refused) with this JSON-RPC error.
    Failed { status: u16, error: Value },
    /// A session or task call that stays open but does not move: what the
    /// client saw meanwhile.
    Stuck(Value),
}

/// The last request a client sent, to send it again.
#[derive(Debug, Clone)]
enum Last {
    Mrtr(Value),
    Post(Value),
    SessionAnswers(Vec<Value>),
    TaskUpdate,
}

struct Client {
    wire: Wire,
    /// What the user picks when the form is asked.
    target: &'static str,
    /// MRTR and sketch: the latest `requestState`.
    state: Value,
    /// Saga: the latest token and every completed step.
    token: String,
    steps: BTreeMap<String, Value>,
    /// Session: its id, the call's stream, messages read from it, the ids
    /// of the requests it carried by key.
    sid: String,
    stream: String,
    seen: usize,
    ids: BTreeMap<String, Value>,
    /// Task: its id and the last `tasks/get`.
    task: String,
    last_task: Value,
    last: Option<Last>,
    /// Every key asked, in order (a key asked again is listed again).
    asked: Vec<String>,
    /// Session: every message of the call's stream and every refused
    /// answer; task: every `tasks/get`.
    notes: Vec<Value>,
}

fn args() -> Value {
    json!({"service": "api"})
}

fn post(s: &mut TestServer, headers: &[(&str, &str)], body: &Value) -> TestReply {
    s.post(headers, body)
}

fn error_of(r: &TestReply) -> Option<Step> {
    r.json.get("error").map(|e| Step::Failed {
        status: r.status,
        error: e.clone(),
    })
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("(no text) {result}"))
}

fn tasks_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "sampling": {}, "extensions": {TASKS: {}}},
    })
}

/// Moves the clock by `ms` and fires what is due, until nothing is.
fn advance(s: &mut TestServer, ms: u64) {
    s.now_ms += ms;
    for _ in 0..20 {
        let due = s
            .objects
            .values()
            .any(|o| o.alarm_at.is_some_and(|at| at <= s.now_ms));
        if !due {
            return;
        }
        s.fire_alarms();
    }
}

impl Client {
    fn new(wire: Wire) -> Self {
        Client {
            wire,
            target: "staging",
            state: Value::Null,
            token: String::new(),
            steps: BTreeMap::new(),
            sid: String::new(),
            stream: "c1".into(),
            seen: 0,
            ids: BTreeMap::new(),
            task: String::new(),
            last_task: Value::Null,
            last: None,
            asked: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn note_asks(&mut self, step: &Step) {
        if let Step::Asks(m) = step {
            self.asked.extend(m.keys().cloned());
        }
    }

    /// Calls the tool.
    fn start(&mut self, s: &mut TestServer) -> Step {
        let step = match self.wire {
            Wire::Mrtr | Wire::Durable => {
                let r = s.call_tool(TOOL, args(), json!({}));
                self.read_mrtr(&r)
            }
            Wire::Saga => {
                let r = post(
                    s,
                    &[],
                    &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/callSaga",
                            "params": {"name": TOOL, "arguments": args()}}),
                );
                self.read_saga(&r)
            }
            Wire::Sketch => {
                let r = post(
                    s,
                    &[],
                    &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": TOOL, "arguments": args()},
                            "dependent_responses": {}}),
                );
                self.read_sketch(&r)
            }
            Wire::Session => {
                let r = post(
                    s,
                    &[],
                    &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"elicitation": {}, "sampling": {}},
                        "clientInfo": {"name": "deploys", "version": "1"}}}),
                );
                assert_eq!(r.status, 200, "initialize: {}", r.json);
                self.sid = r.header("mcp-session-id").expect("a session").to_string();
                let sid = self.sid.clone();
                let h = [
                    ("mcp-session-id", sid.as_str()),
                    ("mcp-protocol-version", "2025-11-25"),
                ];
                post(
                    s,
                    &h,
                    &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                );
                let r = post(
                    s,
                    &h,
                    &json!({"jsonrpc": "2.0", "id": SESSION_CALL_ID, "method": "tools/call",
                            "params": {"name": TOOL, "arguments": args()}}),
                );
                if r.events.is_empty() {
                    if let Some(e) = error_of(&r) {
                        return e;
                    }
                }
                self.read_session(r.events.clone())
            }
            Wire::Task => {
                let r = s.call(
                    "tools/call",
                    json!({"name": TOOL, "arguments": args(), "_meta": tasks_meta()}),
                );
                if let Some(e) = error_of(&r) {
                    return e;
                }
                assert_eq!(r.json["result"]["resultType"], "task", "{}", r.json);
                self.task = r.json["result"]["taskId"]
                    .as_str()
                    .expect("taskId")
                    .to_string();
                advance(s, 0);
                self.poll_task(s)
            }
        };
        self.note_asks(&step);
        step
    }

    /// Answers what the call asked (nothing: comes back to it — a retry
    /// after a checkpoint, a GET on the session's stream, time passing for
    /// a task).
    fn send(&mut self, s: &mut TestServer, answers: Map<String, Value>) -> Step {
        let step = match self.wire {
            Wire::Mrtr | Wire::Durable => {
                let mut extra = json!({"requestState": self.state});
                if !answers.is_empty() {
                    extra["inputResponses"] = Value::Object(answers);
                }
                self.last = Some(Last::Mrtr(extra.clone()));
                let r = s.call_tool(TOOL, args(), extra);
                self.read_mrtr(&r)
            }
            Wire::Saga => {
                for (k, v) in answers {
                    self.steps.insert(k, v);
                }
                let completed: Vec<Value> = self
                    .steps
                    .iter()
                    .map(|(k, v)| json!({"stepId": k, "result": v}))
                    .collect();
                let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/resumeSaga",
                    "params": {"sagaToken": self.token, "completedSteps": completed}});
                self.last = Some(Last::Post(body.clone()));
                let r = post(s, &[], &body);
                self.read_saga(&r)
            }
            Wire::Sketch => {
                let deps: Map<String, Value> = answers
                    .into_iter()
                    .map(|(k, v)| (k, json!({ "result": v })))
                    .collect();
                let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": TOOL, "arguments": args()},
                    "requestState": self.state, "dependent_responses": deps});
                self.last = Some(Last::Post(body.clone()));
                let r = post(s, &[], &body);
                self.read_sketch(&r)
            }
            Wire::Session => {
                if answers.is_empty() {
                    self.session_get(s)
                } else {
                    let messages: Vec<Value> = answers
                        .into_iter()
                        .map(|(k, v)| {
                            let id = self.ids.get(&k).cloned().unwrap_or(Value::Null);
                            json!({"jsonrpc": "2.0", "id": id, "result": v})
                        })
                        .collect();
                    self.last = Some(Last::SessionAnswers(messages.clone()));
                    self.session_post(s, &messages)
                }
            }
            Wire::Task => {
                if answers.is_empty() {
                    advance(s, SLEEP_MS);
                } else {
                    let params = json!({"taskId": self.task, "inputResponses": answers,
                                        "_meta": tasks_meta()});
                    self.last = Some(Last::TaskUpdate);
                    let r = s.call("tasks/update", params);
                    if let Some(e) = error_of(&r) {
                        return e;
                    }
                    advance(s, 0);
                }
                self.poll_task(s)
            }
        };
        self.note_asks(&step);
        step
    }

    /// Sends the last request again, as it was (a session: comes back to
    /// the call's stream; a task: lets its alarm fire).
    fn resend(&mut self, s: &mut TestServer) -> Step {
        let step = match (self.wire, self.last.clone()) {
            (Wire::Mrtr | Wire::Durable, Some(Last::Mrtr(extra))) => {
                let r = s.call_tool(TOOL, args(), extra);
                self.read_mrtr(&r)
            }
            (Wire::Saga, Some(Last::Post(body))) => {
                let r = post(s, &[], &body);
                self.read_saga(&r)
            }
            (Wire::Sketch, Some(Last::Post(body))) => {
                let r = post(s, &[], &body);
                self.read_sketch(&r)
            }
            (Wire::Session, _) => self.session_get(s),
            (Wire::Task, _) => {
                advance(s, SLEEP_MS);
                self.poll_task(s)
            }
            (w, l) => panic!("nothing to resend on {w:?}: {l:?}"),
        };
        self.note_asks(&step);
        step
    }

    /// Session: sends the same JSON-RPC responses again.
    fn repost_answers(&mut self, s: &mut TestServer) -> Step {
        let Some(Last::SessionAnswers(messages)) = self.last.clone() else {
            panic!("no session answers to send again");
        };
        let step = self.session_post(s, &messages);
        self.note_asks(&step);
        step
    }

    fn read_mrtr(&mut self, r: &TestReply) -> Step {
        if let Some(e) = error_of(r) {
            return e;
        }
        let res = &r.json["result"];
        match res["resultType"].as_str() {
            Some("input_required") => {
                self.state = res["requestState"].clone();
                Step::Asks(asks_of(&res["inputRequests"]))
            }
            Some("complete") => Step::Done(text_of(res)),
            _ => panic!(
                "an MRTR reply neither paused nor complete: {} {}",
                r.status, r.json
            ),
        }
    }

    fn read_saga(&mut self, r: &TestReply) -> Step {
        if let Some(e) = error_of(r) {
            return e;
        }
        let res = &r.json["result"];
        if res["state"] == "suspended" {
            self.token = res["sagaToken"].as_str().expect("sagaToken").to_string();
            let mut asks = BTreeMap::new();
            for step in res["steps"].as_array().cloned().unwrap_or_default() {
                let method = match step["type"].as_str() {
                    Some("elicitation") => "elicitation/create",
                    Some("sampling") => "sampling/createMessage",
                    Some("roots") => "roots/list",
                    other => panic!("a saga step of type {other:?}"),
                };
                let key = step["stepId"].as_str().expect("stepId").to_string();
                asks.insert(key, json!({"method": method, "params": step["params"]}));
            }
            return Step::Asks(asks);
        }
        Step::Done(text_of(res))
    }

    fn read_sketch(&mut self, r: &TestReply) -> Step {
        if let Some(e) = error_of(r) {
            return e;
        }
        if let Some(deps) = r.json.get("dependent_requests") {
            self.state = r.json["requestState"].clone();
            return Step::Asks(asks_of(deps));
        }
        Step::Done(text_of(&r.json["result"]))
    }

    fn session_headers(&self) -> [(&'static str, String); 2] {
        [
            ("mcp-session-id", self.sid.clone()),
            ("mcp-protocol-version", "2025-11-25".to_string()),
        ]
    }

    /// Session: POSTs `messages` (answers) and reads what they pushed to
    /// the call's stream.
    fn session_post(&mut self, s: &mut TestServer, messages: &[Value]) -> Step {
        let headers = self.session_headers();
        let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let before = s.pushes.len();
        for m in messages {
            let r = post(s, &h, m);
            if r.status != 202 {
                // An answer refused: the call is not ended by it; kept as
                // evidence.
                self.notes
                    .push(json!({"answerRefused": r.status, "reply": r.json}));
            }
        }
        let pushed: Vec<Value> = s.pushes[before..]
            .iter()
            .filter(|p| p.stream == self.stream)
            .flat_map(|p| &p.events)
            .filter_map(|e| serde_json::from_str(&e.data).ok())
            .collect();
        self.read_session(pushed)
    }

    /// Session: comes back to the call's stream (GET with Last-Event-ID).
    fn session_get(&mut self, s: &mut TestServer) -> Step {
        let last = format!("{}:{}", self.stream, self.seen);
        let r = s.send(HttpRequest {
            method: "GET".into(),
            path: "/mcp".into(),
            headers: vec![
                ("host".into(), "localhost:8787".into()),
                ("mcp-session-id".into(), self.sid.clone()),
                ("mcp-protocol-version".into(), "2025-11-25".into()),
                ("accept".into(), "text/event-stream".into()),
                ("last-event-id".into(), last),
            ],
            body: Vec::new(),
        });
        if r.status >= 300 {
            self.notes
                .push(json!({"getRefused": r.status, "reply": r.json}));
            if let Some(e) = error_of(&r) {
                return e;
            }
        }
        self.read_session(r.events.clone())
    }

    /// Session: the call's new messages.
    fn read_session(&mut self, messages: Vec<Value>) -> Step {
        self.seen += messages.len();
        let mut asks = BTreeMap::new();
        let mut end = None;
        for m in messages {
            self.notes.push(m.clone());
            if let (Some(method), Some(id)) = (m["method"].as_str(), m["id"].as_str()) {
                // Our requests' ids are `<stream>/<round>/<key>`.
                let mut parts = id.splitn(3, '/');
                let stream = parts.next().unwrap_or_default().to_string();
                let key = parts.nth(1).unwrap_or(id).to_string();
                self.stream = stream;
                self.ids.insert(key.clone(), m["id"].clone());
                asks.insert(key, json!({"method": method, "params": m["params"]}));
            } else if m["id"] == SESSION_CALL_ID {
                end = Some(match m.get("error") {
                    Some(e) => Step::Failed {
                        status: 200,
                        error: e.clone(),
                    },
                    None => Step::Done(text_of(&m["result"])),
                });
            }
        }
        end.unwrap_or(Step::Asks(asks))
    }

    fn poll_task(&mut self, s: &mut TestServer) -> Step {
        let r = s.call(
            "tasks/get",
            json!({"taskId": self.task, "_meta": tasks_meta()}),
        );
        assert!(
            r.status < 500,
            "tasks/get answered {}: {}",
            r.status,
            r.json
        );
        if let Some(e) = error_of(&r) {
            return e;
        }
        let t = r.json["result"].clone();
        self.notes.push(t.clone());
        self.last_task = t.clone();
        match t["status"].as_str() {
            Some("completed") => Step::Done(text_of(&t["result"])),
            Some("failed") | Some("cancelled") => Step::Failed {
                status: r.status,
                error: if t["error"].is_null() {
                    t.clone()
                } else {
                    t["error"].clone()
                },
            },
            Some("input_required") => Step::Asks(asks_of(&t["inputRequests"])),
            Some("working") => Step::Asks(BTreeMap::new()),
            other => panic!("a task in status {other:?}: {t}"),
        }
    }

    /// What the client saw of a call that does not move.
    fn evidence(&self) -> Value {
        match self.wire {
            Wire::Task => self.last_task.clone(),
            _ => Value::Array(self.notes.clone()),
        }
    }
}

fn asks_of(v: &Value) -> BTreeMap<String, Value> {
    v.as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// What a user and a model answer: the form filled in (`target`, and an
/// approver when asked), a confirmation accepted, "yes" from the model.
fn respond(asks: &BTreeMap<String, Value>, target: &str) -> Map<String, Value> {
    asks.iter()
        .map(|(key, request)| {
            let answer = match request["method"].as_str() {
                Some("elicitation/create") => {
                    let mut content = Map::new();
                    let props = &request["params"]["requestedSchema"]["properties"];
                    if props.get("target").is_some() {
                        content.insert("target".into(), json!(target));
                    }
                    if props.get("approver").is_some() {
                        content.insert("approver".into(), json!("ann"));
                    }
                    json!({"action": "accept", "content": content})
                }
                Some("sampling/createMessage") => json!({"role": "assistant",
                    "content": {"type": "text", "text": "yes"}, "model": "m"}),
                other => panic!("asked {key:?} by {other:?}: {request}"),
            };
            (key.clone(), answer)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Driving calls
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pause {
    /// At the form ("target").
    Form,
    /// At the sampling ("verdict").
    Sampling,
    /// Mid-sleep (after the sampling was answered).
    Sleep,
}

/// Starts the call on v1 and answers until it pauses at `pause`; returns
/// the answers the client would send next (as the user gave them before
/// the deploy).
fn pause_at(c: &mut Client, s: &mut TestServer, pause: Pause) -> Map<String, Value> {
    let mut step = c.start(s);
    for _ in 0..10 {
        match &step {
            Step::Asks(m) => {
                let here = match pause {
                    Pause::Form => m.contains_key("target"),
                    Pause::Sampling => m.contains_key("verdict"),
                    Pause::Sleep => m.is_empty() && c.asked.iter().any(|k| k == "verdict"),
                };
                let answers = respond(m, c.target);
                if here {
                    return answers;
                }
                step = c.send(s, answers);
            }
            other => panic!("v1 did not pause at {pause:?} on {:?}: {other:?}", c.wire),
        }
    }
    panic!("v1 never paused at {pause:?} on {:?}", c.wire);
}

/// Carries the call on from `step`, answering what it asks, until it
/// completes, fails, or stays where it is (three comebacks with nothing
/// new, or the same question asked again after its answer).
fn run_to_end(c: &mut Client, s: &mut TestServer, mut step: Step) -> Step {
    let mut answered: Vec<(String, Value)> = Vec::new();
    let mut idle = 0;
    for _ in 0..16 {
        match step {
            Step::Asks(m) => {
                let fresh = m
                    .iter()
                    .any(|(k, r)| !answered.iter().any(|(ak, ar)| ak == k && ar == r));
                if !m.is_empty() && fresh {
                    idle = 0;
                    answered.extend(m.iter().map(|(k, r)| (k.clone(), r.clone())));
                    let answers = respond(&m, c.target);
                    step = c.send(s, answers);
                } else {
                    idle += 1;
                    if idle >= 3 {
                        return Step::Stuck(c.evidence());
                    }
                    step = c.send(s, Map::new());
                }
            }
            end => return end,
        }
    }
    Step::Stuck(c.evidence())
}

/// A test's world: the server on v1, its counter, a client paused at
/// `pause`, the answers it sends next.
struct World {
    s: TestServer,
    counter: Rc<Cell<u32>>,
    c: Client,
    v1: Shape,
    pending: Map<String, Value>,
}

impl World {
    fn paused(wire: Wire, v1: Shape, pause: Pause) -> Self {
        let counter = Rc::new(Cell::new(0));
        let mut s = TestServer::new(registry(&v1, &counter));
        let mut c = Client::new(wire);
        let pending = pause_at(&mut c, &mut s, pause);
        World {
            s,
            counter,
            c,
            v1,
            pending,
        }
    }

    /// Deploys `v2` on the same storage and keys; from now on the user
    /// picks another target when asked.
    fn deploy(&mut self, v2: &Shape) {
        self.s.server.registry = registry(v2, &self.counter);
        self.c.target = "production";
        self.c.notes.clear();
    }

    /// Sends what the client sends next (the answers to the question it
    /// was shown, or a comeback) and returns the first step after it.
    fn next(&mut self) -> Step {
        let answers = std::mem::take(&mut self.pending);
        self.c.send(&mut self.s, answers)
    }

    fn rollback(&mut self) {
        self.s.server.registry = registry(&self.v1, &self.counter);
    }

    fn effects(&self) -> u32 {
        self.counter.get()
    }
}

fn assert_done(step: &Step, expected: &str, wire: Wire) {
    match step {
        Step::Done(t) => assert_eq!(t, expected, "on {wire:?}"),
        other => panic!("on {wire:?}: expected the result {expected:?}, got {other:?}"),
    }
}

/// A divergence: on the request/response wires `-32050` (409) naming the
/// tool and (unless `keys` is empty) one of `keys`; on a session the call
/// stays open with an error log on its stream; a task stays non-terminal,
/// its status message saying the code changed.
fn assert_diverged(step: &Step, wire: Wire, keys: &[&str], evidence_of: &Client) {
    if wire.answers_errors() {
        let Step::Failed { status, error } = step else {
            panic!("on {wire:?}: expected -32050, got {step:?}");
        };
        assert_eq!(error["code"], -32050, "on {wire:?}: {error}");
        assert_eq!(*status, 409, "on {wire:?}: {error}");
        assert_eq!(
            error["data"]["tool"], TOOL,
            "data.tool on {wire:?}: {error}"
        );
        if !keys.is_empty() {
            let key = error["data"]["key"].as_str().unwrap_or_default();
            assert!(
                keys.contains(&key),
                "data.key {key:?} on {wire:?}, expected one of {keys:?}: {error}"
            );
        }
        return;
    }
    let Step::Stuck(evidence) = step else {
        panic!("on {wire:?}: the call must stay open, not end: {step:?}");
    };
    if wire == Wire::Session {
        let logs: Vec<&Value> = evidence
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["method"] == "notifications/message" && m["params"]["level"] == "error")
            .collect();
        assert!(
            !logs.is_empty(),
            "on {wire:?}: no error log on the call's stream: {evidence}"
        );
        let said = logs[0]["params"]["data"].to_string().to_ascii_lowercase();
        assert!(
            said.contains("chang"),
            "the log does not say the code changed: {said}"
        );
        assert!(
            evidence_of.notes.iter().all(|m| m["id"] != SESSION_CALL_ID),
            "a response ended the call: {evidence}"
        );
    } else {
        let status = evidence["status"].as_str().unwrap_or_default();
        assert!(
            status == "working" || status == "input_required",
            "on {wire:?}: the task must stay open: {evidence}"
        );
        let message = evidence["statusMessage"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase();
        assert!(
            message.contains("chang"),
            "the task's statusMessage does not say the code changed: {evidence}"
        );
    }
}

// ---------------------------------------------------------------------------
// The cases
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Case {
    ControlAtForm,
    ControlAtSampling,
    ControlHoldingOnce,
    ControlMidSleep,
    MessageEdited,
    MessageEditedAnsweredNow,
    OptionalFieldAdded,
    OptionalFieldAddedAnsweredNow,
    RequiredFieldAdded,
    RequiredFieldAddedResamples,
    TimerChanged,
    StepInserted,
    StepRemoved,
    AskKeyRenamed,
    OnceKeyRenamed,
    OnceTypeChanged,
    ToolRemoved,
    Alternating,
    VersionsNamed,
    Patched,
}

/// A continuing case: pause v1 at `pause`, deploy `v2`, the call goes on
/// to `expected`.
fn continues(wire: Wire, v1: Shape, pause: Pause, v2: Shape, expected: &str) -> World {
    let mut w = World::paused(wire, v1, pause);
    let before = w.effects();
    w.deploy(&v2);
    let mark = w.c.asked.len();
    let first = w.next();
    let end = run_to_end(&mut w.c, &mut w.s, first);
    eprintln!(
        "{wire:?}: under v2 asked {:?}, then {end:?}",
        &w.c.asked[mark..]
    );
    assert_done(&end, expected, wire);
    if wire.has_once() {
        assert_eq!(w.effects(), 1, "the ticket opened once on {wire:?}");
        assert!(before <= 1);
    }
    w
}

/// A diverging case: pause v1 at `pause`, deploy `v2` (None: the tool
/// removed); the call diverges (never completes, no effect run again);
/// rolled back, the same request continues to v1's result.
fn diverges_then_rolls_back(wire: Wire, v1: Shape, pause: Pause, v2: Option<Shape>, keys: &[&str]) {
    let mut w = World::paused(wire, v1, pause);
    let before = w.effects();
    match &v2 {
        Some(v2) => w.deploy(v2),
        None => {
            w.s.server.registry = without_the_tool();
            w.c.target = "production";
            w.c.notes.clear();
        }
    }
    let mark = w.c.asked.len();
    let first = w.next();
    let end = run_to_end(&mut w.c, &mut w.s, first);
    eprintln!(
        "{wire:?}: under v2 asked {:?}, then {end:?}",
        &w.c.asked[mark..]
    );
    if let Step::Failed { status, error } = &end {
        assert_ne!(error["code"], -32603, "on {wire:?}: {error}");
        assert!(*status < 500, "on {wire:?}: HTTP {status} {error}");
    }
    assert_diverged(&end, wire, keys, &w.c);
    assert_eq!(
        w.effects(),
        before,
        "on {wire:?}: the effect ran again under v2"
    );

    // Rolled back: the same request (a session: the client back on the
    // call's stream; a task: its alarm) continues the call.
    w.rollback();
    let mark = w.c.asked.len();
    let again = w.c.resend(&mut w.s);
    let end = run_to_end(&mut w.c, &mut w.s, again);
    eprintln!(
        "{wire:?}: rolled back, asked {:?}, then {end:?}",
        &w.c.asked[mark..]
    );
    assert_done(&end, &deployed(wire, "staging"), wire);
    if wire.has_once() {
        assert_eq!(w.effects(), 1, "on {wire:?}: the ticket opened once");
    }
}

fn run(case: Case, wire: Wire) {
    let staging = deployed(wire, "staging");
    let production = deployed(wire, "production");
    let v1 = Shape::v1(wire);
    match case {
        Case::ControlAtForm => {
            continues(wire, v1.clone(), Pause::Form, v1, &staging);
        }
        Case::ControlAtSampling => {
            continues(wire, v1.clone(), Pause::Sampling, v1, &staging);
        }
        Case::ControlHoldingOnce => {
            let early = Shape::early(wire);
            let w = World::paused(wire, early.clone(), Pause::Sampling);
            assert_eq!(w.effects(), 1, "v1 opened its ticket before the sampling");
            drop(w);
            continues(wire, early.clone(), Pause::Sampling, early, &staging);
        }
        Case::ControlMidSleep => {
            let sleeper = Shape::sleeper(wire);
            let w = continues(wire, sleeper.clone(), Pause::Sleep, sleeper, &staging);
            drop(w);
        }
        Case::MessageEdited => {
            let v2 = Shape {
                reworded: true,
                ..v1.clone()
            };
            continues(wire, v1, Pause::Sampling, v2, &staging);
        }
        Case::MessageEditedAnsweredNow => {
            let v2 = Shape {
                reworded: true,
                ..v1.clone()
            };
            continues(wire, v1, Pause::Form, v2, &staging);
        }
        Case::OptionalFieldAdded => {
            let v2 = Shape {
                extra: Extra::Optional,
                ..v1.clone()
            };
            continues(wire, v1, Pause::Sampling, v2, &staging);
        }
        Case::OptionalFieldAddedAnsweredNow => {
            let v2 = Shape {
                extra: Extra::Optional,
                ..v1.clone()
            };
            continues(wire, v1, Pause::Form, v2, &staging);
        }
        Case::RequiredFieldAdded => {
            let v2 = Shape {
                extra: Extra::Required,
                ..v1.clone()
            };
            let mut w = World::paused(wire, v1, Pause::Sampling);
            w.deploy(&v2);
            let mark = w.c.asked.len();
            let first = w.next();
            // Asked again, not an error: the form as v2 asks it.
            let Step::Asks(asks) = &first else {
                panic!("on {wire:?}: expected the form asked again, got {first:?}");
            };
            let form = asks
                .get("target")
                .unwrap_or_else(|| panic!("on {wire:?}: \"target\" not asked again: {asks:?}"));
            assert!(
                form["params"]["requestedSchema"]["required"]
                    .as_array()
                    .is_some_and(|r| r.contains(&json!("approver"))),
                "the new form: {form}"
            );
            let end = run_to_end(&mut w.c, &mut w.s, first);
            eprintln!(
                "{wire:?}: under v2 asked {:?}, then {end:?}",
                &w.c.asked[mark..]
            );
            // The new answer (production) is the one used.
            assert_done(&end, &production, wire);
            if wire.has_once() {
                assert_eq!(w.effects(), 1);
            }
        }
        Case::RequiredFieldAddedResamples => {
            // As above; and the model's "yes" was given to "deploy api to
            // staging?" (sent with the request that met v2): once the user
            // picked production, the model must be asked about production,
            // not have its staging verdict applied to production.
            let v2 = Shape {
                extra: Extra::Required,
                ..v1.clone()
            };
            let mut w = World::paused(wire, v1, Pause::Sampling);
            w.deploy(&v2);
            let first = w.next();
            let Step::Asks(asks) = &first else {
                panic!("on {wire:?}: expected the form asked again, got {first:?}");
            };
            assert!(asks.contains_key("target"), "on {wire:?}: {asks:?}");
            let answers = respond(asks, w.c.target);
            let next = w.c.send(&mut w.s, answers);
            let Step::Asks(asks) = &next else {
                panic!(
                    "on {wire:?}: after the user picked production the model was not asked \
                     about production; the staging verdict was reused: {next:?}"
                );
            };
            let prompt = asks
                .get("verdict")
                .map(|r| r["params"].to_string())
                .unwrap_or_default();
            assert!(prompt.contains("production"), "on {wire:?}: {asks:?}");
            let end = run_to_end(&mut w.c, &mut w.s, next);
            assert_done(&end, &production, wire);
        }
        Case::TimerChanged => {
            let sleeper = Shape::sleeper(wire);
            let v2 = Shape {
                sleep_ms: Some(2 * SLEEP_MS),
                ..sleeper.clone()
            };
            if wire == Wire::Task {
                // Continues when its original timer fires.
                let mut w = World::paused(wire, sleeper, Pause::Sleep);
                w.deploy(&v2);
                advance(&mut w.s, SLEEP_MS);
                let step = w.c.poll_task(&mut w.s);
                assert_done(&step, &staging, wire);
                assert_eq!(w.effects(), 1);
            } else {
                continues(wire, sleeper, Pause::Sleep, v2, &staging);
            }
        }
        Case::StepInserted => {
            let v2 = Shape {
                confirm: true,
                ..v1.clone()
            };
            let mut w = World::paused(wire, v1, Pause::Sampling);
            w.deploy(&v2);
            let mark = w.c.asked.len();
            let first = w.next();
            let end = run_to_end(&mut w.c, &mut w.s, first);
            eprintln!(
                "{wire:?}: under v2 asked {:?}, then {end:?}",
                &w.c.asked[mark..]
            );
            assert_done(&end, &staging, wire);
            assert!(
                w.c.asked[mark..].iter().any(|k| k == "confirm"),
                "on {wire:?}: the new question was not asked: {:?}",
                &w.c.asked[mark..]
            );
            if wire.has_once() {
                assert_eq!(w.effects(), 1);
            }
        }
        Case::StepRemoved => {
            let v2 = Shape {
                sample: false,
                ..v1.clone()
            };
            continues(wire, v1, Pause::Sampling, v2, &staging);
        }
        Case::AskKeyRenamed => {
            let early = Shape::early(wire);
            let v2 = Shape {
                ask_key: "destination",
                sample: false,
                ..early.clone()
            };
            diverges_then_rolls_back(wire, early, Pause::Sampling, Some(v2), &["ticket"]);
        }
        Case::OnceKeyRenamed => {
            let early = Shape::early(wire);
            let v2 = Shape {
                once_key: "ticket2",
                ..early.clone()
            };
            diverges_then_rolls_back(
                wire,
                early,
                Pause::Sampling,
                Some(v2),
                &["ticket2", "ticket"],
            );
        }
        Case::OnceTypeChanged => {
            let early = Shape::early(wire);
            let v2 = Shape {
                once_out: OnceOut::Number,
                ..early.clone()
            };
            diverges_then_rolls_back(wire, early, Pause::Sampling, Some(v2), &["ticket"]);
        }
        Case::ToolRemoved => {
            diverges_then_rolls_back(wire, v1, Pause::Sampling, None, &[]);
        }
        Case::VersionsNamed => {
            // v1 declares version 1, v2 version 2: the divergence names
            // both (the code that paused the call, the code that met it).
            let early = Shape {
                version: Some("1"),
                ..Shape::early(wire)
            };
            let v2 = Shape {
                once_key: "ticket2",
                version: Some("2"),
                ..early.clone()
            };
            let mut w = World::paused(wire, early, Pause::Sampling);
            w.deploy(&v2);
            let first = w.next();
            let end = run_to_end(&mut w.c, &mut w.s, first);
            assert_diverged(&end, wire, &["ticket2", "ticket"], &w.c);
            let data = match (&end, wire) {
                (Step::Failed { error, .. }, _) => error["data"].clone(),
                (Step::Stuck(notes), Wire::Session) => notes
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|m| m["method"] == "notifications/message")
                    .map(|m| m["params"]["data"]["data"].clone())
                    .unwrap_or_default(),
                // A task reports its status message only.
                (Step::Stuck(task), _) => {
                    let message = task["statusMessage"].as_str().unwrap_or_default();
                    json!({"pausedOn": message, "metOn": message})
                }
                other => panic!("on {wire:?}: {other:?}"),
            };
            let paused = data["pausedOn"].as_str().unwrap_or_default();
            let met = data["metOn"].as_str().unwrap_or_default();
            assert!(paused.contains("tool=1"), "pausedOn on {wire:?}: {data}");
            assert!(met.contains("tool=2"), "metOn on {wire:?}: {data}");
            w.rollback();
            let again = w.c.resend(&mut w.s);
            let end = run_to_end(&mut w.c, &mut w.s, again);
            assert_done(&end, &staging, wire);
            assert_eq!(w.effects(), 1);
        }
        Case::Patched => {
            // v2 asks for a confirmation behind `cx.patched`: the call
            // paused on v1 keeps the old path; a call started on v2 asks.
            let v2 = Shape {
                patched_confirm: true,
                ..v1.clone()
            };
            let mut w = World::paused(wire, v1, Pause::Sampling);
            w.deploy(&v2);
            let mark = w.c.asked.len();
            let first = w.next();
            let end = run_to_end(&mut w.c, &mut w.s, first);
            assert_done(&end, &staging, wire);
            assert!(
                !w.c.asked[mark..].iter().any(|k| k == "confirm"),
                "on {wire:?}: an old call took the new path: {:?}",
                &w.c.asked[mark..]
            );
            let mut fresh = Client::new(wire);
            let first = fresh.start(&mut w.s);
            let end = run_to_end(&mut fresh, &mut w.s, first);
            assert!(
                fresh.asked.iter().any(|k| k == "confirm"),
                "on {wire:?}: a new call did not take the new path: {:?}",
                fresh.asked
            );
            let n = 2 * u32::from(wire.has_once());
            assert_done(
                &end,
                &format!("Deployed api to staging (ticket T-staging-{n})."),
                wire,
            );
        }
        Case::Alternating => {
            // A gradual deployment: the call's rounds alternate between v1
            // and a v2 whose form is reworded and gained an optional field.
            let v2 = Shape {
                reworded: true,
                extra: Extra::Optional,
                ..v1.clone()
            };
            let mut w = World::paused(wire, v1.clone(), Pause::Form);
            w.deploy(&v2);
            let step = w.next();
            let Step::Asks(asks) = &step else {
                panic!("on {wire:?}: expected the sampling under v2, got {step:?}");
            };
            assert!(asks.contains_key("verdict"), "on {wire:?}: {asks:?}");
            let answers = respond(asks, w.c.target);
            w.rollback();
            let step = w.c.send(&mut w.s, answers);
            let end = run_to_end(&mut w.c, &mut w.s, step);
            assert_done(&end, &staging, wire);
            if wire.has_once() {
                assert_eq!(w.effects(), 1);
            }
        }
    }
}

macro_rules! deploy_tests {
    ($($name:ident: $case:ident on $wire:ident;)*) => {
        $(
            #[test]
            fn $name() {
                run(Case::$case, Wire::$wire);
            }
        )*
    };
}

deploy_tests! {
    control_at_the_form_continues_on_mrtr: ControlAtForm on Mrtr;
    control_at_the_form_continues_on_durable_mrtr: ControlAtForm on Durable;
    control_at_the_form_continues_on_saga: ControlAtForm on Saga;
    control_at_the_form_continues_on_sketch: ControlAtForm on Sketch;
    control_at_the_form_continues_on_session: ControlAtForm on Session;
    control_at_the_form_continues_on_task: ControlAtForm on Task;

    control_at_the_sampling_continues_on_mrtr: ControlAtSampling on Mrtr;
    control_at_the_sampling_continues_on_durable_mrtr: ControlAtSampling on Durable;
    control_at_the_sampling_continues_on_saga: ControlAtSampling on Saga;
    control_at_the_sampling_continues_on_sketch: ControlAtSampling on Sketch;
    control_at_the_sampling_continues_on_session: ControlAtSampling on Session;
    control_at_the_sampling_continues_on_task: ControlAtSampling on Task;

    control_holding_a_once_continues_on_durable_mrtr: ControlHoldingOnce on Durable;
    control_holding_a_once_continues_on_saga: ControlHoldingOnce on Saga;
    control_holding_a_once_continues_on_sketch: ControlHoldingOnce on Sketch;
    control_holding_a_once_continues_on_session: ControlHoldingOnce on Session;
    control_holding_a_once_continues_on_task: ControlHoldingOnce on Task;

    control_mid_sleep_continues_on_mrtr: ControlMidSleep on Mrtr;
    control_mid_sleep_continues_on_durable_mrtr: ControlMidSleep on Durable;
    control_mid_sleep_continues_on_saga: ControlMidSleep on Saga;
    control_mid_sleep_continues_on_sketch: ControlMidSleep on Sketch;
    control_mid_sleep_continues_on_session: ControlMidSleep on Session;
    control_mid_sleep_continues_on_task: ControlMidSleep on Task;

    message_edited_continues_on_mrtr: MessageEdited on Mrtr;
    message_edited_continues_on_durable_mrtr: MessageEdited on Durable;
    message_edited_continues_on_saga: MessageEdited on Saga;
    message_edited_continues_on_sketch: MessageEdited on Sketch;
    message_edited_continues_on_session: MessageEdited on Session;
    message_edited_continues_on_task: MessageEdited on Task;

    message_edited_answered_in_the_same_request_continues_on_mrtr: MessageEditedAnsweredNow on Mrtr;
    message_edited_answered_in_the_same_request_continues_on_durable_mrtr: MessageEditedAnsweredNow on Durable;
    message_edited_answered_in_the_same_request_continues_on_saga: MessageEditedAnsweredNow on Saga;
    message_edited_answered_in_the_same_request_continues_on_sketch: MessageEditedAnsweredNow on Sketch;
    message_edited_answered_in_the_same_request_continues_on_session: MessageEditedAnsweredNow on Session;
    message_edited_answered_in_the_same_request_continues_on_task: MessageEditedAnsweredNow on Task;

    optional_field_added_continues_on_mrtr: OptionalFieldAdded on Mrtr;
    optional_field_added_continues_on_durable_mrtr: OptionalFieldAdded on Durable;
    optional_field_added_continues_on_saga: OptionalFieldAdded on Saga;
    optional_field_added_continues_on_sketch: OptionalFieldAdded on Sketch;
    optional_field_added_continues_on_session: OptionalFieldAdded on Session;
    optional_field_added_continues_on_task: OptionalFieldAdded on Task;

    optional_field_added_answered_in_the_same_request_continues_on_mrtr: OptionalFieldAddedAnsweredNow on Mrtr;
    optional_field_added_answered_in_the_same_request_continues_on_durable_mrtr: OptionalFieldAddedAnsweredNow on Durable;
    optional_field_added_answered_in_the_same_request_continues_on_saga: OptionalFieldAddedAnsweredNow on Saga;
    optional_field_added_answered_in_the_same_request_continues_on_sketch: OptionalFieldAddedAnsweredNow on Sketch;
    optional_field_added_answered_in_the_same_request_continues_on_session: OptionalFieldAddedAnsweredNow on Session;
    optional_field_added_answered_in_the_same_request_continues_on_task: OptionalFieldAddedAnsweredNow on Task;

    required_field_added_asks_again_on_mrtr: RequiredFieldAdded on Mrtr;
    required_field_added_asks_again_on_durable_mrtr: RequiredFieldAdded on Durable;
    required_field_added_asks_again_on_saga: RequiredFieldAdded on Saga;
    required_field_added_asks_again_on_sketch: RequiredFieldAdded on Sketch;
    required_field_added_asks_again_on_session: RequiredFieldAdded on Session;
    required_field_added_asks_again_on_task: RequiredFieldAdded on Task;

    required_field_added_asks_the_model_again_about_the_new_answer_on_mrtr: RequiredFieldAddedResamples on Mrtr;
    required_field_added_asks_the_model_again_about_the_new_answer_on_durable_mrtr: RequiredFieldAddedResamples on Durable;
    required_field_added_asks_the_model_again_about_the_new_answer_on_saga: RequiredFieldAddedResamples on Saga;
    required_field_added_asks_the_model_again_about_the_new_answer_on_sketch: RequiredFieldAddedResamples on Sketch;
    required_field_added_asks_the_model_again_about_the_new_answer_on_session: RequiredFieldAddedResamples on Session;
    required_field_added_asks_the_model_again_about_the_new_answer_on_task: RequiredFieldAddedResamples on Task;

    timer_changed_continues_on_mrtr: TimerChanged on Mrtr;
    timer_changed_continues_on_durable_mrtr: TimerChanged on Durable;
    timer_changed_continues_on_saga: TimerChanged on Saga;
    timer_changed_continues_on_sketch: TimerChanged on Sketch;
    timer_changed_continues_on_session: TimerChanged on Session;
    timer_changed_continues_on_task: TimerChanged on Task;

    step_inserted_asks_the_new_question_on_mrtr: StepInserted on Mrtr;
    step_inserted_asks_the_new_question_on_durable_mrtr: StepInserted on Durable;
    step_inserted_asks_the_new_question_on_saga: StepInserted on Saga;
    step_inserted_asks_the_new_question_on_sketch: StepInserted on Sketch;
    step_inserted_asks_the_new_question_on_session: StepInserted on Session;
    step_inserted_asks_the_new_question_on_task: StepInserted on Task;

    step_removed_continues_on_mrtr: StepRemoved on Mrtr;
    step_removed_continues_on_durable_mrtr: StepRemoved on Durable;
    step_removed_continues_on_saga: StepRemoved on Saga;
    step_removed_continues_on_sketch: StepRemoved on Sketch;
    step_removed_continues_on_session: StepRemoved on Session;
    step_removed_continues_on_task: StepRemoved on Task;

    ask_key_renamed_never_mixes_answers_on_durable_mrtr: AskKeyRenamed on Durable;
    ask_key_renamed_never_mixes_answers_on_saga: AskKeyRenamed on Saga;
    ask_key_renamed_never_mixes_answers_on_sketch: AskKeyRenamed on Sketch;
    ask_key_renamed_never_mixes_answers_on_session: AskKeyRenamed on Session;
    ask_key_renamed_never_mixes_answers_on_task: AskKeyRenamed on Task;

    once_key_renamed_is_refused_then_rolls_back_on_durable_mrtr: OnceKeyRenamed on Durable;
    once_key_renamed_is_refused_then_rolls_back_on_saga: OnceKeyRenamed on Saga;
    once_key_renamed_is_refused_then_rolls_back_on_sketch: OnceKeyRenamed on Sketch;
    once_key_renamed_is_refused_then_rolls_back_on_session: OnceKeyRenamed on Session;
    once_key_renamed_is_refused_then_rolls_back_on_task: OnceKeyRenamed on Task;

    once_type_changed_is_refused_then_rolls_back_on_durable_mrtr: OnceTypeChanged on Durable;
    once_type_changed_is_refused_then_rolls_back_on_saga: OnceTypeChanged on Saga;
    once_type_changed_is_refused_then_rolls_back_on_sketch: OnceTypeChanged on Sketch;
    once_type_changed_is_refused_then_rolls_back_on_session: OnceTypeChanged on Session;
    once_type_changed_is_refused_then_rolls_back_on_task: OnceTypeChanged on Task;

    tool_removed_then_restored_continues_on_mrtr: ToolRemoved on Mrtr;
    tool_removed_then_restored_continues_on_durable_mrtr: ToolRemoved on Durable;
    tool_removed_then_restored_continues_on_saga: ToolRemoved on Saga;
    tool_removed_then_restored_continues_on_sketch: ToolRemoved on Sketch;
    tool_removed_then_restored_continues_on_session: ToolRemoved on Session;
    tool_removed_then_restored_continues_on_task: ToolRemoved on Task;

    rounds_alternating_between_two_versions_continue_on_mrtr: Alternating on Mrtr;
    rounds_alternating_between_two_versions_continue_on_durable_mrtr: Alternating on Durable;
    rounds_alternating_between_two_versions_continue_on_saga: Alternating on Saga;
    rounds_alternating_between_two_versions_continue_on_sketch: Alternating on Sketch;
    rounds_alternating_between_two_versions_continue_on_session: Alternating on Session;
    rounds_alternating_between_two_versions_continue_on_task: Alternating on Task;

    a_divergence_names_the_versions_on_durable_mrtr: VersionsNamed on Durable;
    a_divergence_names_the_versions_on_saga: VersionsNamed on Saga;
    a_divergence_names_the_versions_on_sketch: VersionsNamed on Sketch;
    a_divergence_names_the_versions_on_session: VersionsNamed on Session;
    a_divergence_names_the_versions_on_task: VersionsNamed on Task;

    patched_keeps_paused_calls_on_the_old_path_on_mrtr: Patched on Mrtr;
    patched_keeps_paused_calls_on_the_old_path_on_durable_mrtr: Patched on Durable;
    patched_keeps_paused_calls_on_the_old_path_on_saga: Patched on Saga;
    patched_keeps_paused_calls_on_the_old_path_on_sketch: Patched on Sketch;
    patched_keeps_paused_calls_on_the_old_path_on_session: Patched on Session;
    patched_keeps_paused_calls_on_the_old_path_on_task: Patched on Task;
}

/// On a session, a client that sends its answer again after the rollback
/// (rather than coming back to the stream with a GET) continues the call
/// too.
#[test]
fn once_key_renamed_rolls_back_by_sending_the_answer_again_on_session() {
    let wire = Wire::Session;
    let early = Shape::early(wire);
    let v2 = Shape {
        once_key: "ticket2",
        ..early.clone()
    };
    let mut w = World::paused(wire, early, Pause::Sampling);
    w.deploy(&v2);
    let first = w.next();
    let end = run_to_end(&mut w.c, &mut w.s, first);
    assert_diverged(&end, wire, &[], &w.c);
    assert_eq!(w.effects(), 1);
    w.rollback();
    let again = w.c.repost_answers(&mut w.s);
    let end = run_to_end(&mut w.c, &mut w.s, again);
    assert_done(&end, &deployed(wire, "staging"), wire);
    assert_eq!(w.effects(), 1);
}
