//! `durable-mcp admin`: the server's admin API (docs/OPERATE.md) from a
//! terminal: list, show, cancel, export and purge kept calls, pause and
//! resume tools, open the console.
//!
//! The API lives at `<origin>/admin/api/…` whatever path the MCP endpoint
//! has, so only the URL's origin is kept. Its credential is an operator's
//! token (`ADMIN_TOKENS`) or, on a server with OAuth sign-in, the token
//! `durable-mcp login` keeps for it if its scopes hold the admin scope.
//!
//! # Layout
//! - `admin.rs`: the command line, the credential, the HTTP requests.
//! - `admin/filter.rs`: filters, durations, and how they travel.
//! - `admin/model.rs`: the API's answers, as read here.
//! - `admin/table.rs`: `calls list` as a table and its counts; times, ages.
//! - `admin/show.rs`: `calls show` as a header and a timeline.
//! - `admin/versions.rs`: `tools versions` as a table and what to do next.

mod filter;
mod limits;
mod model;
mod show;
mod table;
mod versions;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use durable_mcp_client::oauth::{Browser, FileStore, OAuth};
use durable_mcp_client::{Client, Handler};
use serde_json::{json, Value};
use url::Url;

use super::Usage;
use filter::{duration_ms, kind, statuses, with_query, Filter, FINAL};

const USAGE: &str = concat!(
    "  durable-mcp admin <url> calls list [filter] [--limit N] [--all] [--json]\n",
    "  durable-mcp admin <url> calls show <id> [--json]\n",
    "  durable-mcp admin <url> calls cancel <id>... | --filter [filter] [--all]\n",
    "  durable-mcp admin <url> calls pause <id>... | resume <id>...\n",
    "  durable-mcp admin <url> calls answer <id> <key> <answer-json> | rewind <id> <key>\n",
    "  durable-mcp admin <url> calls export [--tool T] [--status S,…] [--out FILE]\n",
    "  durable-mcp admin <url> calls purge [--status S,…] [--older-than D]\n",
    "  durable-mcp admin <url> tools list | pause <name> | resume <name>\n",
    "  durable-mcp admin <url> tools versions [--json]\n",
    "  durable-mcp admin <url> limits [<principal>] [--json]\n",
    "  durable-mcp admin <url> limits <principal> raise <limits-json>\n",
    "  durable-mcp admin <url> console [--no-browser]\n",
);

