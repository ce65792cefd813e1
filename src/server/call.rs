//! One round of a call, whatever the wire: verify the state the client sent
//! back, load (or rebuild) the journal, take the answers in, replay the body,
//! and keep what it needs next — in a sealed token, and in durable mode in
//! the call's Durable Object too.
//!
//! The wires (MRTR, saga methods, the streamless sketch) are thin adapters
//! that turn their request into a [`RoundInput`] and a [`Round`] into their
//! result shape.

use std::future::Future;
use std::task::Poll;

use serde_json::{json, Map, Value};

use super::round::{self, Kept, Site, Step};
use super::target::Target;
use super::{Ctx, Server};
use crate::engine::{
    digest_json, ClientCaps, InputRequest, Invocation, Journal, RoundEnd, Run, TaskMode,
};
use crate::error::{ErrorKind, McpError};
use crate::kept;
use crate::kept::summary::{finished, paused};
use crate::protocol::params::State;
use crate::store::{CallStore, StoredCall, StoredReply};
use crate::token::{self, Binding, Claims};
use crate::vec_map::VecMap;

/// Journals larger than this stay out of the token in durable mode (the DO
/// holds the master copy); below it the token can rebuild a lost DO.
pub const TOKEN_JOURNAL_CAP: usize = 8 * 1024;

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
pub(crate) fn state_param(v: Option<&State>) -> Result<Option<&str>, McpError> {
    match v {
        None => Ok(None),
        Some(State::Token(s)) => Ok(Some(s.as_str())),
        Some(State::Malformed) => Err(refused("malformed")),
    }
}

/// A retry's `inputResponses`, as answers. One that is not an object carries
/// no usable answer: the round asks again rather than failing.
pub(crate) fn input_responses(v: Option<&Map<String, Value>>) -> Answers {
    v.map_or_else(Vec::new, |r| {
        r.iter().map(|(k, v)| (k.clone(), Ok(v.clone()))).collect()
    })
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
    /// The wire, as traces name it (`mrtr`, `saga`, `sketch`, `task`).
    pub(crate) wire: &'static str,
    /// The client's W3C `traceparent` (`_meta.traceparent`), if any.
    pub(crate) traceparent: Option<String>,
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
        requests: VecMap<String, InputRequest>,
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

/// Runs one round: the state checked, the journal loaded (and claimed in
/// durable mode), the answers taken, the body run ([`round::run`]), and
/// what the step says kept ([`Call::keep`]).
pub(crate) async fn run_round(
    server: &Server,
    input: RoundInput<'_>,
    ctx: &Ctx<'_>,
) -> Result<Round, McpError> {
    let call = Call::open(server, &input, ctx)?;
    let (mut journal, claim_row) = match call.load(server, ctx)? {
        Claimed::Run(journal, row) => (journal, row),
        // The reply to this exact retry was lost: the same reply again.
        Claimed::Replay(round) => return Ok(round),
    };
    // One rule on every wire: an answer whose shape does not fit what was
    // asked is refused (-32602), and the question stays open for a
    // corrected answer (nothing was claimed yet: nothing to release).
    journal.check_answers(&input.answers)?;
    // The journal as this round found it, to store again if the round
    // fails (durable mode only: elsewhere nothing is stored): without this
    // round's answers, so that a corrected retry's answers are the ones
    // taken.
    let before = call.kept().map(|d| (d, journal.clone()));
    let offered = take_answers(&mut journal, input.answers.clone());
    let site = call.site(&input, ctx, offered);
    let (run, written) = run_claiming(server, &input, journal, site, &call, claim_row).await?;
    let step = Step::of(run.outcome, matches!(input.target, Target::Tool(_)));
    call.keep(
        server,
        &input,
        ctx,
        step,
        (run.notifications, run.status),
        (&before, written),
    )
}

/// A call as one round sees it: its verified state, where it is kept.
struct Call<'a> {
    target_name: String,
    /// The client's state, verified (none for a new call).
    claims: Option<Claims>,
    /// The call's object, in durable mode.
    durable: Option<&'a Durable<'a>>,
    /// What the client answered, to know an exact retry again (durable).
    answers_digest: String,
    /// The arguments' digest, made only when state is checked or sealed.
    args_digest: std::cell::OnceCell<String>,
    args: &'a Value,
}

