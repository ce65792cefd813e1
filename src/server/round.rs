//! One round of a paused call, wherever it is kept: the one place a
//! [`Cx`] is built and a body run, and the one reading of how it ended.
//!
//! | the journal holds      | the event                        | the plan                     |
//! |------------------------|----------------------------------|------------------------------|
//! | nothing (a new call)   | the call arrives                 | run; pause, finish or fail   |
//! | pending requests       | the client's answers arrive      | take them, run again         |
//! | a pending URL ask      | its page completes it            | take the page's values, run  |
//! | a pending timer        | the timer is due (a task's alarm)| pass it, run again           |
//! | answers, no pending    | a rollback or fix is served      | run again (it was parked)    |
//! | anything               | the call is cancelled            | drop it (no run)             |
//!
//! Each run ends in a [`Step`]: done (a result), paused (the requests to
//! send and the journal to keep), parked (the code changed in a way the
//! call cannot be replayed under: kept as it was, for a rollback), or
//! failed. Where a call is kept — a sealed token and a durable call's
//! object (`call.rs`), a session (`session/calls.rs`), a task
//! (`task/slice.rs`) — is a keeper: it loads the journal, claims the round,
//! takes the event in, runs it here and stores what the step says. It
//! decides nothing a round means.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::target::{run_target, Target};
use super::Server;
use crate::auth::Caller;
use crate::elicitation::Home;
use crate::engine::{ClientCaps, Cx, InputRequest, Journal, Outcome, Run, TaskMode};
use crate::error::{ErrorKind, McpError};

/// Where a round runs: everything it needs besides the journal.
pub(crate) struct Site {
    /// What the client can be asked.
    pub(crate) caps: ClientCaps,
    /// Who is calling, and this server's resource URI (for step-up).
    pub(crate) caller: Caller,
    pub(crate) resource: String,
    /// The call's id (idempotency keys) and whether its rounds are
    /// accepted once (only then may `cx.once` run an effect).
    pub(crate) call_id: String,
    pub(crate) once_safe: bool,
    pub(crate) progress_token: Option<Value>,
    pub(crate) log_level: Option<String>,
    pub(crate) task_mode: TaskMode,
    /// Answers the client sent for keys not pending yet.
    pub(crate) offered: Map<String, Value>,
    /// Where the server keeps the call between rounds, if it does (only
    /// then can it send the user to a page).
    pub(crate) kept: Option<Kept>,
}

/// A call the server keeps: where, for whom, reached where.
pub(crate) struct Kept {
    pub(crate) home: Home,
    pub(crate) principal: String,
    pub(crate) origin: String,
}

impl Site {
    /// A site for `call_id` with `caps`, signed in as `caller`; the rest
    /// unset.
    pub(crate) fn new(call_id: String, caps: ClientCaps, caller: Caller, resource: String) -> Self {
        Self {
            caps,
            caller,
            resource,
            call_id,
            once_safe: true,
            progress_token: None,
            log_level: None,
            task_mode: TaskMode::default(),
            offered: Map::new(),
            kept: None,
        }
    }
}

/// The one place a round's [`Cx`] is made.
pub(crate) fn cx(server: &Server, journal: Journal, site: Site) -> Cx {
    let mut cx = Cx::new(journal, site.caps)
        .with_caller(site.caller, site.resource)
        .with_call(site.call_id, site.once_safe)
        .with_offered(site.offered)
        .with_progress_token(site.progress_token)
        .with_log_level(site.log_level.as_deref())
        .with_task_mode(site.task_mode);
    if let Some(k) = site.kept {
        cx = cx.with_out_of_band(super::out_of_band(server, k.home, &k.principal, &k.origin));
    }
    cx
}

/// Runs one round of `target` from `journal` at `site`.
pub(crate) async fn run(
    server: &Server,
    target: &Target<'_>,
    args: Value,
    journal: Journal,
    site: Site,
) -> Run<Value> {
    run_target(server, target, cx(server, journal, site), args).await
}

/// How a round ended, as every keeper reads it.
pub(crate) enum Step {
    /// A result (a tool's error result included, `isError`).
    Done(Value),
    /// A prompt's or a resource's failure: bad input.
    Refused(String),
    /// Waiting: the requests to send, the journal to keep.
    Paused {
        requests: BTreeMap<String, InputRequest>,
        journal: Journal,
    },
    /// The code changed so that the call cannot be replayed: kept as it
    /// was before this round (its answers too) for a rollback or a fix.
    Parked(McpError),
    /// Failed with a JSON-RPC error.
    Failed(McpError),
}

impl Step {
    /// Reads a run's outcome; `tool`: whether a tool ran (a tool's failure
    /// is a result, a prompt's is bad input).
    pub(crate) fn of(outcome: Outcome<Value>, tool: bool) -> Self {
        match outcome {
            Outcome::Complete(v) => Step::Done(v),
            Outcome::ToolFailed(m) if tool => {
                Step::Done(crate::app::CallToolResult::error(m).into_json())
            }
            Outcome::ToolFailed(m) => Step::Refused(m),
            Outcome::InputRequired { requests, journal } => Step::Paused { requests, journal },
            Outcome::Error(e) if e.kind == ErrorKind::CodeChanged => Step::Parked(e),
            Outcome::Error(e) => Step::Failed(e),
        }
    }
}