const HELP: &str = "\
ADMIN
  The server's admin API (docs/OPERATE.md), at <url>'s origin under
  /admin/api/: <url> is the MCP endpoint (http://127.0.0.1:8787/mcp) or
  the origin alone.
  filter            --tool T  --status waiting,working,parked,completed,
                    failed,cancelled  --principal P  --kind durable|session|task
                    --older-than D (unchanged for at least D: ms, or 90s, 15m,
                    2h, 7d)
  calls list        the kept calls, longest unchanged first, then counts
                    over every kept call; --all follows every page (--limit
                    is then the page size); --json prints the listing as sent
  calls show        one call: its arguments and its timeline (rounds,
                    answers — [hidden] unless the tool shows them — effects)
  calls cancel      by id, or --filter with at least one filter flag (or
                    --all, for every kept call: refused otherwise)
  calls pause       each call named parks (its rounds get 503, as under a
                    paused tool) until calls resume; not a call whose round
                    is running, nor a finished one
  calls answer      answers the question <key> the call waits on, on its
                    client's behalf, with <answer-json> as the client would
                    send it ('{\"action\":\"accept\",\"content\":{...}}'); the
                    tool sees who answered (cx.answered_by)
  calls rewind      asks the call again from question <key>: its answer and
                    every later one are dropped (not past an effect that ran
                    on them)
  calls export      the paused calls as JSON (for the deploy check) to
                    --out FILE, else stdout
  calls purge       forgets finished calls (default: completed, failed,
                    cancelled), only those older than --older-than if given
  tools pause       new calls and next rounds of the tool get 503 until
                    resume; paused calls are kept
  tools versions    per tool and version (Tool::version, Tool::keeps): what
                    the code does with its calls (current; kept: a kept
                    body runs them; upgrades: the current body runs them;
                    missing: pinned calls park) and how many are waiting,
                    working, parked; a kept version with none can be removed
  console           prints a one-time console sign-in link (5 minutes) and
                    opens it (not with --no-browser or DURABLE_MCP_NO_BROWSER)
  --admin-token T   the operator token (one of ADMIN_TOKENS); else
                    $DURABLE_MCP_ADMIN_TOKEN; else the token `login` kept
                    for <url>, if its scopes hold mcp:admin
  --json            print the server's answer as JSON
  Exit: 0 done; 2 the server refused or failed, or could not be reached;
  64 usage, a cancel --filter with no filter, or no credential.
";

/// The help text for `admin`, for the CLI's `--help`.
pub(crate) fn help() -> String {
    format!("{HELP}\nADMIN USAGE\n{USAGE}")
}

/// Runs `durable-mcp admin …` (`args`: what follows `admin`).
pub(crate) fn run(args: &[String]) -> Result<ExitCode, Usage> {
    if args.is_empty() || args.iter().any(|a| a == "--help" || a == "-h") {
        print!("USAGE\n{USAGE}\n{HELP}");
        return Ok(ExitCode::SUCCESS);
    }
    let inv = parse(args)?;
    let origin = origin(&inv.url)?;
    let env = std::env::var("DURABLE_MCP_ADMIN_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty());
    let token = credential(inv.token.clone(), env, || {
        stored_token(&inv.url, &origin, &super::login::token_dir())
    });
    let Some(token) = token else {
        eprintln!(
            "no admin credential: pass --admin-token, set DURABLE_MCP_ADMIN_TOKEN, \
             or sign in with `durable-mcp login {}` (as a user whose token holds mcp:admin)",
            inv.url
        );
        return Ok(ExitCode::from(64));
    };
    let api = Api::new(origin, token);
    Ok(match execute(&api, &inv) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
    })
}

/// What was asked for.
#[derive(Debug, Clone, PartialEq)]
enum Command {
    List {
        filter: Filter,
        limit: Option<u32>,
        all: bool,
    },
    Show(String),
    Cancel(Cancel),
    /// Pause (`true`) or resume these calls.
    Hold(Vec<String>, bool),
    /// Answer (with the answer) or rewind one call at a question.
    Outside {
        id: String,
        key: String,
        answer: Option<Value>,
    },
    Export {
        filter: Filter,
        out: Option<PathBuf>,
    },
    Purge {
        status: Vec<String>,
        older_than_ms: Option<u64>,
    },
    Tools,
    /// `tools versions`.
    Versions,
    /// `limits [<principal>]`: usage against limits.
    Limits(Option<String>),
    /// `limits <principal> raise <json>`: an operator's limits for one.
    Raise(String, Value),
    Pause(String, bool),
    Console {
        no_browser: bool,
    },
}

/// Which calls a cancel stops.
#[derive(Debug, Clone, PartialEq)]
enum Cancel {
    Ids(Vec<String>),
    Filter(Filter),
    /// `--filter --all`: every kept call, said twice (the server also
    /// refuses an empty filter without `"all": true`).
    All,
}

impl Cancel {
    /// The body of `POST calls/cancel`.
    fn body(&self) -> Value {
        match self {
            Self::Ids(ids) => json!({ "ids": ids }),
            Self::Filter(f) => json!({ "filter": f.to_json() }),
            Self::All => json!({ "filter": {}, "all": true }),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Invocation {
    url: String,
    command: Command,
    json: bool,
    token: Option<String>,
}

/// Every flag as typed, and which were given (a flag a command does not
/// take is refused rather than ignored: `purge --tool x` would otherwise
/// purge every tool's calls).
#[derive(Default)]
struct Flags {
    filter: Filter,
    limit: Option<u32>,
    all: bool,
    json: bool,
    by_filter: bool,
    out: Option<PathBuf>,
    no_browser: bool,
    token: Option<String>,
    seen: Vec<&'static str>,
    positional: Vec<String>,
}

const FILTER_FLAGS: [&str; 5] = [
    "--tool",
    "--status",
    "--principal",
    "--kind",
    "--older-than",
];

fn flags(args: &[String]) -> Result<Flags, Usage> {
    let mut f = Flags::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if !a.starts_with("--") {
            f.positional.push(a.clone());
            continue;
        }
        // `--tool=deploy` as well as `--tool deploy`.
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| Usage(format!("{name} needs a value")))
        };
        let canonical: &'static str = match name {
            "--tool" => {
                f.filter.tool = Some(value()?);
                "--tool"
            }
            "--status" => {
                f.filter.status = statuses(&value()?)?;
                "--status"
            }
            "--principal" => {
                f.filter.principal = Some(value()?);
                "--principal"
            }
            "--kind" => {
                f.filter.kind = Some(kind(&value()?)?);
                "--kind"
            }
            "--older-than" => {
                f.filter.older_than_ms = Some(duration_ms(&value()?)?);
                "--older-than"
            }
            "--limit" => {
                let v = value()?;
                let n = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| Usage(format!("--limit {v}: expected a positive number")))?;
                f.limit = Some(n);
                "--limit"
            }
            "--out" => {
                f.out = Some(PathBuf::from(value()?));
                "--out"
            }
            "--admin-token" => {
                f.token = Some(value()?);
                "--admin-token"
            }
            "--all" => {
                f.all = true;
                "--all"
            }
            "--json" => {
                f.json = true;
                "--json"
            }
            "--filter" => {
                f.by_filter = true;
                "--filter"
            }
            "--no-browser" => {
                f.no_browser = true;
                "--no-browser"
            }
            other => return Err(Usage(format!("unknown option {other}"))),
        };
        if inline.is_some() && matches!(canonical, "--all" | "--json" | "--filter" | "--no-browser")
        {
            return Err(Usage(format!("{canonical} takes no value")));
        }
        f.seen.push(canonical);
    }
    Ok(f)
}

impl Flags {
    /// Refuses any flag `what` does not take (`--admin-token` and `--json`
    /// go with everything).
    fn only(&self, what: &str, allowed: &[&str]) -> Result<(), Usage> {
        match self
            .seen
            .iter()
            .find(|s| !allowed.contains(s) && !matches!(**s, "--admin-token" | "--json"))
        {
            Some(s) => Err(Usage(format!("{what} does not take {s}"))),
            None => Ok(()),
        }
    }