impl<'a> Call<'a> {
    /// Checks the state the client sent back against this request, and
    /// finds where the call is kept.
    fn open(
        server: &Server,
        input: &'a RoundInput<'_>,
        ctx: &'a Ctx<'_>,
    ) -> Result<Self, McpError> {
        let mut call = Call {
            target_name: input.target.name(&input.args),
            claims: None,
            durable: None,
            answers_digest: String::new(),
            args_digest: std::cell::OnceCell::new(),
            args: &input.args,
        };
        if let Some(s) = input.state {
            let digest = call.args_digest();
            let binding = Binding {
                method: input.method,
                target: &call.target_name,
                args: &digest,
                sub: &ctx.principal.0,
            };
            call.claims = Some(token::open(
                &server.config.keys,
                s,
                ctx.env.now_ms,
                binding,
            )?);
        }
        call.durable = kept_in(input, ctx, call.claims.is_some())?;
        if call.durable.is_some() {
            call.answers_digest = digest_answers(&input.answers);
        }
        Ok(call)
    }

    fn args_digest(&self) -> String {
        self.args_digest
            .get_or_init(|| digest_json(self.args))
            .clone()
    }

    /// In durable mode the call as this round leaves it goes to storage —
    /// except for a new call's first round: nothing was claimed, and a
    /// retry of it (it has no state) is a new call, so only a pause is
    /// stored.
    fn kept(&self) -> Option<&'a Durable<'a>> {
        self.durable.filter(|_| self.claims.is_some())
    }

    /// The call's id: the token's, the object's, or fresh.
    fn sid(&self, ctx: &Ctx<'_>) -> String {
        match (&self.claims, self.durable) {
            (_, Some(d)) => d.call_id.clone(),
            (Some(c), None) => c.sid.clone(),
            (None, None) => super::new_call_id(ctx.env),
        }
    }

    /// The journal to replay, and (durable mode) the claim to write if the
    /// round has to wait; or the stored reply of an exact retry.
    fn load(&self, server: &Server, ctx: &Ctx<'_>) -> Result<Claimed, McpError> {
        match (&self.claims, self.durable) {
            (None, None) => Ok(Claimed::Run(Journal::new(), None)),
            (Some(c), None) => Ok(Claimed::Run(
                c.journal.clone().ok_or_else(|| refused("malformed"))?,
                None,
            )),
            (c, Some(d)) => {
                let mut claimed = claim(
                    d,
                    c.as_ref(),
                    &self.answers_digest,
                    ctx.env.now_ms,
                    server.config.claim_timeout_ms,
                )?;
                // A call rebuilt from its token is listed with what it
                // runs from its claim on (a round that dies leaves it so).
                if let Claimed::Run(_, Some(ClaimRow::Whole(row))) = &mut claimed {
                    row.journal.invocation.get_or_insert_with(|| Invocation {
                        tool: self.target_name.clone(),
                        arguments: self.args.clone(),
                    });
                }
                Ok(claimed)
            }
        }
    }

    /// Where this round runs.
    fn site(&self, input: &RoundInput<'_>, ctx: &Ctx<'_>, offered: Map<String, Value>) -> Site {
        let sid = self.sid(ctx);
        // A durable call's object keeps it, and a call that becomes a task
        // here is kept by the task: a page can answer it there.
        let home = match (self.durable, ctx.task) {
            (Some(_), _) => Some(crate::elicitation::Home::Call(sid.clone())),
            (None, Some(t)) if input.task_mode == TaskMode::Allowed => {
                Some(crate::elicitation::Home::Task(t.task_id.clone()))
            }
            _ => None,
        };
        Site {
            caps: input.caps.clone(),
            caller: ctx.caller.clone(),
            resource: ctx.resource.clone(),
            call_id: sid,
            once_safe: self.durable.is_some(),
            progress_token: input.progress_token.clone(),
            log_level: input.log_level.clone(),
            task_mode: input.task_mode,
            offered,
            kept: home.map(|home| Kept {
                home,
                principal: ctx.principal.0.clone(),
                origin: ctx.origin(),
            }),
        }
    }

