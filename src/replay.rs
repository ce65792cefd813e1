//! Checking a deploy before making it: the journals of paused calls,
//! replayed against the new code with no effect run, each with a verdict —
//! it continues, it asks a question again, or it diverges (and would be
//! kept for a rollback, `-32050`).
//!
//! The calls come from wherever the server keeps them: a test's
//! [`TestServer::paused_calls`](crate::testing::TestServer::paused_calls),
//! or a file of them written as JSON (what [`PausedCall`] serializes to).
//! Stateless calls keep nothing on the server (their journal travels in
//! the client's `requestState`) and are not among them.
//!
//! ```
//! use durable_mcp::replay::{check, Verdict};
//! use durable_mcp::testing::TestServer;
//! use durable_mcp::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
//! use serde_json::{json, Value};
//!
//! fn registry(message: &'static str, ticket: &'static str) -> Registry {
//!     let mut r = Registry::new();
//!     let deploy = async move |cx: &mut Cx, _: Value| -> Result<CallToolResult, ToolError> {
//!         cx.once(ticket, || async { Ok::<_, ToolError>("T-1".to_string()) }).await?;
//!         cx.elicit_with("target", form(message, json!({"type": "object"}))).await?;
//!         Ok(text("deployed"))
//!     };
//!     r.tool(Tool::new("deploy", deploy).durable());
//!     r
//! }
//!
//! let mut s = TestServer::new(registry("Where to?", "ticket"));
//! let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
//!     "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
//! s.call("tools/call", json!({"name": "deploy", "arguments": {}, "_meta": meta}));
//! let paused = s.paused_calls();
//!
//! // A reworded question continues; a renamed effect would run twice.
//! s.server.registry = registry("Which environment?", "ticket");
//! assert!(matches!(check(&s.server, &paused)[0].verdict, Verdict::Continues { .. }));
//! s.server.registry = registry("Where to?", "ticket-2");
//! assert!(matches!(check(&s.server, &paused)[0].verdict, Verdict::Diverges { .. }));
//! ```

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::auth::Caller;
use crate::elicitation::Home;
use crate::engine::{ClientCaps, DryRun, Journal, Outcome, Run};
use crate::error::ErrorKind;
use crate::kept::versions::{self, Standing, ToolCode, ToolVersions, VersionCalls};
use crate::kept::Status;
use crate::server::{round, run_target, Kept, Server, Site, Target};

/// A paused call as the server keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PausedCall {
    /// Where it is kept: `durable:<call id>`, `session:<session id>/<call
    /// id>`, `task:<task id>` (`scripts/export-paused.mjs` writes a digest
    /// in place of a session's or a task's id: those ids are bearer
    /// capabilities). A label: the check reads nothing from it.
    pub id: String,
    /// The tool it runs.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// Its journal.
    pub journal: Journal,
    /// Its answers, pending questions, effects' outputs and the digests of
    /// the answers each effect read, sealed (what the admin API's export
    /// writes in place of `journal.answers`, `pending`, `once` and
    /// `once_inputs`: a user's answers, and whatever is made from them,
    /// are not an operator's to read):
    /// ChaCha20-Poly1305 under the Worker's `STATE_KEYS`, opened by
    /// [`check`] with the server's keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_answers: Option<String>,
}

impl PausedCall {
    /// A paused call whose journal holds its answers.
    pub fn new(id: String, tool: String, arguments: Value, journal: Journal) -> Self {
        Self {
            id,
            tool,
            arguments,
            journal,
            sealed_answers: None,
        }
    }

    /// Seals what the journal holds of the user's data under `ring` (see
    /// [`sealed_answers`](Self::sealed_answers)) and drops what an export
    /// need not carry (the trail). The nonce is a MAC of the call and what
    /// it seals: the same data seal the same way, other data never share
    /// a nonce. `None` without a key.
    pub fn sealed(mut self, ring: &crate::token::KeyRing) -> Option<Self> {
        let j = &mut self.journal;
        j.trail = None;
        if j.answers.is_empty()
            && j.pending.is_empty()
            && j.once.is_empty()
            && j.once_inputs.is_empty()
        {
            return Some(self);
        }
        // Besides the answers: the questions pending (what the code asks
        // next is made of the answers: a message naming what the user
        // picked), the effects' outputs (what a webhook answered, made of
        // them too), and the digests of the answers each effect read (a
        // yes or a no is found again by hashing both).
        let mut map = serde_json::Map::new();
        map.insert("answers".into(), serde_json::to_value(&j.answers).ok()?);
        map.insert("pending".into(), serde_json::to_value(&j.pending).ok()?);
        map.insert("once".into(), serde_json::to_value(&j.once).ok()?);
        map.insert(
            "once_inputs".into(),
            serde_json::to_value(&j.once_inputs).ok()?,
        );
        let text = serde_json::to_string(&map).ok()?;
        let kid = ring.current()?;
        let tag = ring.tag(kid, EXPORT_NONCE, &[self.id.as_bytes(), text.as_bytes()])?;
        let mut nonce = [0u8; 16];
        nonce.copy_from_slice(&tag[..16]);
        self.sealed_answers = Some(crate::elicitation::seal(ring, &map, &nonce)?);
        let j = &mut self.journal;
        j.answers.clear();
        j.pending.clear();
        j.once.clear();
        j.once_inputs.clear();
        Some(self)
    }

