//! An operator's request inside an object: a call shard, a session, a
//! task or the hub (the index) answers for what it keeps. The Worker sends
//! these ([`super::job`]); the header naming the operation is internal (a
//! client's copy is dropped), so only the Worker's admin path reaches them.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::super::kept::by_id;
use super::super::Stores;
use super::each::each;
use super::paging;
use crate::admin::summary;
use crate::admin::{CallDetail, CallSummary};
use crate::effects::Reply;
use crate::error::McpError;
use crate::http::{HttpRequest, HttpResponse};
use crate::index::IndexEntry;
use crate::kept::{self, Event, Transition};
use crate::replay::PausedCall;
use crate::server::{error_response, Env, Server};

/// The internal header that carries the operation.
pub(crate) const ADMIN_HEADER: &str = "x-durable-mcp-admin";

/// What the Worker asks an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Ask {
    /// Every call it keeps, summarized.
    List,
    /// A shard: one page of its durable calls and its counts
    /// ([`crate::kept::page`]).
    Page,
    /// The hub: one page of the tasks its index holds, its counts, the
    /// live sessions and the paused tools.
    IndexPage,
    /// One call whole (`ids[0]`).
    Show,
    /// Cancel these.
    Cancel,
    /// Pause these calls (each, not its tool).
    Hold,
    /// Resume these paused calls.
    Release,
    /// Answer the question `key` of the call `ids[0]` on its behalf.
    Answer,
    /// Ask the call `ids[0]` again from its question `key`.
    Rewind,
    /// These paused calls' journals.
    Export,
    /// Forget these finished calls.
    Purge,
    /// The hub: the index and the paused tools.
    Entries,
    /// The hub: the paused tools alone (each isolate reads them now and
    /// then).
    Paused,
    /// The hub: pause `tool`.
    Pause,
    /// The hub: resume `tool`.
    Resume,
    /// The hub: spend the console sign-in link whose nonce is `ids[0]`
    /// (kept until `until_ms`); answers whether this was its first use.
    SpendLink,
}

/// The body of an object's admin request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Body {
    #[serde(default)]
    pub(crate) ids: Vec<String>,
    #[serde(default)]
    pub(crate) tool: Option<String>,
    /// The operator's name (written into a cancelled call's history).
    #[serde(default)]
    pub(crate) operator: String,
    /// Until when a mark is kept ([`Ask::SpendLink`]); only rows changed
    /// at or before it ([`Ask::Page`], [`Ask::IndexPage`]: `olderThan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) until_ms: Option<u64>,
    /// A page's ask ([`Ask::Page`], [`Ask::IndexPage`]): what its rows
    /// must pass, where the last page ended and how many it holds, as
    /// `paging` writes and reads it (kept a JSON value here, so a Worker
    /// that never pages links no code for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) page: Option<Value>,
    /// The question ([`Ask::Answer`], [`Ask::Rewind`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<String>,
    /// The answer ([`Ask::Answer`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<Value>,
}

/// The hub's answer to [`Ask::Entries`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Entries {
    pub(crate) entries: Vec<IndexEntry>,
    pub(crate) paused: Vec<String>,
}

/// The request that asks `op` of an object.
pub(crate) fn request(op: Ask, body: &Body) -> HttpRequest {
    let op = serde_json::to_value(op)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    HttpRequest {
        method: "POST".into(),
        path: "/admin".into(),
        headers: vec![
            (ADMIN_HEADER.into(), op),
            ("content-type".into(), "application/json".into()),
        ],
        body: serde_json::to_vec(body).unwrap_or_default(),
    }
}

fn ok(v: &impl Serialize) -> Reply {
    Reply::new(HttpResponse::json(200, &json!(v)))
}