    /// Keeps what the round's step says: the result (and, durable, the
    /// completed call), the pause (a sealed token; durable, the stored
    /// call), or, on a failure or a parked call, the claim released.
    fn keep(
        &self,
        server: &Server,
        input: &RoundInput<'_>,
        ctx: &Ctx<'_>,
        step: Step,
        said: (Vec<Value>, Option<String>),
        (before, claimed): (&Option<(&Durable<'_>, Journal)>, bool),
    ) -> Result<Round, McpError> {
        let (end, why) = round::end_of(&step);
        if claimed {
            still_ours(before, end)?;
        }
        let sid = self.sid(ctx);
        let ended = self.ended(&sid, input, ctx, &step);
        let ending = Ending {
            call: self,
            server,
            input,
            ended: &ended,
            end,
            why: why.as_deref(),
        };
        match step {
            Step::Paused { requests, journal } => {
                self.pause(server, input, ctx, requests, journal, said, &ended)
            }
            Step::Done(v) => ending.done(v, said, before),
            Step::Refused(m) => ending.refused(m, before),
            Step::Failed(e) | Step::Parked(e) => ending.released(e, before, claimed),
        }
    }

    /// The round as its log line and its trail mark name it.
    fn ended<'s>(
        &'s self,
        sid: &'s str,
        input: &'s RoundInput<'_>,
        ctx: &'s Ctx<'_>,
        step: &Step,
    ) -> round::Ended<'s> {
        round::Ended {
            call_id: sid,
            tool: &self.target_name,
            wire: input.wire,
            principal: &ctx.caller.principal,
            now_ms: ctx.env.now_ms,
            round: self.claims.as_ref().map_or(0, |c| c.round) + 1,
            traceparent: input.traceparent.as_deref(),
            error: round::error_of(step),
        }
    }

    /// A paused round: its state sealed for the client, and in durable
    /// mode the call stored with the reply to this round.
    #[allow(clippy::too_many_arguments)]
    fn pause(
        &self,
        server: &Server,
        input: &RoundInput<'_>,
        ctx: &Ctx<'_>,
        requests: VecMap<String, InputRequest>,
        mut journal: Journal,
        (notifications, status): (Vec<Value>, Option<String>),
        ended: &round::Ended<'_>,
    ) -> Result<Round, McpError> {
        let round_before = journal.round;
        journal.round = round_before + 1;
        let state = self.seal(server, input, ctx, &mut journal)?;
        self.fits_a_request(server, &state, ended)?;
        let outcome = RoundOutcome::InputRequired {
            requests,
            state,
            journal: (input.task_mode == TaskMode::Allowed).then(|| journal.clone()),
        };
        let Some(d) = self.durable else {
            // A call that may become a task is recorded by the task.
            if input.task_mode != TaskMode::Allowed {
                round::record(server, None, RoundEnd::Paused, None, ended);
            }
            return Ok(Round {
                outcome,
                notifications,
                status,
            });
        };
        let reply = Round {
            outcome,
            notifications,
            status: None,
        };
        let stored = stored_reply(round_before, &self.answers_digest, &reply)?;
        self.store_pause(server, input, d, journal, stored, ended)?;
        Ok(reply)
    }

    /// The state the client gets for its next round: the token, holding
    /// the journal where no one else keeps it (taken from `journal` then).
    fn seal(
        &self,
        server: &Server,
        input: &RoundInput<'_>,
        ctx: &Ctx<'_>,
        journal: &mut Journal,
    ) -> Result<String, McpError> {
        let round = journal.round;
        let in_token = self.in_token(input, journal);
        let now = ctx.env.now_ms;
        token::seal(
            &server.config.keys,
            Claims {
                kid: String::new(),
                method: input.method.to_string(),
                target: self.target_name.clone(),
                args: self.args_digest(),
                sub: ctx.principal.0.clone(),
                iat: now,
                exp: now.saturating_add(server.config.state_ttl_ms),
                sid: self.sid(ctx),
                round,
                arguments: input.args_in_token.then(|| input.args.clone()),
                durable: self.durable.is_some(),
                journal: in_token,
            },
        )
    }

