//! What a call runs — a tool, a prompt, a resource — and running its body
//! once: the registry's state, the scopes and code version a tool's round
//! carries, its result checked.

use std::borrow::Cow;

use serde_json::{json, Value};

use super::Server;
use crate::app::{Body, CallToolResult, KeptBody, Prompt, Resource, ResourceTemplate, Tool};
use crate::engine::{self, Cx, Outcome, Run, ToolError};
use crate::error::{ErrorKind, McpError};
use crate::protocol::object;

/// What a call runs.
pub(crate) enum Target<'a> {
    Tool(&'a Tool),
    Prompt(&'a Prompt),
    Resource(&'a Resource),
    Template(&'a ResourceTemplate),
}

impl Target<'_> {
    /// The name state is bound to: tool/prompt name or resource URI.
    pub(crate) fn name(&self, args: &Value) -> String {
        match self {
            Target::Tool(t) => t.name.clone(),
            Target::Prompt(p) => p.name.clone(),
            Target::Resource(_) | Target::Template(_) => {
                args["uri"].as_str().unwrap_or_default().to_string()
            }
        }
    }

    pub(crate) fn durable(&self) -> bool {
        matches!(self, Target::Tool(t) if t.durable)
    }
}

/// The code version a round runs on: the version of the tool's body that
/// runs it and the Worker's version id, where known.
fn code_version(server: &Server, version: Option<&str>) -> String {
    let mut v = format!("tool={}", version.unwrap_or("-"));
    if !server.config.worker_version.is_empty() {
        v.push_str(";worker=");
        v.push_str(&server.config.worker_version);
    }
    v
}

/// A code-change error names the tool its call belongs to.
fn named_tool(mut e: McpError, tool: &str) -> McpError {
    if e.kind == ErrorKind::CodeChanged {
        if let Some(data) = e.data.as_mut().and_then(Value::as_object_mut) {
            data.insert("tool".into(), Value::String(tool.to_string()));
        }
    }
    e
}

/// Runs the target's body once with `cx`, which gets the registry's shared
/// state.
pub(crate) async fn run_target(
    server: &Server,
    target: &Target<'_>,
    cx: Cx,
    args: Value,
) -> Run<Value> {
    let cx = cx.with_state(server.registry.state.clone());
    match target {
        Target::Tool(t) => run_tool(server, t, cx, args).await,
        Target::Prompt(p) => engine::run(&*p.handler, cx, args).await,
        Target::Resource(r) => {
            let run = engine::run(&*r.handler, cx, args).await;
            Run {
                outcome: contents(run.outcome),
                notifications: run.notifications,
                status: run.status,
            }
        }
        Target::Template(t) => {
            let uri = args["uri"].clone();
            let mut vars = t
                .match_uri(uri.as_str().unwrap_or_default())
                .unwrap_or_default();
            vars.insert("uri".into(), uri);
            let run = engine::run(&*t.handler, cx, Value::Object(vars)).await;
            Run {
                outcome: contents(run.outcome),
                notifications: run.notifications,
                status: run.status,
            }
        }
    }
}

/// Runs a round of a tool's call on the body its call is on ([`Tool::pinned`]):
/// the current one, or a kept earlier version's, which may move the call
/// to the current one at its upgrade point.
async fn run_tool(server: &Server, t: &Tool, cx: Cx, args: Value) -> Run<Value> {
    // The scopes a call of this tool needs, checked before its body runs
    // (OAuth callers only; see `Cx::require_scopes`).
    let cx = cx.with_base_scopes(server.tool_scopes(t));
    if let Err(ToolError::Protocol(e)) = cx.require_scopes(Vec::<String>::new()) {
        return failed(e);
    }
    let current = code_version(server, t.version.as_deref());
    // Only a pinned tool's rounds depend on the version the call is on.
    let last = t.pinned.then(|| cx.tool_version()).flatten();
    let (run, declared) = match t.body_for(last.as_deref()) {
        Body::Current => {
            let cx = cx.with_code(current, &t.patches);
            (
                engine::run(&*t.handler, cx, args).await,
                t.output_schema_json().map(Cow::Borrowed),
            )
        }
        Body::Kept(k) => run_kept(server, t, k, cx.with_upgrade_to(current), args).await,
        Body::Missing(v) => return failed(version_gone(&t.name, v)),
    };
    let outcome = match run.outcome {
        Outcome::Complete(r) => match checked(server, declared.as_deref(), &r) {
            Ok(()) => Outcome::Complete(r.into_json()),
            Err(why) => Outcome::ToolFailed(why),
        },
        Outcome::ToolFailed(m) => Outcome::ToolFailed(m),
        Outcome::InputRequired { requests, journal } => {
            Outcome::InputRequired { requests, journal }
        }
        Outcome::Error(e) => Outcome::Error(named_tool(e, &t.name)),
    };
    Run {
        outcome,
        notifications: run.notifications,
        status: run.status,
    }
}

/// A round of a pinned call on the earlier body `k` it started on (moving
/// to the current one at its upgrade point), and the `outputSchema` of
/// the body that ended the round.
async fn run_kept<'t>(
    server: &Server,
    t: &'t Tool,
    k: &KeptBody,
    cx: Cx,
    args: Value,
) -> (Run<CallToolResult>, Option<Cow<'t, Value>>) {
    let cx = cx.with_code(code_version(server, Some(&k.version)), &t.patches);
    let (run, moved) = engine::run_moving(&*k.handler, &*t.handler, cx, args).await;
    let declared = if moved {
        t.output_schema_json().map(Cow::Borrowed)
    } else {
        k.output_schema().map(Cow::Owned)
    };
    (run, declared)
}

/// A run that ends before any body runs.
fn failed(e: McpError) -> Run<Value> {
    Run {
        outcome: Outcome::Error(e),
        notifications: Vec::new(),
        status: None,
    }
}

/// The error for a pinned call whose version this code no longer keeps:
/// the call is kept as it was, for a deploy that brings the version back.
fn version_gone(tool: &str, version: &str) -> McpError {
    let why = format!(
        "the call is pinned to version {version:?} of the tool {tool:?}, whose body this \
         deploy no longer keeps (Tool::keeps)"
    );
    McpError::new(
        ErrorKind::CodeChanged,
        format!(
            "The tool's code changed since this call paused: the call is pinned to version \
             {version:?} of the tool {tool:?}, and this deploy neither runs nor keeps that \
             version. The call is kept as it was: the same request continues it on a deploy \
             that keeps version {version:?}."
        ),
    )
    .with_data(json!({ "why": why, "tool": tool, "pinnedTo": version }))
}

/// What a tool's result must satisfy before it is sent: its structured
/// output fits the declared `outputSchema`, and a chained call fits the
/// server. Otherwise the call is a tool error saying why.
fn checked(server: &Server, declared: Option<&Value>, r: &CallToolResult) -> Result<(), String> {
    if let Some(why) = chain_refused(server, r) {
        return Err(why);
    }
    if let (Some(schema), Some(out), false) = (declared, &r.structured_content, r.is_error) {
        crate::schema::check(out, schema)
            .map_err(|why| format!("the tool's result does not match its outputSchema: {why}"))?;
    }
    Ok(())
}

/// Why a result's chained call (`_meta.nextTool`) cannot be sent: a tool
/// this server does not list, or arguments its input schema refuses.
fn chain_refused(server: &Server, r: &CallToolResult) -> Option<String> {
    let (name, args) = r.next_tool()?;
    let Some(next) = server.registry.find_tool(name) else {
        return Some(format!(
            "the tool asked for {name:?} to be called next, which this server does not list"
        ));
    };
    let args = if args.is_null() { &json!({}) } else { args };
    let schema = next.input_schema_json();
    crate::schema::check(args, schema).err().map(|why| {
        format!("the tool asked for {name:?} to be called next with arguments its input schema refuses: {why}")
    })
}

fn contents(outcome: Outcome<Vec<Value>>) -> Outcome<Value> {
    match outcome {
        Outcome::Complete(c) => Outcome::Complete(object([("contents", Value::Array(c))])),
        Outcome::InputRequired { requests, journal } => {
            Outcome::InputRequired { requests, journal }
        }
        Outcome::ToolFailed(m) => Outcome::ToolFailed(m),
        Outcome::Error(e) => Outcome::Error(e),
    }
}