/// Serves an operator's request inside an object.
pub(crate) async fn serve(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    stores: &Stores<'_>,
) -> Reply {
    let op: Option<Ask> = req
        .header(ADMIN_HEADER)
        .and_then(|h| crate::json::from_value(Value::String(h.to_string())).ok());
    let body: Body = crate::json::from_slice(&req.body).unwrap_or_default();
    let Some(op) = op else {
        let e = McpError::invalid_request("Invalid Request: an unknown admin operation");
        return Reply::new(error_response(&e, None));
    };
    if matches!(op, Ask::Answer | Ask::Rewind) {
        let act = super::outside::Act {
            id: body.ids.first().cloned().unwrap_or_default(),
            key: body.key.clone().unwrap_or_default(),
            answer: body.answer.clone(),
            operator: body.operator.clone(),
        };
        return super::outside::act(server, env, stores, act)
            .await
            .unwrap_or_else(|e| Reply::new(error_response(&e, None)));
    }
    match answer(server, op, &body, env, stores) {
        Ok(reply) => reply,
        Err(e) => Reply::new(error_response(&e, None)),
    }
}

fn answer(
    server: &Server,
    op: Ask,
    body: &Body,
    env: &Env,
    stores: &Stores<'_>,
) -> Result<Reply, McpError> {
    match op {
        Ask::List => Ok(ok(&list(stores)?)),
        Ask::Page => Ok(ok(&paging::shard(stores, &asked(body), env.now_ms)?)),
        Ask::IndexPage => {
            let mut page = paging::index(stores, &asked(body), env.now_ms)?;
            page["sessions"] = json!(stores.index.sessions()?);
            page["paused"] = json!(stores.index.paused_tools()?);
            Ok(ok(&page))
        }
        Ask::Show => {
            let id = body.ids.first().map(String::as_str).unwrap_or_default();
            Ok(ok(&show(server, stores, id)?))
        }
        Ask::Cancel => cancel(server, stores, env, body),
        Ask::Hold => super::hold::hold(server, stores, env, (&body.ids, &body.operator), true),
        Ask::Release => super::hold::hold(server, stores, env, (&body.ids, &body.operator), false),
        // Served before, asynchronously: a session's call runs its round.
        Ask::Answer | Ask::Rewind => Err(McpError::internal("served elsewhere")),
        Ask::Export => export_sealed(server, stores, &body.ids),
        Ask::Purge => purge(stores, &body.ids),
        Ask::Entries | Ask::Paused | Ask::SpendLink | Ask::Pause | Ask::Resume => {
            hub(server, op, body, env, stores)
        }
    }
}

/// The paused calls named, their answers sealed for the deploy check
/// (never shown).
fn export_sealed<'s>(
    server: &Server,
    stores: &'s Stores<'s>,
    ids: &[String],
) -> Result<Reply, McpError> {
    let ring = &server.config.keys;
    let sealed: Option<Vec<PausedCall>> = export(stores, ids)?
        .into_iter()
        .map(|c| c.sealed(ring))
        .collect();
    let sealed = sealed
        .ok_or_else(|| McpError::internal("exporting needs STATE_KEYS to seal the answers"))?;
    Ok(ok(&sealed))
}

/// What the hub answers: the index, the paused tools, the sign-in links.
fn hub(
    server: &Server,
    op: Ask,
    body: &Body,
    env: &Env,
    stores: &Stores<'_>,
) -> Result<Reply, McpError> {
    match op {
        Ask::Entries => Ok(ok(&Entries {
            entries: stores.index.entries()?,
            paused: stores.index.paused_tools()?,
        })),
        Ask::SpendLink => {
            let nonce = body.ids.first().map(String::as_str).unwrap_or_default();
            let until = body.until_ms.unwrap_or_default();
            let first = !nonce.is_empty() && stores.index.spend_link(nonce, until, env.now_ms)?;
            Ok(ok(&json!({ "first": first })))
        }
        Ask::Pause | Ask::Resume => {
            let tool = body.tool.as_deref().unwrap_or_default();
            stores.index.set_paused(tool, op == Ask::Pause)?;
            let paused = stores.index.paused_tools()?;
            // This isolate knows at once; the others within a refresh.
            server.paused.set(paused.clone(), env.now_ms);
            Ok(ok(
                &json!({"tool": tool, "paused": op == Ask::Pause, "pausedTools": paused}),
            ))
        }
        Ask::Paused => Ok(ok(&stores.index.paused_tools()?)),
        _ => Err(McpError::internal("not a hub's operation")),
    }
}

