//! One round of a call, whatever the wire: verify the state the client sent
//! back, load (or rebuild) the journal, take the answers in, replay the body,
//! and keep what it needs next — in a sealed token, and in durable mode in
//! the call's Durable Object too.
//!
//! The wires (MRTR, saga methods, the streamless sketch) are thin adapters
//! that turn their request into a [`RoundInput`] and a [`Round`] into their
//! result shape.

use std::collections::BTreeMap;
use std::future::Future;
use std::task::Poll;

use serde_json::{json, Map, Value};

use super::{Ctx, Server};
use crate::app::{CallToolResult, Prompt, Resource, ResourceTemplate, Tool};
use crate::engine::{
    self, digest_json, ClientCaps, Cx, InputRequest, Invocation, Journal, Outcome, Run, TaskMode,
    ToolError,
};
use crate::error::{ErrorKind, McpError};
use crate::protocol::object;
use crate::store::{CallStatus, CallStore, StoredCall, StoredReply};
use crate::token::{self, Binding, Claims};

/// Journals larger than this stay out of the token in durable mode (the DO
/// holds the master copy); below it the token can rebuild a lost DO.
pub const TOKEN_JOURNAL_CAP: usize = 8 * 1024;

/// What a call runs.
pub(crate) enum Target<'a> {
    Tool(&'a Tool),
    Prompt(&'a Prompt),
    Resource(&'a Resource),
    Template(&'a ResourceTemplate),
}

impl Target<'_> {
    /// The name state is bound to: tool/prompt name or resource URI.
    fn name(&self, args: &Value) -> String {
        match self {
            Target::Tool(t) => t.name.clone(),
            Target::Prompt(p) => p.name.clone(),
            Target::Resource(_) | Target::Template(_) => {
                args["uri"].as_str().unwrap_or_default().to_string()
            }
        }
    }

    fn durable(&self) -> bool {
        matches!(self, Target::Tool(t) if t.durable)
    }
}

/// The client's answers by key: `Ok(result)` or `Err(error)` for a failure
/// on the client's side.
pub(crate) type Answers = Vec<(String, Result<Value, Value>)>;

/// Reads a seed-wire answer, `{result}` or `{error}` (exactly one).
pub(crate) fn result_or_error(v: &Value) -> Option<Result<Value, Value>> {
    match (v.get("result"), v.get("error")) {
        (Some(r), None) => Some(Ok(r.clone())),
        (None, Some(e)) => Some(Err(e.clone())),
        _ => None,
    }
}

/// Reads a sealed state field: absent or `null` is none, a string is the
/// token, anything else is malformed state.
pub(crate) fn state_param(v: Option<&Value>) -> Result<Option<&str>, McpError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(refused("malformed")),
    }
}

/// A retry's `inputResponses`, as answers. One that is not an object carries
/// no usable answer: the round asks again rather than failing.
pub(crate) fn input_responses(v: Option<&Value>) -> Answers {
    match v {
        Some(Value::Object(r)) => r.iter().map(|(k, v)| (k.clone(), Ok(v.clone()))).collect(),
        _ => Vec::new(),
    }
}

/// The durable side of a request served inside a call's Durable Object.
pub struct Durable<'a> {
    /// The call id the Worker routed by (the DO's name).
    pub call_id: String,
    /// The DO's storage.
    pub store: &'a dyn CallStore,
    /// Set when this request stored the call for the first time (its
    /// object then arms the idle alarm; later rounds need not).
    pub(crate) created: std::cell::Cell<bool>,
}

impl<'a> Durable<'a> {
    /// The durable side of call `call_id`, stored in `store`.
    pub fn new(call_id: impl Into<String>, store: &'a dyn CallStore) -> Self {
        Self {
            call_id: call_id.into(),
            store,
            created: std::cell::Cell::new(false),
        }
    }
}

