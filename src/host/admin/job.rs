//! An admin request as a state machine. A listing needs what every call
//! shard keeps, the hub's index (tasks, live sessions, paused tools) and
//! then what each live session keeps; acting on calls needs the listing
//! first (for a filter) and then each object that keeps one. [`start`]
//! says what to ask first; [`Job::resume`] takes the objects' answers, in
//! the order asked, and says what next, until it answers.

use serde::Deserialize;
use serde_json::{json, Value};

use super::object::{self, Ask, Body, Entries};
use super::pages::{self, Page};
use super::paging;
use super::request::{filter_of, query, Op};
use crate::admin::summary::DURABLE_PREFIX;
use crate::admin::{
    CallDetail, CallSummary, Counts, Done, Filter, Kind, Listing, Status, Versions,
};
use crate::effects::Reply;
use crate::error::{ErrorKind, McpError};
use crate::http::{HttpRequest, HttpResponse};
use crate::index::IndexEntry;
use crate::kept::page as keep;
use crate::kept::versions::ToolCode;
use crate::replay::PausedCall;
use crate::server::{error_response, Env, Server};
use crate::vec_map::VecMap;

/// What a job needs next.
#[must_use = "a step asks for requests to be sent, or holds the answer"]
pub enum Step {
    /// The answer to the admin request.
    Answer(Reply),
    /// Send each request to the object named and hand the responses back
    /// to [`Job::resume`], in this order (an unreachable object: a 502).
    Ask(Vec<(String, HttpRequest)>),
}

enum Stage {
    /// The hub's index and every shard's calls (or, for one call, the
    /// object that keeps it).
    Gather,
    /// Each live session's calls.
    Sessions,
    /// The objects acted on.
    Act,
    /// One call's object.
    Show,
    /// The hub, for a tool's pause.
    Pause,
    /// The hub, spending a sign-in link.
    Enter,
    /// Principals' meters, in the order of `meters`.
    Limits(Vec<String>),
    /// An API listing: the hub's page of tasks and every shard's page.
    Paging,
    /// An API listing: each live session's calls.
    PagingSessions,
}

/// One admin request under way.
pub struct Job {
    op: Op,
    /// A console page, when the request came from one.
    page: Option<Page>,
    operator: String,
    now_ms: u64,
    stage: Stage,
    entries: Vec<IndexEntry>,
    paused: Vec<String>,
    calls: Vec<CallSummary>,
    /// The request's path (its query dropped): what a refusal names.
    path: String,
    pages: paging::Pages,
}

fn bad(message: impl Into<String>) -> Reply {
    Reply::new(error_response(&McpError::invalid_params(message), None))
}

/// The body of `calls/pause` and `calls/resume`.
#[derive(Deserialize, Default)]
struct HoldBody {
    ids: Vec<String>,
}

