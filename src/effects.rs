//! One reply out of the core: the HTTP response plus the effects the host
//! must apply. The Worker glue and the test harness apply the same list the
//! same way and decide nothing: every protocol decision is made here, in
//! the sans-IO core, before the effects exist.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::http::{HttpResponse, SseEvent};
use crate::index::{IndexChange, IndexEntry};
use crate::kept::CallSummary;
use crate::protocol::versions::META_SUBSCRIPTION_ID;
use crate::protocol::ListKind;

/// What the core answers to one request (or one alarm).
#[must_use = "a reply's effects must be applied: dropping them loses list changes, streams and alarms"]
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP response to send.
    pub response: HttpResponse,
    /// What the host does besides sending it, in order.
    pub effects: Vec<Effect>,
}

/// Something the host does for the core.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A list changed: tell every listen hub (the requests
    /// `host::announce` builds).
    ListChanged(ListKind),
    /// A task changed: tell the hubs holding a stream that asked for this
    /// task (`notifications/tasks`; none: no request), and the admin
    /// index (`host::announce`).
    TaskChanged(TaskChange),
    /// Hub only: keep this response open as a `subscriptions/listen` stream
    /// and remember what it listens for.
    Listen(Listen),
    /// Hub only: send every held listen stream the frames
    /// [`Listen::frames_for`] gives for these changes; forget the streams
    /// whose clients went away.
    Fanout(Changes),
    /// Keep this response open as the live view of session stream `0`:
    /// later [`Effect::Push`]es to that stream are written to it.
    HoldOpen(String),
    /// Write events to the streams held open for a session stream.
    Push(Push),
    /// Arm this object's alarm for this time (ms since the epoch); it
    /// replaces any earlier one.
    WakeAt(u64),
    /// Make sure this object's alarm fires by this time (ms since the
    /// epoch): arm it unless it is already armed for then or earlier. The
    /// alarm that fires sweeps everything due and arms itself for what is
    /// left, so an earlier alarm serves a later deadline too.
    WakeBy(u64),
    /// Delete this object's storage and close its open streams.
    DeleteStorage,
    /// The admin index changed (a session opened or went): tell the hub,
    /// with the other changes (a task's entry rides on its `TaskChanged`).
    Indexed(IndexChange),
    /// Ask a principal's meter to admit a kept call a limit held back (a
    /// task's first slice), and hand its answer to `host::admitted` in
    /// this object.
    Admit(crate::limits::Admission),
    /// Hub only, after [`Effect::Listen`]: tell each task the stream named
    /// that this hub listens for it (the requests `host::watch_requests`
    /// builds), before the stream's first frame goes: a task tells only
    /// the hubs that asked.
    Watch(Watch),
}

/// The most tasks one listen stream names: each is told, with a request
/// from the hub, when the stream opens.
pub const MAX_LISTENED_TASKS: usize = 64;

/// A listen stream's tasks, to be told which hub holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Watch {
    /// The hub object holding the stream.
    pub hub: String,
    /// Whose stream it is: a task owned by anyone else ignores it.
    pub principal: String,
    /// The tasks it named.
    pub task_ids: Vec<String>,
}

impl Effect {
    /// For [`Effect::WakeBy`]`(by_ms)`: whether an object whose alarm is
    /// armed for `armed_ms` (`None`: not armed) must arm it for `by_ms`.
    pub fn must_arm(armed_ms: Option<u64>, by_ms: u64) -> bool {
        armed_ms.is_none_or(|at| at > by_ms)
    }
}

/// Events for a session stream the host holds open.
#[derive(Debug, Clone, PartialEq)]
pub struct Push {
    /// The stream (`c<n>`, or `_` for the standalone stream).
    pub stream: String,
    /// The events, already logged.
    pub events: Vec<SseEvent>,
    /// Close the stream after them (the call is over, or polling mode).
    pub close: bool,
}

/// A task's new state, for the listen streams that asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskChange {
    /// The task.
    pub task_id: String,
    /// Who owns it: only their streams hear about it.
    pub principal: String,
    /// The task as `tasks/get` would show it now.
    pub task: Value,
    /// The task as an operator's listing shows it (the hub keeps it in
    /// the admin index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Box<CallSummary>>,
}

/// What changed, as the Worker tells the listen hub.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Changes {
    /// Lists that changed.
    #[serde(default)]
    pub lists: Vec<ListKind>,
    /// Tasks that changed.
    #[serde(default)]
    pub tasks: Vec<TaskChange>,
    /// Changes to the admin index (the first hub shard keeps it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub index: Vec<IndexChange>,
}

