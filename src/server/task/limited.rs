//! A task a limit held back: created `working`, saying why, and run when
//! its principal's meter admits it. Its alarm, due when the refusal said
//! to try again, asks the meter (an [`Effect::Admit`] the host sends); the
//! answer comes back to `slice::admitted`: run the first slice now (its
//! alarm, at once), or wait again.

use super::TaskRecord;
use crate::effects::Effect;
use crate::limits::{meter_name, Admission, Admit, Note, Refusal};
use crate::server::Server;

/// Holds `task` back for `refusal`.
pub(super) fn wait(task: &mut TaskRecord, refusal: &Refusal) {
    let e = refusal.error();
    task.status_message = Some(format!("Waiting for a limit: {}", e.message));
    task.limited = serde_json::to_value(refusal).ok();
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
            want: 1,
        },
    })]
}

/// Lists `task` as waiting for a limit at its meter until `until` (0: no
/// longer), for operators.
pub(super) fn listed(server: &Server, task: &TaskRecord, until: u64) {
    let note = Note::Waiting {
        call: crate::kept::summary::task_id(&task.task_id),
        tool: task.tool.clone(),
        until,
    };
    server.note(meter_name(&task.principal), note);
}

/// When a held-back task's alarm is due: when its refusal said to try.
pub(super) fn due(task: &TaskRecord) -> Option<u64> {
    task.limited
        .as_ref()
        .map(|r| r["retryAt"].as_u64().unwrap_or(0))
}

/// Releases the lease a task's first slice ran under, now it ended.
pub(super) fn release(server: &Server, task: &mut TaskRecord) {
    if let Some(lease) = task.lease.take() {
        server.note(meter_name(&task.principal), Note::Release(lease));
    }
}