/// The body of `calls/answer` and `calls/rewind`.
#[derive(Deserialize, Default)]
struct OutsideBody {
    id: String,
    key: String,
    #[serde(default)]
    answer: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct CancelBody {
    #[serde(default)]
    ids: Option<Vec<String>>,
    #[serde(default)]
    filter: Option<Filter>,
    #[serde(default)]
    all: bool,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PurgeBody {
    #[serde(default)]
    status: Vec<Status>,
    #[serde(default)]
    older_than_ms: Option<u64>,
}

/// Starts the admin request `req` of `operator` (already admitted).
pub fn start(server: &Server, req: &HttpRequest, operator: &str, env: &Env) -> (Job, Step) {
    let mut job = Job {
        op: Op::Tools,
        page: None,
        operator: operator.to_string(),
        now_ms: env.now_ms,
        stage: Stage::Gather,
        entries: Vec::new(),
        paused: Vec::new(),
        calls: Vec::new(),
        path: String::new(),
        pages: paging::Pages::default(),
    };
    let path = req.path.split('?').next().unwrap_or(&req.path);
    // Held to `ALLOWED_HOSTS` as the pages are (a console opened under a
    // rebound name must not act). An operator is told; a link's opener
    // (no credential yet) gets what any unknown path gets.
    if let Err(e) = server.check_host(req.header("host")) {
        let reply = if operator.is_empty() {
            super::not_there(req)
        } else {
            Reply::new(error_response(&e, None))
        };
        return (job, Step::Answer(reply));
    }
    job.path = path.to_string();
    let parsed = match path.strip_prefix("/admin/api") {
        Some(rest) => api(server, req, rest, operator, env),
        None => match pages::parse(server, req, path, env.now_ms) {
            Ok((op, page)) => {
                job.page = Some(page);
                Ok(op)
            }
            Err(reply) => Err(reply),
        },
    };
    match parsed {
        Ok(op) => {
            job.op = op;
            let step = job.first(server);
            (job, step)
        }
        Err(reply) => (job, Step::Answer(reply)),
    }
}

/// An API request's operation, or its answer when it needs no object.
fn api(
    server: &Server,
    req: &HttpRequest,
    rest: &str,
    operator: &str,
    env: &Env,
) -> Result<Op, Reply> {
    let method = req.method.as_str();
    let segments: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_encoding_decode)
        .collect();
    let seg: Vec<&str> = segments.iter().map(String::as_str).collect();
    match (method, seg.as_slice()) {
        ("GET", ["calls"]) => {
            let (filter, limit, cursor) = filter_of(&query(&req.path)).map_err(bad)?;
            Ok(Op::List {
                filter,
                limit,
                cursor,
            })
        }
        ("POST", ["calls", "cancel"]) => {
            let body: CancelBody = crate::json::from_slice(&req.body)
                .map_err(|e| bad(format!("the body does not read: {e}")))?;
            let filter = body.filter.unwrap_or_default();
            if body.ids.is_none() && filter == Filter::default() && !body.all {
                return Err(bad(
                    "name the calls (ids), a filter, or all: true to cancel every call",
                ));
            }
            Ok(Op::Cancel {
                ids: body.ids,
                filter,
            })
        }
        ("POST", ["calls", action @ ("pause" | "resume")]) => {
            let body: HoldBody = crate::json::from_slice(&req.body)
                .map_err(|e| bad(format!("the body does not read: {e}")))?;
            if body.ids.is_empty() {
                return Err(bad("name the calls to pause or resume (ids)"));
            }
            Ok(Op::Hold {
                ids: body.ids,
                hold: *action == "pause",
            })
        }
        ("POST", ["calls", act @ ("answer" | "rewind")]) => {
            let body: OutsideBody = crate::json::from_slice(&req.body)
                .map_err(|e| bad(format!("the body does not read: {e}")))?;
            if body.id.is_empty() || body.key.is_empty() {
                return Err(bad("name the call (id) and its question (key)"));
            }
            if (*act == "answer") != body.answer.is_some() {
                return Err(bad(if *act == "answer" {
                    "give the answer (answer), as the client would send it"
                } else {
                    "a rewind takes no answer"
                }));
            }
            Ok(Op::Outside {
                id: body.id,
                key: body.key,
                answer: body.answer,
            })
        }
        ("GET", ["calls", id]) => Ok(Op::Show((*id).to_string())),
        ("GET", ["tools"]) => Ok(Op::Tools),
        ("GET", ["tools", "versions"]) => Ok(Op::Versions),
        ("GET", ["limits"]) => Ok(Op::Limits {
            principal: None,
            raise: None,
        }),
        ("GET", ["limits", p]) => Ok(Op::Limits {
            principal: Some((*p).to_string()),
            raise: None,
        }),
        ("POST", ["limits", p]) => {
            let text = std::str::from_utf8(&req.body).unwrap_or("");
            let read = serde_json::from_str::<Value>(text).map_err(|e| e.to_string());
            let raise = read
                .and_then(|v| crate::limits::read_scoped(&v))
                .map_err(|e| {
                    bad(format!(
                        "the body is not limits ({{\"all\": {{…}}, \"tools\": {{…}}}}): {e}"
                    ))
                })?;
            Ok(Op::Limits {
                principal: Some((*p).to_string()),
                raise: Some(raise),
            })
        }
        ("POST", ["tools", tool, action @ ("pause" | "resume")]) => {
            if server.registry.find_tool(tool).is_none() {
                return Err(Reply::new(error_response(
                    &McpError::invalid_params(format!("No tool {tool:?} is served")),
                    None,
                )));
            }
            Ok(Op::Pause {
                tool: (*tool).to_string(),
                pause: *action == "pause",
            })
        }
        ("GET", ["export"]) => {
            let (mut filter, _, _) = filter_of(&query(&req.path)).map_err(bad)?;
            if filter.status.is_empty() {
                filter.status = vec![Status::Waiting, Status::Working, Status::Parked];
            }
            Ok(Op::Export(filter))
        }
        ("POST", ["purge"]) => {
            let body: PurgeBody = if req.body.is_empty() {
                PurgeBody::default()
            } else {
                crate::json::from_slice(&req.body)
                    .map_err(|e| bad(format!("the body does not read: {e}")))?
            };
            // Only a finished call can be purged: asking for another
            // status is a mistake to say, not to turn into "every
            // finished call" (or into nothing).
            let live: Vec<&str> = body
                .status
                .iter()
                .filter(|s| !s.is_final())
                .map(|s| s.as_str())
                .collect();
            if !live.is_empty() {
                return Err(bad(format!(
                    "purge takes only finished calls (completed, failed, cancelled); not {}",
                    live.join(", ")
                )));
            }
            let mut status = body.status;
            if status.is_empty() {
                status = vec![Status::Completed, Status::Failed, Status::Cancelled];
            }
            Ok(Op::Purge(Filter {
                status,
                older_than_ms: body.older_than_ms,
                ..Filter::default()
            }))
        }
        ("POST", ["console"]) => {
            let nonce = crate::engine::hex(&env.random);
            let Some(pass) = super::pass::link(server, req, operator, nonce, env.now_ms) else {
                return Err(Reply::new(error_response(
                    &McpError::internal("the console needs STATE_KEYS to sign its links"),
                    None,
                )));
            };
            let link = format!("/admin/enter?pass={pass}");
            Err(Reply::new(super::json(200, &json!({ "link": link }))))
        }
        _ => Err(super::not_there(req)),
    }
}

/// A path segment, percent-decoded.
fn percent_encoding_decode(s: &str) -> String {
    form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The principals an operator's listing of limits shows: each API
/// token's name and each principal `LIMITS` names (an OAuth subject is
/// asked for by name).
fn known_principals(server: &Server) -> Vec<String> {
    let mut names: Vec<String> = (server.config.sign_in.api_tokens().iter())
        .map(|(_, name)| name.clone())
        .collect();
    names.extend(server.limits.principals.iter().map(|(p, _)| p.clone()));
    names.sort();
    names.dedup();
    names
}

/// The names of every call shard.
fn shards(server: &Server) -> Vec<String> {
    crate::host::place::call_shard_names(&server.config)
}

/// The requests for the index: the hub's entries and paused tools, then
/// each index shard's entries ([`Job::gathered`] reads them in order).
fn entries_asks(server: &Server) -> Vec<(String, HttpRequest)> {
    let mut asks = vec![ask(hub(server), Ask::Entries, &Body::default())];
    asks.extend(crate::host::index_shards().map(|name| ask(name, Ask::Entries, &Body::default())));
    asks
}

fn hub(server: &Server) -> String {
    crate::host::hub_name(0, server.config.listen_shards.max(1))
}

fn ask(name: String, op: Ask, body: &Body) -> (String, HttpRequest) {
    (name, object::request(op, body))
}

fn read<T: for<'de> Deserialize<'de>>(r: &HttpResponse) -> Option<T> {
    if r.status != 200 {
        return None;
    }
    match &r.body {
        crate::http::Body::Bytes(b) => serde_json::from_slice(b).ok(),
        _ => None,
    }
}

impl Job {
    fn body(&self, ids: Vec<String>) -> Body {
        let (key, answer) = match &self.op {
            Op::Outside { key, answer, .. } => (Some(key.clone()), answer.clone()),
            _ => (None, None),
        };
        Body {
            ids,
            tool: None,
            operator: self.operator.clone(),
            until_ms: None,
            key,
            answer,
            ..Body::default()
        }
    }

    /// An API listing asks each keeper for a page of what passes the
    /// filter after the cursor, and its counts: the hub for its tasks,
    /// every shard for its durable calls (a keeper of a kind the filter
    /// leaves out gives its counts alone).
    fn first_page(&mut self, server: &Server) -> Step {
        let Op::List {
            filter,
            limit,
            cursor,
        } = &self.op
        else {
            return Step::Answer(bad("not a listing"));
        };
        let mut f = filter.clone();
        let until_ms = f
            .older_than_ms
            .take()
            .map(|age| self.now_ms.saturating_sub(age));
        let body = |kind: Kind| Body {
            page: Some(paging::ask(&f, cursor.as_ref(), {
                if filter.kind.is_none_or(|k| k == kind) {
                    *limit
                } else {
                    0
                }
            })),
            until_ms,
            ..Body::default()
        };
        // The hub (what it indexed before the index had shards), each
        // index shard, each call shard: every one a keeper of its own.
        let tasks = body(Kind::Task);
        let mut asks = vec![ask(hub(server), Ask::IndexPage, &tasks)];
        asks.extend(crate::host::index_shards().map(|name| ask(name, Ask::IndexPage, &tasks)));
        let shard = body(Kind::Durable);
        asks.extend(
            shards(server)
                .into_iter()
                .map(|s| ask(s, Ask::Page, &shard)),
        );
        self.stage = Stage::Paging;
        Step::Ask(asks)
    }

    /// Adds a keeper's page and counts (`kind`: what it keeps).
    fn paged(&mut self, v: &mut Value, kind: Kind) {
        if let Op::List { filter, .. } = &self.op {
            self.pages.add(v, kind, filter);
        }
    }

    fn page_gathered(&mut self, server: &Server, answers: Vec<HttpResponse>) -> Step {
        let mut answers = answers.into_iter();
        let Some(mut hub) = answers.next().as_ref().and_then(read::<Value>) else {
            return Step::Answer(unreachable());
        };
        self.entries = crate::json::from_value(hub["sessions"].take()).unwrap_or_default();
        self.paused = crate::json::from_value(hub["paused"].take()).unwrap_or_default();
        server.paused.set(self.paused.clone(), self.now_ms);
        self.paged(&mut hub, Kind::Task);
        for a in answers.by_ref().take(crate::host::INDEX_SHARDS as usize) {
            let Some(mut v) = read::<Value>(&a) else {
                return Step::Answer(unreachable());
            };
            let more: Vec<IndexEntry> =
                crate::json::from_value(v["sessions"].take()).unwrap_or_default();
            self.entries.extend(more);
            self.paged(&mut v, Kind::Task);
        }
        for a in answers {
            let Some(mut v) = read::<Value>(&a) else {
                return Step::Answer(unreachable());
            };
            self.paged(&mut v, Kind::Durable);
        }
        let sessions: Vec<(String, HttpRequest)> = (self.entries.iter())
            .filter(|e| e.kind == Kind::Session)
            .map(|e| ask(e.object.clone(), Ask::List, &Body::default()))
            .collect();
        if sessions.is_empty() {
            return self.page_answer();
        }
        self.stage = Stage::PagingSessions;
        Step::Ask(sessions)
    }

    /// The sessions' calls (each session listed whole, as before) join
    /// the pages; the page and its counts are answered.
    fn page_answer(&mut self) -> Step {
        let Op::List {
            filter,
            limit,
            cursor,
        } = &self.op
        else {
            return Step::Answer(bad("not a listing"));
        };
        let calls = std::mem::take(&mut self.calls);
        let pages = std::mem::take(&mut self.pages);
        let listing = pages.listing(calls, (filter, *limit, cursor.as_ref()), self.now_ms);
        let listing = Listing {
            paused_tools: self.paused.clone(),
            ..listing
        };
        Step::Answer(Reply::new(super::json(200, &json!(listing))))
    }

    /// The first requests.
    fn first(&mut self, server: &Server) -> Step {
        let entries = entries_asks(server);
        match &self.op {
            Op::Tools => Step::Ask(entries),
            Op::Pause { tool, pause } => {
                self.stage = Stage::Pause;
                let op = if *pause { Ask::Pause } else { Ask::Resume };
                let body = Body {
                    tool: Some(tool.clone()),
                    ..self.body(Vec::new())
                };
                Step::Ask(vec![ask(hub(server), op, &body)])
            }
            Op::Show(id) if id.starts_with(DURABLE_PREFIX) => {
                let Some(name) = self.object_of(server, id) else {
                    return self.answer_detail(server, None);
                };
                self.stage = Stage::Show;
                Step::Ask(vec![ask(name, Ask::Show, &self.body(vec![id.clone()]))])
            }
            Op::Show(_) => Step::Ask(entries),
            Op::Limits { principal, raise } => {
                let principals = match principal {
                    Some(p) => vec![p.clone()],
                    None => known_principals(server),
                };
                let asks = principals
                    .iter()
                    .map(|p| {
                        let limits = server.limits.for_principal(p);
                        let a = match raise {
                            Some(r) => crate::limits::Ask::Raise {
                                limits,
                                raise: r.clone(),
                            },
                            None => crate::limits::Ask::Usage { limits },
                        };
                        crate::host::meter::ask_request(p, &a)
                    })
                    .collect();
                self.stage = Stage::Limits(principals);
                Step::Ask(asks)
            }
            Op::Enter(enter) => {
                self.stage = Stage::Enter;
                let body = Body {
                    ids: vec![enter.nonce.clone()],
                    until_ms: Some(enter.until_ms),
                    ..Body::default()
                };
                Step::Ask(vec![ask(hub(server), Ask::SpendLink, &body)])
            }
            Op::List { .. } if self.page.is_none() => self.first_page(server),
            // Calls named by id: only a task's or a session's object has to
            // be looked up (in the index); no shard is listed.
            Op::Cancel { ids: Some(_), .. } | Op::Hold { .. } | Op::Outside { .. } => {
                Step::Ask(entries)
            }
            Op::List { .. } | Op::Cancel { .. } | Op::Export(_) | Op::Purge(_) | Op::Versions => {
                let mut asks = entries;
                asks.extend(
                    shards(server)
                        .into_iter()
                        .map(|s| ask(s, Ask::List, &Body::default())),
                );
                Step::Ask(asks)
            }
        }
    }

    /// Takes the answers to the last step's requests, in order.
    pub fn resume(&mut self, server: &Server, answers: Vec<HttpResponse>) -> Step {
        match self.stage {
            Stage::Gather => self.gathered(server, answers),
            Stage::Paging => self.page_gathered(server, answers),
            Stage::PagingSessions => {
                for a in &answers {
                    self.calls
                        .extend(read::<Vec<CallSummary>>(a).unwrap_or_default());
                }
                self.page_answer()
            }
            Stage::Sessions => {
                for a in &answers {
                    self.calls
                        .extend(read::<Vec<CallSummary>>(a).unwrap_or_default());
                }
                self.listed(server)
            }
            Stage::Act => self.acted(server, answers),
            Stage::Show => {
                let detail = answers.first().and_then(read::<CallDetail>);
                self.answer_detail(server, detail)
            }
            Stage::Limits(ref principals) => {
                let rows: Vec<Value> = principals
                    .iter()
                    .zip(&answers)
                    .map(|(p, a)| {
                        let mut usage = read::<Value>(a).unwrap_or(Value::Null);
                        usage["principal"] = json!(p);
                        usage
                    })
                    .collect();
                if let Some(page) = &self.page {
                    return Step::Answer(page.limits(&rows));
                }
                let body = json!({ "principals": rows });
                Step::Answer(Reply::new(super::json(200, &body)))
            }
            Stage::Enter => {
                let first = answers
                    .first()
                    .and_then(read::<Value>)
                    .is_some_and(|v| v["first"] == true);
                match &self.op {
                    Op::Enter(enter) if first => Step::Answer(pages::entered(&enter.set_cookie)),
                    // Spent already (or the hub did not answer): as if the
                    // link never existed.
                    _ => Step::Answer(super::unknown(&self.path)),
                }
            }
            Stage::Pause => {
                let ok = answers.first().is_some_and(|a| a.status == 200);
                let Op::Pause { tool, pause } = &self.op else {
                    return Step::Answer(bad("not a pause"));
                };
                if !ok {
                    return Step::Answer(unreachable());
                }
                if let Some(page) = &self.page {
                    return Step::Answer(page.back_to("/admin"));
                }
                Step::Answer(Reply::new(super::json(
                    200,
                    &json!({"tool": tool, "paused": pause}),
                )))
            }
        }
    }

    fn gathered(&mut self, server: &Server, answers: Vec<HttpResponse>) -> Step {
        let mut answers = answers.into_iter();
        // The hub's (the paused tools, and what it indexed before the
        // index had shards), then each index shard's.
        let entries: Entries = answers.next().as_ref().and_then(read).unwrap_or_default();
        self.entries = entries.entries;
        self.paused = entries.paused;
        for a in answers.by_ref().take(crate::host::INDEX_SHARDS as usize) {
            let more: Entries = read(&a).unwrap_or_default();
            self.entries.extend(more.entries);
        }
        server.paused.set(self.paused.clone(), self.now_ms);
        for a in answers {
            self.calls
                .extend(read::<Vec<CallSummary>>(&a).unwrap_or_default());
        }
        match &self.op {
            Op::Tools => {
                let tools: Vec<Value> = server
                    .registry
                    .tools
                    .iter()
                    .map(|t| json!({"name": t.name, "paused": self.paused.contains(&t.name)}))
                    .collect();
                Step::Answer(Reply::new(super::json(200, &json!({ "tools": tools }))))
            }
            Op::Show(id) => {
                let Some(object) = self.object_of(server, id) else {
                    return self.answer_detail(server, None);
                };
                self.stage = Stage::Show;
                Step::Ask(vec![ask(object, Ask::Show, &self.body(vec![id.clone()]))])
            }
            _ => {
                self.calls
                    .extend(self.entries.iter().filter_map(|e| e.summary.clone()));
                let sessions: Vec<(String, HttpRequest)> = self
                    .entries
                    .iter()
                    .filter(|e| e.kind == Kind::Session)
                    .map(|e| ask(e.object.clone(), Ask::List, &Body::default()))
                    .collect();
                if sessions.is_empty() {
                    return self.listed(server);
                }
                self.stage = Stage::Sessions;
                Step::Ask(sessions)
            }
        }
    }

    /// The object that keeps the call `id` (`None`: no call this server
    /// could have made, so no object is named for it).
    fn object_of(&self, server: &Server, id: &str) -> Option<String> {
        if let Some(call_id) = id.strip_prefix(DURABLE_PREFIX) {
            let route = crate::host::place::is_call_id(call_id, &server.config);
            return route.then(|| crate::host::place::call_object_name(call_id));
        }
        // A task or a session: its object is in the index.
        let handle = crate::admin::summary::index_handle(id);
        self.entries
            .iter()
            .find(|e| e.handle == handle)
            .map(|e| e.object.clone())
    }

    /// Every call is known: answer a listing, or act on those chosen.
    fn listed(&mut self, server: &Server) -> Step {
        let now = self.now_ms;
        // Longest unchanged first; ids break ties so pages are stable (ids
        // are unique: an unstable sort orders them the same, and links no
        // stable sort for these rows).
        self.calls
            .sort_unstable_by(|a, b| a.updated_ms.cmp(&b.updated_ms).then(a.id.cmp(&b.id)));
        if let Op::Versions = self.op {
            let versions = self.versions(server);
            return Step::Answer(Reply::new(super::json(200, &json!(versions))));
        }
        let counts = Counts::of(&self.calls, now);
        let (ids, op) = match &self.op {
            Op::List {
                filter,
                limit,
                cursor,
            } => {
                // The console's listing reads every call (it shows each
                // tool's versions too); its pages resume as the API's do.
                let matched: Vec<&CallSummary> = self
                    .calls
                    .iter()
                    .filter(|c| filter.admits(c, now))
                    .collect();
                let after: Vec<&CallSummary> = (matched.iter().copied())
                    .filter(|c| cursor.as_ref().is_none_or(|k| keep::Key::of(c) > *k))
                    .collect();
                let page: Vec<CallSummary> =
                    after.iter().take(*limit).map(|c| (*c).clone()).collect();
                let next_cursor = (after.len() > page.len())
                    .then(|| page.last().map(|c| paging::encode(&keep::Key::of(c))))
                    .flatten();
                let listing = Listing {
                    calls: page,
                    matched: matched.len(),
                    counts,
                    next_cursor,
                    now_ms: now,
                    paused_tools: self.paused.clone(),
                };
                if let Some(page) = &self.page {
                    let versions = self.versions(server);
                    return Step::Answer(page.overview(&listing, filter, &versions));
                }
                return Step::Answer(Reply::new(super::json(200, &json!(listing))));
            }
            Op::Cancel { ids, filter } => {
                let chosen: Vec<String> = match ids {
                    Some(ids) => ids.clone(),
                    None => self
                        .calls
                        .iter()
                        .filter(|c| filter.admits(c, now) && !c.status.is_final())
                        .map(|c| c.id.clone())
                        .collect(),
                };
                (chosen, Ask::Cancel)
            }
            Op::Hold { ids, hold } => (ids.clone(), if *hold { Ask::Hold } else { Ask::Release }),
            Op::Outside { id, answer, .. } => (
                vec![id.clone()],
                if answer.is_some() {
                    Ask::Answer
                } else {
                    Ask::Rewind
                },
            ),
            Op::Export(filter) => (self.chosen(filter), Ask::Export),
            Op::Purge(filter) => (self.chosen(filter), Ask::Purge),
            _ => return Step::Answer(bad("not a listing")),
        };
        let mut by_object: VecMap<String, Vec<String>> = VecMap::new();
        let mut unknown = Done::default();
        for id in ids {
            match self.object_of(server, &id) {
                Some(o) => by_object.or_insert_with(o, Vec::new).push(id),
                None => {
                    unknown.skipped.insert(id, "not found".into());
                }
            }
        }
        if by_object.is_empty() {
            return self.acted(server, Vec::new());
        }
        self.stage = Stage::Act;
        Step::Ask(
            by_object
                .into_iter()
                .map(|(o, ids)| ask(o, op, &self.body(ids)))
                .collect(),
        )
    }

    /// Per tool and version, the unfinished calls every keeper holds.
    fn versions(&self, server: &Server) -> Versions {
        Versions::of(&ToolCode::all(&server.registry), &self.calls, self.now_ms)
    }

    fn chosen(&self, filter: &Filter) -> Vec<String> {
        self.calls
            .iter()
            .filter(|c| filter.admits(c, self.now_ms))
            .map(|c| c.id.clone())
            .collect()
    }

    fn acted(&mut self, _server: &Server, answers: Vec<HttpResponse>) -> Step {
        if let Op::Export(_) = self.op {
            let mut out: Vec<PausedCall> = Vec::new();
            for a in &answers {
                out.extend(read::<Vec<PausedCall>>(a).unwrap_or_default());
            }
            out.sort_unstable_by(|a, b| a.id.cmp(&b.id));
            return Step::Answer(Reply::new(super::json(200, &json!(out))));
        }
        let mut done = Done::default();
        for a in &answers {
            let part: Done = read(a).unwrap_or_default();
            done.done.extend(part.done);
            done.skipped.extend(part.skipped);
        }
        let one;
        let named = match &self.op {
            Op::Cancel { ids: Some(ids), .. } | Op::Hold { ids, .. } => Some(ids),
            Op::Outside { id, .. } => {
                one = vec![id.clone()];
                Some(&one)
            }
            _ => None,
        };
        if let Some(ids) = named {
            for id in ids {
                if !done.done.contains(id) && !done.skipped.contains_key(id) {
                    done.skipped.insert(id.clone(), "not found".into());
                }
            }
        }
        if let (Some(page), Some(ids)) = (&self.page, named) {
            let back = ids
                .first()
                .map(|id| format!("/admin/calls/{}", pages::enc(id)))
                .unwrap_or_else(|| "/admin".into());
            return Step::Answer(page.back_to(&back));
        }
        Step::Answer(Reply::new(super::json(200, &json!(done))))
    }

    fn answer_detail(&self, _server: &Server, detail: Option<CallDetail>) -> Step {
        let Some(detail) = detail else {
            let e = McpError::new(
                ErrorKind::ResourceNotFound,
                "No such call is kept (finished calls are kept as long as configured)",
            );
            if let Some(page) = &self.page {
                return Step::Answer(page.message(404, "Not found", &e.message));
            }
            return Step::Answer(Reply::new(error_response(&e, None)));
        };
        if let Some(page) = &self.page {
            return Step::Answer(page.call(&detail, self.now_ms));
        }
        Step::Answer(Reply::new(super::json(200, &json!(detail))))
    }
}

fn unreachable() -> Reply {
    Reply::new(error_response(
        &McpError::internal("an object that keeps calls did not answer"),
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::host::admin::request::duration_ms;

    #[test]
    fn durations_and_filters_read_as_an_operator_writes_them() {
        assert_eq!(duration_ms("90s"), Some(90_000));
        assert_eq!(duration_ms("2h"), Some(7_200_000));
        assert_eq!(duration_ms("7d"), Some(604_800_000));
        assert_eq!(duration_ms("1500"), Some(1500));
        assert_eq!(duration_ms("soon"), None);
        let q = query("/admin/api/calls?tool=deploy&status=waiting,parked&olderThan=15m&limit=9");
        let (f, limit, cursor) = filter_of(&q).expect("in a test");
        assert_eq!(f.tool.as_deref(), Some("deploy"));
        assert_eq!(f.status, vec![Status::Waiting, Status::Parked]);
        assert_eq!(f.older_than_ms, Some(900_000));
        assert_eq!((limit, cursor), (9, None));
        assert!(filter_of(&query("/x?cursor=50")).is_err());
        assert!(filter_of(&query("/x?status=asleep")).is_err());
        assert_eq!(percent_encoding_decode("s.ab%2Ecd"), "s.ab.cd");
    }
}
