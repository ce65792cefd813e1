//! Limits, where a request comes in: which requests ask their principal's
//! meter before they run ([`metered`]), the meter's requests and answers,
//! the notes rounds leave for it ([`meter_notes`]), and a meter's object
//! serving them ([`serve`]). What the limits are and how a meter decides
//! is [`crate::limits`].

use serde_json::Value;

use crate::effects::Reply;
use crate::error::McpError;
use crate::http::{HttpRequest, HttpResponse};
use crate::limits::{meter, Admit, Ask, MeterStore, Note, Verdict};
use crate::protocol::params::State;
use crate::protocol::{ClientRequest, Method, Request};
use crate::server::{error_response, Server};

/// On requests to a principal's meter.
pub(super) const METER_HEADER: &str = "x-durable-mcp-meter";
pub(super) use crate::limits::{LEASE_HEADER, LIMITED_HEADER};

/// A request its principal's meter is asked about before it runs.
#[derive(Debug, Clone)]
pub(super) struct Metered {
    /// The tool it calls.
    pub(super) tool: String,
    /// A new call (else a paused call's next round).
    pub(super) new: bool,
    /// It starts a task: over a limit it waits rather than fails.
    pub(super) task: bool,
    /// Its JSON-RPC id, for a refusal.
    pub(super) id: Value,
}

/// Whether `msg`, routed to `object` (`None`: served here), is metered:
/// only while some limit is set, and only a call of a tool this server
/// serves. A new call of every wire, and a paused call's next round where
/// the Worker sees it (its state token, a saga's resume); a session's
/// answers and a task's later slices continue in their objects unasked.
pub(super) fn metered(
    server: &Server,
    msg: &Request,
    tool: Option<usize>,
    object: Option<&str>,
    now_ms: u64,
) -> Option<Metered> {
    if !server.limits.any() {
        return None;
    }
    let (name, new) = match (msg.kind?, &msg.params) {
        (Method::ToolsCall, ClientRequest::Call(p)) => {
            let state = matches!(p.request_state, Some(State::Token(_)))
                || msg.raw.get("requestState").is_some();
            (p.name.clone(), !state)
        }
        (Method::ToolsCallSaga, ClientRequest::Call(p)) => (p.name.clone(), true),
        (Method::ToolsResumeSaga, ClientRequest::ResumeSaga(p)) => {
            let claims =
                crate::token::open_unbound(&server.config.keys, &p.saga_token, now_ms).ok()?;
            (claims.target, false)
        }
        _ => return None,
    };
    if tool.is_none() && server.registry.find_tool(&name).is_none() {
        return None;
    }
    let task = new
        && msg.kind == Some(Method::ToolsCall)
        && object.is_some_and(|o| o.starts_with("task:"));
    Some(Metered {
        tool: name,
        new,
        task,
        id: msg.id.clone(),
    })
}

/// What a metered request does before it runs.
pub(super) enum Check {
    /// No limit applies: run it.
    Free,
    /// Admitted from what this isolate holds ahead: run it.
    Spare,
    /// Refused from what this isolate holds (a window still full); its
    /// window's first refusal was logged, this one is counted towards the
    /// line written when the window is over.
    Refused {
        refusal: crate::limits::Refusal,
        logged: bool,
    },
    /// Ask the meter (its object, the request) for the round's `lease`;
    /// `spare`: the key its answer is kept under in this isolate.
    Ask {
        meter: String,
        request: HttpRequest,
        lease: String,
        spare: Option<String>,
    },
}

/// What `principal`'s call `m` does first: for a new call limited only
/// by windows, what this isolate holds answers without a request, and a
/// request asks for a batch. `lease`: the round's lease, made only when
/// the meter is asked.
pub(super) fn check(
    server: &Server,
    principal: &str,
    m: &Metered,
    lease: impl FnOnce() -> String,
    now_ms: u64,
) -> Check {
    let limits = server.limits.applied(principal, &m.tool);
    if !limits.all.any() && !limits.tool.any() {
        return Check::Free;
    }
    let spare = (m.new && !m.task && crate::limits::windows_only(&limits))
        .then(|| format!("{principal}\n{}", m.tool));
    if let Some(key) = &spare {
        let took = server.spare.take(key, now_ms);
        // Each under the principal of its own key (`principal\ntool`): a
        // window another principal's calls filled may be handed over here.
        for (k, r, n) in server.spare.quieted() {
            let whose = k.split_once('\n').map_or(k.as_str(), |(p, _)| p);
            server.log(refusal_line(server, whose, &r, n));
        }
        match took {
            Some(Ok(())) => return Check::Spare,
            Some(Err(r)) => {
                return Check::Refused {
                    refusal: r,
                    logged: true,
                }
            }
            None => {}
        }
    }
    let want = if spare.is_some() {
        crate::limits::batch(&limits)
    } else {
        1
    };
    let lease = lease();
    let ask = Ask::Admit(Admit {
        tool: m.tool.clone(),
        lease: lease.clone(),
        new: m.new,
        limits,
        lease_ms: server.config.claim_timeout_ms,
        want,
    });
    Check::Ask {
        meter: crate::limits::meter_name(principal),
        request: meter_request(&ask),
        lease,
        spare,
    }
}