/// Everything one round needs from its wire.
pub(crate) struct RoundInput<'a> {
    /// The method state is bound to (`tools/call`, `prompts/get`, `tools/callSaga` …).
    pub(crate) method: &'a str,
    pub(crate) target: Target<'a>,
    pub(crate) args: Value,
    /// The sealed state the client sent back, if any.
    pub(crate) state: Option<&'a str>,
    /// The client's answers by key (`Err` for a client-side failure).
    pub(crate) answers: Answers,
    pub(crate) caps: ClientCaps,
    pub(crate) progress_token: Option<Value>,
    pub(crate) log_level: Option<String>,
    /// Keep the arguments in the token (saga: the resume carries none).
    pub(crate) args_in_token: bool,
    /// Whether the call may become a task (a task tool, the extension declared).
    pub(crate) task_mode: TaskMode,
}

/// How a round ended.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
// The journal rides in one variant by value: boxing it would cost an
// allocation per paused round to save a few bytes of a short-lived value.
#[allow(clippy::large_enum_variant)]
pub(crate) enum RoundOutcome {
    /// The result object (without `resultType`).
    Complete(Value),
    /// Requests to send and the state to send back with the answers.
    InputRequired {
        requests: BTreeMap<String, InputRequest>,
        state: String,
        /// The journal to continue from: a call that becomes a task here
        /// keeps it in the task (not stored with a durable reply).
        #[serde(skip)]
        journal: Option<Journal>,
    },
}

/// A round's outcome and the notifications emitted on the way.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Round {
    pub(crate) outcome: RoundOutcome,
    pub(crate) notifications: Vec<Value>,
    /// The body's last `cx.status` message (a call that becomes a task).
    #[serde(default, skip)]
    pub(crate) status: Option<String>,
}

fn refused(what: &str) -> McpError {
    McpError::new(
        ErrorKind::InvalidState,
        format!("Invalid request state: {what}"),
    )
}

