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
use crate::effects::Reply;
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
    let what = match answer {
        Some(answer) => Outside::Answer {
            key: key.clone(),
            answer,
            by: match operator.as_str() {
                "" => "operator".to_string(),
                name => format!("operator:{name}"),
            },
        },
        None => Outside::Rewind { key: key.clone() },
    };
    let home = by_id(stores, &id)?.map(|k| k.home());
    let outcome = match home {
        Some(home) => deliver(server, env, stores, None, &home, what).await?,
        None => Err(NotTaken::No("not found")),
    };
    let mut done = Done::default();
    let (effects, said) = match outcome {
        Ok(effects) => {
            done.done.push(id.clone());
            (effects, "done")
        }
        Err(not) => {
            let why = match not {
                NotTaken::Busy => "running",
                NotTaken::No(why) => why,
            };
            done.skipped.insert(id.clone(), why.to_string());
            (Vec::new(), why)
        }
    };
    server.log(crate::trace::operator_line(act, &id, &key, &operator, said));
    Ok(Reply {
        response: HttpResponse::json(200, &json!(done)),
        effects,
    })
}