/// A request to `principal`'s meter.
pub(crate) fn ask_request(principal: &str, ask: &Ask) -> (String, HttpRequest) {
    (crate::limits::meter_name(principal), meter_request(ask))
}

fn meter_request(ask: &Ask) -> HttpRequest {
    HttpRequest {
        method: "POST".into(),
        path: "/mcp".into(),
        headers: vec![(METER_HEADER.to_string(), "1".to_string())],
        body: serde_json::to_vec(ask).unwrap_or_default(),
    }
}

/// The meter's answer to an admit. A meter that could not answer lets
/// the round run: a limit is not worth an outage.
pub(crate) fn verdict(resp: &HttpResponse) -> Verdict {
    match (resp.status, &resp.body) {
        // Read as text, as every store reads: one reader linked.
        (200, crate::http::Body::Bytes(b)) => std::str::from_utf8(b)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .and_then(|v| crate::limits::wire::verdict(&v).ok())
            .unwrap_or_else(Verdict::admitted),
        _ => Verdict::admitted(),
    }
}

/// Releases the lease a round ran under (the [`LEASE_HEADER`]'s value:
/// the meter's object and the lease): queued for the host to send.
pub(super) fn release(server: &Server, value: &str) {
    if let Some((meter, lease)) = value.split_once(' ') {
        server.note(meter.to_string(), Note::Release(lease.to_string()));
    }
}

/// The log line refusals write: the limit and whose (the principal as a
/// digest, as a round's line names it), and how many requests it refused
/// (`refused`: 1 for a window's first in an isolate; for the rest of the
/// window, answered from the isolate, one line once it is over).
pub(super) fn refusal_line(
    server: &Server,
    principal: &str,
    r: &crate::limits::Refusal,
    refused: u32,
) -> String {
    serde_json::json!({
        "event": "limited",
        "service": server.config.name,
        "principal": crate::trace::principal_digest(principal),
        "tool": r.tool,
        "limit": r.limit,
        "scope": r.scope,
        "max": r.max,
        "retryAfter": r.retry_after,
        "refused": refused,
    })
    .to_string()
}

/// The requests carrying `notes` (each for a meter's object) to their
/// meters, one per meter.
pub fn meter_notes(notes: Vec<(String, Note)>) -> Vec<(String, HttpRequest)> {
    // A request's notes go to one meter or two: grouped by a look through.
    let mut by: Vec<(String, Vec<Note>)> = Vec::new();
    for (meter, note) in notes {
        match by.iter_mut().find(|(m, _)| *m == meter) {
            Some((_, n)) => n.push(note),
            None => by.push((meter, vec![note])),
        }
    }
    by.into_iter()
        .map(|(meter, notes)| (meter, meter_request(&Ask::Notes { notes })))
        .collect()
}

/// A request to a principal's meter, in its object.
pub(super) fn serve(store: &dyn MeterStore, req: &HttpRequest, now_ms: u64) -> Reply {
    let text = std::str::from_utf8(&req.body).unwrap_or("");
    let read = serde_json::from_str::<Value>(text).map_err(|e| e.to_string());
    let ask: Ask = match read.and_then(|v| crate::limits::wire::ask(&v)) {
        Ok(a) => a,
        Err(e) => {
            let e = McpError::invalid_request(format!("Invalid Request: not a meter request: {e}"));
            return Reply::new(error_response(&e, None));
        }
    };
    let answer = match &ask {
        Ask::Admit(a) => meter::admit(store, now_ms, a)
            .and_then(|v| serde_json::to_value(v).map_err(|e| McpError::internal(e.to_string()))),
        Ask::Notes { notes } => meter::note(store, now_ms, notes).map(|()| Value::Null),
        Ask::Usage { limits } => meter::usage(store, now_ms, limits),
        Ask::Raise { limits, raise } => {
            meter::raise(store, raise).and_then(|()| meter::usage(store, now_ms, limits))
        }
    };
    match answer {
        Ok(v) => Reply::new(HttpResponse::json(200, &v)),
        Err(e) => Reply::new(error_response(&e, None)),
    }
}

/// The request an [`crate::effects::Effect::Admit`] sends: the admit, to
/// its meter.
pub fn admission_request(a: &crate::limits::Admission) -> (String, HttpRequest) {
    (a.meter.clone(), meter_request(&Ask::Admit(a.admit.clone())))
}

/// The meter's `answer` to the [`crate::effects::Effect::Admit`] this
/// object asked (a task a limit held back): the effects of running it or
/// of waiting again.
pub async fn admitted(
    server: &Server,
    stores: &super::Stores<'_>,
    a: &crate::limits::Admission,
    answer: &HttpResponse,
    now_ms: u64,
) -> Result<Vec<crate::effects::Effect>, McpError> {
    let Some(task) = stores.task.load()? else {
        server.note(a.meter.clone(), Note::Release(a.admit.lease.clone()));
        return Ok(Vec::new());
    };
    let host = crate::server::task::TaskHost {
        task_id: task.task_id,
        store: stores.task,
    };
    let v = verdict(answer);
    crate::server::task::admitted(server, &host, &a.admit.lease, v, now_ms).await
}