/// Runs one round.
pub(crate) async fn run_round(
    server: &Server,
    input: RoundInput<'_>,
    ctx: &Ctx<'_>,
) -> Result<Round, McpError> {
    let target_name = input.target.name(&input.args);
    // Hashing the arguments is needed only to check state or seal new
    // state: a call that completes at once never pays for it.
    let args_digest = std::cell::OnceCell::new();
    let args_digest = || args_digest.get_or_init(|| digest_json(&input.args)).clone();
    let claims = match input.state {
        Some(s) => {
            let digest = args_digest();
            let binding = Binding {
                method: input.method,
                target: &target_name,
                args: &digest,
                sub: &ctx.principal.0,
            };
            Some(token::open(
                &server.config.keys,
                s,
                ctx.env.now_ms,
                binding,
            )?)
        }
        None => None,
    };
    let durable = match (input.target.durable(), ctx.durable, &claims) {
        (false, _, _) => None,
        (true, Some(d), _) => Some(d),
        // State minted before the tool became durable (a deploy in between).
        (true, None, Some(_)) => return Err(refused("issued before this tool became durable")),
        (true, None, None) => {
            return Err(McpError::internal(
                "a durable tool was called outside its Durable Object (routing bug)",
            ))
        }
    };

    // What the client answered, to know an exact retry of a round again.
    let answers_digest = match durable {
        Some(_) => digest_answers(&input.answers),
        None => String::new(),
    };
    // The journal to replay, the call id, and (durable mode) the claim to
    // write if the round has to wait.
    let (mut journal, sid, claim_row) = match (&claims, durable) {
        (None, None) => (Journal::new(), super::new_call_id(ctx.env), None),
        (Some(c), None) => (
            c.journal.clone().ok_or_else(|| refused("malformed"))?,
            c.sid.clone(),
            None,
        ),
        (c, Some(d)) => {
            let timeout = server.config.claim_timeout_ms;
            match claim(d, c.as_ref(), &answers_digest, ctx.env.now_ms, timeout)? {
                Claimed::Run(journal, row) => (journal, d.call_id.clone(), row),
                // The reply to this exact retry was lost: the same reply again.
                Claimed::Replay(round) => return Ok(round),
            }
        }
    };

    // In durable mode, the call as this round leaves it goes to storage —
    // except for a new call's first round: nothing was claimed, and a retry
    // of it (it has no state) is a new call, so only a pause is stored.
    let fresh = claims.is_none();
    let kept = durable.filter(|_| !fresh);

    // One rule on every wire: an answer whose shape does not fit what was
    // asked is refused (-32602), and the question stays open for a
    // corrected answer (nothing was claimed yet: nothing to release).
    journal.check_answers(&input.answers)?;
    // The journal as this round found it, to store again if the round
    // fails (durable mode only: elsewhere nothing is stored): without this
    // round's answers, so that a corrected retry's answers are the ones
    // taken.
    let round_before = journal.round;
    let before = kept.map(|d| (d, journal.clone()));
    // The client came back: checkpoints are passed.
    let passed = InputRequest::checkpoints_passed(&journal.pending);
    journal.accept_answers(passed);
    // Answers to pending requests go into the journal; the rest are offered.
    let mut offered = Map::new();
    let mut taken = Vec::new();
    for (key, answer) in input.answers {
        if journal.pending.contains_key(&key) {
            taken.push((key, answer));
        } else if let Ok(v) = answer {
            offered.insert(key, v);
        }
    }
    journal.accept_answers(taken);

    let mut cx = Cx::new(journal, input.caps)
        .with_caller(ctx.caller.clone(), ctx.resource.clone())
        .with_call(sid.clone(), durable.is_some())
        .with_offered(offered)
        .with_progress_token(input.progress_token)
        .with_log_level(input.log_level.as_deref())
        .with_task_mode(input.task_mode);
    // A durable call's object keeps it, and a call that becomes a task
    // here is kept by the task: a page can answer it there.
    let home = match (durable, ctx.task) {
        (Some(_), _) => Some(crate::elicitation::Home::Call(sid.clone())),
        (None, Some(t)) if input.task_mode == TaskMode::Allowed => {
            Some(crate::elicitation::Home::Task(t.task_id.clone()))
        }
        _ => None,
    };
    if let Some(home) = home {
        cx = cx.with_out_of_band(super::out_of_band(
            server,
            home,
            &ctx.principal.0,
            &ctx.origin(),
        ));
    }
    // The claim is written only if the body has to wait (for I/O, in the
    // Worker): until the first poll returns, no other request can run in
    // this object, and the write lands in the same storage transaction as
    // one made before the body ran (an object commits its writes when the
    // turn of its event loop ends). So a round that runs through — a replay
    // that ends in an answer or a new question without I/O — writes its
    // outcome alone.
    let mut run = std::pin::pin!(run_target(server, &input.target, cx, input.args.clone()));
    let first = std::future::poll_fn(|task| Poll::Ready(run.as_mut().poll(task))).await;
    let (
        Run {
            outcome,
            notifications,
            status,
        },
        written,
    ) = match first {
        Poll::Ready(run) => (run, false),
        Poll::Pending => {
            let written = match (durable, &claim_row) {
                (Some(d), Some(row)) => d.store.save(&d.call_id, row).map(|()| true)?,
                _ => false,
            };
            (run.await, written)
        }
    };
    // Only a claim that was written has to be released.
    let claimed = before.as_ref().filter(|_| written);

    let outcome = match outcome {
        Outcome::Complete(v) => RoundOutcome::Complete(v),
        Outcome::ToolFailed(m) => match input.target {
            Target::Tool(_) => RoundOutcome::Complete(CallToolResult::error(m).into_json()),
            // Prompts and resources have no error result: a failure is bad input.
            _ => {
                if let Some((d, before)) = &before {
                    finish(d, before, CallStatus::Completed, ctx.env.now_ms, None)?;
                }
                return Err(McpError::invalid_params(m));
            }
        },
        Outcome::InputRequired {
            requests,
            mut journal,
        } => {
            journal.round = round_before + 1;
            let round = journal.round;
            // The server keeps a durable call's journal, and a call that
            // may become a task keeps its own; otherwise the token's copy is
            // the only one, and the journal goes into it.
            let keep = durable.is_some() || input.task_mode == TaskMode::Allowed;
            let compact = if keep {
                journal.clone().compacted()
            } else {
                std::mem::take(&mut journal).compacted()
            };
            // The cap holds for what the token would carry.
            let in_token = durable.is_none()
                || serde_json::to_vec(&compact).map_or(0, |b| b.len()) <= TOKEN_JOURNAL_CAP;
            let state = token::seal(
                &server.config.keys,
                Claims {
                    kid: String::new(),
                    method: input.method.to_string(),
                    target: target_name.clone(),
                    args: args_digest(),
                    sub: ctx.principal.0.clone(),
                    iat: ctx.env.now_ms,
                    exp: ctx.env.now_ms.saturating_add(server.config.state_ttl_ms),
                    sid,
                    round,
                    arguments: input.args_in_token.then(|| input.args.clone()),
                    durable: durable.is_some(),
                    journal: in_token.then_some(compact),
                },
            )?;
            let outcome = RoundOutcome::InputRequired {
                requests,
                state,
                journal: (input.task_mode == TaskMode::Allowed).then(|| journal.clone()),
            };
            if let Some(d) = durable {
                // What the call runs, kept with it (not in the token): what a
                // replay check against new code, and an operator, read.
                journal.invocation.get_or_insert_with(|| Invocation {
                    tool: target_name.clone(),
                    arguments: input.args.clone(),
                });
                let round = Round {
                    outcome,
                    notifications,
                    status: None,
                };
                let reply = stored_reply(round_before, &answers_digest, &round)?;
                d.store.save(
                    &d.call_id,
                    &StoredCall {
                        version: journal.round,
                        status: CallStatus::AwaitingInput,
                        claimed_at_ms: 0,
                        journal,
                        last_reply: Some(reply),
                        updated_ms: ctx.env.now_ms,
                    },
                )?;
                // Stored for the first time: its object arms the idle alarm.
                d.created.set(fresh || d.created.get());
                return Ok(round);
            }
            outcome
        }
        Outcome::Error(e) => {
            // Release the claim so a corrected retry of the same round can run.
            if let Some((d, before)) = claimed {
                finish(d, before, CallStatus::AwaitingInput, ctx.env.now_ms, None)?;
            }
            return Err(e);
        }
    };
    let round = Round {
        outcome,
        notifications,
        status,
    };
    if let (Some((d, before)), RoundOutcome::Complete(_)) = (&before, &round.outcome) {
        let reply = stored_reply(round_before, &answers_digest, &round)?;
        finish(
            d,
            before,
            CallStatus::Completed,
            ctx.env.now_ms,
            Some(reply),
        )?;
    }
    Ok(round)
}

