//! Method handlers: discovery, lists, reads, calls, completion, listen.

use serde_json::{json, Map, Value};

use super::request::{object_param, MethodReply, RequestMeta};
use super::target::Target;
use super::{mrtr, saga, Ctx, Server};
use crate::effects::Listen;
use crate::engine::ClientCaps;
use crate::error::{ErrorKind, McpError};
use crate::protocol::method::{Era, Method};
use crate::protocol::versions::{META_SERVER_INFO, META_SUBSCRIPTION_ID, TASKS_EXTENSION};
use crate::protocol::{notification, Request};

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
            let (target, args) = call_target(server, m, p, tool)?;
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
        Method::SubscriptionsListen => listen(request, meta, ctx)?,
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
    p: &Map<String, Value>,
) -> Option<Result<Value, McpError>> {
    let registry = &server.registry;
    if let Some(result) = super::skills::method(registry, method, p) {
        return Some(result.map(|mut r| {
            add_cache_fields(server, &mut r);
            r
        }));
    }
    Some(Ok(match method {
        Method::ServerDiscover => discover(server),
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
        Method::CompletionComplete => return Some(complete(server, p)),
        _ => return None,
    }))
}

/// What a `tools/call`, `prompts/get` or `resources/read` runs, and with
/// which arguments. `found`: where the tool a `tools/call` names is in the
/// registry, when a step before looked it up.
pub(crate) fn call_target<'a>(
    server: &'a Server,
    method: Method,
    p: &Map<String, Value>,
    found: Option<usize>,
) -> Result<(Target<'a>, Value), McpError> {
    match method {
        Method::ToolsCall => {
            let name = string_param(p, "name")?;
            let tool = match found {
                Some(i) => server.registry.tools.get(i),
                None => server.registry.find_tool(name),
            };
            let tool = tool.ok_or_else(|| {
                if p.contains_key("requestState") {
                    // A paused call of a tool this deploy does not serve:
                    // the call is kept for a rollback.
                    crate::engine::tool_gone(name)
                } else {
                    McpError::new(ErrorKind::InvalidParams, format!("Unknown tool: {name}"))
                }
            })?;
            Ok((
                Target::Tool(tool),
                Value::Object(object_param(p, "arguments")?),
            ))
        }
        Method::PromptsGet => {
            let name = string_param(p, "name")?;
            let prompt = server.registry.find_prompt(name).ok_or_else(|| {
                McpError::new(ErrorKind::InvalidParams, format!("Unknown prompt: {name}"))
            })?;
            Ok((
                Target::Prompt(prompt),
                Value::Object(object_param(p, "arguments")?),
            ))
        }
        Method::ResourcesRead => {
            let uri = string_param(p, "uri")?;
            Ok((find_resource(server, uri)?, json!({ "uri": uri })))
        }
        m => Err(McpError::method_not_found(m.name())),
    }
}

fn string_param<'a>(p: &'a Map<String, Value>, key: &str) -> Result<&'a str, McpError> {
    p.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::invalid_params(format!("Invalid params: {key} must be a string")))
}

/// `server/discover`: versions, capabilities, identity.
fn discover(server: &Server) -> Value {
    let mut result = json!({
        "resultType": "complete",
        "supportedVersions": super::supported_versions(),
        "capabilities": modern_capabilities(server),
        "_meta": {META_SERVER_INFO: {"name": server.config.name, "version": server.config.version}},
    });
    if let Some(i) = &server.config.instructions {
        result["instructions"] = json!(i);
    }
    add_cache_fields(server, &mut result);
    result
}

/// What this server supports on the stateless wire: list changes reach
/// `subscriptions/listen` streams.
pub(crate) fn capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"listChanged": true},
        "prompts": {"listChanged": true},
        "completions": {},
        "logging": {},
    })
}

/// The stateless wire's capabilities, plus the tasks extension when a tool
/// can run as a task, MCP Apps when a view is served, skills when a skill is.
fn modern_capabilities(server: &Server) -> Value {
    let mut caps = capabilities();
    if server.registry.tools.iter().any(|t| t.task.is_some()) {
        caps["extensions"] = json!({ TASKS_EXTENSION: {} });
    }
    if server.registry.has_views() {
        crate::app::declare_ui_extension(&mut caps);
    }
    super::skills::declare(&server.registry, &mut caps);
    caps
}

/// `ttlMs` and `cacheScope`: lists are the same for every caller unless
/// auth is on, in which case only the caller may cache them.
fn add_cache_fields(server: &Server, result: &mut Value) {
    result["ttlMs"] = json!(server.config.list_ttl_ms);
    let scope = if server.config.api_tokens.is_empty() {
        "public"
    } else {
        "private"
    };
    result["cacheScope"] = json!(scope);
}

