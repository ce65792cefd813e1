//! Server configuration, read from Worker vars and secrets by the glue (or
//! built directly in tests).

use crate::http::AllowList;
use crate::token::KeyRing;

/// How a server behaves. Every field has a safe default.
#[derive(Debug, Clone)]
pub struct Config {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// Optional instructions for the model.
    pub instructions: Option<String>,
    /// Allowed `Origin`s (empty: same-origin only).
    pub allowed_origins: AllowList,
    /// Allowed `Host`s (empty: not checked).
    pub allowed_hosts: AllowList,
    /// Bodies over this many bytes get 413.
    pub max_body_bytes: usize,
    /// The most a kept call may hold (its answers and effects' outputs):
    /// past it, the call fails once (`MAX_CALL_BYTES`; 64 MiB by default).
    pub max_call_bytes: u64,
    /// Keys for sealed state; empty refuses stateful calls.
    pub keys: KeyRing,
    /// How callers sign in (`API_TOKENS`, `OAUTH_ISSUER` …,
    /// `OAUTH_WRAPPER`); open by default.
    pub sign_in: crate::auth::SignIn,
    /// How long a paused call's state stays valid, in ms.
    pub state_ttl_ms: u64,
    /// `ttlMs` on list results and `resources/read`.
    pub list_ttl_ms: u64,
    /// Whether the conformance fixtures are served.
    pub fixtures: bool,
    /// An idle 2025-11-25 session is deleted after this many ms.
    pub session_ttl_ms: u64,
    /// SEP-1699 polling: close a call's SSE stream after the requests (with
    /// a `retry:` hint) instead of holding it open. On by default.
    pub sse_polling: bool,
    /// The `retry:` hint, in ms.
    pub sse_retry_ms: u64,
    /// `maxWait` of the resume policy of resumable requests, in ms.
    pub resume_max_wait_ms: u64,
    /// A claimed round older than this is taken to have died with its
    /// isolate (a crash, a deploy) and may be run again by a retry, in ms.
    /// Rounds that run longer than this can be run twice: keep it above
    /// your slowest round.
    pub claim_timeout_ms: u64,
    /// A task (and its storage) lives this long after it was created, in
    /// ms: its `ttlMs`.
    pub task_ttl_ms: u64,
    /// The `pollIntervalMs` a task suggests, in ms.
    pub task_poll_ms: u64,
    /// How many objects hold the `subscriptions/listen` streams. Streams
    /// are spread over them at random; every change is sent to each.
    pub listen_shards: u32,
    /// How many objects hold the durable calls: a new call goes to one of
    /// them at random, and its id names it, so changing this later moves
    /// only new calls. `0`: an object of its own for each call.
    pub call_shards: u32,
    /// How many shards each region has for new durable calls
    /// (`host/place.rs`): a call goes to one of its caller's region, opened
    /// with that region's location hint. `0`: no regions, every call in one
    /// of `call_shards`.
    pub call_shards_per_region: u32,
    /// The jurisdiction (`eu`, `us`, `fedramp`, `fedramp-high`) whose
    /// namespace holds every new durable call's shard, wherever its caller
    /// is. `None`: the caller's region.
    pub call_jurisdiction: Option<&'static str>,
    /// The Worker's version id (`[version_metadata]`, bound as
    /// `CF_VERSION_METADATA`), recorded with each round; empty when not bound.
    pub worker_version: String,
    /// How long a task the code cannot replay waits before its alarm tries
    /// again (`PARKED_RETRY_SECONDS`, default 60).
    pub parked_retry_ms: u64,
    /// Operators' bearer tokens and the name each stands for
    /// (`ADMIN_TOKENS`, the form of `API_TOKENS`); with OAuth on, a token
    /// with [`admin_scope`](Self::admin_scope) is an operator too. Neither:
    /// the admin paths do not exist.
    pub admin_tokens: Vec<(String, String)>,
    /// The OAuth scope that makes a signed-in user an operator
    /// (`ADMIN_SCOPE`, default `mcp:admin`).
    pub admin_scope: String,
    /// How long a finished durable call (completed, failed, cancelled)
    /// and a finished task are kept for operators, in ms
    /// (`RETAIN_COMPLETED_SECONDS`; default: as long as a paused call,
    /// `STATE_TTL_SECONDS`, and a task's `ttlMs`).
    pub retain_completed_ms: Option<u64>,
    /// The same for a failed task (`RETAIN_FAILED_SECONDS`; default as
    /// completed).
    pub retain_failed_ms: Option<u64>,
    /// Which rounds write a structured log line (`ROUND_LOGS`).
    pub round_logs: RoundLogs,
    /// The round's OTLP/JSON span in that line (`ROUND_SPANS`, default on;
    /// `0` off). With `ROUND_LOGS=0` the span is the line.
    pub round_spans: bool,
    /// Limits per principal and per tool from the `LIMITS` var (JSON,
    /// [`crate::limits::Policy::parse`]), over the code's, kind by kind.
    pub limits: Option<crate::limits::Policy>,
}

