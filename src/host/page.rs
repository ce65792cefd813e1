//! Pages beside `/mcp` ([`Registry::page`](crate::Registry::page)), and a
//! page's completion of the URL-mode elicitation its request names.
//!
//! A page request names an elicitation by its `elicitationId` parameter
//! (query or form). The router sends it to the object that keeps the call
//! only when the id verifies and the page's caller is the call's; anything
//! else is served in the Worker, where a completion is refused: so a forged
//! id, or someone else's, opens no object and learns nothing (the same
//! answer as for an unknown one). In the object the completion goes into
//! the call's journal: a durable call's (its client's next retry goes on),
//! a session's (the next round runs now and goes to its stream), a task's
//! (its alarm runs it now). A second completion finds nothing waiting.

use serde_json::{Map, Value};

use super::Stores;
use crate::app::page::{Page, PageReply};
use crate::auth::Caller;
use crate::effects::{Effect, Reply};
use crate::elicitation::{self, Home, IdClaims};
use crate::error::McpError;
use crate::http::{Body, HttpRequest, HttpResponse};
use crate::server::task::TaskHost;
use crate::server::{error_response, Env, Server};
use crate::store::CallStatus;

/// The parameter a page request names its elicitation with.
pub const ELICITATION_PARAM: &str = "elicitationId";

/// The path of a page request without its query (the Worker keeps the
/// query on page paths: `/approve?elicitationId=…`).
pub fn page_path(path: &str) -> &str {
    path.split_once('?').map_or(path, |(p, _)| p)
}

/// Whether `path` is a page this server serves.
pub fn is_page(server: &Server, path: &str) -> bool {
    // Asked of every request: /mcp (nearly all of them) costs a compare.
    path != "/mcp"
        && !server.registry.pages.is_empty()
        && server.registry.find_page(page_path(path)).is_some()
}

