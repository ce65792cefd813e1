//! What a finished round of a call tells an operator: one structured log
//! line ([`log_line`]) and one span in OTLP/JSON ([`span_line`]), both
//! built from a [`RoundEvent`]. Pure: no IO, no clock; the caller brings
//! the times and writes the lines where it likes (`console.log` in the
//! Worker).
//!
//! # The span
//!
//! It follows the MCP server span of OpenTelemetry's semantic conventions:
//! kind `SERVER`, named `{mcp.method.name} {target}` (`tools/call
//! get_weather`), with `mcp.method.name`, `gen_ai.tool.name` (or
//! `gen_ai.prompt.name`, `mcp.resource.uri`), `gen_ai.operation.name` =
//! `execute_tool` on a tool call, `mcp.protocol.version`, `mcp.session.id`,
//! `jsonrpc.request.id`, `rpc.response.status_code` and `error.type`; plus
//! this crate's own `durable_mcp.*` attributes.
//!
//! A call that pauses runs over many HTTP requests ("rounds"): each round
//! is one span, and every round of one call carries the same trace id (the
//! client's, from its `traceparent`, or [`trace_id_for`] the call), so the
//! call reads as one trace. A round's span id is [`span_id`]: derived from
//! the call and the round, so writing the same round twice gives the same
//! span.
//!
//! # What is never written
//!
//! The session id is a bearer capability and the principal's name is
//! personal: both appear only as short digests ([`session_digest`],
//! [`principal_digest`]). Nothing of a call's arguments, answers or results
//! is here.

mod json;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::protocol::Method;
use json::{Array, Object};

/// One round of a call, as it ended.
#[derive(Debug, Clone, Copy)]
pub struct RoundEvent<'a> {
    /// The call's id (not a secret).
    pub call_id: &'a str,
    /// The tool it runs (the prompt's name for `prompts/get`, the
    /// resource's URI for `resources/read`).
    pub tool: &'a str,
    /// The MCP method: `tools/call`, `prompts/get` …
    pub method: &'a str,
    /// The wire: `mrtr`, `saga`, `sketch`, `session` or `task`.
    pub wire: &'a str,
    /// The round's number (1 for the call's first run).
    pub round: u32,
    /// How it ended: `paused`, `completed`, `failed`, `parked` or
    /// `cancelled`.
    pub outcome: &'a str,
    /// When the call started (ms since the epoch).
    pub started_ms: u64,
    /// When this round began (ms since the epoch).
    pub round_start_ms: u64,
    /// When this round ended (ms since the epoch).
    pub at_ms: u64,
    /// How long the call has waited for the client so far, in ms.
    pub waited_ms: u64,
    /// The code version that ran the round (may be empty).
    pub code: &'a str,
    /// The principal's name: written only as [`principal_digest`].
    pub principal: &'a str,
    /// The trace id (32 lowercase hex digits). Anything else is replaced
    /// by [`trace_id_for`] the call.
    pub trace_id: &'a str,
    /// The client's span (16 lowercase hex digits, from its `traceparent`),
    /// the parent of this round's span. Anything else is left out.
    pub parent_span_id: Option<&'a str>,
    /// The MCP protocol version the client speaks.
    pub protocol_version: Option<&'a str>,
    /// The MCP session id: written only as [`session_digest`].
    pub session_id: Option<&'a str>,
    /// The JSON-RPC id of the request that ran the round.
    pub request_id: Option<&'a Value>,
    /// Why it failed: the JSON-RPC error code and a short, low-cardinality
    /// kind. A JSON-RPC error has its code (`-32603`); a tool that returned
    /// a result with `isError` has code `0` and kind `tool_error`.
    pub error: Option<(i64, &'a str)>,
    /// The methods the round asked the client (`elicitation/create` …), or
    /// a server-side pause (`durable-mcp/timer`).
    pub asked: &'a [String],
}

/// The scope every span is reported under.
const SCOPE: &str = "durable-mcp";

/// OTLP `SpanKind` `SPAN_KIND_SERVER`.
const KIND_SERVER: u8 = 2;
/// OTLP `StatusCode` `STATUS_CODE_OK`.
const STATUS_OK: u8 = 1;
/// OTLP `StatusCode` `STATUS_CODE_ERROR`.
const STATUS_ERROR: u8 = 2;

/// What a round's line and span both name, computed once a round (each
/// is a SHA-256).
struct Ids<'a> {
    trace: String,
    span: String,
    parent: Option<&'a str>,
    principal: String,
    session: Option<String>,
    request: Option<String>,
}

impl<'a> Ids<'a> {
    fn of(ev: &RoundEvent<'a>) -> Self {
        Self {
            trace: effective_trace_id(ev),
            span: span_id(ev.call_id, ev.round),
            parent: effective_parent(ev),
            principal: principal_digest(ev.principal),
            session: ev.session_id.map(session_digest),
            request: ev.request_id.and_then(request_id_text),
        }
    }
}

