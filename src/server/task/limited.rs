//! A task a limit held back: created `working`, saying why, and run when
//! its principal's meter admits it. Its alarm, due when the refusal said
//! to try again, asks the meter (an [`Effect::Admit`] the host sends); the
//! answer comes back to [`admitted`]: run the first slice now (its alarm,
//! at once), or wait again.

use super::slice::store;
use super::{TaskHost, TaskRecord};
use crate::effects::Effect;
use crate::error::McpError;
use crate::limits::{meter_name, Admission, Admit, Note, Refusal, Verdict};
use crate::server::Server;

/// Holds `task` back for `refusal`.
pub(super) fn wait(task: &mut TaskRecord, refusal: &Refusal) {
    let e = refusal.error();
    task.status_message = Some(format!("Waiting for a limit: {}", e.message));
    task.limited = Some(refusal.clone());
}

/// A held-back task's alarm: ask its meter again.
pub(super) fn ask(server: &Server, task: &TaskRecord, now_ms: u64) -> Vec<Effect> {
    let limits = server
        .limits
        .for_principal(&task.principal)
        .for_tool(&task.tool);
    vec![Effect::Admit(Admission {
        meter: meter_name(&task.principal),
        admit: Admit {
            tool: task.tool.clone(),
            lease: format!("l{}-{now_ms}", task.task_id),
            new: true,
            limits,
            lease_ms: server.config.claim_timeout_ms,
        },
    })]
}

/// The meter's answer for a held-back task (`lease`: what it was asked
/// under): admitted, it runs at once; refused, it waits until the time the
/// refusal names.
pub async fn admitted(
    server: &Server,
    host: &TaskHost<'_>,
    lease: &str,
    verdict: Verdict,
    now_ms: u64,
) -> Result<Vec<Effect>, McpError> {
    let Some(mut task) = host.store.load()? else {
        // Gone meanwhile (cancelled, expired): nothing runs under the lease.
        server.note(meter_name(""), Note::Release(lease.to_string()));
        return Ok(Vec::new());
    };
    if task.limited.is_none() || task.status.is_final() {
        server.note(
            meter_name(&task.principal),
            Note::Release(lease.to_string()),
        );
        return Ok(Vec::new());
    }
    match verdict {
        Verdict::Admitted => {
            task.limited = None;
            task.status_message = None;
            task.lease = Some(lease.to_string());
        }
        Verdict::Refused(r) => wait(&mut task, &r),
    }
    store(server, host, task, now_ms)
}

/// When a held-back task's alarm is due: when its refusal said to try.
pub(super) fn due(task: &TaskRecord) -> Option<u64> {
    task.limited.as_ref().map(|r| r.retry_at)
}

/// Releases the lease a task's first slice ran under, now it ended.
pub(super) fn release(server: &Server, task: &mut TaskRecord) {
    if let Some(lease) = task.lease.take() {
        server.note(meter_name(&task.principal), Note::Release(lease));
    }
}