/// Which rounds write a log line (`ROUND_LOGS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundLogs {
    /// None (`0`): with `ROUND_SPANS` on, only the span is written.
    Off,
    /// Every round of a call the server keeps (durable, session, task):
    /// the default (`kept`).
    Kept,
    /// Every round of every call that pauses, stateless ones too (`all`).
    All,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            name: "durable-mcp".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            allowed_origins: AllowList::default(),
            allowed_hosts: AllowList::default(),
            max_body_bytes: 1 << 20,
            max_call_bytes: crate::store::log::CALL_CAP_BYTES,
            keys: KeyRing::default(),
            sign_in: crate::auth::SignIn::Open,
            state_ttl_ms: 60 * 60 * 1000,
            list_ttl_ms: 60 * 1000,
            fixtures: false,
            session_ttl_ms: 24 * 60 * 60 * 1000,
            sse_polling: true,
            sse_retry_ms: 1000,
            resume_max_wait_ms: 5 * 60 * 1000,
            claim_timeout_ms: 60 * 1000,
            task_ttl_ms: 60 * 60 * 1000,
            task_poll_ms: 500,
            listen_shards: 1,
            call_shards: 16,
            call_shards_per_region: 4,
            call_jurisdiction: None,
            worker_version: String::new(),
            parked_retry_ms: 60 * 1000,
            admin_tokens: Vec::new(),
            admin_scope: "mcp:admin".into(),
            retain_completed_ms: None,
            retain_failed_ms: None,
            round_logs: RoundLogs::Kept,
            round_spans: true,
            limits: None,
        }
    }
}

impl Config {
    /// Whether the admin API and console exist: an admin token is
    /// configured, or OAuth sign-in is on (a token with the admin scope).
    pub fn admin_enabled(&self) -> bool {
        !self.admin_tokens.is_empty() || self.sign_in.oauth().is_some()
    }