/// One line of JSON for the round: `level` (`error` for a failed round,
/// `warn` for a parked one, `info` otherwise), `msg`, `event`
/// (`mcp.round`), the call, the round, its times in ms (`activeMs`: this
/// round; `waitedMs`: waiting for the client so far; `elapsedMs`: since
/// the call started), `code`, `principal` (a digest), `traceId`, `spanId`;
/// and, when known, `parentSpanId`, `protocolVersion`, `session` (a
/// digest), `requestId`, `error` (`{code, kind}`) and `asked`.
pub fn log_line(ev: &RoundEvent) -> String {
    round_line(ev, "", false)
}

/// The round as one line that is both: [`log_line`]'s fields and, under
/// `otlp`, what [`span_line`] writes (when `span`). One `console.log` per
/// round instead of two: a pipeline posts the `otlp` field to
/// `/v1/traces` as it is.
pub fn round_line(ev: &RoundEvent, service_name: &str, span: bool) -> String {
    let ids = Ids::of(ev);
    let mut out = String::with_capacity(if span { 1536 } else { 512 });
    let mut line = Object::open(&mut out);
    log_fields(&mut line, ev, &ids);
    if span {
        span_into(line.object("otlp"), ev, service_name, &ids);
    }
    line.end();
    out
}

/// One line for an operator's act on one call (`act`: `pause`, `resume`,
/// `answer`, `rewind`), beside the rounds' lines: `event`
/// `mcp.operator`, the call's admin id, the question's key (if any), the
/// operator as a digest, and whether it was done (else why not).
pub fn operator_line(act: &str, call: &str, key: &str, operator: &str, outcome: &str) -> String {
    let mut out = String::with_capacity(256);
    let mut line = Object::open(&mut out);
    line.str("level", "info")
        .str("msg", "mcp operator")
        .str("event", "mcp.operator")
        .str("act", act)
        .str("call", call)
        .str("operator", &principal_digest(operator))
        .str("outcome", outcome);
    if !key.is_empty() {
        line.str("key", key);
    }
    line.end();
    out
}

fn log_fields(line: &mut Object, ev: &RoundEvent, ids: &Ids) {
    line.str("level", level(ev.outcome))
        .str("msg", "mcp round")
        .str("event", "mcp.round")
        .str("callId", ev.call_id)
        .str("tool", ev.tool)
        .str("method", ev.method)
        .str("wire", ev.wire)
        .num("round", ev.round)
        .str("outcome", ev.outcome)
        .num("atMs", ev.at_ms)
        .num("activeMs", ev.at_ms.saturating_sub(ev.round_start_ms))
        .num("waitedMs", ev.waited_ms)
        .num("elapsedMs", ev.at_ms.saturating_sub(ev.started_ms))
        .str("code", ev.code)
        .str("principal", &ids.principal)
        .str("traceId", &ids.trace)
        .str("spanId", &ids.span);
    if let Some(parent) = ids.parent {
        line.str("parentSpanId", parent);
    }
    if let Some(v) = ev.protocol_version {
        line.str("protocolVersion", v);
    }
    if let Some(s) = &ids.session {
        line.str("session", s);
    }
    if let Some(id) = &ids.request {
        line.str("requestId", id);
    }
    if let Some((code, kind)) = ev.error {
        let mut error = line.object("error");
        error.num("code", code).str("kind", kind);
        error.end();
    }
    if !ev.asked.is_empty() {
        let mut asked = line.array("asked");
        for m in ev.asked {
            asked.str(m);
        }
        asked.end();
    }
}

/// One line of OTLP/JSON (an `ExportTraceServiceRequest`, as an OTLP/HTTP
/// collector takes it at `/v1/traces`) holding the round's one span, under
/// a resource named `service_name` (`unknown_service` when empty) and the
/// scope `durable-mcp` at this crate's version.
///
/// The span runs from `round_start_ms` to `at_ms` (an end before the start
/// is taken as the start). Its status is `ERROR` (with the error's kind as
/// its message) for a failed round, `OK` otherwise: a paused, parked or
/// cancelled round is not an error.
pub fn span_line(ev: &RoundEvent, service_name: &str) -> String {
    let ids = Ids::of(ev);
    let mut out = String::with_capacity(1024);
    span_into(Object::open(&mut out), ev, service_name, &ids);
    out
}