    /// The journal with its sealed answers opened under `ring`; `Err` when
    /// they do not open (another deployment's keys).
    fn opened(&self, ring: &crate::token::KeyRing) -> Result<Journal, String> {
        let Some(sealed) = &self.sealed_answers else {
            return Ok(self.journal.clone());
        };
        let mut map = crate::elicitation::unseal(ring, sealed).ok_or_else(|| {
            "its answers are sealed under keys this check does not have: run it with the \
             Worker's STATE_KEYS"
                .to_string()
        })?;
        let mut journal = self.journal.clone();
        let unsealed = |v: Option<Value>| v.unwrap_or_else(|| Value::Object(Default::default()));
        journal.answers = crate::json::from_value(unsealed(map.remove("answers")))
            .map_err(|e| format!("its sealed answers do not read: {e}"))?;
        journal.pending = crate::json::from_value(unsealed(map.remove("pending")))
            .map_err(|e| format!("its sealed questions do not read: {e}"))?;
        // An export made before effects were sealed carries them plain.
        if let Some(once) = map.remove("once") {
            journal.once = crate::json::from_value(once)
                .map_err(|e| format!("its sealed effects do not read: {e}"))?;
        }
        if let Some(inputs) = map.remove("once_inputs") {
            journal.once_inputs = crate::json::from_value(inputs)
                .map_err(|e| format!("its sealed effects' inputs do not read: {e}"))?;
        }
        Ok(journal)
    }
}

/// The MAC domain of an export's nonces.
const EXPORT_NONCE: &[u8] = b"durable-mcp export nonce";

/// What the new code does with a paused call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// It goes on: `next` says how far the replay got (it completes, it
    /// asks something, it would run an effect next).
    Continues {
        /// What the new code does next.
        next: String,
    },
    /// Recorded answers that no longer fit the changed questions: the
    /// user is asked these again.
    AsksAgain {
        /// The questions' keys.
        keys: Vec<String>,
    },
    /// The new code cannot replay it: the call would be kept as it is
    /// (`-32050`) until a rollback or a fix.
    Diverges {
        /// The effect or question where it diverges.
        key: String,
        /// Why.
        why: String,
    },
    /// The replay ended in an error that is not a code change.
    Fails {
        /// The error's message.
        message: String,
    },
}

/// One paused call's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The call ([`PausedCall::id`]).
    pub id: String,
    /// Its tool.
    pub tool: String,
    /// The tool's version its last round ran on (`""`: none recorded).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// What the new code does with it.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Replays each of `calls` against `server`'s tools, running no effect.
pub fn check(server: &Server, calls: &[PausedCall]) -> Vec<Report> {
    calls
        .iter()
        .map(|call| Report {
            id: call.id.clone(),
            tool: call.tool.clone(),
            version: call.journal.tool_version().unwrap_or_default().to_string(),
            verdict: verdict(server, call),
        })
        .collect()
}

/// Per tool the new code serves and per tool `calls` are on: each version
/// holding paused calls (counted as `waiting`), whether the new code runs
/// it (current, kept, upgrades) or not (missing: its pinned calls park
/// with `-32050` naming `data.pinnedTo`), and each version the new code
/// keeps (a kept one holding no call can be removed).
pub fn versions(server: &Server, calls: &[PausedCall]) -> Vec<ToolVersions> {
    let code = ToolCode::all(&server.registry);
    let on = calls.iter().map(|c| {
        let version = c.journal.tool_version().unwrap_or_default();
        (c.tool.as_str(), version, Status::Waiting)
    });
    versions::tally(&code, on)
}