    /// Refuses more positional words than `what` takes (`n`, after the
    /// URL and the command's words).
    fn at_most(&self, what: &str, n: usize) -> Result<(), Usage> {
        match self.positional.get(n) {
            Some(extra) => Err(Usage(format!("{what}: unexpected {extra}"))),
            None => Ok(()),
        }
    }
}

fn parse(args: &[String]) -> Result<Invocation, Usage> {
    let f = flags(args)?;
    let mut words = f.positional.iter().map(String::as_str);
    let url = words.next().ok_or_else(|| Usage("admin: no url".into()))?;
    let group = words.next();
    let sub = words.next();
    let rest: Vec<String> = f.positional.iter().skip(3).cloned().collect();
    let name = |what: &str| -> Result<String, Usage> {
        match rest.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(Usage(format!("{what}: which one?"))),
            _ => Err(Usage(format!("{what} takes one name"))),
        }
    };
    let command = match (group, sub) {
        (Some("calls"), None | Some("list")) => {
            f.only(
                "calls list",
                &[&FILTER_FLAGS[..], &["--limit", "--all"][..]].concat(),
            )?;
            f.at_most("calls list", 3)?;
            Command::List {
                filter: f.filter.clone(),
                limit: f.limit,
                all: f.all,
            }
        }
        (Some("calls"), Some("show")) => {
            f.only("calls show", &[])?;
            Command::Show(name("calls show")?)
        }
        (Some("calls"), Some("cancel")) => {
            f.only(
                "calls cancel",
                &[&FILTER_FLAGS[..], &["--filter", "--all"][..]].concat(),
            )?;
            Command::Cancel(cancel_target(&f, rest.clone())?)
        }
        (Some("calls"), Some(action @ ("pause" | "resume"))) => {
            let what = format!("calls {action}");
            f.only(&what, &[])?;
            if rest.is_empty() {
                return Err(Usage(format!("{what}: name the calls (ids)")));
            }
            Command::Hold(rest.clone(), action == "pause")
        }
        (Some("calls"), Some(action @ ("answer" | "rewind"))) => {
            let what = format!("calls {action}");
            f.only(&what, &[])?;
            let want = if action == "answer" { 3 } else { 2 };
            if rest.len() != want {
                return Err(Usage(format!(
                    "{what}: name the call and the question{}",
                    if want == 3 {
                        ", then the answer (JSON)"
                    } else {
                        ""
                    }
                )));
            }
            let answer = match rest.get(2) {
                Some(text) => Some(
                    serde_json::from_str(text)
                        .map_err(|e| Usage(format!("{what}: the answer is not JSON: {e}")))?,
                ),
                None => None,
            };
            Command::Outside {
                id: rest[0].clone(),
                key: rest[1].clone(),
                answer,
            }
        }
        (Some("calls"), Some("export")) => {
            f.only("calls export", &["--tool", "--status", "--out"])?;
            f.at_most("calls export", 3)?;
            Command::Export {
                filter: f.filter.clone(),
                out: f.out.clone(),
            }
        }
        (Some("calls"), Some("purge")) => {
            f.only("calls purge", &["--status", "--older-than"])?;
            f.at_most("calls purge", 3)?;
            let status = if f.filter.status.is_empty() {
                FINAL.map(str::to_string).to_vec()
            } else {
                f.filter.status.clone()
            };
            // Purging forgets a call: a paused one is cancelled first, so
            // its client is told rather than left waiting on nothing.
            if let Some(s) = status.iter().find(|s| !FINAL.contains(&s.as_str())) {
                return Err(Usage(format!(
                    "calls purge --status {s}: only finished calls ({}) are purged; cancel it first",
                    FINAL.join(",")
                )));
            }
            Command::Purge {
                status,
                older_than_ms: f.filter.older_than_ms,
            }
        }
        (Some("tools"), None | Some("list")) => {
            f.only("tools list", &[])?;
            f.at_most("tools list", 3)?;
            Command::Tools
        }
        (Some("tools"), Some("versions")) => {
            f.only("tools versions", &[])?;
            f.at_most("tools versions", 3)?;
            Command::Versions
        }
        (Some("tools"), Some(op @ ("pause" | "resume"))) => {
            f.only("tools pause/resume", &[])?;
            Command::Pause(name(&format!("tools {op}"))?, op == "pause")
        }
        (Some("limits"), principal) => {
            f.only("limits", &[])?;
            match (principal, rest.as_slice()) {
                (p, []) => Command::Limits(p.map(str::to_string)),
                (Some(p), [raise, body]) if raise == "raise" => {
                    let body: Value = serde_json::from_str(body).map_err(|e| {
                        Usage(format!(
                            "limits {p} raise: the limits are JSON like '{{\"all\": {{\"held\": 5}}}}': {e}"
                        ))
                    })?;
                    Command::Raise(p.to_string(), body)
                }
                _ => {
                    return Err(Usage(
                        "limits [<principal>] | limits <principal> raise <limits-json>".into(),
                    ))
                }
            }
        }
        (Some("console"), None) => {
            f.only("console", &["--no-browser"])?;
            Command::Console {
                no_browser: f.no_browser,
            }
        }
        (Some(g @ ("calls" | "tools" | "console")), Some(s)) => {
            return Err(Usage(format!("admin {g}: unknown command {s}")))
        }
        (Some(g), _) => return Err(Usage(format!("admin: unknown command {g}"))),
        (None, _) => {
            return Err(Usage(
                "admin <url>: which command? calls, tools or console".into(),
            ))
        }
    };
    Ok(Invocation {
        url: url.to_string(),
        command,
        json: f.json,
        token: f.token.clone(),
    })
}

