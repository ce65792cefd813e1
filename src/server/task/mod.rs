//! The tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`): a tool
//! call answered with a task at once, whose work goes on in the task's own
//! Durable Object — named by the task id, an unguessable bearer capability —
//! with no client connected, across restarts and deploys.
//!
//! The same replay engine runs the body. A task is a journal plus a status:
//! requests change the status and arm the object's alarm, and the alarm
//! runs the body, one slice per alarm, from pause to pause. A slice ends
//! where the body waits: on the client (`input_required`: its questions are
//! the task's `inputRequests`, answered with `tasks/update`), on a timer
//! (`cx.sleep`: the alarm is armed for when it is due) or nowhere (done).
//! The journal is stored after every slice, so a restart loses at most the
//! slice that was running, and the alarm (at-least-once) runs it again.
//!
//! # Layout
//! - `record.rs`: the stored task, its status on the wire, the storage
//!   trait.
//! - `start.rs`: `tools/call` of a task tool: the first slice, on the request.
//! - `methods.rs`: `tasks/get`, `tasks/update`, `tasks/cancel`.
//! - `slice.rs`: the alarm: one slice of the body; how a task settles.

mod limited;
mod methods;
mod record;
mod slice;
mod start;

pub(crate) use methods::{cancel_task, handle as handle_method};
pub use record::{iso8601, wire_status, MemoryTaskStore, TaskRecord, TaskStore};
pub use slice::{admitted, alarm};
pub(crate) use slice::{store, take_outside};
pub(crate) use start::call;

use serde_json::{json, Map, Value};

use crate::error::McpError;
use crate::protocol::versions::TASKS_EXTENSION;
use crate::server::Server;

/// A task's object, as a request served in it sees it.
pub struct TaskHost<'a> {
    /// The task id the Worker routed by (the object's name).
    pub task_id: String,
    /// The object's storage.
    pub store: &'a dyn TaskStore,
}

/// Whether `id` can name a task: 32 lowercase hex digits (128 random bits).
pub fn is_task_id(id: &str) -> bool {
    crate::server::is_call_id_shape(id)
}

/// `-32021`: the method needs the tasks extension, which the request did
/// not declare.
pub(crate) fn extension_required(what: &str) -> McpError {
    McpError::new(
        crate::error::ErrorKind::MissingCapability,
        format!("{what} needs the {TASKS_EXTENSION} extension, which the request did not declare"),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

/// `-32602` for a task this caller cannot see (unknown, expired, or
/// another principal's: they are told apart by nobody).
pub(crate) fn unknown_task() -> McpError {
    McpError::invalid_params("Invalid params: unknown or expired taskId")
}

/// The task fields every task message carries (`Task` in SEP-2663).
pub(crate) fn task_fields(server: &Server, t: &TaskRecord) -> Value {
    let mut v = json!({
        "taskId": t.task_id,
        "status": wire_status(t),
        "createdAt": iso8601(t.created_ms),
        "lastUpdatedAt": iso8601(t.updated_ms),
        "ttlMs": server.config.task_ttl_ms,
        "pollIntervalMs": server.config.task_poll_ms,
    });
    if let Some(m) = &t.status_message {
        v["statusMessage"] = json!(m);
    }
    v
}

/// The task as `tasks/get` shows it: its fields plus, by status, the
/// questions waiting for the client, the result, or the error.
pub(crate) fn detailed(server: &Server, t: &TaskRecord) -> Value {
    let mut v = task_fields(server, t);
    v["resultType"] = json!("complete");
    match wire_status(t) {
        "input_required" => {
            // Inserted one by one: collecting into a map sorts first.
            let mut asks = Map::new();
            for (k, r) in t.journal.pending.iter().filter(|(_, r)| !r.is_internal()) {
                asks.insert(k.clone(), r.clone().into_modern_json());
            }
            v["inputRequests"] = Value::Object(asks);
        }
        "completed" => v["result"] = t.result.clone().unwrap_or(json!({})),
        "failed" => v["error"] = t.error.clone().unwrap_or(json!({})),
        _ => {}
    }
    v
}

/// When a task and its storage go: `ttlMs` after it was created.
pub(crate) fn expires_at(server: &Server, t: &TaskRecord) -> u64 {
    let ttl = t.created_ms.saturating_add(server.config.task_ttl_ms);
    // A finished task stays for operators as long as configured for its
    // outcome (never past its ttlMs, which the client was promised): a
    // JSON-RPC error as a failed one, a tool's error as a result.
    let c = &server.config;
    let retain = match wire_status(t) {
        "failed" => c.retain_failed_ms.or(c.retain_completed_ms),
        _ if t.status.is_final() => c.retain_completed_ms,
        _ => None,
    };
    retain.map_or(ttl, |r| ttl.min(t.updated_ms.saturating_add(r)))
}
