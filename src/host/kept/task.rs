//! A task, as one [`Kept`]. A task's object holds one.

use serde_json::Value;

use super::super::Stores;
use super::Kept;
use crate::effects::Effect;
use crate::elicitation::Home;
use crate::engine::{Journal, Outside};
use crate::error::McpError;
use crate::kept::summary::{task_id, TASK_PREFIX};
use crate::kept::{CallSummary, Status};
use crate::replay::PausedCall;
use crate::server::task::{TaskHost, TaskRecord};
use crate::server::Server;

struct Task<'s> {
    stores: &'s Stores<'s>,
    task: TaskRecord,
}

/// The task this object holds, if `which` picks it.
pub(super) fn load<'s>(
    stores: &'s Stores<'s>,
    which: impl Fn(&TaskRecord) -> bool,
) -> Result<Option<Box<dyn Kept + 's>>, McpError> {
    let task = stores.task.load()?.filter(which);
    Ok(task.map(|task| Box::new(Task { stores, task }) as Box<dyn Kept + 's>))
}

/// The task an admin id `t.<h>` names, if this object holds it.
pub(super) fn by_id<'s>(
    stores: &'s Stores<'s>,
    id: &str,
) -> Result<Option<Box<dyn Kept + 's>>, McpError> {
    if !id.starts_with(TASK_PREFIX) {
        return Ok(None);
    }
    load(stores, |t| task_id(&t.task_id) == id)
}

impl<'s> Task<'s> {
    /// The task, and its object as the task code reaches it.
    fn parts(self) -> (TaskRecord, TaskHost<'s>) {
        let host = TaskHost {
            task_id: self.task.task_id.clone(),
            store: self.stores.task,
        };
        (self.task, host)
    }
}

impl Kept for Task<'_> {
    fn status(&self) -> Status {
        self.task.summary().status
    }

    fn set_status(&mut self, status: Status) {
        // A task goes on by itself: held, its next slice parks it (its
        // journal says held); going on again, it waits if anything is
        // pending, else its alarm works.
        self.task.status = match status {
            Status::Parked => self.task.status,
            s if s.is_final() => s,
            _ => self.task.going_on(),
        };
    }

    fn journal(&mut self) -> &mut Journal {
        &mut self.task.journal
    }

    fn journal_ref(&self) -> &Journal {
        &self.task.journal
    }

    fn arguments(&self) -> Value {
        self.task.arguments.clone()
    }

    fn summary(&self) -> CallSummary {
        self.task.summary()
    }

    fn store(
        mut self: Box<Self>,
        server: &Server,
        now_ms: u64,
        wake: bool,
    ) -> Result<Vec<Effect>, McpError> {
        self.task.updated_ms = now_ms;
        let (task, host) = self.parts();
        // Stored as every change of a task is: the hub's index (what a
        // listing reads of tasks) hears of it.
        let mut effects = crate::server::task::store(server, &host, task, now_ms)?;
        // Its alarm runs it now (a parked task otherwise waits for its
        // next retry).
        if wake {
            effects.push(Effect::WakeAt(now_ms));
        }
        Ok(effects)
    }

    fn take_outside(
        self: Box<Self>,
        server: &Server,
        now_ms: u64,
        what: Outside,
    ) -> Result<Result<Vec<Effect>, &'static str>, McpError> {
        let (task, host) = self.parts();
        crate::server::task::take_outside(server, &host, task, (now_ms, what))
    }

    fn cancel(
        self: Box<Self>,
        server: &Server,
        now_ms: u64,
        why: &str,
    ) -> Result<Result<Vec<Effect>, &'static str>, McpError> {
        let (task, host) = self.parts();
        let done = crate::server::task::cancel_task(server, &host, task, now_ms, why)?;
        Ok(done.ok_or("already finished"))
    }

    fn purge(self: Box<Self>) -> Result<Result<Vec<Effect>, &'static str>, McpError> {
        // A task id is its own capability and nothing rebuilds a task:
        // its object goes whole (and its index entry).
        let id = task_id(&self.task.task_id);
        Ok(Ok(vec![
            Effect::DeleteStorage,
            Effect::Indexed(crate::index::IndexChange::Remove(id)),
        ]))
    }

    fn home(&self) -> Home {
        Home::Task(self.task.task_id.clone())
    }

    fn paused(self: Box<Self>) -> Result<Option<PausedCall>, McpError> {
        if self.status().is_final() {
            return Ok(None);
        }
        let t = self.task;
        let admin = task_id(&t.task_id);
        Ok(Some(PausedCall::new(admin, t.tool, t.arguments, t.journal)))
    }
}
