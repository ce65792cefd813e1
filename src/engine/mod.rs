//! The replay engine.
//!
//! A call is run from the top on every round with its [`Journal`]. `Cx`
//! answers what the journal already knows and registers what it does not; a
//! run either completes, or ends with the new input requests and the journal
//! to continue from. Every wire (MRTR, saga, streamless, sessions, tasks) is an
//! adapter over [`run`].
//!
//! # Layout
//! - `journal.rs`: the serialized state of a call.
//! - `cx.rs`: the tool's handle (`elicit`, `sample`, `roots`, `once`, `progress`, `log`).
//! - `handler.rs`: turning `async fn(&mut Cx, Args)` into something storable.

mod cx;
mod handler;
mod journal;
mod outside;
mod trail;
mod url;

use serde_json::Value;

pub(crate) use cx::DryRun;
pub use cx::{
    ask, form, ClientCaps, Cx, ElicitResult, Elicitation, Root, SampleResult, TaskMode,
    APPROVER_META, PAGE_DETAILS_META,
};
pub use handler::{boxed, boxed_map, BoxedHandler, Handler, LocalFuture};
pub use journal::{
    answer_fits, answer_shape_ok, digest_json, hex, tool_version, Answer, InputRequest, Invocation,
    Journal, CHECKPOINT, DETACH, JOURNAL_VERSION, TIMER,
};
pub use outside::Outside;
pub use trail::{Asked, Mark, Note, RoundEnd, Trail, MAX_MARKS, MAX_NOTES};
pub use url::{OutOfBand, UrlCompletion, UrlElicitation};

use crate::error::{ErrorKind, McpError};
use crate::vec_map::VecMap;

/// The engine's mark that a call paused for input. Only the engine can make
/// one (its field is private), so a tool cannot fake a pause; and a tool
/// that catches one and returns anyway still pauses (see [`run`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suspended(());

/// Why a tool body stopped without a value.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolError {
    /// It asked for input the journal does not have yet: the engine turns it
    /// into an `input_required` round. Let it pass with `?`.
    Suspend(Suspended),
    /// It needs a client capability the request did not declare (`-32021`).
    MissingCapability(Value),
    /// One round asked two different things under one key: a bug in the
    /// tool, reported as an internal error rather than misusing an answer.
    Nondeterminism(String),
    /// The tool's code changed since the call paused in a way that cannot
    /// be replayed safely (a renamed effect, a recorded output of another
    /// type, a renamed question an effect depended on): the call is kept
    /// as it was, for a rollback or a fixed deploy (`-32050`, 409).
    Diverged {
        /// The key of the effect or request where it diverged.
        key: String,
        /// What changed, for the operator.
        why: String,
    },
    /// The client reported a failure for one of our requests (a saga step's
    /// `error`). The tool may handle it; unhandled, the call fails.
    Client(Value),
    /// The tool failed: reported to the model as a result with `isError: true`.
    Failed(String),
    /// A protocol error to return as a JSON-RPC error.
    Protocol(McpError),
}

impl ToolError {
    /// A tool failure with a message for the model.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }
}

impl From<McpError> for ToolError {
    fn from(e: McpError) -> Self {
        Self::Protocol(e)
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        Self::Failed(e.to_string())
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Suspend(_) => f.write_str("suspended for input"),
            Self::MissingCapability(c) => write!(f, "missing client capability {c}"),
            Self::Nondeterminism(m) | Self::Failed(m) => f.write_str(m),
            Self::Diverged { why, .. } => f.write_str(why),
            Self::Client(e) => write!(f, "the client reported an error: {e}"),
            Self::Protocol(e) => write!(f, "{e}"),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// The body returned a value.
    Complete(T),
    /// The body needs answers: send `requests`, keep `journal`.
    InputRequired {
        /// The requests of this round, by key.
        requests: VecMap<String, InputRequest>,
        /// The journal to continue from (its `pending` holds `requests`).
        journal: Journal,
    },
    /// The body failed with a message for the model (`isError: true`).
    ToolFailed(String),
    /// A JSON-RPC error.
    Error(McpError),
}

/// A run's outcome and the notifications it emitted along the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Run<T> {
    /// How it ended.
    pub outcome: Outcome<T>,
    /// `notifications/progress` and `notifications/message`, in order.
    pub notifications: Vec<Value>,
    /// The last status message the body set (`cx.status`), for a task.
    pub status: Option<String>,
}

/// Runs `handler` once with `cx` (built from the journal) and `args`.
pub async fn run<A: 'static, T: 'static>(handler: &dyn Handler<A, T>, cx: Cx, args: A) -> Run<T> {
    let mut cx = cx;
    let result = handler.call(&mut cx, args).await;
    conclude(cx, result)
}

/// Runs a pinned call's kept earlier body, and the current body `next`
/// after it when the kept one reached its upgrade point
/// ([`Cx::upgrade_point`]): one round, one journal.
pub(crate) async fn run_moving<T: 'static>(
    handler: &dyn Handler<Value, T>,
    next: &dyn Handler<Value, T>,
    cx: Cx,
    args: Value,
) -> (Run<T>, bool) {
    let mut cx = cx;
    let mut result = handler.call(&mut cx, args.clone()).await;
    let moved = cx.take_upgrade();
    if moved {
        result = next.call(&mut cx, args).await;
    }
    (conclude(cx, result), moved)
}