/// The ids, or `--filter` and its flags. A filter that narrows to nothing
/// would cancel every kept call: refused unless `--all` says so.
fn cancel_target(f: &Flags, ids: Vec<String>) -> Result<Cancel, Usage> {
    let filtered = f.seen.iter().any(|s| FILTER_FLAGS.contains(s));
    match (ids.is_empty(), f.by_filter) {
        (false, true) => Err(Usage("calls cancel: give ids or --filter, not both".into())),
        (false, false) if filtered || f.all => Err(Usage(
            "calls cancel: filter flags and --all go with --filter, not with ids".into(),
        )),
        (false, false) => Ok(Cancel::Ids(ids)),
        (true, false) if filtered => Err(Usage(
            "calls cancel: to cancel by filter, say --filter (with the filter flags)".into(),
        )),
        (true, false) => Err(Usage(
            "calls cancel: which calls? give ids, or --filter with filter flags".into(),
        )),
        (true, true) if f.filter.is_empty() && !f.all => Err(Usage(
            "calls cancel --filter: no filter flag, so this would cancel every kept call; \
             narrow it (--tool, --status, --principal, --kind, --older-than) or add --all"
                .into(),
        )),
        (true, true) if !f.filter.is_empty() && f.all => Err(Usage(
            "calls cancel --filter: --all is for no filter at all; drop it or the filter".into(),
        )),
        (true, true) if f.all => Ok(Cancel::All),
        (true, true) => Ok(Cancel::Filter(f.filter.clone())),
    }
}

/// `<url>`'s origin (`scheme://host[:port]`): the admin API sits under it
/// whatever path the MCP endpoint has.
fn origin(url: &str) -> Result<Url, Usage> {
    let u = Url::parse(url).map_err(|e| Usage(format!("{url}: {e}")))?;
    if !matches!(u.scheme(), "http" | "https") || u.host().is_none() {
        return Err(Usage(format!("{url}: expected an http(s) URL")));
    }
    Url::parse(&u.origin().ascii_serialization()).map_err(|e| Usage(format!("{url}: {e}")))
}

/// The token to send: `--admin-token`, else the environment's, else the
/// one kept by `durable-mcp login` (asked only if the others are absent:
/// it may refresh).
fn credential(
    flag: Option<String>,
    env: Option<String>,
    stored: impl FnOnce() -> Option<String>,
) -> Option<String> {
    flag.or(env).or_else(stored)
}

/// The access token `durable-mcp login <url>` kept, refreshed first when
/// it has expired and can be. Grants are kept under the URL signed in to:
/// the one given here, else (an origin given) the usual `/mcp` endpoint.
fn stored_token(url: &str, origin: &Url, dir: &Path) -> Option<String> {
    let base = origin.as_str().trim_end_matches('/');
    let mut candidates = vec![url.to_string(), format!("{base}/mcp")];
    candidates.dedup();
    candidates.into_iter().find_map(|server| {
        let client = Client::new(&server, NoAnswers)
            .with_oauth(OAuth::new(NoBrowser).with_store(FileStore::new(dir)));
        client.grant()?;
        client.access_token()
    })
}

/// Only to hold a stored grant: no MCP request is made, so nothing is
/// asked.
struct NoAnswers;

impl Handler for NoAnswers {
    fn elicit(&mut self, _: &Value) -> Value {
        json!({"action": "decline"})
    }
    fn sample(&mut self, _: &Value) -> Value {
        json!({})
    }
}

/// Reading a kept token never signs in (that is `durable-mcp login`).
struct NoBrowser;

impl Browser for NoBrowser {
    fn redirect_uri(&mut self) -> durable_mcp_client::Result<String> {
        Err(durable_mcp_client::Error::Auth(
            "admin does not sign in: run durable-mcp login".into(),
        ))
    }
    fn authorize(&mut self, _: &str) -> durable_mcp_client::Result<String> {
        self.redirect_uri()
    }
}

/// A server or transport error, as a sentence (exit 2).
struct Failure(String);

/// The admin API at one origin, with one credential.
struct Api {
    origin: Url,
    token: String,
    agent: ureq::Agent,
}

impl Api {
    fn new(origin: Url, token: String) -> Self {
        // No redirects: the bearer token goes to this origin only.
        let agent = ureq::AgentBuilder::new()
            .redirects(0)
            .timeout_connect(Duration::from_secs(10))
            .timeout_read(Duration::from_secs(120))
            .build();
        Self {
            origin,
            token,
            agent,
        }
    }

    /// The origin as people write it, without a trailing slash.
    fn shown(&self) -> String {
        self.origin.origin().ascii_serialization()
    }

    /// `<origin>/admin/api/<segments>`, each segment percent-encoded (an
    /// id or a tool name is one segment, whatever it holds).
    fn url(&self, segments: &[&str]) -> Url {
        let mut u = self.origin.clone();
        if let Ok(mut p) = u.path_segments_mut() {
            p.clear().extend(["admin", "api"]).extend(segments);
        }
        u
    }

    fn get(&self, url: &Url) -> Result<Value, Failure> {
        self.send(self.agent.get(url.as_str()), None)
    }

