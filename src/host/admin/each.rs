//! An operation on named calls (cancel, pause, resume, purge), each on the
//! call as its keeper holds it ([`Kept`]).

use serde_json::json;

use super::super::kept::{by_id, Kept};
use super::super::Stores;
use crate::admin::Done;
use crate::effects::{Effect, Reply};
use crate::error::McpError;
use crate::http::HttpResponse;

/// What acting on one call came to: done (with what else must happen), or
/// skipped with why.
pub(super) type Outcome = Result<Result<Vec<Effect>, &'static str>, McpError>;

/// Runs `act` on each call named that this object keeps (an id of none is
/// not found) and answers `{"done", "skipped"}` with the effects `act`
/// gave.
pub(super) fn each<'s>(
    stores: &'s Stores<'s>,
    ids: &[String],
    mut act: impl FnMut(Box<dyn Kept + 's>) -> Outcome,
) -> Result<Reply, McpError> {
    let mut done = Done::default();
    let mut effects = Vec::new();
    for id in ids {
        let outcome = match by_id(stores, id)? {
            Some(k) => act(k)?,
            None => Err("not found"),
        };
        match outcome {
            Ok(more) => {
                effects.extend(more);
                done.done.push(id.clone());
            }
            Err(why) => {
                done.skipped.insert(id.clone(), why.to_string());
            }
        }
    }
    Ok(Reply {
        response: HttpResponse::json(200, &json!(done)),
        effects,
    })
}