    /// Reads the configuration from a lookup of Worker vars/secrets by name.
    ///
    /// - `SERVER_NAME`, `SERVER_VERSION`, `INSTRUCTIONS`
    /// - `ALLOWED_ORIGINS`, `ALLOWED_HOSTS`: comma-separated (see [`AllowList`])
    /// - `MAX_BODY_BYTES`, `MAX_CALL_BYTES`, `STATE_TTL_SECONDS`, `LIST_TTL_SECONDS`
    /// - `STATE_KEYS` (secret): `kid:secret,…`, newest first
    /// - `API_TOKENS` (secret): `principal:token,…`; set, it makes bearer auth
    ///   required, and a malformed value is an error (the server refuses to
    ///   serve rather than run open)
    /// - `OAUTH_ISSUER` (turns OAuth on), `OAUTH_AUDIENCE`, `OAUTH_JWKS_URL`,
    ///   `OAUTH_SCOPES`: see [`crate::auth::OAuthConfig::from_lookup`]
    /// - `OAUTH_WRAPPER`: `workers-oauth-provider` when that library wraps
    ///   the Worker (the built-in authorization server)
    /// - `FIXTURES`: `1` serves the conformance fixtures
    /// - `SESSION_TTL_SECONDS`, `SSE_POLLING` (`0` holds streams open),
    ///   `SSE_RETRY_MS`, `RESUME_MAX_WAIT_SECONDS`
    /// - `CLAIM_TIMEOUT_SECONDS`: when a round that never finished may run again
    /// - `PARKED_RETRY_SECONDS`: how often a task the code cannot replay is
    ///   tried again (default 60)
    /// - `TASK_TTL_SECONDS`, `TASK_POLL_MS`: a task's `ttlMs` and `pollIntervalMs`
    /// - `LISTEN_SHARDS`: how many objects hold the listen streams (default 1)
    /// - `CALL_SHARDS`: how many objects hold the durable calls of no region
    ///   (default 16; `0`: one object per call)
    /// - `CALL_SHARDS_PER_REGION`: shards per region for new durable calls
    ///   (default 4; `0`: no regions); `CALL_JURISDICTION` (`eu`, `us`,
    ///   `fedramp`, `fedramp-high`): every new call's shard in that
    ///   jurisdiction (`docs/OPERATE.md`, "Where calls are kept")
    /// - `ADMIN_TOKENS` (secret), `ADMIN_SCOPE`: who may use the admin API
    ///   and console (`docs/OPERATE.md`); `RETAIN_COMPLETED_SECONDS`,
    ///   `RETAIN_FAILED_SECONDS`: how long finished calls stay listed
    /// - `ROUND_LOGS`: `kept` (default: each round of a durable, session or
    ///   task call writes a line), `all` (stateless rounds too), `0`;
    ///   `ROUND_SPANS`: `0` leaves the span out of the line
    /// - `LIMITS`: limits per principal and per tool, JSON
    ///   (`{"all": {"rate": "100/60s", "held": 20, "active": 4, "daily":
    ///   5000}, "tools": {…}, "principals": {"name": {…}}}`), over the code's
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut c = Self::default();
        if let Some(v) = get("SERVER_NAME") {
            c.name = v;
        }
        if let Some(v) = get("SERVER_VERSION") {
            c.version = v;
        }
        c.instructions = get("INSTRUCTIONS");
        if let Some(v) = get("ALLOWED_ORIGINS") {
            c.allowed_origins = AllowList::parse(&v);
        }
        if let Some(v) = get("ALLOWED_HOSTS") {
            c.allowed_hosts = AllowList::parse(&v);
        }
        let num = |name: &str| -> Result<Option<u64>, String> {
            get(name)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| format!("{name} must be a whole number"))
                })
                .transpose()
        };
        if let Some(n) = num("MAX_BODY_BYTES")? {
            c.max_body_bytes = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(n) = num("MAX_CALL_BYTES")? {
            // Above a small call (one row): smaller would refuse calls that
            // were always kept.
            if n <= crate::store::log::INLINE_BYTES {
                return Err(format!(
                    "MAX_CALL_BYTES must be more than {}",
                    crate::store::log::INLINE_BYTES
                ));
            }
            c.max_call_bytes = n;
        }
        if let Some(n) = num("STATE_TTL_SECONDS")? {
            c.state_ttl_ms = n.saturating_mul(1000);
        }
        if let Some(n) = num("LIST_TTL_SECONDS")? {
            c.list_ttl_ms = n.saturating_mul(1000);
        }
        if let Some(v) = get("STATE_KEYS") {
            c.keys = KeyRing::parse(&v)?;
        }
        c.sign_in = crate::auth::SignIn::from_lookup(&get)?;
        if let Some(n) = num("SESSION_TTL_SECONDS")? {
            c.session_ttl_ms = n.saturating_mul(1000);
        }
        if let Some(n) = num("SSE_RETRY_MS")? {
            c.sse_retry_ms = n;
        }
        if let Some(n) = num("RESUME_MAX_WAIT_SECONDS")? {
            c.resume_max_wait_ms = n.saturating_mul(1000);
        }
        if let Some(n) = num("PARKED_RETRY_SECONDS")? {
            c.parked_retry_ms = n.max(1).saturating_mul(1000);
        }
        if let Some(n) = num("CLAIM_TIMEOUT_SECONDS")? {
            c.claim_timeout_ms = n.saturating_mul(1000);
        }
        if let Some(n) = num("TASK_TTL_SECONDS")? {
            c.task_ttl_ms = n.saturating_mul(1000).max(1000);
        }
        if let Some(n) = num("TASK_POLL_MS")? {
            c.task_poll_ms = n.max(1);
        }
        if let Some(n) = num("LISTEN_SHARDS")? {
            c.listen_shards = u32::try_from(n.clamp(1, 64)).unwrap_or(1);
        }
        if let Some(n) = num("CALL_SHARDS")? {
            c.call_shards = u32::try_from(n.min(4096)).unwrap_or(16);
        }
        if let Some(n) = num("CALL_SHARDS_PER_REGION")? {
            c.call_shards_per_region = u32::try_from(n.min(4096)).unwrap_or(4);
        }
        if let Some(v) = get("CALL_JURISDICTION").filter(|v| !v.trim().is_empty()) {
            c.call_jurisdiction = Some(call_jurisdiction(v.trim(), &c)?);
        }
        if let Some(v) = get("LIMITS").filter(|v| !v.trim().is_empty()) {
            if !cfg!(any(feature = "limits", not(target_arch = "wasm32"))) {
                return Err("LIMITS is set, but this worker is built without durable-mcp's `limits` feature".into());
            }
            c.limits = Some(crate::limits::Policy::parse(&v)?);
        }
        if let Some(v) = get("ADMIN_TOKENS") {
            c.admin_tokens = crate::auth::parse_api_tokens(&v)
                .map_err(|e| e.replacen("API_TOKENS", "ADMIN_TOKENS", 1))?;
        }
        if let Some(v) = get("ADMIN_SCOPE").filter(|v| !v.trim().is_empty()) {
            c.admin_scope = v.trim().to_string();
        }
        if let Some(n) = num("RETAIN_COMPLETED_SECONDS")? {
            c.retain_completed_ms = Some(n.saturating_mul(1000));
        }
        if let Some(n) = num("RETAIN_FAILED_SECONDS")? {
            c.retain_failed_ms = Some(n.saturating_mul(1000));
        }
        let off = |name: &str| get(name).is_some_and(|v| matches!(v.trim(), "0" | "false" | "off"));
        c.round_logs = match get("ROUND_LOGS").as_deref().map(str::trim) {
            None | Some("" | "kept" | "1" | "true" | "on") => RoundLogs::Kept,
            Some("all") => RoundLogs::All,
            Some("0" | "false" | "off") => RoundLogs::Off,
            Some(other) => {
                return Err(format!(
                    "ROUND_LOGS must be kept (the default), all or 0, not {other:?}"
                ))
            }
        };
        c.round_spans = !off("ROUND_SPANS");
        if let Some(v) = get("SSE_POLLING") {
            c.sse_polling = !matches!(v.trim(), "0" | "false");
        }
        c.fixtures = get("FIXTURES").is_some_and(|v| v.trim() == "1" || v.trim() == "true");
        Ok(c)
    }
}

