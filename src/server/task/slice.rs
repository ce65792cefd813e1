//! The task's alarm: one slice of the body, from where it waited to where
//! it waits next; and how a run's outcome settles the task.

use serde_json::{json, Value};

use super::{expires_at, TaskHost, TaskRecord};
use crate::app::CallToolResult;
use crate::effects::{Effect, TaskChange};
use crate::engine::{ClientCaps, Outcome, Outside, RoundEnd, Run, TaskMode, TIMER};
use crate::error::McpError;
use crate::kept::Status;
use crate::server::{round, Kept, Server, Site, Step, Target};

/// The alarm of a task's object: runs the next slice when the task can go
/// on (its timers are due, its questions answered), and deletes the task
/// once its `ttlMs` is over. Returns the effects (the next alarm, or
/// deleting the storage).
pub async fn alarm(
    server: &Server,
    host: &TaskHost<'_>,
    now_ms: u64,
) -> Result<Vec<Effect>, McpError> {
    let Some(mut task) = host.store.load()? else {
        return Ok(vec![Effect::DeleteStorage]);
    };
    let expires = expires_at(server, &task);
    if now_ms >= expires {
        // Alarms are at-least-once: deleting what is already gone is fine.
        return Ok(vec![Effect::DeleteStorage]);
    }
    if task.status.is_final() {
        return Ok(vec![Effect::WakeAt(expires)]);
    }
    if cfg!(any(feature = "limits", not(target_arch = "wasm32"))) && task.limited.is_some() {
        return Ok(super::limited::ask(server, &task, now_ms));
    }
    if !pass_internal(&mut task, now_ms) {
        // Still waiting (a timer not due yet, or the client).
        return Ok(vec![Effect::WakeAt(next_wake(server, &task, now_ms))]);
    }
    slice(server, host, task, now_ms, expires).await
}

/// Runs the next slice of `task` (what it waited for passed) and stores
/// what it came to; `expires`: when the task goes.
async fn slice(
    server: &Server,
    host: &TaskHost<'_>,
    mut task: TaskRecord,
    now_ms: u64,
    expires: u64,
) -> Result<Vec<Effect>, McpError> {
    let Some(tool) = server.registry.find_tool(&task.tool) else {
        // Not served by this deploy: kept for a rollback (see `settle`).
        let gone = fail(crate::engine::tool_gone(&task.tool));
        settle(server, &mut task, gone, now_ms);
        let retry = server.config.parked_retry_ms;
        return parked(store(server, host, task, now_ms), now_ms, retry, expires);
    };
    let version = task.version;
    let run = round::run(
        server,
        &Target::Tool(tool),
        task.arguments.clone(),
        task.journal.clone(),
        site_of(&task),
    )
    .await;
    if cancelled_meanwhile(host, version)? {
        return Ok(vec![Effect::WakeAt(expires)]);
    }
    let stuck = settle(server, &mut task, run, now_ms);
    super::limited::release(server, &mut task);
    let effects = store(server, host, task, now_ms);
    if stuck {
        return parked(effects, now_ms, server.config.parked_retry_ms, expires);
    }
    effects
}

/// Whether a request changed the task while the body awaited (only a
/// cancel can: nothing else writes a working task), from the `version` the
/// slice started at. Cancelled stays so: the slice stores nothing.
fn cancelled_meanwhile(host: &TaskHost<'_>, version: u64) -> Result<bool, McpError> {
    Ok(host
        .store
        .load()?
        .is_some_and(|now| now.version != version && now.status.is_final()))
}

/// Passes the pauses the server answers itself (due timers, detach,
/// checkpoints); whether the task can go on now (nothing else pending).
fn pass_internal(task: &mut TaskRecord, now_ms: u64) -> bool {
    let passed: Vec<(String, Result<Value, Value>)> = task
        .journal
        .pending
        .iter()
        .filter(|(key, r)| match r.method.as_str() {
            TIMER => task.timers.get(*key).is_some_and(|due| *due <= now_ms),
            _ => r.is_internal(),
        })
        .map(|(key, _)| (key.clone(), Ok(json!({}))))
        .collect();
    if passed.is_empty() && !task.journal.pending.is_empty() {
        return false;
    }
    task.journal.accept_answers(passed);
    for key in task.journal.answers.keys() {
        task.timers.remove(key);
    }
    true
}

/// Where a slice of `task` runs: in its object, as its caller.
fn site_of(task: &TaskRecord) -> Site {
    let mut site = Site::new(
        task.task_id.clone(),
        task.caps.clone(),
        task.caller.clone(),
        task.resource.clone(),
    );
    site.task_mode = TaskMode::Running;
    site.kept = Some(Kept {
        home: crate::elicitation::Home::Task(task.task_id.clone()),
        principal: task.principal.clone(),
        origin: task.origin.clone(),
    });
    site
}