    fn post(&self, url: &Url, body: &Value) -> Result<Value, Failure> {
        self.send(self.agent.post(url.as_str()), Some(body))
    }

    fn send(&self, req: ureq::Request, body: Option<&Value>) -> Result<Value, Failure> {
        let req = req
            .set("authorization", &format!("Bearer {}", self.token))
            .set("accept", "application/json");
        let sent = match body {
            Some(b) => req
                .set("content-type", "application/json")
                .send_string(&b.to_string()),
            None => req.call(),
        };
        let resp = match sent {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            // A transport error names the URL, never the header.
            Err(e) => return Err(Failure(e.to_string())),
        };
        let status = resp.status();
        // Read whole: an export can pass ureq's 10 MB `into_string` limit.
        let mut text = String::new();
        resp.into_reader()
            .read_to_string(&mut text)
            .map_err(|e| Failure(format!("{}: reading the answer: {e}", self.shown())))?;
        if !(200..300).contains(&status) {
            return Err(Failure(refusal(status, &text, &self.shown())));
        }
        serde_json::from_str(&text).map_err(|_| {
            Failure(format!(
                "{}: the admin API answered {status} with something other than JSON",
                self.shown()
            ))
        })
    }
}

/// What an error status means to an operator. A 404 is what every admin
/// path answers without a valid credential (the API hides itself, as a
/// path that does not exist: JSON-RPC -32600), so it is read as that,
/// unless it is the API's own "no such call" (-32602).
fn refusal(status: u16, body: &str, origin: &str) -> String {
    let error = serde_json::from_str::<Value>(body).ok().map(|v| {
        // A JSON-RPC error response, or the bare error object.
        if v.get("error").is_some() {
            v["error"].clone()
        } else {
            v
        }
    });
    let said = error
        .as_ref()
        .and_then(|e| e["message"].as_str())
        .map(str::to_string);
    let code = error.as_ref().and_then(|e| e["code"].as_i64());
    match (status, said) {
        (404, Some(s)) if code == Some(INVALID_PARAMS) => s,
        (404, _) => {
            format!("no admin API at {origin} (is ADMIN_TOKENS set, and is the token right?)")
        }
        (403, _) => "signed in, but the token lacks the admin scope (mcp:admin)".to_string(),
        (401, said) => format!(
            "{origin} refused the token (401){}; sign in again with durable-mcp login",
            said.map(|s| format!(": {s}")).unwrap_or_default()
        ),
        (_, Some(s)) => format!("{s} ({status})"),
        (_, None) => format!("{origin} answered {status}"),
    }
}