/// Writes the span's `ExportTraceServiceRequest` into `request`, and ends it.
fn span_into(mut request: Object, ev: &RoundEvent, service_name: &str, ids: &Ids) {
    let service = if service_name.is_empty() {
        "unknown_service"
    } else {
        service_name
    };
    let start_ns = ms_to_ns(ev.round_start_ms);
    let end_ns = ms_to_ns(ev.at_ms).max(start_ns);
    let mut resource_spans = request.array("resourceSpans");
    let mut rs = resource_spans.object();
    {
        let mut resource = rs.object("resource");
        let mut attrs = resource.array("attributes");
        attr_str(&mut attrs, "service.name", service);
        attrs.end();
        resource.end();
    }
    let mut scope_spans = rs.array("scopeSpans");
    let mut ss = scope_spans.object();
    {
        let mut scope = ss.object("scope");
        scope
            .str("name", SCOPE)
            .str("version", env!("CARGO_PKG_VERSION"));
        scope.end();
    }
    let mut spans = ss.array("spans");
    let mut span = spans.object();
    span.str("traceId", &ids.trace).str("spanId", &ids.span);
    if let Some(parent) = ids.parent {
        span.str("parentSpanId", parent);
    }
    span.str("name", &span_name(ev))
        .num("kind", KIND_SERVER)
        .str("startTimeUnixNano", &start_ns.to_string())
        .str("endTimeUnixNano", &end_ns.to_string());
    let mut attrs = span.array("attributes");
    span_attributes(&mut attrs, ev, ids);
    attrs.end();
    let mut status = span.object("status");
    if failed(ev) {
        let message = ev.error.map(|(_, kind)| kind).unwrap_or_default();
        status.num("code", STATUS_ERROR).str("message", message);
    } else {
        status.num("code", STATUS_OK);
    }
    status.end();
    span.end();
    spans.end();
    ss.end();
    scope_spans.end();
    rs.end();
    resource_spans.end();
    request.end();
}

/// The span id of a call's round: 16 lowercase hex digits of a SHA-256 of
/// the call's id and the round, never all zeros. The same round always
/// gets the same id; each round its own.
pub fn span_id(call_id: &str, round: u32) -> String {
    let mut h = Sha256::new();
    h.update(b"durable-mcp span\0");
    h.update(call_id.as_bytes());
    h.update(b"\0");
    h.update(round.to_be_bytes());
    nonzero_hex(&h.finalize()[..8])
}

/// The trace id of a call whose client sent no `traceparent`: 32 lowercase
/// hex digits of a SHA-256 of the call's id, never all zeros, so every
/// round of the call lands in the same trace.
pub fn trace_id_for(call_id: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"durable-mcp trace\0");
    h.update(call_id.as_bytes());
    nonzero_hex(&h.finalize()[..16])
}

/// The trace id and the parent span id of a W3C `traceparent`
/// (`00-<32 hex>-<16 hex>-<2 hex>`), or `None`.
///
/// Strict about the form: the hex must be lowercase (uppercase is refused,
/// not normalized: the format says lowercase, and two spellings of one id
/// would not join), neither id may be all zeros, and version `ff` is
/// refused. Version `00` is exactly 55 characters; a higher version is read
/// by its first four fields when what follows them is nothing or a `-`.
/// Surrounding whitespace is ignored.
pub fn parse_traceparent(v: &str) -> Option<(String, String)> {
    let v = v.trim_matches(|c: char| c == ' ' || c == '\t');
    let b = v.as_bytes();
    if b.len() < 55 {
        return None;
    }
    let version = v.get(0..2)?;
    if !is_lower_hex(version) || version == "ff" {
        return None;
    }
    if version == "00" && b.len() != 55 {
        return None;
    }
    if b.len() > 55 && b[55] != b'-' {
        return None;
    }
    if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return None;
    }
    let trace = v.get(3..35)?;
    let parent = v.get(36..52)?;
    let flags = v.get(53..55)?;
    if !valid_id(trace, 32) || !valid_id(parent, 16) || !is_lower_hex(flags) {
        return None;
    }
    Some((trace.to_string(), parent.to_string()))
}

/// What a log or a span says of a principal: `""` for none, else `p:` and
/// 16 hex digits of the SHA-256 of its name. A name is no credential, but
/// it is personal: logs carry the digest, which still tells one principal
/// from another.
pub fn principal_digest(name: &str) -> String {
    if name.is_empty() {
        return String::new();
    }
    format!("p:{}", hex(&Sha256::digest(name.as_bytes())[..8]))
}

/// What a log or a span says of an MCP session: `""` for none, else `s:`
/// and 16 hex digits of a SHA-256 of its id. The id itself lets whoever
/// holds it speak in the session: it is never written.
pub fn session_digest(id: &str) -> String {
    if id.is_empty() {
        return String::new();
    }
    let mut h = Sha256::new();
    h.update(b"durable-mcp session\0");
    h.update(id.as_bytes());
    format!("s:{}", hex(&h.finalize()[..8]))
}

fn level(outcome: &str) -> &'static str {
    match outcome {
        "failed" => "error",
        "parked" => "warn",
        _ => "info",
    }
}

fn failed(ev: &RoundEvent) -> bool {
    ev.outcome == "failed"
}

