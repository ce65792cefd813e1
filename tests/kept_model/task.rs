//! A task's client (the tasks extension): `tools/call` with the extension
//! declared, `tasks/get`, `tasks/update` with its answers, `tasks/cancel`.
//! Its object's alarm runs its slices.

use durable_mcp::admin::summary::task_id;
use durable_mcp::testing::TestReply;
use serde_json::{json, Value};

use crate::tool::{self, TASK};
use crate::world::{accept, declined, note, Call, Client, Kind, Model, TaskClient, Truth};

impl Model {
    pub(crate) fn start_task(&mut self, arg: u64) {
        let params = json!({"name": TASK, "arguments": {"call": arg}});
        let r = self.call("tools/call", params, true);
        if !self.code.serves() || self.paused.contains(TASK) {
            if r.json.get("error").is_none() {
                self.fail(format!("a task of a paused or gone tool: {}", r.text));
            }
            return;
        }
        let res = &r.json["result"];
        let Some(id) = res["taskId"]
            .as_str()
            .filter(|_| res["resultType"] == "task")
        else {
            self.fail(format!("a task call did not become a task: {}", r.text));
        };
        if res["status"] != "input_required" {
            self.fail(format!("a new task is not asking: {}", r.text));
        }
        let client = TaskClient {
            task_id: id.to_string(),
            sent: Vec::new(),
        };
        let patched = self.code == tool::Code::V3;
        let call = Call::new(Kind::Task, arg, task_id(id), patched, Client::Task(client));
        self.calls.push(call);
    }

    fn task_request(&mut self, i: usize, method: &str, extra: Value) -> TestReply {
        let mut params = json!({"taskId": self.calls[i].task().task_id});
        if let (Some(p), Value::Object(e)) = (params.as_object_mut(), extra) {
            p.extend(e);
        }
        self.call(method, params, true)
    }

    /// Answers its question with `tasks/update` (its slice runs at the
    /// next alarm); a task that is not asking is polled.
    pub(crate) fn answer_task(&mut self, i: usize) {
        let Truth::Waiting(key) = self.calls[i].truth else {
            return self.poll_task(i);
        };
        let answers = json!({ key: accept() });
        self.calls[i].task_mut().sent.push(answers.clone());
        let r = self.task_request(i, "tasks/update", json!({"inputResponses": answers}));
        if r.json["result"]["resultType"] != "complete" {
            self.fail(format!(
                "call {}: tasks/update: {}",
                self.calls[i].arg, r.text
            ));
        }
        let c = &mut self.calls[i];
        c.answered.push(key);
        c.truth = Truth::Ready;
        self.poll_task(i);
    }

    /// `tasks/get`: what the truth says, and never a task come back.
    pub(crate) fn poll_task(&mut self, i: usize) {
        let r = self.task_request(i, "tasks/get", json!({}));
        let c = &self.calls[i];
        let t = &r.json["result"];
        let ok = match c.truth {
            _ if c.purged => r.json["error"]["code"] == -32602,
            Truth::Waiting(k) => {
                t["status"] == "input_required"
                    && t["inputRequests"].as_object().is_some_and(|m| m.len() == 1)
                    && t["inputRequests"].get(k).is_some()
            }
            Truth::Ready => t["status"] == "working",
            Truth::Completed => {
                t["status"] == "completed"
                    && c.result.as_ref().is_none_or(|res| *res == t["result"])
            }
            Truth::Cancelled => t["status"] == "cancelled",
            Truth::Gone => unreachable!("a task is never gone"),
        };
        if !ok {
            self.fail(format!(
                "call {} ({:?}): tasks/get {}",
                c.arg, c.truth, r.text
            ));
        }
        if c.truth == Truth::Completed && c.result.is_none() {
            self.calls[i].result = Some(t["result"].clone());
        }
    }

    /// Sends an earlier `tasks/update` again (exactly, or with other
    /// answers): acknowledged, and nothing moves.
    pub(crate) fn retry_task(&mut self, i: usize) {
        let sent = self.calls[i].task().sent.clone();
        if sent.is_empty() || self.rng.one_in(3) {
            return self.poll_task(i);
        }
        let mut answers = sent[self.rng.below(sent.len() as u64) as usize].clone();
        if self.rng.one_in(3) {
            answers = declined(&answers);
        }
        let r = self.task_request(i, "tasks/update", json!({"inputResponses": answers}));
        let c = &self.calls[i];
        let ok = if c.purged {
            r.json["error"]["code"] == -32602
        } else {
            r.json["result"]["resultType"] == "complete"
        };
        if !ok {
            self.fail(format!(
                "call {} ({:?}): update again: {}",
                c.arg, c.truth, r.text
            ));
        }
        self.poll_task(i);
    }

    /// The client cancels the task (`tasks/cancel`).
    pub(crate) fn cancel_task(&mut self, i: usize) {
        let r = self.task_request(i, "tasks/cancel", json!({}));
        let c = &self.calls[i];
        if c.purged {
            if r.json["error"]["code"] != -32602 {
                self.fail(format!("cancel of a purged task: {}", r.text));
            }
            return;
        }
        if r.json.get("error").is_some() {
            self.fail(format!("call {}: tasks/cancel: {}", c.arg, r.text));
        }
        if c.truth.live() {
            note(Some(Kind::Task), "cancelled by its client");
            self.calls[i].truth = Truth::Cancelled;
        }
        self.poll_task(i);
    }

    /// Every task whose slice is due runs it when the alarms fire: parked
    /// when blocked, else on (its effects, its next question or its end).
    /// `crashed`: the task whose slice died (it stays as it was).
    pub(crate) fn slices_ran(&mut self, crashed: Option<usize>) {
        for i in 0..self.calls.len() {
            let c = &self.calls[i];
            if c.kind != Kind::Task || c.purged || c.truth != Truth::Ready || crashed == Some(i) {
                continue;
            }
            if self.blocked(i) {
                note(Some(Kind::Task), "parked");
                self.calls[i].parked = true;
            } else {
                self.ran_round(i);
            }
        }
    }
}