/// A parked task's effects: its alarm tries again in `retry_ms`
/// (`PARKED_RETRY_SECONDS`; not at once: nothing changes until another
/// deploy), until it expires.
fn parked(
    effects: Result<Vec<Effect>, McpError>,
    now_ms: u64,
    retry_ms: u64,
    expires: u64,
) -> Result<Vec<Effect>, McpError> {
    let retry = now_ms.saturating_add(retry_ms).min(expires);
    effects.map(|effects| {
        effects
            .into_iter()
            .map(|e| match e {
                Effect::WakeAt(_) => Effect::WakeAt(retry),
                e => e,
            })
            .collect()
    })
}

/// Something from outside the client ([`Outside`]: a page completed, an
/// operator's answer or rewind) for this task: it goes into the task's
/// journal and its alarm runs it now if nothing else is waited for (a
/// rewind: at once, to ask again). `task` is the task as loaded, which
/// the machine let take it (not finished). `Err(why)` when it is not
/// waiting for it.
pub(crate) fn take_outside(
    server: &Server,
    host: &TaskHost<'_>,
    mut task: TaskRecord,
    (now_ms, what): (u64, Outside),
) -> Result<Result<Vec<Effect>, &'static str>, McpError> {
    if let Err(why) = task.journal.take_outside(what, now_ms) {
        return Ok(Err(why));
    }
    task.updated_ms = now_ms;
    // It goes on once nothing is left for the client to answer; a task
    // stuck on new code stays parked (its alarm tries again).
    if task.status != Status::Parked {
        task.status = task.going_on();
    }
    store(server, host, task, now_ms).map(Ok)
}

/// Writes the task and says when its alarm fires next (and the hub's
/// index, what it now is).
pub(crate) fn store(
    server: &Server,
    host: &TaskHost<'_>,
    mut task: TaskRecord,
    now_ms: u64,
) -> Result<Vec<Effect>, McpError> {
    task.version += 1;
    let mut listed = newly_listed(&mut task);
    if let Err(e) = host.store.save(&task) {
        unstorable(server, &mut task, &e, now_ms);
        listed = newly_listed(&mut task).or(listed);
        host.store.save(&task).map_err(|_| e)?;
    }
    let change = TaskChange {
        task_id: task.task_id.clone(),
        principal: task.principal.clone(),
        task: super::detailed(server, &task),
        summary: listed.map(Box::new),
    };
    Ok(vec![
        Effect::WakeAt(next_wake(server, &task, now_ms)),
        Effect::TaskChanged(change),
    ])
}

/// The task's summary for the operator's index when its status is not
/// the one the index last heard (and marks it heard), else `None`.
fn newly_listed(task: &mut TaskRecord) -> Option<crate::kept::CallSummary> {
    let summary = task.summary();
    if task.listed == Some(summary.status) {
        return None;
    }
    task.listed = Some(summary.status);
    Some(summary)
}

/// The task as it ends when what it came to cannot be stored (a record
/// too large, storage down): failed, holding its end alone, so that its
/// alarm never runs the slice — and its effects — again (a storage error
/// left to the alarm's retries ran them without bound). An error line is
/// logged.
fn unstorable(server: &Server, task: &mut TaskRecord, e: &McpError, now_ms: u64) {
    let (why, failed) = crate::kept::unstored(e);
    task.status = Status::Failed;
    task.error = Some(failed.to_error_object());
    task.result = None;
    task.status_message = Some(failed.message.clone());
    task.timers.clear();
    task.journal = crate::engine::Journal {
        round: task.journal.round,
        ..crate::engine::Journal::new()
    };
    let error = Some((failed.code(), format!("{:?}", failed.kind)));
    mark(server, task, (RoundEnd::Failed, Some(&why), error), now_ms);
}

/// A run that failed with a JSON-RPC error.
fn fail(e: McpError) -> Run<Value> {
    Run {
        outcome: Outcome::Error(e),
        notifications: Vec::new(),
        status: None,
    }
}

/// Applies one run of the body to the task: its result, its error, or
/// what it waits on now.
/// True when the task is parked (see [`Step::Parked`]).
pub(super) fn settle(server: &Server, task: &mut TaskRecord, run: Run<Value>, now_ms: u64) -> bool {
    if run.status.is_some() {
        task.status_message = run.status;
    }
    task.updated_ms = now_ms;
    let step = Step::of(run.outcome, true);
    let (end, why) = round::end_of(&step);
    let error = round::error_of(&step);
    let parked = matches!(step, Step::Parked(_));
    if !parked {
        unstick(task);
    }
    apply(task, step, now_ms);
    if task.status.is_final() {
        task.journal.pending.clear();
        task.timers.clear();
    }
    mark(server, task, (end, why.as_deref(), error), now_ms);
    parked
}

/// A round that ran through is no longer stuck: a "Stuck: …" left from
/// an earlier round (the code fixed, rolled back) goes.
fn unstick(task: &mut TaskRecord) {
    let stuck = (task.status_message.as_deref()).is_some_and(|m| m.starts_with("Stuck"));
    if stuck {
        task.status_message = None;
    }
}