/// The span's name: `{method} {target}`, the target a tool's or a prompt's
/// name; a resource's URI is no target (too many of them).
fn span_name(ev: &RoundEvent) -> String {
    if ev.tool.is_empty() || ev.method == Method::ResourcesRead.name() {
        ev.method.to_string()
    } else {
        format!("{} {}", ev.method, ev.tool)
    }
}

fn span_attributes(a: &mut Array, ev: &RoundEvent, ids: &Ids) {
    attr_str(a, "mcp.method.name", ev.method);
    if !ev.tool.is_empty() {
        match Method::parse(ev.method) {
            Some(Method::PromptsGet) => attr_str(a, "gen_ai.prompt.name", ev.tool),
            Some(Method::ResourcesRead) => attr_str(a, "mcp.resource.uri", ev.tool),
            _ => attr_str(a, "gen_ai.tool.name", ev.tool),
        }
    }
    if ev.method == Method::ToolsCall.name() {
        attr_str(a, "gen_ai.operation.name", "execute_tool");
    }
    attr_str(a, "network.protocol.name", "http");
    if let Some(v) = ev.protocol_version {
        attr_str(a, "mcp.protocol.version", v);
    }
    if let Some(s) = &ids.session {
        attr_str(a, "mcp.session.id", s);
    }
    if let Some(id) = &ids.request {
        attr_str(a, "jsonrpc.request.id", id);
    }
    if let Some(t) = error_type(ev) {
        attr_str(a, "error.type", &t);
    }
    if let Some((code, _)) = ev.error.filter(|(code, _)| *code != 0) {
        attr_str(a, "rpc.response.status_code", &code.to_string());
    }
    attr_str(a, "durable_mcp.call.id", ev.call_id);
    attr_int(a, "durable_mcp.round", u64::from(ev.round));
    attr_str(a, "durable_mcp.wire", ev.wire);
    attr_str(a, "durable_mcp.outcome", ev.outcome);
    attr_int(a, "durable_mcp.waited_ms", ev.waited_ms);
    attr_str(a, "durable_mcp.code_version", ev.code);
    if !ev.asked.is_empty() {
        let mut attr = a.object();
        attr.str("key", "durable_mcp.asked");
        let mut value = attr.object("value");
        let mut array = value.object("arrayValue");
        let mut values = array.array("values");
        for m in ev.asked {
            let mut v = values.object();
            v.str("stringValue", m);
            v.end();
        }
        values.end();
        array.end();
        value.end();
        attr.end();
    }
    if !ev.principal.is_empty() {
        attr_str(a, "enduser.id", &ids.principal);
    }
}

/// `error.type` of a failed round: the JSON-RPC error code as a string when
/// there is one, else the kind (`tool_error`), else `_OTHER`.
fn error_type(ev: &RoundEvent) -> Option<String> {
    if !failed(ev) {
        return None;
    }
    Some(match ev.error {
        Some((code, _)) if code != 0 => code.to_string(),
        Some((_, kind)) if !kind.is_empty() => kind.to_string(),
        _ => "_OTHER".to_string(),
    })
}

/// The trace id the round is written under: the given one when it is a
/// valid id, else the call's own.
fn effective_trace_id(ev: &RoundEvent) -> String {
    if valid_id(ev.trace_id, 32) {
        ev.trace_id.to_string()
    } else {
        trace_id_for(ev.call_id)
    }
}

fn effective_parent<'a>(ev: &RoundEvent<'a>) -> Option<&'a str> {
    ev.parent_span_id.filter(|p| valid_id(p, 16))
}