/// The JSON-RPC code of a missing resource (a call not kept), as opposed
/// to a path that is not there.
const INVALID_PARAMS: i64 = -32602;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Writes to stdout, quietly stopping at a closed pipe (`… | head`), where
/// `print!` would panic.
fn emit(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn print_json(v: &Value) {
    emit(&(serde_json::to_string_pretty(v).unwrap_or_default() + "\n"));
}

/// The answer read as one of the model's shapes.
fn read<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, Failure> {
    serde_json::from_value(v)
        .map_err(|e| Failure(format!("an admin answer this CLI cannot read: {e}")))
}

fn execute(api: &Api, inv: &Invocation) -> Result<(), Failure> {
    match &inv.command {
        Command::List { filter, limit, all } => list(api, filter, *limit, *all, inv.json),
        Command::Show(id) => {
            let v = api.get(&api.url(&["calls", id]))?;
            if inv.json {
                print_json(&v);
            } else {
                emit(&show::render(&read(v)?, now_ms()));
            }
            Ok(())
        }
        Command::Cancel(target) => {
            let v = api.post(&api.url(&["calls", "cancel"]), &target.body())?;
            done(v, inv.json, "cancelled")
        }
        Command::Hold(ids, hold) => {
            let action = if *hold { "pause" } else { "resume" };
            let v = api.post(&api.url(&["calls", action]), &json!({ "ids": ids }))?;
            done(v, inv.json, if *hold { "paused" } else { "resumed" })
        }
        Command::Outside { id, key, answer } => {
            let (action, verb) = match answer {
                Some(_) => ("answer", "answered"),
                None => ("rewind", "asked again"),
            };
            let mut body = json!({ "id": id, "key": key });
            if let Some(a) = answer {
                body["answer"] = a.clone();
            }
            let v = api.post(&api.url(&["calls", action]), &body)?;
            done(v, inv.json, verb)
        }
        Command::Export { filter, out } => export(api, filter, out.as_deref()),
        Command::Purge {
            status,
            older_than_ms,
        } => {
            let mut body = json!({ "status": status });
            if let Some(ms) = older_than_ms {
                body["olderThanMs"] = json!(ms);
            }
            let v = api.post(&api.url(&["purge"]), &body)?;
            done(v, inv.json, "purged")
        }
        Command::Tools => {
            let v = api.get(&api.url(&["tools"]))?;
            if inv.json {
                print_json(&v);
                return Ok(());
            }
            let tools: model::Tools = read(v)?;
            let width = tools.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
            for t in &tools.tools {
                let state = if t.paused { "paused" } else { "running" };
                emit(&format!("{:<width$}  {state}\n", t.name));
            }
            Ok(())
        }
        Command::Versions => {
            let v = api.get(&api.url(&["tools", "versions"]))?;
            if inv.json {
                print_json(&v);
            } else {
                emit(&versions::render(&read(v)?));
            }
            Ok(())
        }
        Command::Limits(principal) => {
            let url = match principal {
                Some(p) => api.url(&["limits", p]),
                None => api.url(&["limits"]),
            };
            let v = api.get(&url)?;
            if inv.json {
                print_json(&v);
            } else {
                emit(&limits::render(&v));
            }
            Ok(())
        }
        Command::Raise(principal, body) => {
            let v = api.post(&api.url(&["limits", principal]), body)?;
            if inv.json {
                print_json(&v);
            } else {
                emit(&limits::render(&v));
            }
            Ok(())
        }
        Command::Pause(name, pause) => {
            let op = if *pause { "pause" } else { "resume" };
            let v = api.post(&api.url(&["tools", name, op]), &json!({}))?;
            if inv.json {
                print_json(&v);
                return Ok(());
            }
            let t: model::ToolState = read(v)?;
            let tool = if t.name.is_empty() { name } else { &t.name };
            if t.paused {
                println!("{tool} is paused: its new calls and next rounds get 503 until resumed");
            } else {
                println!("{tool} runs again: its paused calls go on");
            }
            Ok(())
        }
        Command::Console { no_browser } => {
            let v = api.post(&api.url(&["console"]), &json!({}))?;
            if inv.json {
                print_json(&v);
                return Ok(());
            }
            let link = v["link"]
                .as_str()
                .ok_or_else(|| Failure("the console answer has no link".into()))?;
            let link = api
                .origin
                .join(link)
                .map_err(|e| Failure(format!("the console link {link}: {e}")))?;
            println!("{link}");
            eprintln!("(a one-time sign-in, valid 5 minutes)");
            let no_browser = *no_browser || std::env::var_os("DURABLE_MCP_NO_BROWSER").is_some();
            if !no_browser && webbrowser::open(link.as_str()).is_err() {
                eprintln!("(could not open a browser here: open the link yourself)");
            }
            Ok(())
        }
    }
}

/// `calls list`: one page, or every page with `--all` (the listing then
/// printed as one, its calls end to end).
fn list(
    api: &Api,
    filter: &Filter,
    limit: Option<u32>,
    all: bool,
    json: bool,
) -> Result<(), Failure> {
    let mut calls: Vec<Value> = Vec::new();
    let mut cursors: Vec<String> = Vec::new();
    let mut listing = loop {
        let mut pairs = filter.to_query();
        if let Some(n) = limit {
            pairs.push(("limit", n.to_string()));
        }
        if let Some(c) = cursors.last() {
            pairs.push(("cursor", c.clone()));
        }
        let mut url = api.url(&["calls"]);
        with_query(&mut url, &pairs);
        let page = api.get(&url)?;
        calls.extend(page["calls"].as_array().cloned().unwrap_or_default());
        match page["nextCursor"].as_str() {
            // A server handing back a cursor it gave before would loop.
            Some(c) if all && !cursors.iter().any(|k| k == c) => cursors.push(c.to_string()),
            _ => break page,
        }
    };
    if !cursors.is_empty() {
        listing["calls"] = Value::Array(calls);
        if let Some(o) = listing.as_object_mut() {
            o.remove("nextCursor");
        }
    }
    if json {
        print_json(&listing);
        return Ok(());
    }
    let listing: model::Listing = read(listing)?;
    if let Some(t) = table::table(&listing) {
        emit(&(t + "\n"));
    }
    emit(&table::summary(&listing, listing.calls.len()));
    Ok(())
}

/// `calls export`: the JSON array to `out` (else stdout), the count on
/// stderr so stdout stays the file.
fn export(api: &Api, filter: &Filter, out: Option<&Path>) -> Result<(), Failure> {
    let mut url = api.url(&["export"]);
    with_query(&mut url, &filter.to_query());
    let v = api.get(&url)?;
    let n = v
        .as_array()
        .map(Vec::len)
        .ok_or_else(|| Failure("the export is not a JSON array".into()))?;
    let text = serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
    let to = match out {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| Failure(format!("{}: {e}", path.display())))?;
            path.display().to_string()
        }
        None => {
            std::io::stdout()
                .write_all(text.as_bytes())
                .map_err(|e| Failure(format!("stdout: {e}")))?;
            "stdout".to_string()
        }
    };
    eprintln!(
        "exported {n} paused {} to {to}",
        if n == 1 { "call" } else { "calls" }
    );
    Ok(())
}

/// A cancel's or a purge's outcome, id by id, then the tally.
fn done(v: Value, json: bool, verb: &str) -> Result<(), Failure> {
    if json {
        print_json(&v);
        return Ok(());
    }
    emit(&tally(&read(v)?, verb));
    Ok(())
}