/// The jurisdictions a durable call's shard can be kept in
/// (`CALL_JURISDICTION`), as Cloudflare names them.
pub const JURISDICTIONS: [&str; 4] = ["eu", "us", "fedramp", "fedramp-high"];

/// `CALL_JURISDICTION` read: one of [`JURISDICTIONS`], with call shards to
/// keep calls in (an object per call would be made outside it).
fn call_jurisdiction(v: &str, c: &Config) -> Result<&'static str, String> {
    let Some(j) = JURISDICTIONS.iter().find(|j| **j == v) else {
        return Err(format!(
            "CALL_JURISDICTION must be one of {}, not {v:?}",
            JURISDICTIONS.join(", ")
        ));
    };
    if c.call_shards == 0 || c.call_shards_per_region == 0 {
        return Err(
            "CALL_JURISDICTION needs call shards (CALL_SHARDS and CALL_SHARDS_PER_REGION above 0)"
                .into(),
        );
    }
    Ok(j)
}

#[cfg(test)]
mod tests {
    use super::Config;

    fn with(name: &str, value: &str) -> Result<Config, String> {
        Config::from_lookup(|k| (k == name).then(|| value.to_string()))
    }

    #[test]
    fn a_jurisdiction_is_one_cloudflare_names_and_needs_shards() {
        assert_eq!(
            Config::from_lookup(|_| None).map(|c| c.call_shards_per_region),
            Ok(4)
        );
        assert_eq!(
            with("CALL_JURISDICTION", " eu ").map(|c| c.call_jurisdiction),
            Ok(Some("eu"))
        );
        assert!(with("CALL_JURISDICTION", "EU").is_err());
        assert!(with("CALL_JURISDICTION", "mars").is_err());
        let unsharded = Config::from_lookup(|n| match n {
            "CALL_JURISDICTION" => Some("eu".into()),
            "CALL_SHARDS" => Some("0".into()),
            _ => None,
        });
        assert!(unsharded.is_err());
    }

    #[test]
    fn call_shards_default_to_16_and_zero_means_one_object_per_call() {
        assert_eq!(Config::from_lookup(|_| None).map(|c| c.call_shards), Ok(16));
        assert_eq!(with("CALL_SHARDS", "0").map(|c| c.call_shards), Ok(0));
        assert_eq!(with("CALL_SHARDS", " 64 ").map(|c| c.call_shards), Ok(64));
        assert_eq!(
            with("CALL_SHARDS", "1000000").map(|c| c.call_shards),
            Ok(4096)
        );
        assert_eq!(
            with("CALL_SHARDS", "many").map(|c| c.call_shards),
            Err("CALL_SHARDS must be a whole number".to_string())
        );
    }

    #[test]
    fn auth_settings_that_do_not_fit_together_refuse_to_serve() {
        let with_all = |vars: &[(&str, &str)]| {
            Config::from_lookup(|k| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            })
        };
        let props = with_all(&[("OAUTH_WRAPPER", "workers-oauth-provider")]);
        assert!(props.is_ok_and(|c| matches!(c.sign_in, crate::auth::SignIn::Wrapper)));
        assert!(with_all(&[("OAUTH_WRAPPER", "other")]).is_err());
        assert!(with_all(&[
            ("OAUTH_WRAPPER", "workers-oauth-provider"),
            ("OAUTH_ISSUER", "https://id.example")
        ])
        .is_err());
        assert!(with_all(&[("API_TOKENS", "tokA,tokB")]).is_err());
        let both = with_all(&[
            ("API_TOKENS", "ci:tok-ci-1"),
            ("OAUTH_ISSUER", "https://id.example"),
        ]);
        assert!(
            both.is_ok_and(|c| c.sign_in.oauth().is_some() && c.sign_in.api_tokens().len() == 1)
        );
    }
}