    /// What of the journal the token carries (compacted), if any: taken
    /// from `journal` where no one else keeps it.
    fn in_token(&self, input: &RoundInput<'_>, journal: &mut Journal) -> Option<Journal> {
        // The server keeps a durable call's journal, and a call that may
        // become a task keeps its own; otherwise the token's copy is the
        // only one, and the journal goes into it.
        let keep = self.durable.is_some() || input.task_mode == TaskMode::Allowed;
        if self.durable.is_none() {
            return Some(if keep {
                journal.clone().compacted()
            } else {
                std::mem::take(journal).compacted()
            });
        }
        // The cap holds for what the token would carry. A durable call
        // with more answers and outputs than a token could hold is not
        // copied, compacted and measured on every round (that grew with
        // the call's length).
        if journal.answers.len() + journal.once.len() > TOKEN_JOURNAL_CAP / 100 {
            return None;
        }
        let compact = journal.clone().compacted();
        let fits = serde_json::to_vec(&compact).map_or(0, |b| b.len()) <= TOKEN_JOURNAL_CAP;
        fits.then_some(compact)
    }

    /// A state the client could not send back (with its answers) inside
    /// the body limit would end the call at its next round, every retry
    /// refused: it ends here instead, saying why and what to do.
    fn fits_a_request(
        &self,
        server: &Server,
        state: &str,
        ended: &round::Ended<'_>,
    ) -> Result<(), McpError> {
        let most = state_limit(server);
        if self.durable.is_some() || state.len() <= most {
            return Ok(());
        }
        let e = McpError::internal(format!(
            "The call's state has grown to {} bytes, over the {most} a client can send \
             back within the server's body limit ({} bytes): the tool keeps too much in \
             its stateless calls (its answers and effects' outputs travel in the state); \
             make it durable (Tool::durable) so the server keeps the call",
            state.len(),
            server.config.max_body_bytes
        ));
        let ended = round::Ended {
            error: Some((e.code(), format!("{:?}", e.kind))),
            traceparent: ended.traceparent,
            ..*ended
        };
        round::record(server, None, RoundEnd::Failed, Some(&e.message), &ended);
        Err(e)
    }

    /// A durable call's pause, stored with the reply to this round.
    fn store_pause(
        &self,
        server: &Server,
        input: &RoundInput<'_>,
        d: &Durable<'_>,
        mut journal: Journal,
        stored: StoredReply,
        ended: &round::Ended<'_>,
    ) -> Result<(), McpError> {
        // What the call runs, kept with it (not in the token): what a
        // replay check against new code, and an operator, read.
        journal.invocation.get_or_insert_with(|| Invocation {
            tool: self.target_name.clone(),
            arguments: input.args.clone(),
        });
        round::record(server, Some(&mut journal), RoundEnd::Paused, None, ended);
        let row = StoredCall {
            version: journal.round,
            status: paused(&journal),
            tomb: false,
            claimed_at_ms: 0,
            journal,
            last_reply: Some(stored),
            updated_ms: ended.now_ms,
        };
        save_or_fail(server, d, &row, ended)?;
        // Stored for the first time: its object arms the idle alarm.
        d.created.set(self.claims.is_none() || d.created.get());
        Ok(())
    }
}

/// The object that keeps the call, in durable mode (`stated`: the client
/// sent state back).
fn kept_in<'a>(
    input: &RoundInput<'_>,
    ctx: &Ctx<'a>,
    stated: bool,
) -> Result<Option<&'a Durable<'a>>, McpError> {
    match (input.target.durable(), ctx.durable, stated) {
        (false, _, _) => Ok(None),
        (true, Some(d), _) => Ok(Some(d)),
        // State minted before the tool became durable (a deploy in between).
        (true, None, true) => Err(refused("issued before this tool became durable")),
        (true, None, false) => Err(McpError::internal(
            "a durable tool was called outside its Durable Object (routing bug)",
        )),
    }
}