fn list(server: &Server, key: &str, items: impl Iterator<Item = Value>) -> Value {
    let mut result = json!({"resultType": "complete", key: items.collect::<Vec<_>>()});
    add_cache_fields(server, &mut result);
    result
}

fn find_resource<'a>(server: &'a Server, uri: &str) -> Result<Target<'a>, McpError> {
    if let Some(r) = server.registry.resources.iter().find(|r| r.uri == uri) {
        return Ok(Target::Resource(r));
    }
    if let Some(r) = super::skills::file(&server.registry, uri) {
        return Ok(Target::Resource(r));
    }
    for t in &server.registry.templates {
        if t.match_uri(uri).is_some() {
            return Ok(Target::Template(t));
        }
    }
    Err(McpError::new(
        ErrorKind::ResourceNotFound,
        format!("Resource not found: {uri}"),
    )
    .with_data(json!({"uri": uri})))
}

/// `completion/complete` for prompt arguments and template variables.
fn complete(server: &Server, p: &Map<String, Value>) -> Result<Value, McpError> {
    let reference = object_param(p, "ref")?;
    let argument = object_param(p, "argument")?;
    let arg_name = string_param(&argument, "name")?;
    let value = argument.get("value").and_then(Value::as_str).unwrap_or("");
    let context = object_param(p, "context")?;
    let context_args = object_param(&context, "arguments")?;
    let completer = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = string_param(&reference, "name")?;
            let prompt = server
                .registry
                .find_prompt(name)
                .ok_or_else(|| McpError::invalid_params(format!("Unknown prompt: {name}")))?;
            prompt.completer.clone()
        }
        Some("ref/resource") => {
            let uri = string_param(&reference, "uri")?;
            server
                .registry
                .templates
                .iter()
                .find(|t| t.template == uri)
                .and_then(|t| t.completer.clone())
        }
        _ => {
            return Err(McpError::invalid_params(
                "Invalid params: ref.type must be ref/prompt or ref/resource",
            ))
        }
    };
    let mut values = completer
        .map(|c| c(arg_name, value, &context_args))
        .unwrap_or_default();
    let total = values.len();
    values.truncate(100);
    Ok(json!({
        "resultType": "complete",
        "completion": {"values": values, "total": total, "hasMore": total > 100}
    }))
}

/// The notifications a listen stream can ask for.
const LISTENABLE: [&str; 3] = [
    "toolsListChanged",
    "promptsListChanged",
    "resourcesListChanged",
];

/// `subscriptions/listen`: the stream opens with the acknowledgement of what
/// we honour, then stays open; the glue registers it so list changes
/// (`cx.list_changed`) reach it, tagged with the subscription id.
fn listen(request: &Request, meta: &RequestMeta, ctx: &Ctx<'_>) -> Result<MethodReply, McpError> {
    let wanted = object_param(&request.params, "notifications")?;
    // Task ids are bearer capabilities: a stream hears about the tasks it
    // names, and only those its principal owns (checked per change).
    let task_ids: Vec<String> = match wanted.get("taskIds") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .filter_map(Value::as_str)
            .filter(|id| super::task::is_task_id(id))
            .map(str::to_string)
            .collect(),
        Some(_) => {
            return Err(McpError::invalid_params(
                "Invalid params: notifications.taskIds must be an array of task ids",
            ))
        }
    };
    if wanted.contains_key("taskIds") && !ClientCaps::from_json(Some(&meta.capabilities)).tasks {
        return Err(super::task::extension_required(
            "Listening for task notifications",
        ));
    }
    let mut honoured: Map<String, Value> = wanted
        .into_iter()
        .filter(|(k, v)| LISTENABLE.contains(&k.as_str()) && *v == Value::Bool(true))
        .collect();
    if !task_ids.is_empty() {
        honoured.insert("taskIds".into(), json!(task_ids));
    }
    let ack = notification(
        "notifications/subscriptions/acknowledged",
        json!({"notifications": honoured, "_meta": {META_SUBSCRIPTION_ID: request.id}}),
    );
    honoured.remove("taskIds");
    Ok(MethodReply {
        result: Value::Null,
        notifications: vec![ack],
        listen: Some(Listen {
            subscription_id: request.id.clone(),
            filter: honoured,
            task_ids,
            principal: ctx.principal.0.clone(),
        }),
        effects: Vec::new(),
    })
}