/// A JSON-RPC id as text: a string as it is, a number in decimal; none
/// for `null`.
fn request_id_text(id: &Value) -> Option<String> {
    match id {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn attr_str(a: &mut Array, key: &str, value: &str) {
    let mut attr = a.object();
    attr.str("key", key);
    let mut v = attr.object("value");
    v.str("stringValue", value);
    v.end();
    attr.end();
}

/// An integer attribute: OTLP/JSON writes a 64-bit integer as a decimal
/// string.
fn attr_int(a: &mut Array, key: &str, value: u64) {
    let n = i64::try_from(value).unwrap_or(i64::MAX);
    let mut attr = a.object();
    attr.str("key", key);
    let mut v = attr.object("value");
    v.str("intValue", &n.to_string());
    v.end();
    attr.end();
}

fn ms_to_ns(ms: u64) -> u64 {
    ms.saturating_mul(1_000_000)
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// `len` lowercase hex digits, not all zeros.
fn valid_id(s: &str, len: usize) -> bool {
    s.len() == len && is_lower_hex(s) && s.bytes().any(|c| c != b'0')
}

fn nonzero_hex(bytes: &[u8]) -> String {
    let mut out = hex(bytes);
    if out.bytes().all(|c| c == b'0') {
        out.pop();
        out.push('1');
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const PARENT: &str = "00f067aa0ba902b7";
    const SESSION: &str = "sess-9f8e7d6c5b4a39281706f5e4d3c2b1a0";
    const PRINCIPAL: &str = "alice@example.com";

    fn event<'a>(outcome: &'a str, round: u32, asked: &'a [String]) -> RoundEvent<'a> {
        RoundEvent {
            call_id: "call-123",
            tool: "get_weather",
            method: "tools/call",
            wire: "mrtr",
            round,
            outcome,
            started_ms: 1_700_000_000_000,
            round_start_ms: 1_700_000_005_000,
            at_ms: 1_700_000_005_250,
            waited_ms: 4_000,
            code: "v42",
            principal: PRINCIPAL,
            trace_id: TRACE,
            parent_span_id: Some(PARENT),
            protocol_version: Some("2025-11-25"),
            session_id: Some(SESSION),
            request_id: None,
            error: None,
            asked,
        }
    }

    fn parse(line: &str) -> Value {
        assert!(!line.contains('\n'), "one line: {line}");
        serde_json::from_str(line).expect("valid JSON")
    }

    fn the_span(line: &str) -> Value {
        let v = parse(line);
        v["resourceSpans"][0]["scopeSpans"][0]["spans"][0].clone()
    }

    fn attr<'v>(span: &'v Value, key: &str) -> Option<&'v Value> {
        span["attributes"]
            .as_array()?
            .iter()
            .find(|a| a["key"] == key)
            .map(|a| &a["value"])
    }

    // traceparent

    #[test]
    fn a_valid_traceparent_parses() {
        let tp = format!("00-{TRACE}-{PARENT}-01");
        assert_eq!(
            parse_traceparent(&tp),
            Some((TRACE.to_string(), PARENT.to_string()))
        );
        assert_eq!(
            parse_traceparent(&format!("  {tp}\t")),
            Some((TRACE.to_string(), PARENT.to_string())),
            "surrounding whitespace is ignored"
        );
        assert!(parse_traceparent(&format!("00-{TRACE}-{PARENT}-00")).is_some());
    }

    #[test]
    fn uppercase_hex_is_refused_not_normalized() {
        let upper = TRACE.to_uppercase();
        assert_eq!(parse_traceparent(&format!("00-{upper}-{PARENT}-01")), None);
        assert_eq!(
            parse_traceparent(&format!("00-{TRACE}-{}-01", PARENT.to_uppercase())),
            None
        );
        assert_eq!(parse_traceparent(&format!("00-{TRACE}-{PARENT}-0A")), None);
        assert_eq!(parse_traceparent(&format!("0A-{TRACE}-{PARENT}-01")), None);
    }

    #[test]
    fn all_zero_ids_are_refused() {
        let zt = "0".repeat(32);
        let zs = "0".repeat(16);
        assert_eq!(parse_traceparent(&format!("00-{zt}-{PARENT}-01")), None);
        assert_eq!(parse_traceparent(&format!("00-{TRACE}-{zs}-01")), None);
    }

    #[test]
    fn versions_are_checked() {
        assert_eq!(parse_traceparent(&format!("ff-{TRACE}-{PARENT}-01")), None);
        // Version 00 has exactly four fields.
        assert_eq!(
            parse_traceparent(&format!("00-{TRACE}-{PARENT}-01-extra")),
            None
        );
        // A higher version is read by its first four fields.
        assert_eq!(
            parse_traceparent(&format!("01-{TRACE}-{PARENT}-01-extra")),
            Some((TRACE.to_string(), PARENT.to_string()))
        );
        assert_eq!(
            parse_traceparent(&format!("01-{TRACE}-{PARENT}-01")),
            Some((TRACE.to_string(), PARENT.to_string()))
        );
        assert_eq!(parse_traceparent(&format!("01-{TRACE}-{PARENT}-01x")), None);
    }

    #[test]
    fn malformed_traceparents_are_refused_without_panicking() {
        let cases = [
            String::new(),
            "00".to_string(),
            format!("00-{TRACE}-{PARENT}-1"),
            format!("00-{}-{PARENT}-01", &TRACE[1..]),
            format!("00-{TRACE}0-{}-01", &PARENT[1..]),
            format!("00_{TRACE}-{PARENT}-01"),
            format!("00-{TRACE}_{PARENT}-01"),
            format!("00-{TRACE}-{PARENT}_01"),
            format!("00-{}g-{PARENT}-01", &TRACE[1..]),
            format!("00-{TRACE}-{PARENT}-0é"),
            format!("0é-{TRACE}-{PARENT}-01"),
            format!("00-{}é-{PARENT}-01", &TRACE[2..]),
            "é".repeat(40),
        ];
        for case in &cases {
            assert_eq!(parse_traceparent(case), None, "{case:?}");
        }
    }

    // ids

    #[test]
    fn span_ids_are_deterministic_and_differ_per_round() {
        let a = span_id("call-123", 1);
        assert_eq!(a, span_id("call-123", 1));
        assert_ne!(a, span_id("call-123", 2));
        assert_ne!(a, span_id("call-124", 1));
        assert!(valid_id(&a, 16), "{a}");
        assert!(valid_id(&span_id("", 0), 16));
    }

    #[test]
    fn a_call_has_one_trace_id() {
        let t = trace_id_for("call-123");
        assert_eq!(t, trace_id_for("call-123"));
        assert_ne!(t, trace_id_for("call-124"));
        assert!(valid_id(&t, 32), "{t}");
    }

    #[test]
    fn every_round_of_a_call_shares_the_trace() {
        let asked = Vec::new();
        let first = the_span(&span_line(&event("paused", 1, &asked), "svc"));
        let second = the_span(&span_line(&event("completed", 2, &asked), "svc"));
        assert_eq!(first["traceId"], TRACE);
        assert_eq!(second["traceId"], TRACE);
        assert_ne!(first["spanId"], second["spanId"]);

        // Without a client trace, the call's own id serves every round.
        let mut a = event("paused", 1, &asked);
        a.trace_id = "";
        a.parent_span_id = None;
        let mut b = event("completed", 2, &asked);
        b.trace_id = "";
        b.parent_span_id = None;
        let (a, b) = (
            the_span(&span_line(&a, "svc")),
            the_span(&span_line(&b, "svc")),
        );
        assert_eq!(a["traceId"], trace_id_for("call-123"));
        assert_eq!(a["traceId"], b["traceId"]);
        assert!(a.get("parentSpanId").is_none());
    }

    #[test]
    fn an_invalid_trace_or_parent_is_replaced_or_dropped() {
        let asked = Vec::new();
        let mut ev = event("paused", 1, &asked);
        ev.trace_id = "NOT-HEX";
        ev.parent_span_id = Some("0000000000000000");
        let span = the_span(&span_line(&ev, "svc"));
        assert_eq!(span["traceId"], trace_id_for("call-123"));
        assert!(span.get("parentSpanId").is_none());
        let log = parse(&log_line(&ev));
        assert_eq!(log["traceId"], span["traceId"]);
        assert!(log.get("parentSpanId").is_none());
    }

    #[test]
    fn digests() {
        assert_eq!(principal_digest(""), "");
        let d = principal_digest(PRINCIPAL);
        assert!(d.starts_with("p:") && d.len() == 18, "{d}");
        assert_eq!(d, principal_digest(PRINCIPAL));
        assert_ne!(d, principal_digest("bob"));
        let full = hex(&Sha256::digest(PRINCIPAL.as_bytes()));
        assert_eq!(&d[2..], &full[..16], "the first 16 hex of sha256(name)");
        assert_eq!(session_digest(""), "");
        let s = session_digest(SESSION);
        assert!(s.starts_with("s:") && s.len() == 18, "{s}");
    }

    // the span

    #[test]
    fn the_span_has_the_otlp_shape() {
        let asked = vec!["elicitation/create".to_string()];
        let mut ev = event("paused", 3, &asked);
        let id = json!(7);
        ev.request_id = Some(&id);
        let line = span_line(&ev, "weather-worker");
        let v = parse(&line);

        let rs = &v["resourceSpans"][0];
        assert_eq!(rs["resource"]["attributes"][0]["key"], "service.name");
        assert_eq!(
            rs["resource"]["attributes"][0]["value"]["stringValue"],
            "weather-worker"
        );
        let scope = &rs["scopeSpans"][0]["scope"];
        assert_eq!(scope["name"], "durable-mcp");
        assert_eq!(scope["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(
            rs["scopeSpans"][0]["spans"].as_array().map(Vec::len),
            Some(1)
        );

        let span = the_span(&line);
        assert_eq!(span["name"], "tools/call get_weather");
        assert_eq!(span["kind"], 2);
        assert_eq!(span["traceId"], TRACE);
        assert_eq!(span["spanId"], span_id("call-123", 3));
        assert_eq!(span["parentSpanId"], PARENT);
        assert_eq!(span["startTimeUnixNano"], "1700000005000000000");
        assert_eq!(span["endTimeUnixNano"], "1700000005250000000");
        assert_eq!(span["status"]["code"], 1, "a paused round is not an error");

        let s = |k: &str| attr(&span, k).map(|v| v["stringValue"].clone());
        assert_eq!(s("mcp.method.name"), Some(json!("tools/call")));
        assert_eq!(s("gen_ai.tool.name"), Some(json!("get_weather")));
        assert_eq!(s("gen_ai.operation.name"), Some(json!("execute_tool")));
        assert_eq!(s("mcp.protocol.version"), Some(json!("2025-11-25")));
        assert_eq!(s("mcp.session.id"), Some(json!(session_digest(SESSION))));
        assert_eq!(s("jsonrpc.request.id"), Some(json!("7")));
        assert_eq!(s("durable_mcp.call.id"), Some(json!("call-123")));
        assert_eq!(s("durable_mcp.wire"), Some(json!("mrtr")));
        assert_eq!(s("durable_mcp.outcome"), Some(json!("paused")));
        assert_eq!(s("durable_mcp.code_version"), Some(json!("v42")));
        assert_eq!(s("enduser.id"), Some(json!(principal_digest(PRINCIPAL))));
        assert_eq!(
            attr(&span, "durable_mcp.round"),
            Some(&json!({ "intValue": "3" }))
        );
        assert_eq!(
            attr(&span, "durable_mcp.waited_ms"),
            Some(&json!({ "intValue": "4000" }))
        );
        assert_eq!(
            attr(&span, "durable_mcp.asked").map(|v| &v["arrayValue"]["values"][0]["stringValue"]),
            Some(&json!("elicitation/create"))
        );
        assert!(attr(&span, "error.type").is_none());

        // Every attribute is {key, value: {one typed value}}.
        for a in span["attributes"].as_array().into_iter().flatten() {
            assert!(a["key"].is_string(), "{a}");
            assert_eq!(a["value"].as_object().map(Map::len), Some(1), "{a}");
        }

        // No raw secret or name in the span either.
        assert!(!line.contains(SESSION));
        assert!(!line.contains(PRINCIPAL));
    }

    #[test]
    fn a_failed_round_is_an_error_span() {
        let asked = Vec::new();
        let mut ev = event("failed", 2, &asked);
        ev.error = Some((-32603, "internal"));
        let span = the_span(&span_line(&ev, "svc"));
        assert_eq!(span["status"]["code"], 2);
        assert_eq!(span["status"]["message"], "internal");
        assert_eq!(
            attr(&span, "error.type").map(|v| &v["stringValue"]),
            Some(&json!("-32603"))
        );
        assert_eq!(
            attr(&span, "rpc.response.status_code").map(|v| &v["stringValue"]),
            Some(&json!("-32603"))
        );

        // A tool's error result: no JSON-RPC code, the kind is the type.
        ev.error = Some((0, "tool_error"));
        let span = the_span(&span_line(&ev, "svc"));
        assert_eq!(span["status"]["code"], 2);
        assert_eq!(
            attr(&span, "error.type").map(|v| &v["stringValue"]),
            Some(&json!("tool_error"))
        );
        assert!(attr(&span, "rpc.response.status_code").is_none());

        // Failed with nothing said: the fallback type.
        ev.error = None;
        let span = the_span(&span_line(&ev, "svc"));
        assert_eq!(span["status"]["code"], 2);
        assert_eq!(
            attr(&span, "error.type").map(|v| &v["stringValue"]),
            Some(&json!("_OTHER"))
        );
    }

    #[test]
    fn parked_and_cancelled_rounds_are_not_errors() {
        let asked = Vec::new();
        for outcome in ["parked", "cancelled", "completed"] {
            let span = the_span(&span_line(&event(outcome, 1, &asked), "svc"));
            assert_eq!(span["status"]["code"], 1, "{outcome}");
            assert!(attr(&span, "error.type").is_none(), "{outcome}");
        }
    }

    #[test]
    fn prompts_and_resources_name_their_target_by_the_conventions() {
        let asked = Vec::new();
        let mut ev = event("completed", 1, &asked);
        ev.method = "prompts/get";
        ev.tool = "analyze-code";
        let span = the_span(&span_line(&ev, "svc"));
        assert_eq!(span["name"], "prompts/get analyze-code");
        assert!(attr(&span, "gen_ai.prompt.name").is_some());
        assert!(attr(&span, "gen_ai.tool.name").is_none());
        assert!(attr(&span, "gen_ai.operation.name").is_none());

        ev.method = "resources/read";
        ev.tool = "file:///tmp/report.pdf";
        let span = the_span(&span_line(&ev, "svc"));
        assert_eq!(span["name"], "resources/read");
        assert_eq!(
            attr(&span, "mcp.resource.uri").map(|v| &v["stringValue"]),
            Some(&json!("file:///tmp/report.pdf"))
        );
    }

    #[test]
    fn odd_inputs_still_give_valid_lines() {
        let asked = vec!["a\"b\nc".to_string()];
        let mut ev = event("completed", u32::MAX, &asked);
        ev.tool = "we\"ird\ntool\u{0}";
        ev.call_id = "";
        ev.principal = "";
        ev.session_id = None;
        ev.started_ms = u64::MAX;
        ev.round_start_ms = u64::MAX;
        ev.at_ms = 0;
        ev.waited_ms = u64::MAX;
        let obj = json!({ "a": 1 });
        ev.request_id = Some(&obj);
        let span = the_span(&span_line(&ev, ""));
        assert_eq!(span["name"], "tools/call we\"ird\ntool\u{0}");
        assert_eq!(span["startTimeUnixNano"], u64::MAX.to_string());
        assert_eq!(span["endTimeUnixNano"], span["startTimeUnixNano"]);
        assert_eq!(
            attr(&span, "durable_mcp.waited_ms"),
            Some(&json!({ "intValue": i64::MAX.to_string() }))
        );
        assert!(attr(&span, "enduser.id").is_none());
        let log = parse(&log_line(&ev));
        assert_eq!(log["activeMs"], 0);
        assert_eq!(log["elapsedMs"], 0);
        assert_eq!(log["principal"], "");
        assert_eq!(log["asked"][0], "a\"b\nc");
        let v = parse(&span_line(&ev, ""));
        assert_eq!(
            v["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"],
            "unknown_service"
        );

        // A null id is no id; a string id is written as it is.
        let null = Value::Null;
        ev.request_id = Some(&null);
        assert!(attr(&the_span(&span_line(&ev, "svc")), "jsonrpc.request.id").is_none());
        let s = json!("req-7");
        ev.request_id = Some(&s);
        assert_eq!(parse(&log_line(&ev))["requestId"], "req-7");
    }

    // the log line

    #[test]
    fn the_log_line_has_the_fields() {
        let asked = vec!["elicitation/create".to_string()];
        let ev = event("paused", 2, &asked);
        let log = parse(&log_line(&ev));
        assert_eq!(log["level"], "info");
        assert_eq!(log["msg"], "mcp round");
        assert_eq!(log["event"], "mcp.round");
        assert_eq!(log["callId"], "call-123");
        assert_eq!(log["tool"], "get_weather");
        assert_eq!(log["method"], "tools/call");
        assert_eq!(log["wire"], "mrtr");
        assert_eq!(log["round"], 2);
        assert_eq!(log["outcome"], "paused");
        assert_eq!(log["activeMs"], 250);
        assert_eq!(log["waitedMs"], 4000);
        assert_eq!(log["elapsedMs"], 5250);
        assert_eq!(log["code"], "v42");
        assert_eq!(log["principal"], principal_digest(PRINCIPAL));
        assert_eq!(log["traceId"], TRACE);
        assert_eq!(log["spanId"], span_id("call-123", 2));
        assert_eq!(log["parentSpanId"], PARENT);
        assert_eq!(log["protocolVersion"], "2025-11-25");
        assert_eq!(log["session"], session_digest(SESSION));
        assert_eq!(log["asked"], json!(["elicitation/create"]));
        assert!(log.get("error").is_none());
    }

    #[test]
    fn the_log_line_never_holds_the_principal_or_the_session() {
        let asked = Vec::new();
        for outcome in ["paused", "completed", "failed", "parked", "cancelled"] {
            let mut ev = event(outcome, 1, &asked);
            ev.error = Some((-32603, "internal"));
            let line = log_line(&ev);
            assert!(!line.contains(PRINCIPAL), "{line}");
            assert!(!line.contains("alice"), "{line}");
            assert!(!line.contains(SESSION), "{line}");
            assert!(!line.contains("9f8e7d6c5b4a"), "{line}");
            let span = span_line(&ev, "svc");
            assert!(!span.contains(PRINCIPAL) && !span.contains(SESSION));
        }
    }

    #[test]
    fn log_levels_follow_the_outcome() {
        let asked = Vec::new();
        let lvl = |o: &str| parse(&log_line(&event(o, 1, &asked)))["level"].clone();
        assert_eq!(lvl("failed"), "error");
        assert_eq!(lvl("parked"), "warn");
        assert_eq!(lvl("paused"), "info");
        assert_eq!(lvl("completed"), "info");
        assert_eq!(lvl("cancelled"), "info");

        let mut ev = event("failed", 1, &asked);
        ev.error = Some((0, "tool_error"));
        let log = parse(&log_line(&ev));
        assert_eq!(log["error"], json!({ "code": 0, "kind": "tool_error" }));
    }

    #[test]
    fn one_line_a_round_carries_the_log_fields_and_the_span() {
        let asked = vec!["elicitation/create".to_string()];
        let ev = event("paused", 2, &asked);
        let line: Value = serde_json::from_str(&round_line(&ev, "svc", true)).expect("JSON");
        let log: Value = serde_json::from_str(&log_line(&ev)).expect("JSON");
        let span: Value = serde_json::from_str(&span_line(&ev, "svc")).expect("JSON");
        assert_eq!(line["event"], "mcp.round");
        assert_eq!(line["otlp"], span, "the span as span_line writes it");
        for (k, v) in log.as_object().expect("an object") {
            assert_eq!(&line[k], v, "{k}");
        }
        let bare: Value = serde_json::from_str(&round_line(&ev, "svc", false)).expect("JSON");
        assert!(bare.get("otlp").is_none());
        assert_eq!(bare, log);
    }
}