/// A digest of a round's answers, in key order. An answer's `_meta` is
/// left out: it is not part of what the client answered (an SDK may
/// decorate a retry differently from the first try), and an exact retry
/// must still be known as one.
fn digest_answers(answers: &Answers) -> String {
    let bare = |v: &Value| match v {
        Value::Object(m) if m.contains_key("_meta") => {
            let mut m = m.clone();
            m.remove("_meta");
            Value::Object(m)
        }
        v => v.clone(),
    };
    let mut sorted: Vec<(&String, Value)> = answers
        .iter()
        .map(|(k, a)| {
            let v = match a {
                Ok(v) => json!({ "result": bare(v) }),
                Err(e) => json!({ "error": bare(e) }),
            };
            (k, v)
        })
        .collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    digest_json(&json!(sorted))
}

fn stored_reply(round: u32, answers: &str, reply: &Round) -> Result<StoredReply, McpError> {
    Ok(StoredReply {
        round,
        answers: answers.to_string(),
        reply: serde_json::to_value(reply)
            .map_err(|e| McpError::internal(format!("the reply does not serialize: {e}")))?,
    })
}

/// What a durable retry may do.
#[allow(clippy::large_enum_variant)] // short-lived; see RoundOutcome
enum Claimed {
    /// Run the round from this journal; write the claim (if any) before the
    /// round first waits.
    Run(Journal, Option<StoredCall>),
    /// Answer with the stored reply of this exact retry.
    Replay(Round),
}

