//! Answering a call's question on its behalf (`POST
//! /admin/api/calls/answer`) and asking a call again from one of its
//! questions (`/calls/rewind`), in the object that keeps it. Both go
//! through the one path a page's completion takes (`host/outside.rs`);
//! each is noted in the call's trail and written as one `mcp.operator`
//! log line.

use serde_json::json;

use super::super::kept::by_id;
use super::super::outside::{deliver, NotTaken};
use super::super::Stores;
use crate::admin::Done;
use crate::effects::{Effect, Reply};
use crate::engine::Outside;
use crate::error::McpError;
use crate::http::HttpResponse;
use crate::server::{Env, Server};

/// What an operator asks of one call.
pub(super) struct Act {
    /// The call's admin id.
    pub(super) id: String,
    /// The question.
    pub(super) key: String,
    /// The answer, or `None`: ask again from `key`.
    pub(super) answer: Option<serde_json::Value>,
    /// Who asks (the operator's name).
    pub(super) operator: String,
}

/// Answers or rewinds the call at its question, for the operator:
/// `{"done": [id]}`, or `{"skipped": {id: why}}`.
pub(super) async fn act<'s>(
    server: &Server,
    env: &Env,
    stores: &'s Stores<'s>,
    body: Act,
) -> Result<Reply, McpError> {
    let Act {
        id,
        key,
        answer,
        operator,
    } = body;
    let act = if answer.is_some() { "answer" } else { "rewind" };
    let what = outside(&key, answer, &operator);
    let home = by_id(stores, &id)?.map(|k| k.home());
    let outcome = match home {
        Some(home) => deliver(server, env, stores, None, &home, what).await?,
        None => Err(NotTaken::No("not found")),
    };
    let (done, effects, said) = tally(&id, outcome);
    server.log(crate::trace::operator_line(act, &id, &key, &operator, said));
    Ok(Reply {
        response: HttpResponse::json(200, &json!(done)),
        effects,
    })
}

/// What the operator sends the call: an answer to `key` (noted as theirs),
/// or, with none, a rewind to it.
fn outside(key: &str, answer: Option<serde_json::Value>, operator: &str) -> Outside {
    match answer {
        Some(answer) => Outside::Answer {
            key: key.to_string(),
            answer,
            by: match operator {
                "" => "operator".to_string(),
                name => format!("operator:{name}"),
            },
        },
        None => Outside::Rewind {
            key: key.to_string(),
        },
    }
}

/// The call `id` as done or skipped (and why), the effects of delivering
/// to it, and what the log line says of it.
fn tally(id: &str, outcome: Result<Vec<Effect>, NotTaken>) -> (Done, Vec<Effect>, &'static str) {
    let mut done = Done::default();
    match outcome {
        Ok(effects) => {
            done.done.push(id.to_string());
            (done, effects, "done")
        }
        Err(not) => {
            let why = match not {
                NotTaken::Busy => "running",
                NotTaken::No(why) => why,
            };
            done.skipped.insert(id.to_string(), why.to_string());
            (done, Vec::new(), why)
        }
    }
}