/// [`versions`] as the deploy check prints it: one line per tool and
/// version that holds a paused call or that the new code keeps.
pub fn versions_table(tools: &[ToolVersions]) -> String {
    let mut rows = vec![["tool", "version", "new code", "calls", "so"].map(String::from)];
    for t in tools {
        for v in t
            .versions
            .iter()
            .filter(|v| v.calls() > 0 || v.standing == Standing::Kept)
        {
            rows.push([
                t.tool.clone(),
                if v.version.is_empty() {
                    "-".into()
                } else {
                    v.version.clone()
                },
                v.standing.as_str().to_string(),
                v.calls().to_string(),
                drain_note(t, v),
            ]);
        }
    }
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2, w3) = (width(0), width(1), width(2), width(3));
    let mut out = String::new();
    for [tool, version, standing, calls, so] in &rows {
        let line = format!("{tool:w0$}  {version:w1$}  {standing:w2$}  {calls:>w3$}  {so}");
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// What happens to one version's paused calls under the new code.
fn drain_note(t: &ToolVersions, v: &VersionCalls) -> String {
    match v.standing {
        _ if v.removable() => "no paused call: its kept body can be removed".into(),
        Standing::Current => "run on the current body".into(),
        Standing::Kept => "run on its kept body (Tool::keeps)".into(),
        Standing::Upgrades => "run on the current body (the tool upgrades its calls)".into(),
        Standing::Missing if !t.served => "DIVERGE: the tool is not served".into(),
        Standing::Missing => format!(
            "PARK: -32050 pinnedTo {:?} (this code neither runs nor keeps it)",
            v.version
        ),
    }
}

/// How many times a replay's future is polled before the check gives up
/// on it: a body that awaits something outside `cx.once` (a fetch) never
/// completes here.
const MAX_POLLS: usize = 10_000;

fn verdict(server: &Server, call: &PausedCall) -> Verdict {
    let Some(tool) = server.registry.find_tool(&call.tool) else {
        return Verdict::Diverges {
            key: String::new(),
            why: format!("the tool {:?} is not served by the new code", call.tool),
        };
    };
    let target = Target::Tool(tool);
    let mut journal = match call.opened(&server.config.keys) {
        Ok(j) => j,
        Err(message) => return Verdict::Fails { message },
    };
    let mut first_asks: Option<Vec<String>> = None;
    for _ in 0..MAX_SIMULATED_ROUNDS {
        let (run, seen) = match dry_run(server, &target, call, journal.clone()) {
            Some(r) => r,
            None => {
                return Verdict::Fails {
                    message: "the body awaited something outside cx.once that a check cannot run"
                        .into(),
                }
            }
        };
        // A new question the old code never asked (a renamed one, say): the
        // user answers it as they answered the recorded question it may
        // stand for, one that fits it and this replay no longer reads, and
        // the check goes on to see whether a recorded effect then diverges.
        if let Outcome::InputRequired {
            requests,
            journal: next,
        } = &run.outcome
        {
            if seen.asked_again.is_empty() && seen.effect.is_none() {
                let stand_ins = stand_ins(&call.journal, &seen.read, requests);
                if !stand_ins.is_empty() && stand_ins.len() == requests.len() {
                    first_asks.get_or_insert_with(|| requests.keys().cloned().collect());
                    journal = next.clone();
                    journal.accept_answers(stand_ins);
                    continue;
                }
            }
        }
        return read_verdict(run, &seen, first_asks);
    }
    Verdict::Continues {
        next: format!("asks {:?}", first_asks.unwrap_or_default()),
    }
}

/// How many new questions a check answers for the user before it stops.
const MAX_SIMULATED_ROUNDS: usize = 8;

/// For each new question, a recorded answer this replay did not read that
/// fits it (as the user answered before), if there is one.
fn stand_ins(
    recorded: &Journal,
    read: &[String],
    requests: &crate::vec_map::VecMap<String, crate::engine::InputRequest>,
) -> Vec<(String, Result<Value, Value>)> {
    requests
        .iter()
        .filter(|(key, r)| !r.is_internal() && !recorded.answers.contains_key(*key))
        .filter_map(|(key, r)| {
            recorded
                .answers
                .iter()
                .filter(|(k, _)| !read.contains(k) && !requests.contains_key(*k))
                .find_map(|(_, a)| {
                    a.outcome
                        .as_ref()
                        .ok()
                        .filter(|v| crate::engine::answer_fits(r, v).is_ok())
                        .map(|v| (key.clone(), Ok(v.clone())))
                })
        })
        .collect()
}

/// One replay with no effect run: the run and what it met (`None` when the
/// body awaited something a check cannot run).
fn dry_run(
    server: &Server,
    target: &Target<'_>,
    call: &PausedCall,
    journal: Journal,
) -> Option<(Run<Value>, DryRun)> {
    let observer = Rc::new(RefCell::new(DryRun::default()));
    let mut site = Site::new(
        call.id.clone(),
        ClientCaps::all(),
        Caller::default(),
        String::new(),
    );
    // Every paused call a check reads is one the server keeps (a durable
    // call, a session's, a task): a URL elicitation replays as it would
    // where it is kept. The link it would make is never shown.
    site.kept = Some(Kept {
        home: Home::Call(call.id.clone()),
        principal: String::new(),
        origin: String::new(),
    });
    let cx = round::cx(server, journal, site).with_dry_run(observer.clone());
    let run = run_target(server, target, cx, call.arguments.clone());
    let mut run = std::pin::pin!(run);
    let mut context = Context::from_waker(Waker::noop());
    for _ in 0..MAX_POLLS {
        if let Poll::Ready(r) = run.as_mut().poll(&mut context) {
            let seen = std::mem::take(&mut *observer.borrow_mut());
            return Some((r, seen));
        }
    }
    None
}

/// The verdict of the last replay; `first_asks`: the new questions an
/// earlier replay asked (and the check answered for the user).
fn read_verdict(run: Run<Value>, seen: &DryRun, first_asks: Option<Vec<String>>) -> Verdict {
    let asked_first = |why: String| match &first_asks {
        Some(asks) => format!("once the user answers {asks:?}: {why}"),
        None => why,
    };
    match run.outcome {
        Outcome::Error(e) if e.kind == ErrorKind::CodeChanged => {
            let data = e.data.unwrap_or(Value::Null);
            Verdict::Diverges {
                key: data["key"].as_str().unwrap_or_default().to_string(),
                why: asked_first(data["why"].as_str().unwrap_or(&e.message).to_string()),
            }
        }
        // What the user is asked next is the verdict; the check's own
        // answers to it only looked for a divergence further on.
        _ if first_asks.is_some() => Verdict::Continues {
            next: format!("asks {:?}", first_asks.clone().unwrap_or_default()),
        },
        _ if !seen.asked_again.is_empty() => Verdict::AsksAgain {
            keys: seen.asked_again.clone(),
        },
        _ if seen.effect.is_some() => Verdict::Continues {
            next: format!(
                "runs the effect {:?}",
                seen.effect.as_deref().unwrap_or_default()
            ),
        },
        Outcome::InputRequired { requests, .. } => Verdict::Continues {
            next: format!(
                "asks {:?}",
                requests.keys().cloned().collect::<Vec<String>>()
            ),
        },
        Outcome::Complete(_) => Verdict::Continues {
            next: "completes".into(),
        },
        Outcome::ToolFailed(m) => Verdict::Continues {
            next: format!("ends with the tool's error: {m}"),
        },
        Outcome::Error(e) => Verdict::Fails { message: e.message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestServer;
    use crate::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
    use serde_json::json;

    /// A deploy-like tool: `asks` in order, then a `ticket` effect, then
    /// one more question.
    fn registry(asks: &'static [&'static str]) -> Registry {
        let deploy = async move |cx: &mut Cx, _: Value| -> Result<CallToolResult, ToolError> {
            for key in asks {
                let f = form(
                    "?",
                    json!({"type": "object", "properties": {"v": {"type": "string"}}}),
                );
                cx.elicit_with(key, f).await?;
            }
            cx.once("ticket", || async { Ok::<_, ToolError>("T-1".to_string()) })
                .await?;
            cx.elicit_with("later", form("ok?", json!({"type": "object"})))
                .await?;
            Ok(text("deployed"))
        };
        let mut r = Registry::new();
        r.tool(Tool::new("deploy", deploy).durable());
        r
    }

    /// Pauses one call of `registry(["target"])` after its effect ran.
    fn paused() -> (TestServer, Vec<PausedCall>) {
        let mut s = TestServer::new(registry(&["target"]));
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
        let first = s.call(
            "tools/call",
            json!({"name": "deploy", "arguments": {}, "_meta": meta}),
        );
        let state = first.json["result"]["requestState"].clone();
        let answer = json!({"action": "accept", "content": {"v": "staging"}});
        let second = s.call(
            "tools/call",
            json!({"name": "deploy", "arguments": {}, "_meta": meta, "requestState": state,
                   "inputResponses": {"target": answer}}),
        );
        assert!(
            second.json["result"]["inputRequests"]["later"].is_object(),
            "{}",
            second.json
        );
        let calls = s.paused_calls();
        assert_eq!(calls.len(), 1);
        (s, calls)
    }

    #[test]
    fn a_renamed_question_an_effect_ran_after_is_reported_before_the_deploy() {
        let (mut s, calls) = paused();
        s.server.registry = registry(&["destination"]);
        let Verdict::Diverges { key, why } = &check(&s.server, &calls)[0].verdict else {
            panic!("{:?}", check(&s.server, &calls))
        };
        assert_eq!(key, "ticket");
        assert!(
            why.contains("once the user answers [\"destination\"]"),
            "{why}"
        );
    }

    #[test]
    fn an_inserted_question_continues() {
        let (mut s, calls) = paused();
        s.server.registry = registry(&["confirm", "target"]);
        assert_eq!(
            check(&s.server, &calls)[0].verdict,
            Verdict::Continues {
                next: "asks [\"confirm\"]".into()
            }
        );
        // And the same code, as it was.
        s.server.registry = registry(&["target"]);
        assert!(matches!(
            check(&s.server, &calls)[0].verdict,
            Verdict::Continues { .. }
        ));
    }
}