/// What a round's `step` makes the task.
fn apply(task: &mut TaskRecord, step: Step, now_ms: u64) {
    match step {
        Step::Done(result) => finished(task, result),
        Step::Refused(m) => finished(task, CallToolResult::error(m).into_json()),
        Step::Parked(e) => stuck(task, &e),
        Step::Failed(e) => {
            task.status = Status::Failed;
            task.error = Some(e.to_error_object());
        }
        Step::Paused { journal, .. } => waits(task, journal, now_ms),
    }
}

/// A result ends the task: completed, or failed when it is a tool's
/// error (`isError`) — which the wire still shows as a result, completed
/// (see [`super::wire_status`]).
fn finished(task: &mut TaskRecord, result: Value) {
    task.status = if result["isError"] == true {
        Status::Failed
    } else {
        Status::Completed
    };
    task.result = Some(result);
}

/// The tool's new code cannot replay the task: it is stuck, not failed,
/// as it was (its answers kept), until a rollback or a fix lets its alarm
/// run it, or it expires.
fn stuck(task: &mut TaskRecord, e: &McpError) {
    task.status = Status::Parked;
    let data = e.data.clone().unwrap_or_default();
    let versions = match (data["pausedOn"].as_str(), data["metOn"].as_str()) {
        (Some(paused), Some(met)) => format!(" (paused on {paused}, met {met})"),
        _ => String::new(),
    };
    task.status_message = Some(format!("Stuck: {}{versions}", e.message));
}

/// A slice that paused: it waits (on the client's answers — the wire's
/// `input_required` —, or on a timer, whose time runs from when the body
/// first asked for it).
fn waits(task: &mut TaskRecord, journal: crate::engine::Journal, now_ms: u64) {
    task.journal = journal;
    for (key, r) in &task.journal.pending {
        if let Some(ms) = r.timer_ms() {
            task.timers
                .or_insert_with(key.clone(), || now_ms.saturating_add(ms));
        }
    }
    let pending = &task.journal.pending;
    task.timers.retain(|k, _| pending.contains_key(k));
    task.status = task.going_on();
}

/// Records how a round of `task` ended in its journal's trail.
pub(super) fn mark(
    server: &Server,
    task: &mut TaskRecord,
    (end, why, error): (RoundEnd, Option<&str>, Option<(i64, String)>),
    now_ms: u64,
) {
    let principal = if task.caller.principal.is_empty() {
        task.principal.clone()
    } else {
        task.caller.principal.clone()
    };
    // A task's id is a bearer capability (whoever holds it reads, answers
    // and cancels the task): its lines and spans name it by the digest the
    // admin answers show.
    let handle = crate::kept::summary::task_id(&task.task_id);
    let ended = round::Ended {
        call_id: &handle,
        tool: &task.tool,
        wire: "task",
        principal: &principal,
        now_ms,
        round: 0,
        traceparent: None,
        error,
    };
    let mut journal = std::mem::take(&mut task.journal);
    round::record(server, Some(&mut journal), end, why, &ended);
    task.journal = journal;
}

/// When the task's alarm must fire next: now when it can go on, when its
/// next timer is due, or when it expires.
pub(super) fn next_wake(server: &Server, task: &TaskRecord, now_ms: u64) -> u64 {
    let expires = expires_at(server, task);
    if task.status.is_final() {
        return expires;
    }
    if let Some(at) = super::limited::due(task) {
        return at.min(expires);
    }
    let pending = &task.journal.pending;
    let runnable = pending.is_empty()
        || pending
            .values()
            .any(|r| r.is_internal() && r.timer_ms().is_none());
    if runnable {
        return now_ms;
    }
    task.timers.values().copied().fold(expires, u64::min)
}

/// The capabilities a task's body may use: those of the request that
/// created it.
pub(super) fn task_caps(caps: &ClientCaps) -> ClientCaps {
    ClientCaps {
        tasks: true,
        ..caps.clone()
    }
}

/// The meter's answer for a held-back task (`lease`: what it was asked
/// under): admitted, it runs at once; refused, it waits until the time the
/// refusal names.
pub async fn admitted(
    server: &Server,
    host: &TaskHost<'_>,
    lease: &str,
    verdict: crate::limits::Verdict,
    now_ms: u64,
) -> Result<Vec<Effect>, McpError> {
    let Some(mut task) = host.store.load()? else {
        // Gone meanwhile (cancelled, expired): nothing runs under the lease.
        server.note(
            crate::limits::meter_name(""),
            crate::limits::Note::Release(lease.to_string()),
        );
        return Ok(Vec::new());
    };
    if task.limited.is_none() || task.status.is_final() {
        server.note(
            crate::limits::meter_name(&task.principal),
            crate::limits::Note::Release(lease.to_string()),
        );
        return Ok(Vec::new());
    }
    match verdict {
        crate::limits::Verdict::Admitted(_) => {
            super::limited::listed(server, &task, 0);
            task.limited = None;
            task.status_message = None;
            task.lease = Some(lease.to_string());
        }
        crate::limits::Verdict::Refused(r) => super::limited::wait(&mut task, &r),
    }
    store(server, host, task, now_ms)
}