fn tally(d: &model::Done, verb: &str) -> String {
    let mut out = String::new();
    for id in &d.done {
        out.push_str(&format!("{verb} {id}\n"));
    }
    for (id, why) in &d.skipped {
        out.push_str(&format!("skipped {id}: {why}\n"));
    }
    out.push_str(&format!(
        "{} {verb}, {} skipped\n",
        d.done.len(),
        d.skipped.len()
    ));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn command(s: &str) -> Result<Command, String> {
        parse(&args(s)).map(|i| i.command).map_err(|Usage(m)| m)
    }

    #[test]
    fn list_takes_every_filter_flag_and_the_age_as_ms() {
        let inv = parse(&args(
            "http://h:8787/mcp calls list --tool deploy --status waiting,parked \
             --principal ada --kind durable --older-than=1h --limit 50 --all --json",
        ))
        .ok()
        .unwrap();
        assert_eq!(inv.url, "http://h:8787/mcp");
        assert!(inv.json);
        assert_eq!(
            inv.command,
            Command::List {
                filter: Filter {
                    tool: Some("deploy".into()),
                    status: vec!["waiting".into(), "parked".into()],
                    principal: Some("ada".into()),
                    kind: Some("durable".into()),
                    older_than_ms: Some(3_600_000),
                },
                limit: Some(50),
                all: true,
            }
        );
        assert!(command("http://h calls list --out x").is_err());
        assert!(command("http://h calls list --limit 0").is_err());
        assert!(command("http://h calls lst").is_err());
    }

    #[test]
    fn cancel_by_filter_needs_a_filter_or_all() {
        let refused = command("http://h calls cancel --filter").unwrap_err();
        assert!(refused.contains("every kept call"), "{refused}");
        // The refusal is a usage error, which main exits 64 for.
        assert!(matches!(
            parse(&args("http://h calls cancel --filter")),
            Err(Usage(_))
        ));
        assert_eq!(
            command("http://h calls cancel --filter --all").ok(),
            Some(Command::Cancel(Cancel::All))
        );
        assert!(command("http://h calls cancel").is_err());
        assert!(command("http://h calls cancel --tool deploy").is_err());
        assert!(command("http://h calls cancel d.1 --filter --tool x").is_err());
        assert!(command("http://h calls cancel d.1 --all").is_err());
        assert!(command("http://h calls cancel --filter --tool x --all").is_err());
    }

    #[test]
    fn answer_and_rewind_name_a_call_and_its_question() {
        match command(r#"http://h calls answer d.1 ok {"action":"accept","content":{}}"#) {
            Ok(Command::Outside { id, key, answer }) => {
                assert_eq!((id.as_str(), key.as_str()), ("d.1", "ok"));
                assert_eq!(answer, Some(json!({"action": "accept", "content": {}})));
            }
            _ => panic!("an answer"),
        }
        assert!(matches!(
            command("http://h calls rewind t.2 a"),
            Ok(Command::Outside { answer: None, .. })
        ));
        assert!(command("http://h calls answer d.1 ok").is_err());
        assert!(command("http://h calls answer d.1 ok {nope").is_err());
        assert!(command("http://h calls rewind d.1").is_err());
    }

    #[test]
    fn pause_and_resume_name_their_calls() {
        assert_eq!(
            command("http://h calls pause d.1 t.2").ok(),
            Some(Command::Hold(vec!["d.1".into(), "t.2".into()], true))
        );
        assert_eq!(
            command("http://h calls resume d.1").ok(),
            Some(Command::Hold(vec!["d.1".into()], false))
        );
        assert!(command("http://h calls pause").is_err());
        assert!(command("http://h calls resume d.1 --tool x").is_err());
    }

    #[test]
    fn cancel_bodies_hold_the_ids_or_the_filter() {
        let by_ids = command("http://h calls cancel d.1 s.ab.2").unwrap();
        let Command::Cancel(t) = by_ids else {
            panic!("not a cancel")
        };
        assert_eq!(t.body(), json!({"ids": ["d.1", "s.ab.2"]}));
        assert_eq!(Cancel::All.body(), json!({"filter": {}, "all": true}));
        let by_filter = command(
            "http://h calls cancel --filter --tool deploy --status waiting --older-than 2d",
        )
        .unwrap();
        let Command::Cancel(t) = by_filter else {
            panic!("not a cancel")
        };
        assert_eq!(
            t.body(),
            json!({"filter": {"tool": "deploy", "status": ["waiting"], "olderThanMs": 172_800_000}})
        );
    }

    #[test]
    fn purge_defaults_to_finished_calls_and_refuses_paused_ones() {
        assert_eq!(
            command("http://h calls purge --older-than 7d").ok(),
            Some(Command::Purge {
                status: vec!["completed".into(), "failed".into(), "cancelled".into()],
                older_than_ms: Some(604_800_000),
            })
        );
        assert!(command("http://h calls purge --status waiting").is_err());
        // A filter flag purge does not take is refused, not ignored.
        assert!(command("http://h calls purge --tool deploy").is_err());
    }

    #[test]
    fn the_other_commands_parse() {
        assert_eq!(
            command("http://h calls show d.1").ok(),
            Some(Command::Show("d.1".into()))
        );
        assert!(command("http://h calls show").is_err());
        assert_eq!(command("http://h tools").ok(), Some(Command::Tools));
        assert_eq!(
            command("http://h tools versions --json").ok(),
            Some(Command::Versions)
        );
        assert!(command("http://h tools versions deploy").is_err());
        assert_eq!(command("http://h limits").ok(), Some(Command::Limits(None)));
        assert_eq!(
            command("http://h limits ada").ok(),
            Some(Command::Limits(Some("ada".into())))
        );
        assert_eq!(
            command(r#"http://h limits ada raise {"all":{"held":5}}"#).ok(),
            Some(Command::Raise("ada".into(), json!({"all": {"held": 5}})))
        );
        assert!(command("http://h limits ada raise not-json").is_err());
        assert!(command("http://h limits ada lower 1").is_err());
        assert!(command("http://h tools versions --tool deploy").is_err());
        assert_eq!(
            command("http://h tools resume deploy").ok(),
            Some(Command::Pause("deploy".into(), false))
        );
        assert_eq!(
            command("http://h calls export --tool t --out p.json").ok(),
            Some(Command::Export {
                filter: Filter {
                    tool: Some("t".into()),
                    ..Filter::default()
                },
                out: Some(PathBuf::from("p.json")),
            })
        );
        assert_eq!(
            command("http://h console --no-browser").ok(),
            Some(Command::Console { no_browser: true })
        );
        assert!(command("http://h").is_err());
        assert!(command("http://h console x").is_err());
        let inv = parse(&args("http://h tools --admin-token s3cret"))
            .ok()
            .unwrap();
        assert_eq!(inv.token.as_deref(), Some("s3cret"));
    }

    #[test]
    fn the_api_lives_under_the_origin_with_ids_encoded() {
        let o = origin("https://mcp.example.com:8443/some/mcp?x=1")
            .ok()
            .unwrap();
        assert_eq!(o.as_str(), "https://mcp.example.com:8443/");
        assert!(origin("ftp://h/x").is_err());
        assert!(origin("127.0.0.1:8787").is_err());
        let api = Api::new(o, "t".into());
        assert_eq!(api.shown(), "https://mcp.example.com:8443");
        assert_eq!(
            api.url(&["calls", "s.a/b c.1"]).as_str(),
            "https://mcp.example.com:8443/admin/api/calls/s.a%2Fb%20c.1"
        );
        assert_eq!(
            api.url(&["tools", "deploy", "pause"]).as_str(),
            "https://mcp.example.com:8443/admin/api/tools/deploy/pause"
        );
        assert_eq!(
            api.url(&["tools", "versions"]).as_str(),
            "https://mcp.example.com:8443/admin/api/tools/versions"
        );
    }

    #[test]
    fn refusals_say_what_to_check() {
        let o = "http://h:8787";
        let hidden = "no admin API at http://h:8787 (is ADMIN_TOKENS set, and is the token right?)";
        assert_eq!(refusal(404, "", o), hidden);
        // What the server answers a path that is not there (and an admin
        // path without a credential).
        let not_there = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Not found: /admin/api/calls is not an MCP endpoint; use /mcp"}}"#;
        assert_eq!(refusal(404, not_there, o), hidden);
        // A call that is not kept is the server's own word.
        let no_call = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"No call \"d.x\" is kept here"}}"#;
        assert_eq!(refusal(404, no_call, o), "No call \"d.x\" is kept here");
        assert_eq!(
            refusal(403, "{}", o),
            "signed in, but the token lacks the admin scope (mcp:admin)"
        );
        let body =
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"unknown status: x"}}"#;
        assert_eq!(refusal(400, body, o), "unknown status: x (400)");
        assert_eq!(
            refusal(409, r#"{"code":-32603,"message":"busy"}"#, o),
            "busy (409)"
        );
        assert_eq!(refusal(502, "<html>", o), "http://h:8787 answered 502");
    }

    #[test]
    fn the_credential_is_the_flag_then_the_environment_then_the_sign_in() {
        let never = || -> Option<String> { panic!("the store was read") };
        assert_eq!(
            credential(Some("a".into()), Some("b".into()), never).as_deref(),
            Some("a")
        );
        assert_eq!(
            credential(None, Some("b".into()), never).as_deref(),
            Some("b")
        );
        assert_eq!(
            credential(None, None, || Some("c".into())).as_deref(),
            Some("c")
        );
    }

    #[test]
    fn a_kept_sign_in_is_found_for_the_origin_too() {
        use durable_mcp_client::oauth::{Grant, Registration, TokenStore};
        let dir = std::env::temp_dir().join(format!("dmcp-admin-{}", std::process::id()));
        let server = "http://127.0.0.1:9/mcp";
        FileStore::new(&dir)
            .save(
                server,
                &Grant {
                    resource: server.into(),
                    issuer: "http://as".into(),
                    token_endpoint: "http://as/token".into(),
                    client: Registration {
                        client_id: "c".into(),
                        client_secret: None,
                        auth_method: "none".into(),
                    },
                    access_token: "kept-token".into(),
                    refresh_token: None,
                    expires_at: None,
                    scopes: vec!["mcp:admin".into()],
                },
            )
            .unwrap();
        let o = origin("http://127.0.0.1:9").ok().unwrap();
        assert_eq!(
            stored_token("http://127.0.0.1:9", &o, &dir).as_deref(),
            Some("kept-token")
        );
        assert_eq!(
            stored_token(server, &o, &dir).as_deref(),
            Some("kept-token")
        );
        let elsewhere = origin("http://127.0.0.1:10").ok().unwrap();
        assert_eq!(
            stored_token("http://127.0.0.1:10/mcp", &elsewhere, &dir),
            None
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_tally_lists_done_and_skipped() {
        let d: model::Done = serde_json::from_value(json!({
            "done": ["d.1", "t.2"], "skipped": {"d.3": "already completed"}
        }))
        .unwrap();
        assert_eq!(
            tally(&d, "cancelled"),
            "cancelled d.1\ncancelled t.2\nskipped d.3: already completed\n2 cancelled, 1 skipped\n"
        );
    }
}
