//! `subscriptions/listen`.

use serde_json::{json, Map, Value};

use crate::effects::Listen;
use crate::engine::ClientCaps;
use crate::error::McpError;
use crate::protocol::notification;
use crate::protocol::versions::META_SUBSCRIPTION_ID;
use crate::protocol::{ClientRequest, Request};
use crate::server::{Ctx, MethodReply, RequestMeta};

/// The notifications a listen stream can ask for.
const LISTENABLE: [&str; 3] = [
    "toolsListChanged",
    "promptsListChanged",
    "resourcesListChanged",
];

/// `subscriptions/listen`: the stream opens with the acknowledgement of what
/// we honour, then stays open; the glue registers it so list changes
/// (`cx.list_changed`) reach it, tagged with the subscription id.
pub(super) fn listen(
    request: &Request,
    meta: &RequestMeta,
    ctx: &Ctx<'_>,
) -> Result<MethodReply, McpError> {
    let wanted = match &request.params {
        ClientRequest::Listen(p) => p.notifications.clone().unwrap_or_default(),
        other => return Err(other.unusable()),
    };
    // Task ids are bearer capabilities: a stream hears about the tasks it
    // names, and only those its principal owns (checked per change).
    let task_ids: Vec<String> = match wanted.get("taskIds") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .filter_map(Value::as_str)
            .filter(|id| crate::server::task::is_task_id(id))
            .map(str::to_string)
            .collect(),
        Some(_) => {
            return Err(McpError::invalid_params(
                "Invalid params: notifications.taskIds must be an array of task ids",
            ))
        }
    };
    // Each named task is told which hub holds the stream, one request
    // each, before the stream opens: a stream names a bounded number.
    if task_ids.len() > crate::effects::MAX_LISTENED_TASKS {
        return Err(McpError::invalid_params(format!(
            "Invalid params: notifications.taskIds names more than {} tasks; open another stream for the rest",
            crate::effects::MAX_LISTENED_TASKS
        )));
    }
    if wanted.contains_key("taskIds") && !ClientCaps::from_json(Some(&meta.capabilities)).tasks {
        return Err(crate::server::task::extension_required(
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