/// Durable mode: checks the retry against the stored call (compare-and-set
/// on the version) and makes the claim the round writes before it first
/// waits, so a concurrent retry of the same round is refused and `once`
/// effects run once.
/// A retry of an answered round with the same answers gets the stored reply;
/// with other answers it is refused.
fn claim(
    d: &Durable<'_>,
    claims: Option<&Claims>,
    answers: &str,
    now_ms: u64,
    timeout_ms: u64,
) -> Result<Claimed, McpError> {
    // A new call: its id is fresh randomness the router drew (a client
    // cannot name it: the header that carries it is internal), so its
    // object holds no row for it, no other request can reach it yet and
    // there is nothing to load or claim against; the round stores the call
    // only if it pauses. (Reading would cost a statement, a failed one in a
    // fresh object: its table does not exist yet.)
    let Some(c) = claims else {
        return Ok(Claimed::Run(Journal::new(), None));
    };
    if c.sid != d.call_id {
        return Err(refused("issued for another call"));
    }
    let journal = match d.store.load(&d.call_id)? {
        // Storage lost (evicted by TTL, another deployment): rebuild from the token.
        None => {
            d.created.set(true);
            let mut j = c
                .journal
                .clone()
                .ok_or_else(|| refused("the call's stored state is gone"))?;
            j.round = c.round;
            j
        }
        Some(s) => {
            if s.status == CallStatus::Completed || s.version != c.round {
                let exact = s
                    .last_reply
                    .as_ref()
                    .filter(|r| r.round == c.round && r.answers == answers);
                return match exact.map(|r| serde_json::from_value::<Round>(r.reply.clone())) {
                    Some(Ok(round)) => Ok(Claimed::Replay(round)),
                    _ => Err(refused("already used (this round was answered before)")),
                };
            }
            if s.status == CallStatus::Running
                && now_ms.saturating_sub(s.claimed_at_ms) < timeout_ms
            {
                return Err(McpError::new(
                    ErrorKind::Conflict,
                    "Conflict: another retry of this round is running",
                ));
            }
            s.journal
        }
    };
    let row = StoredCall {
        version: journal.round,
        status: CallStatus::Running,
        claimed_at_ms: now_ms,
        journal: journal.clone(),
        last_reply: None,
        updated_ms: now_ms,
    };
    Ok(Claimed::Run(journal, Some(row)))
}

fn finish(
    d: &Durable<'_>,
    journal: &Journal,
    status: CallStatus,
    now_ms: u64,
    last_reply: Option<StoredReply>,
) -> Result<(), McpError> {
    d.store.save(
        &d.call_id,
        &StoredCall {
            version: journal.round,
            status,
            claimed_at_ms: now_ms,
            journal: journal.clone(),
            last_reply,
            updated_ms: now_ms,
        },
    )
}

/// Runs the target's body once with `cx`, which gets the registry's shared
/// state.
/// The code version a round of `tool` runs on: the tool's declared
/// version and the Worker's version id, where known.
fn code_version(server: &Server, tool: &Tool) -> String {
    let mut v = format!("tool={}", tool.version.as_deref().unwrap_or("-"));
    if !server.config.worker_version.is_empty() {
        v.push_str(";worker=");
        v.push_str(&server.config.worker_version);
    }
    v
}

/// A code-change error names the tool its call belongs to.
fn named_tool(mut e: McpError, tool: &str) -> McpError {
    if e.kind == ErrorKind::CodeChanged {
        if let Some(data) = e.data.as_mut().and_then(Value::as_object_mut) {
            data.insert("tool".into(), Value::String(tool.to_string()));
        }
    }
    e
}