/// Every call this object keeps, summarized: a shard's durable calls, a
/// session's calls, a task.
fn list(stores: &Stores<'_>) -> Result<Vec<CallSummary>, McpError> {
    let mut out: Vec<CallSummary> = stores
        .call
        .list()?
        .iter()
        .map(|(id, c)| c.summary(id))
        .collect();
    if let Some(meta) = stores.session.meta()? {
        out.extend(stores.session.calls()?.iter().map(|c| c.summary(&meta)));
    }
    if let Some(t) = stores.task.load()? {
        out.push(t.summary());
    }
    Ok(out)
}

/// What a call's tool shows of its answers to an operator.
fn shows<'a>(server: &'a Server, tool: &str) -> impl Fn(&str) -> bool + 'a {
    let keys = server
        .registry
        .find_tool(tool)
        .map(|t| t.admin_shows.clone())
        .unwrap_or_default();
    move |key: &str| keys.iter().any(|k| k == key)
}

fn not_found(id: &str) -> McpError {
    McpError::new(
        crate::error::ErrorKind::ResourceNotFound,
        format!("No call {id:?} is kept here"),
    )
}

/// One call whole.
fn show<'s>(server: &Server, stores: &'s Stores<'s>, id: &str) -> Result<CallDetail, McpError> {
    let k = by_id(stores, id)?
        .filter(|k| !k.tomb())
        .ok_or_else(|| not_found(id))?;
    let s = k.summary();
    let shows = shows(server, &s.tool);
    Ok(summary::detail(s, k.arguments(), k.journal_ref(), &shows))
}

const CANCELLED: &str = "Cancelled by an operator";

/// Cancels the calls named, as the machine says ([`kept`]): a durable
/// call's row says so (its client gets `-32800` when it comes back), a
/// session's call gets that error on its stream, a task becomes
/// `cancelled`.
fn cancel<'s>(
    server: &Server,
    stores: &'s Stores<'s>,
    env: &Env,
    body: &Body,
) -> Result<Reply, McpError> {
    let why = if body.operator.is_empty() {
        CANCELLED.to_string()
    } else {
        format!("{CANCELLED} ({})", body.operator)
    };
    each(stores, &body.ids, |k| {
        if k.tomb() {
            return Ok(Err("not found"));
        }
        if let Transition::No(why) = kept::transition(k.status(), Event::Cancel) {
            return Ok(Err(why.why()));
        }
        k.cancel(server, env.now_ms, &why)
    })
}

/// What a page asks of a keeper.
fn asked(body: &Body) -> paging::Asked {
    paging::Asked::read(body.page.as_ref(), body.until_ms)
}

/// The paused calls named, as the deploy check reads them.
fn export<'s>(stores: &'s Stores<'s>, ids: &[String]) -> Result<Vec<PausedCall>, McpError> {
    let mut out = Vec::new();
    for id in ids {
        if let Some(p) = by_id(stores, id)?.map(|k| k.paused()).transpose()? {
            out.extend(p);
        }
    }
    Ok(out)
}

/// Purges the finished calls named, as the machine says ([`kept`]): a
/// durable call's row becomes a tombstone (unlisted; its end kept for the
/// tokens that may still name it, until its TTL); a task's whole object
/// goes (and its index entry). A session's calls go with the session.
fn purge<'s>(stores: &'s Stores<'s>, ids: &[String]) -> Result<Reply, McpError> {
    each(stores, ids, |k| {
        // Purged already: nothing more to do (purge is idempotent).
        if k.tomb() {
            return Ok(Ok(Vec::new()));
        }
        match kept::transition(k.status(), Event::Purge) {
            Transition::Tombstone => k.purge(),
            Transition::No(why) => Ok(Err(why.why())),
            _ => Ok(Err("not finished")),
        }
    })
}