/// A round that did not pause, as it is kept.
struct Ending<'r> {
    call: &'r Call<'r>,
    server: &'r Server,
    input: &'r RoundInput<'r>,
    ended: &'r round::Ended<'r>,
    end: RoundEnd,
    why: Option<&'r str>,
}

impl Ending<'_> {
    /// A prompt's or a resource's failure (bad input) ends the call, as
    /// `-32602`.
    fn refused(
        &self,
        m: String,
        before: &Option<(&Durable<'_>, Journal)>,
    ) -> Result<Round, McpError> {
        self.store(before.as_ref(), true, finished, None)?;
        Err(McpError::invalid_params(m))
    }

    /// A failed or parked round releases the claim, so a corrected retry
    /// (or, parked, the same retry after a rollback) can run the round.
    /// Only a claim that was written has to be released; a parked call's
    /// row is written anyway, so that its trail says it is parked (an
    /// operator lists it so).
    fn released(
        &self,
        e: McpError,
        before: &Option<(&Durable<'_>, Journal)>,
        claimed: bool,
    ) -> Result<Round, McpError> {
        let parked = self.end == RoundEnd::Parked;
        let row = before.as_ref().filter(|_| claimed || parked);
        self.store(row, false, paused, None)?;
        Err(e)
    }

    /// A result: the completed call stored with its reply (durable).
    fn done(
        &self,
        v: Value,
        (notifications, status): (Vec<Value>, Option<String>),
        before: &Option<(&Durable<'_>, Journal)>,
    ) -> Result<Round, McpError> {
        let round = Round {
            outcome: RoundOutcome::Complete(v),
            notifications,
            status,
        };
        let reply = match before {
            Some((_, b)) => Some(stored_reply(b.round, &self.call.answers_digest, &round)?),
            None => None,
        };
        self.store(before.as_ref(), true, finished, reply)?;
        Ok(round)
    }

    /// Stores the call as `status` in its row (with this round's answers
    /// when `answers`), its trail marked; a round kept nowhere is logged.
    fn store(
        &self,
        row: Option<&(&Durable<'_>, Journal)>,
        answers: bool,
        status: fn(&Journal) -> kept::Status,
        reply: Option<StoredReply>,
    ) -> Result<(), McpError> {
        let Some((d, before)) = row else {
            // Logged when it belongs to a call that paused (a later round,
            // carrying state); a call that answers in one round is a plain
            // request, logged by the platform.
            if self.call.claims.is_some() {
                round::record(self.server, None, self.end, self.why, self.ended);
            }
            return Ok(());
        };
        let mut j = before.clone();
        // What the call runs, kept with it (a call rebuilt from its token
        // after storage was lost has none yet).
        j.invocation.get_or_insert_with(|| Invocation {
            tool: self.call.target_name.clone(),
            arguments: self.input.args.clone(),
        });
        if answers {
            j.accept_answers(self.input.answers.clone());
        }
        round::record(self.server, Some(&mut j), self.end, self.why, self.ended);
        finish((self.server, self.ended), d, &j, status(&j), reply)
    }
}

/// A round that awaited (its claim written) may have let another request
/// in: an operator's cancel, or a retry that took over a claim it thought
/// dead and finished. What got there first stays.
fn still_ours(before: &Option<(&Durable<'_>, Journal)>, end: RoundEnd) -> Result<(), McpError> {
    let Some((d, _)) = before else {
        return Ok(());
    };
    let Some(status) = d.store.status(&d.call_id)? else {
        return Ok(());
    };
    match kept::may_store(status, end) {
        Ok(_) => Ok(()),
        Err(kept::Refused::Cancelled) => Err(cancelled_by_operator()),
        Err(_) => Err(refused("already used (this round was answered before)")),
    }
}

/// The largest state a stateless call is handed: half the body limit, so
/// that the state and the answers that come back with it fit in one
/// request.
pub(crate) fn state_limit(server: &Server) -> usize {
    server.config.max_body_bytes / 2
}

/// Takes the answers to pending requests into `journal` (checkpoints
/// pass: the client came back); the rest are offered to the body.
fn take_answers(journal: &mut Journal, answers: Answers) -> Map<String, Value> {
    let passed = InputRequest::checkpoints_passed(&journal.pending);
    journal.accept_answers(passed);
    let mut offered = Map::new();
    let mut taken = Vec::new();
    for (key, answer) in answers {
        if journal.pending.contains_key(&key) {
            taken.push((key, answer));
        } else if let Ok(v) = answer {
            offered.insert(key, v);
        }
    }
    journal.accept_answers(taken);
    offered
}

/// Runs the round. The claim is written only if the body has to wait (for
/// I/O, in the Worker): until the first poll returns, no other request can
/// run in this object, and the write lands in the same storage transaction
/// as one made before the body ran (an object commits its writes when the
/// turn of its event loop ends). So a round that runs through — a replay
/// that ends in an answer or a new question without I/O — writes its
/// outcome alone. Returns the run and whether the claim was written.
async fn run_claiming(
    server: &Server,
    input: &RoundInput<'_>,
    journal: Journal,
    site: Site,
    call: &Call<'_>,
    claim_row: Option<ClaimRow>,
) -> Result<(Run<Value>, bool), McpError> {
    let run = round::run(server, &input.target, input.args.clone(), journal, site);
    let mut run = std::pin::pin!(run);
    let first = std::future::poll_fn(|task| Poll::Ready(run.as_mut().poll(task))).await;
    Ok(match first {
        Poll::Ready(run) => (run, false),
        Poll::Pending => {
            let written = match (call.durable, &claim_row) {
                (Some(d), Some(ClaimRow::Status(now))) => {
                    d.store.claim(&d.call_id, *now).map(|()| true)?
                }
                (Some(d), Some(ClaimRow::Whole(row))) => {
                    d.store.save(&d.call_id, row).map(|()| true)?
                }
                _ => false,
            };
            (run.await, written)
        }
    })
}

/// A digest of a round's answers, in key order. An answer's `_meta` is
/// left out: it is not part of what the client answered (an SDK may
/// decorate a retry differently from the first try), and an exact retry
/// must still be known as one.
pub(super) fn digest_answers(answers: &Answers) -> String {
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
    // The keys are an object's: unique, so an unstable sort orders them
    // the same (and links no stable sort for these pairs).
    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
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
pub(super) enum Claimed {
    /// Run the round from this journal; write the claim (if any) before the
    /// round first waits.
    Run(Journal, Option<ClaimRow>),
    /// Answer with the stored reply of this exact retry.
    Replay(Round),
}

/// The claim a round writes before it first waits.
pub(super) enum ClaimRow {
    /// The stored row's status and times (its journal stays as it is).
    Status(u64),
    /// A call rebuilt from its token: the whole row, new.
    Whole(Box<StoredCall>),
}

/// Durable mode: checks the retry against the stored call (compare-and-set
/// on the version) and makes the claim the round writes before it first
/// waits, so a concurrent retry of the same round is refused and `once`
/// effects run once.
/// A retry of an answered round with the same answers gets the stored reply;
/// with other answers it is refused.
pub(super) fn claim(
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
    match d.store.load(&d.call_id)? {
        // Storage lost (evicted by TTL, another deployment): rebuild from the token.
        None => rebuilt(d, c, now_ms),
        Some(s) => claim_row(s, c, answers, now_ms, timeout_ms),
    }
}

/// A call whose row is gone, rebuilt from the token, claimed in a whole
/// new row.
fn rebuilt(d: &Durable<'_>, c: &Claims, now_ms: u64) -> Result<Claimed, McpError> {
    d.created.set(true);
    let mut j = c
        .journal
        .clone()
        .ok_or_else(|| refused("the call's stored state is gone"))?;
    j.round = c.round;
    let row = StoredCall {
        version: j.round,
        status: kept::Status::Working,
        tomb: false,
        claimed_at_ms: now_ms,
        journal: j.clone(),
        last_reply: None,
        updated_ms: now_ms,
    };
    Ok(Claimed::Run(j, Some(ClaimRow::Whole(Box::new(row)))))
}

/// The stored call `s` claimed for this round, as the machine allows: an
/// exact retry of an answered round gets its reply, a cancelled call
/// `-32800`, a round another request runs a conflict.
fn claim_row(
    s: StoredCall,
    c: &Claims,
    answers: &str,
    now_ms: u64,
    timeout_ms: u64,
) -> Result<Claimed, McpError> {
    // A claim older than the timeout died with its isolate: the call
    // waits for this retry as if it had never been claimed.
    let stale =
        s.status == kept::Status::Working && now_ms.saturating_sub(s.claimed_at_ms) >= timeout_ms;
    let status = if stale {
        kept::Status::Waiting
    } else {
        s.status
    };
    match kept::transition(status, kept::Event::Claim) {
        kept::Transition::No(kept::Refused::Cancelled) => Err(cancelled_by_operator()),
        kept::Transition::No(kept::Refused::Running) if s.version == c.round => Err(McpError::new(
            ErrorKind::Conflict,
            "Conflict: another retry of this round is running",
        )),
        kept::Transition::To(_) if s.version == c.round => {
            Ok(Claimed::Run(s.journal, Some(ClaimRow::Status(now_ms))))
        }
        // Finished (a tombstone too), or a round answered before.
        _ => replay(&s, c, answers, status),
    }
}

/// The reply stored for this exact retry; a call that failed with none
/// to give (its state could not be stored) says why again; any other
/// retry of an answered round is refused.
fn replay(
    s: &StoredCall,
    c: &Claims,
    answers: &str,
    status: kept::Status,
) -> Result<Claimed, McpError> {
    let exact = s
        .last_reply
        .as_ref()
        .filter(|r| r.round == c.round && r.answers == answers);
    match exact.map(|r| crate::json::from_value::<Round>(r.reply.clone())) {
        Some(Ok(round)) => Ok(Claimed::Replay(round)),
        _ if status == kept::Status::Failed && s.last_reply.is_none() => {
            let why = crate::kept::summary::last_end(&s.journal)
                .and_then(|(_, why)| why)
                .unwrap_or_default();
            Err(McpError::internal(format!("The call failed: {why}")))
        }
        _ => Err(refused("already used (this round was answered before)")),
    }
}

/// What a client coming back to a call an operator cancelled is told.
pub(crate) fn cancelled_by_operator() -> McpError {
    McpError::new(
        ErrorKind::RequestCancelled,
        "Request cancelled: an operator cancelled this call",
    )
}

fn finish(
    (server, ended): (&Server, &round::Ended<'_>),
    d: &Durable<'_>,
    journal: &Journal,
    status: kept::Status,
    last_reply: Option<StoredReply>,
) -> Result<(), McpError> {
    let row = StoredCall {
        version: journal.round,
        status,
        tomb: false,
        claimed_at_ms: ended.now_ms,
        journal: journal.clone(),
        last_reply,
        updated_ms: ended.now_ms,
    };
    save_or_fail(server, d, &row, ended)
}

/// Stores a round's end; when that fails (a row too large, storage
/// down), the call ends failed in a row that does store (its end alone),
/// so that no retry runs the round — and its effects — again: the round's
/// client and every retry get the error, and an error line is logged.
fn save_or_fail(
    server: &Server,
    d: &Durable<'_>,
    row: &StoredCall,
    ended: &round::Ended<'_>,
) -> Result<(), McpError> {
    let Err(e) = d.store.save(&d.call_id, row) else {
        return Ok(());
    };
    let (why, failed) = kept::unstored(&e);
    let mut journal = Journal {
        round: row.journal.round,
        invocation: row.journal.invocation.clone(),
        ..Journal::new()
    };
    let ended = round::Ended {
        error: Some((failed.code(), format!("{:?}", failed.kind))),
        traceparent: ended.traceparent,
        ..*ended
    };
    round::record(
        server,
        Some(&mut journal),
        RoundEnd::Failed,
        Some(&why),
        &ended,
    );
    let end = StoredCall {
        version: row.version,
        status: kept::Status::Failed,
        tomb: false,
        claimed_at_ms: 0,
        journal,
        last_reply: None,
        updated_ms: row.updated_ms,
    };
    d.store.save(&d.call_id, &end).map_err(|_| e)?;
    Err(failed)
}