/// What a run's result comes to, with what the run asked and emitted.
fn conclude<T>(cx: Cx, result: Result<T, ToolError>) -> Run<T> {
    // The value set apart: nothing decided below depends on its type, so
    // that is compiled once, not once per result type.
    let (value, result) = match result {
        Ok(v) => (Some(v), Ok(())),
        Err(e) => (None, Err(e)),
    };
    let run = conclude_any(cx, result);
    let outcome = match (run.outcome, value) {
        (Outcome::Complete(()), Some(v)) => Outcome::Complete(v),
        (Outcome::Complete(()), None) => {
            Outcome::Error(McpError::internal("a run completed without a value"))
        }
        (Outcome::InputRequired { requests, journal }, _) => {
            Outcome::InputRequired { requests, journal }
        }
        (Outcome::ToolFailed(m), _) => Outcome::ToolFailed(m),
        (Outcome::Error(e), _) => Outcome::Error(e),
    };
    Run {
        outcome,
        notifications: run.notifications,
        status: run.status,
    }
}

/// [`conclude`] for the result without its value.
fn conclude_any(cx: Cx, result: Result<(), ToolError>) -> Run<()> {
    let (paused_on, met_on) = cx.code_versions();
    let done = cx.finish();
    // A pause cannot be swallowed: a request the body registered and has no
    // answer for means the call waits for that answer, even if the body
    // caught the `Suspend` and returned a value or a failure. Protocol-level
    // errors (a missing capability, nondeterminism) still win: asking again
    // would not fix them.
    let protocol_error = matches!(
        result,
        Err(ToolError::MissingCapability(_)
            | ToolError::Nondeterminism(_)
            | ToolError::Diverged { .. }
            | ToolError::Protocol(_))
    );
    if !done.asked.is_empty() && !protocol_error {
        let mut journal = done.journal;
        journal.pending = done.asked.clone();
        return Run {
            outcome: Outcome::InputRequired {
                requests: done.asked,
                journal,
            },
            notifications: done.notifications,
            status: done.status,
        };
    }
    let outcome = match result {
        Ok(value) => Outcome::Complete(value),
        // Only the engine makes a `Suspend`, and only with a request registered.
        Err(ToolError::Suspend(_)) => Outcome::Error(McpError::internal(
            "the tool suspended without asking anything",
        )),
        Err(ToolError::MissingCapability(caps)) => Outcome::Error(
            McpError::new(ErrorKind::MissingCapability, missing_message(&caps))
                .with_data(serde_json::json!({ "requiredCapabilities": caps })),
        ),
        Err(ToolError::Nondeterminism(m)) => Outcome::Error(McpError::internal(m)),
        Err(ToolError::Diverged { key, why }) => {
            let mut e = diverged(&key, &why);
            if let Some(data) = e.data.as_mut().and_then(Value::as_object_mut) {
                data.insert("pausedOn".into(), serde_json::json!(paused_on));
                data.insert("metOn".into(), serde_json::json!(met_on));
            }
            Outcome::Error(e)
        }
        Err(ToolError::Client(e)) => {
            Outcome::ToolFailed(format!("the client reported an error: {e}"))
        }
        Err(ToolError::Failed(m)) => Outcome::ToolFailed(m),
        Err(ToolError::Protocol(e)) => Outcome::Error(e),
    };
    Run {
        outcome,
        notifications: done.notifications,
        status: done.status,
    }
}

/// The error for a call the tool's new code cannot replay: the call is kept
/// as it was, and the same request goes on after a rollback or a fixed
/// deploy. The wire adds the tool's name to `data`.
pub fn diverged(key: &str, why: &str) -> McpError {
    McpError::new(
        ErrorKind::CodeChanged,
        format!(
            "The tool's code changed since this call paused, and the call cannot go on under \
             the new code: {why}. The call is kept as it was: the same request continues it \
             after a rollback or a deploy that fixes the tool."
        ),
    )
    .with_data(serde_json::json!({ "key": key, "why": why }))
}

/// The error for a paused call whose tool this deploy does not serve: kept
/// for a rollback, as [`diverged`].
pub fn tool_gone(tool: &str) -> McpError {
    let mut e = diverged(
        "",
        &format!("the tool {tool:?} the call belongs to is not served by this deploy"),
    );
    if let Some(data) = e.data.as_mut().and_then(Value::as_object_mut) {
        data.insert("tool".into(), Value::String(tool.to_string()));
        data.remove("key");
    }
    e
}

/// The message for a missing client capability, naming it: a generic
/// client (the Inspector, a chat app) shows the message alone, and
/// `requiredCapabilities` in `data` is read by no person.
fn missing_message(caps: &Value) -> String {
    let names: Vec<String> = caps
        .as_object()
        .map(|caps| {
            caps.iter()
                .map(|(cap, sub)| match (cap.as_str(), sub.as_object()) {
                    ("elicitation", Some(modes)) if !modes.is_empty() => {
                        let modes: Vec<&str> = modes.keys().map(String::as_str).collect();
                        format!("elicitation ({})", modes.join(", "))
                    }
                    ("elicitation", _) => "elicitation (form)".to_string(),
                    (cap, _) => cap.to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    let names = if names.is_empty() {
        "a capability".to_string()
    } else {
        names.join(" and ")
    };
    format!(
        "This tool needs the client to support {names}, which this client did not declare \
         in its capabilities; use a client that supports it"
    )
}

/// Polls a future that never waits on IO to completion. Native tests and
/// benches use it; the Worker awaits futures on the JS event loop instead.
pub fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[cfg(test)]
mod tests;
