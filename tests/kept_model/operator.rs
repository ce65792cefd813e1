//! What operators and the platform do: cancel, purge, pause a tool or a
//! call, deploy other code, evict objects, fire alarms (time passing, a
//! spurious or repeated alarm, a slice that crashes), and the operator's
//! listing against the truth.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::tool::{self, Code, DURABLE, TASK};
use crate::world::{note, Kind, Model, Truth};

/// How far a tick moves the clock.
pub(crate) const TICK_MS: u64 = 30_000;

fn done(r: &Value, id: &str) -> bool {
    r["done"].as_array().is_some_and(|d| d.contains(&json!(id)))
}

impl Model {
    /// An operator cancels call `i`: done for a call listed and not
    /// finished (a claimed one too), refused otherwise.
    pub(crate) fn operator_cancel(&mut self, i: usize) {
        let id = self.calls[i].admin_id.clone();
        let pushes = self.s.pushes.len();
        let r = self.admin("POST", "/admin/api/calls/cancel", json!({"ids": [id]}));
        let listed = self.calls[i].listed();
        let expected = listed.is_some_and(|s| !matches!(s, "completed" | "cancelled"));
        if done(&r.json, &id) != expected {
            self.fail(format!("cancel of {id} ({listed:?}): {}", r.text));
        }
        if expected {
            note(Some(self.calls[i].kind), "cancelled by an operator");
            let c = &mut self.calls[i];
            c.truth = Truth::Cancelled;
            c.claimed_at = None;
            if c.kind == Kind::Session {
                self.heard_cancel(i, pushes);
            }
        }
    }

    /// An operator purges every finished call: a durable call's row
    /// becomes a tombstone and a task's object goes; a session's calls go
    /// with the session, not by purge. A status that is not final is
    /// refused, nothing purged.
    pub(crate) fn purge(&mut self) {
        let r = self.admin("POST", "/admin/api/purge", json!({}));
        for i in 0..self.calls.len() {
            let c = &self.calls[i];
            let finished = matches!(c.listed(), Some("completed" | "cancelled"));
            let expected = finished && c.kind != Kind::Session;
            if done(&r.json, &c.admin_id) != expected {
                let id = c.admin_id.clone();
                self.fail(format!("purge of {id} (expected {expected}): {}", r.text));
            }
            if expected {
                note(Some(self.calls[i].kind), "purged");
            }
            self.calls[i].purged |= expected;
        }
        let r = self.admin("POST", "/admin/api/purge", json!({"status": ["waiting"]}));
        if r.status != 400 {
            self.fail(format!("purge of waiting calls: {}", r.text));
        }
    }

    /// An operator pauses or resumes a tool; refused for a tool the code
    /// does not serve.
    pub(crate) fn pause(&mut self, tool: &'static str, pause: bool) {
        let what = if pause { "pause" } else { "resume" };
        let r = self.admin(
            "POST",
            &format!("/admin/api/tools/{tool}/{what}"),
            Value::Null,
        );
        if !self.code.serves() {
            if r.status == 200 {
                self.fail(format!("{what} of a tool not served: {}", r.text));
            }
            return;
        }
        if r.status != 200 {
            self.fail(format!("{what} {tool}: {}", r.text));
        }
        if pause {
            self.paused.insert(tool);
        } else {
            self.paused.remove(tool);
        }
    }

    /// An operator pauses (`hold`) or resumes call `i` alone: the machine
    /// takes a waiting or parked call, never a working or finished one.
    pub(crate) fn hold(&mut self, i: usize, hold: bool) {
        let id = self.calls[i].admin_id.clone();
        let what = if hold { "pause" } else { "resume" };
        let r = self.admin(
            "POST",
            &format!("/admin/api/calls/{what}"),
            json!({"ids": [id]}),
        );
        let c = &self.calls[i];
        let listed = c.listed();
        let expected = matches!(listed, Some("waiting" | "parked")) && (hold || c.held);
        if done(&r.json, &id) != expected {
            self.fail(format!(
                "{what} of {id} ({listed:?}, held {}): {}",
                c.held, r.text
            ));
        }
        if expected {
            note(
                Some(self.calls[i].kind),
                if hold { "held" } else { "released" },
            );
            let c = &mut self.calls[i];
            c.held = hold;
        }
    }

    /// A deploy: the registry changes on the same storage and keys.
    pub(crate) fn deploy(&mut self, code: Code) {
        note(None, &format!("deploy {code:?}"));
        self.code = code;
        self.s.server.registry = code.registry();
    }

    /// The objects are evicted: their warm copies go, and the next round
    /// of each durable call reads its row and log back.
    pub(crate) fn evict(&mut self) {
        for o in self.s.objects.values() {
            o.call.evict();
        }
    }

    /// Time passes and the alarms that are due fire. `spurious`: one
    /// object's alarm fires again (alarms are at-least-once). `crash`: the
    /// slice of this task (one that runs an effect) dies in it; the
    /// platform retries that alarm later.
    pub(crate) fn tick(&mut self, spurious: bool, crash: Option<usize>) {
        self.s.now_ms += TICK_MS;
        if spurious {
            self.deliver_again();
        }
        let target = crash.filter(|&i| !self.blocked(i) && self.runs_effect(i, None));
        let crashed = match target {
            Some(i) => self.crash_or(i, true, |m| m.s.fire_alarms()).is_none(),
            None => {
                if tool::crashing(|| self.s.fire_alarms()).is_err() {
                    self.fail("an alarm crashed unasked".into());
                }
                false
            }
        };
        if let (true, Some(i)) = (crashed, target) {
            // The platform retries the failed alarm later; the others
            // fire now.
            let name = format!("task:{}", self.calls[i].task().task_id);
            let retry = self.now() + 2_000;
            if let Some(o) = self.s.objects.get_mut(&name) {
                o.alarm_at = Some(retry);
            }
            self.s.fire_alarms();
        }
        self.slices_ran(target);
    }

    /// An alarm delivered again (at-least-once): only to an object that
    /// arms alarms (a duplicate of its last, now, before the one it armed
    /// next). Never the hub's: it arms none.
    fn deliver_again(&mut self) {
        let armed: Vec<String> = self
            .s
            .objects
            .iter()
            .filter(|(_, o)| o.alarm_at.is_some())
            .map(|(n, _)| n.clone())
            .collect();
        let now = self.now();
        let n = self.rng.below(armed.len() as u64) as usize;
        if let Some(o) = armed.get(n).and_then(|n| self.s.objects.get_mut(n)) {
            note(None, "an alarm delivered again");
            o.alarm_at = o.alarm_at.map(|at| at.min(now));
        }
    }

    /// The operator's listing against the truth: every call kept and not
    /// purged, with its status and tool; nothing else.
    pub(crate) fn check_listing(&mut self) {
        let l = self
            .admin("GET", "/admin/api/calls?limit=500", Value::Null)
            .json;
        let listed: BTreeMap<String, (String, String)> = l["calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                (s("id"), (s("status"), s("tool")))
            })
            .collect();
        let expected: BTreeMap<String, (String, String)> = self
            .calls
            .iter()
            .filter_map(|c| {
                let status = c.listed()?;
                let tool = c.kind.tool();
                Some((c.admin_id.clone(), (status.to_string(), tool.to_string())))
            })
            .collect();
        if listed != expected {
            self.fail(format!(
                "the listing {listed:?} is not the truth {expected:?}"
            ));
        }
    }

    /// A tool to pause or resume.
    pub(crate) fn some_tool(&mut self) -> &'static str {
        if self.rng.one_in(2) {
            DURABLE
        } else {
            TASK
        }
    }
}