impl Changes {
    /// The changes a reply's effects announce.
    pub fn of(effects: &[Effect]) -> Self {
        let mut c = Self::default();
        for e in effects {
            match e {
                Effect::ListChanged(k) => c.lists.push(*k),
                Effect::TaskChanged(t) => {
                    // The summary travels once, in the index's entry; a
                    // change without one (the status the index has) is
                    // not the index's.
                    let mut t = t.clone();
                    if let Some(summary) = t.summary.take() {
                        c.index.push(IndexChange::Put(IndexEntry {
                            handle: crate::kept::summary::task_id(&t.task_id),
                            object: format!("task:{}", t.task_id),
                            kind: crate::kept::Kind::Task,
                            summary: Some(*summary),
                        }));
                    }
                    c.tasks.push(t);
                }
                Effect::Indexed(i) => c.index.push(i.clone()),
                _ => {}
            }
        }
        c
    }

    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.lists.is_empty() && self.tasks.is_empty() && self.index.is_empty()
    }
}

/// A `subscriptions/listen` stream: what it asked to hear.
#[derive(Debug, Clone, PartialEq)]
pub struct Listen {
    /// The listen request's id, which tags every frame.
    pub subscription_id: Value,
    /// The notifications asked for (`toolsListChanged`, …).
    pub filter: Map<String, Value>,
    /// The tasks whose changes it asked for (`taskIds`).
    pub task_ids: Vec<String>,
    /// Who is listening (a task is only told to its owner).
    pub principal: String,
}

impl Listen {
    /// The frames this listener gets for `changes`: one
    /// `notifications/<kind>/list_changed` per kind it asked for, and one
    /// `notifications/tasks` per change of a task it asked for.
    pub fn frames_for(&self, changes: &Changes) -> Vec<SseEvent> {
        let meta = json!({ META_SUBSCRIPTION_ID: self.subscription_id });
        let lists = changes
            .lists
            .iter()
            .filter(|kind| {
                let wanted = format!("{}ListChanged", kind.as_str());
                self.filter.get(&wanted) == Some(&Value::Bool(true))
            })
            .map(|kind| {
                SseEvent::message(&json!({
                    "jsonrpc": "2.0",
                    "method": kind.notification_method(),
                    "params": {"_meta": meta},
                }))
            });
        let tasks = changes
            .tasks
            .iter()
            .filter(|t| t.principal == self.principal && self.task_ids.contains(&t.task_id))
            .map(|t| {
                let mut params = t.task.clone();
                params["_meta"] = meta.clone();
                SseEvent::message(&json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/tasks",
                    "params": params,
                }))
            });
        lists.chain(tasks).collect()
    }
}

impl Reply {
    /// A reply with no effects.
    pub fn new(response: HttpResponse) -> Self {
        Self {
            response,
            effects: Vec::new(),
        }
    }

    /// Adds an effect.
    pub fn with(mut self, effect: Effect) -> Self {
        self.effects.push(effect);
        self
    }

    /// Adds effects.
    pub fn with_all(mut self, effects: impl IntoIterator<Item = Effect>) -> Self {
        self.effects.extend(effects);
        self
    }

    /// The session stream to hold this response open for, if any.
    pub fn held_open(&self) -> Option<&str> {
        self.effects.iter().find_map(|e| match e {
            Effect::HoldOpen(s) => Some(s.as_str()),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_hears_only_the_lists_and_its_own_tasks_it_asked_for() {
        let mut filter = Map::new();
        filter.insert("toolsListChanged".into(), json!(true));
        filter.insert("promptsListChanged".into(), json!(false));
        let l = Listen {
            subscription_id: json!(9),
            filter,
            task_ids: vec!["t1".into()],
            principal: "ann".into(),
        };
        let task = |id: &str, who: &str| TaskChange {
            task_id: id.into(),
            principal: who.into(),
            task: json!({"taskId": id, "status": "working"}),
            summary: None,
        };
        let frames = l.frames_for(&Changes {
            lists: vec![ListKind::Tools, ListKind::Prompts, ListKind::Resources],
            tasks: vec![task("t1", "bob"), task("t2", "ann")],
            index: Vec::new(),
        });
        assert_eq!(frames.len(), 1);
        let frame: Value = serde_json::from_str(&frames[0].data).expect("json");
        assert_eq!(frame["method"], "notifications/tools/list_changed");
        assert_eq!(frame["params"]["_meta"][META_SUBSCRIPTION_ID], 9);
        let frames = l.frames_for(&Changes {
            lists: Vec::new(),
            tasks: vec![task("t1", "ann")],
            index: Vec::new(),
        });
        let frame: Value = serde_json::from_str(&frames[0].data).expect("json");
        assert_eq!(frame["method"], "notifications/tasks");
        assert_eq!(frame["params"]["taskId"], "t1");
        assert_eq!(frame["params"]["_meta"][META_SUBSCRIPTION_ID], 9);
    }
}