fn pairs(s: &str) -> Pairs {
    form_urlencoded::parse(s.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// Name-value pairs, in order.
type Pairs = Vec<(String, String)>;

/// The query and (for a form POST) the form fields of a page request.
fn fields(req: &HttpRequest) -> (Pairs, Pairs) {
    let query = req
        .path
        .split_once('?')
        .map_or(Vec::new(), |(_, q)| pairs(q));
    let is_form = req
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let form = if req.method == "POST" && is_form {
        pairs(&String::from_utf8_lossy(&req.body))
    } else {
        Vec::new()
    };
    (query, form)
}

/// The elicitation a page request names, if it is one this server issued
/// to this caller: its id and what it says.
pub fn named_elicitation(
    server: &Server,
    req: &HttpRequest,
    caller: &Caller,
) -> Option<(String, IdClaims)> {
    let (query, form) = fields(req);
    named(server, &query, &form, caller)
}

/// [`named_elicitation`] from the request's fields, parsed already.
fn named(
    server: &Server,
    query: &Pairs,
    form: &Pairs,
    caller: &Caller,
) -> Option<(String, IdClaims)> {
    let (_, id) = form
        .iter()
        .chain(query)
        .find(|(k, _)| k == ELICITATION_PARAM)?;
    let claims = elicitation::open(&server.config.keys, id)?;
    (claims.principal == elicitation::principal_digest(&caller.principal))
        .then(|| (id.clone(), claims))
}

/// Where a page request is served.
pub enum Keeper<'a> {
    /// In the Worker: no elicitation of this caller's named.
    Worker,
    /// In the object that keeps the named elicitation's call.
    Object(&'a Stores<'a>),
}

/// Serves a page request.
pub async fn serve(server: &Server, req: &HttpRequest, env: &Env, keeper: Keeper<'_>) -> Reply {
    let Some(route) = server.registry.find_page(page_path(&req.path)) else {
        return refused(404);
    };
    if !matches!(req.method.as_str(), "GET" | "POST") {
        return Reply::new(page_response(
            405,
            "text/plain; charset=utf-8",
            "Method not allowed",
        ));
    }
    let caller = match server.precheck_page(req) {
        Ok(c) => c,
        Err(e) => return Reply::new(error_response(&e, None)),
    };
    let (query, form) = fields(req);
    let named = named(server, &query, &form, &caller);
    let page = Page {
        method: req.method.clone(),
        path: page_path(&req.path).to_string(),
        query,
        form,
        caller: caller.clone(),
        elicitation: named.as_ref().map(|(id, _)| id.clone()),
    };
    let reply: PageReply = (route.handler)(&page);
    let Some(completion) = reply.completion.clone() else {
        return Reply::new(page_response(
            reply.status,
            &reply.content_type,
            &reply.body,
        ));
    };
    let (Some((id, claims)), Keeper::Object(stores)) = (named, keeper) else {
        return refused(404);
    };
    let sealed = if completion.secrets.is_empty() {
        None
    } else {
        match elicitation::seal(&server.config.keys, &completion.secrets, &env.random) {
            Some(s) => Some(s),
            None => return Reply::new(error_response(&McpError::internal("sealing failed"), None)),
        }
    };
    let done = complete(
        server,
        env,
        stores,
        &caller,
        req,
        &id,
        &claims,
        completion.data,
        sealed,
    )
    .await;
    match done {
        Ok(Ok(effects)) => Reply::new(page_response(
            reply.status,
            &reply.content_type,
            &reply.body,
        ))
        .with_all(effects),
        Ok(Err(status)) => refused(status),
        Err(e) => Reply::new(error_response(&e, None)),
    }
}

/// Records the completion where the call is kept; `Err(status)` when it
/// is not waiting for it (404) or its round is running (409).
#[allow(clippy::too_many_arguments)]
async fn complete(
    server: &Server,
    env: &Env,
    stores: &Stores<'_>,
    caller: &Caller,
    req: &HttpRequest,
    id: &str,
    claims: &IdClaims,
    data: Map<String, Value>,
    sealed: Option<String>,
) -> Result<Result<Vec<Effect>, u16>, McpError> {
    match &claims.home {
        Home::Call(call_id) => {
            let Some(mut call) = stores.call.load(call_id)? else {
                return Ok(Err(404));
            };
            match call.status {
                CallStatus::AwaitingInput => {}
                CallStatus::Running => return Ok(Err(409)),
                CallStatus::Completed => return Ok(Err(404)),
            }
            if call
                .journal
                .complete_url(&claims.key, id, data, sealed)
                .is_err()
            {
                return Ok(Err(404));
            }
            call.updated_ms = env.now_ms;
            stores.call.save(call_id, &call)?;
            Ok(Ok(Vec::new()))
        }
        Home::Session(_, call_id) => {
            let resource = server.resource_of(req);
            let done = crate::session::complete_url(
                server,
                stores.session,
                env,
                caller.clone(),
                resource,
                crate::auth::origin_of(req.header("host")),
                call_id,
                &claims.key,
                id,
                data,
                sealed,
            )
            .await?;
            Ok(match done {
                Ok(pushes) => Ok(pushes.into_iter().map(Effect::Push).collect()),
                Err(crate::session::Refused::Busy) => Err(409),
                Err(crate::session::Refused::NotWaiting) => Err(404),
            })
        }
        Home::Task(task_id) => {
            let host = TaskHost {
                task_id: task_id.clone(),
                store: stores.task,
            };
            crate::server::task::complete_url(
                server,
                &host,
                env.now_ms,
                &claims.key,
                id,
                data,
                sealed,
            )
        }
    }
}

fn page_response(status: u16, content_type: &str, body: &str) -> HttpResponse {
    HttpResponse {
        status,
        headers: vec![
            ("content-type".into(), content_type.to_string()),
            // A page that completes something is never cached.
            ("cache-control".into(), "no-store".into()),
        ],
        body: Body::Bytes(body.as_bytes().to_vec()),
    }
}

/// The same answer for a forged id, someone else's, an unknown call and
/// one no longer waiting (404); 409 for one whose round is running.
fn refused(status: u16) -> Reply {
    let body = if status == 409 {
        "<!doctype html><title>Busy</title><p>This request is being handled right now: try again in a moment.</p>"
    } else {
        "<!doctype html><title>Not found</title><p>This link is not valid, or there is nothing waiting for it any more.</p>"
    };
    Reply::new(page_response(status, "text/html; charset=utf-8", body))
}