pub(crate) async fn run_target(
    server: &Server,
    target: &Target<'_>,
    cx: Cx,
    args: Value,
) -> Run<Value> {
    let cx = cx.with_state(server.registry.state.clone());
    match target {
        Target::Tool(t) => {
            // The scopes a call of this tool needs, checked before its body
            // runs (OAuth callers only; see `Cx::require_scopes`).
            let cx = cx
                .with_base_scopes(server.tool_scopes(t))
                .with_code(code_version(server, t), &t.patches);
            if let Err(ToolError::Protocol(e)) = cx.require_scopes(Vec::<String>::new()) {
                return Run {
                    outcome: Outcome::Error(e),
                    notifications: Vec::new(),
                    status: None,
                };
            }
            let run = engine::run(&*t.handler, cx, args).await;
            let declared = t.meta.get("outputSchema");
            let outcome = match run.outcome {
                Outcome::Complete(r) => match checked(server, declared, &r) {
                    Ok(()) => Outcome::Complete(r.into_json()),
                    Err(why) => Outcome::ToolFailed(why),
                },
                Outcome::ToolFailed(m) => Outcome::ToolFailed(m),
                Outcome::InputRequired { requests, journal } => {
                    Outcome::InputRequired { requests, journal }
                }
                Outcome::Error(e) => Outcome::Error(named_tool(e, &t.name)),
            };
            Run {
                outcome,
                notifications: run.notifications,
                status: run.status,
            }
        }
        Target::Prompt(p) => engine::run(&*p.handler, cx, args).await,
        Target::Resource(r) => {
            let run = engine::run(&*r.handler, cx, args).await;
            Run {
                outcome: contents(run.outcome),
                notifications: run.notifications,
                status: run.status,
            }
        }
        Target::Template(t) => {
            let uri = args["uri"].clone();
            let mut vars = t
                .match_uri(uri.as_str().unwrap_or_default())
                .unwrap_or_default();
            vars.insert("uri".into(), uri);
            let run = engine::run(&*t.handler, cx, Value::Object(vars)).await;
            Run {
                outcome: contents(run.outcome),
                notifications: run.notifications,
                status: run.status,
            }
        }
    }
}

/// What a tool's result must satisfy before it is sent: its structured
/// output fits the declared `outputSchema`, and a chained call fits the
/// server. Otherwise the call is a tool error saying why.
fn checked(server: &Server, declared: Option<&Value>, r: &CallToolResult) -> Result<(), String> {
    if let Some(why) = chain_refused(server, r) {
        return Err(why);
    }
    if let (Some(schema), Some(out), false) = (declared, &r.structured_content, r.is_error) {
        crate::schema::check(out, schema)
            .map_err(|why| format!("the tool's result does not match its outputSchema: {why}"))?;
    }
    Ok(())
}

/// Why a result's chained call (`_meta.nextTool`) cannot be sent: a tool
/// this server does not list, or arguments its input schema refuses.
fn chain_refused(server: &Server, r: &CallToolResult) -> Option<String> {
    let (name, args) = r.next_tool()?;
    let Some(next) = server.registry.find_tool(name) else {
        return Some(format!(
            "the tool asked for {name:?} to be called next, which this server does not list"
        ));
    };
    let args = if args.is_null() { &json!({}) } else { args };
    let schema = next.meta.get("inputSchema").cloned().unwrap_or(Value::Null);
    crate::schema::check(args, &schema).err().map(|why| {
        format!("the tool asked for {name:?} to be called next with arguments its input schema refuses: {why}")
    })
}

fn contents(outcome: Outcome<Vec<Value>>) -> Outcome<Value> {
    match outcome {
        Outcome::Complete(c) => Outcome::Complete(object([("contents", Value::Array(c))])),
        Outcome::InputRequired { requests, journal } => {
            Outcome::InputRequired { requests, journal }
        }
        Outcome::ToolFailed(m) => Outcome::ToolFailed(m),
        Outcome::Error(e) => Outcome::Error(e),
    }
}
