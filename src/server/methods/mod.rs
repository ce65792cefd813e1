//! The methods both wires serve, one file each; `dispatch` is the
//! 2026-07-28 wire's way to them (a session's is `session::request`).
//!
//! # Layout
//! - `discover.rs`: `server/discover` and the capabilities.
//! - `lists.rs`: `tools/list`, `resources/list`, `resources/templates/list`,
//!   `prompts/list`, with their cache fields.
//! - `target.rs`: what `tools/call`, `prompts/get` and `resources/read` run.
//! - `complete.rs`: `completion/complete`.
//! - `listen.rs`: `subscriptions/listen`.

mod complete;
mod discover;
mod listen;
mod lists;
mod target;

use serde_json::{json, Value};

use super::request::{MethodReply, RequestMeta};
use super::target::Target;
use super::{mrtr, saga, Ctx, Server};
use crate::engine::ClientCaps;
use crate::error::{ErrorKind, McpError};
use crate::protocol::method::{Era, Method};
use crate::protocol::{ClientRequest, Request};

pub(crate) use discover::capabilities;
pub(crate) use target::call_target;

use lists::{add_cache_fields, list};

pub(super) async fn dispatch(
    server: &Server,
    request: &Request,
    meta: &RequestMeta,
    tool: Option<usize>,
    ctx: &Ctx<'_>,
) -> Result<MethodReply, McpError> {
    let p = &request.params;
    let Some(method) = request.kind else {
        return Err(McpError::method_not_found(&request.method));
    };
    if let Some(result) = stateless_method(server, method, p) {
        return Ok(MethodReply::plain(result?));
    }
    let reply = match method {
        m if m.is_call() => {
            let (target, args) = match call_target(server, m, p, tool) {
                Ok(found) => found,
                // A durable call whose tool this deploy does not serve: its
                // row, in this object, says what it is.
                Err(e) if e.kind == ErrorKind::CodeChanged && ctx.durable.is_some() => {
                    return super::gone::durable_gone(server, request, ctx, e);
                }
                Err(e) => return Err(e),
            };
            if let Target::Tool(tool) = target {
                if tool.task.is_some() {
                    return super::task::call(server, tool, args, request, meta, ctx).await;
                }
            }
            let mut reply = mrtr::call(server, target, args, request, meta, ctx).await?;
            if m == Method::ResourcesRead
                && reply.result.get("resultType") == Some(&json!("complete"))
            {
                add_cache_fields(server, &mut reply.result);
            }
            reply
        }
        m if m.is_saga() => {
            let caps = ClientCaps::from_json(Some(&meta.capabilities));
            MethodReply::plain(saga::handle(server, request, caps, ctx).await?)
        }
        Method::SubscriptionsListen => listen::listen(request, meta, ctx)?,
        m if m.is_task() => super::task::handle_method(server, request, meta, ctx)?,
        m if m.era() == Era::Session => {
            return Err(McpError::new(
                ErrorKind::MethodNotFound,
                format!("Method not found: {m} was removed in protocol version 2026-07-28"),
            ))
        }
        m => return Err(McpError::method_not_found(m.name())),
    };
    Ok(reply)
}

/// Methods that need nothing but the registry, served the same on both
/// wires (the session wire strips the 2026 cache fields).
pub(crate) fn stateless_method(
    server: &Server,
    method: Method,
    p: &ClientRequest,
) -> Option<Result<Value, McpError>> {
    let registry = &server.registry;
    if let Some(result) = super::skills::method(registry, method, p) {
        return Some(result.map(|mut r| {
            add_cache_fields(server, &mut r);
            r
        }));
    }
    Some(Ok(match method {
        Method::ServerDiscover => discover::discover(server),
        Method::ToolsList => list(server, "tools", registry.tools.iter().map(|t| t.listing())),
        Method::ResourcesList => list(
            server,
            "resources",
            (registry.resources.iter().map(|r| r.listing()))
                .chain(super::skills::listings(registry)),
        ),
        Method::ResourcesTemplatesList => list(
            server,
            "resourceTemplates",
            registry.templates.iter().map(|t| t.listing()),
        ),
        Method::PromptsList => list(
            server,
            "prompts",
            registry.prompts.iter().map(|p| p.listing()),
        ),
        Method::CompletionComplete => return Some(complete::complete(server, p)),
        _ => return None,
    }))
}
