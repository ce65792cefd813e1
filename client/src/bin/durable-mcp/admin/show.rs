//! `calls show` as a person reads it: a header (who, what, where, how
//! long it waited against how long it worked), the arguments, and the
//! timeline the server keeps: each round, the answers that came (values as
//! the server gives them: `[hidden]` unless the tool shows the key), the
//! effects that ran, what the call asks now.

use serde_json::Value;

use super::model::{Asked, CallDetail};
use super::table::{age, iso, span};

/// The whole view of `d`, at `now_ms` (for "how long ago").
pub(crate) fn render(d: &CallDetail, now_ms: u64) -> String {
    let s = &d.summary;
    let mut out = format!("{}  {}  {}\n", s.id, s.tool, s.status);
    let mut field = |name: &str, value: String| {
        if !value.is_empty() {
            out.push_str(&format!("  {name:<11}{value}\n"));
        }
    };
    field("kind", s.kind.clone());
    field(
        "principal",
        if s.principal.is_empty() {
            "(none: an open server)".into()
        } else {
            s.principal.clone()
        },
    );
    field("started", iso(s.created_ms));
    field(
        "updated",
        format!(
            "{} ({} ago)",
            iso(s.updated_ms),
            age(now_ms.saturating_sub(s.updated_ms))
        ),
    );
    field("round", s.round.to_string());
    let code = match d.code_versions.as_slice() {
        [] | [_] => s.code.clone(),
        all => format!("{} (ran on {})", s.code, all.join(", ")),
    };
    field("code", code);
    field("trace id", d.trace_id.clone());
    field(
        "waited",
        format!(
            "{} for the client, worked {}",
            span(d.waited_ms),
            span(d.worked_ms)
        ),
    );
    field("waiting on", s.waiting_on.join(", "));
    field("note", s.note.clone().unwrap_or_default());

    out.push_str("\narguments\n");
    let args = serde_json::to_string_pretty(&d.arguments).unwrap_or_default();
    for line in args.lines() {
        out.push_str(&format!("  {line}\n"));
    }

    out.push_str("\ntimeline\n");
    if d.rounds.is_empty() {
        out.push_str("  (no rounds recorded)\n");
    }
    for m in &d.rounds {
        let mut line = format!("  {}  round {}", iso(m.at_ms), m.round);
        if !m.code.is_empty() {
            line.push_str(&format!("  code {}", m.code));
        }
        line.push_str(&format!("  {}", m.end));
        if !m.asked.is_empty() {
            let asked: Vec<String> = m.asked.iter().map(question).collect();
            line.push_str(&format!("  asked {}", asked.join("; ")));
        }
        if let Some(why) = &m.why {
            line.push_str(&format!("  why: {why}"));
        }
        out.push_str(&line);
        out.push('\n');
    }

    if !d.answers.is_empty() {
        out.push_str("\nanswers\n");
        for a in &d.answers {
            let by =
                a.by.as_deref()
                    .map(|b| format!(" (by {b})"))
                    .unwrap_or_default();
            out.push_str(&format!(
                "  {}  {}  {}{by}  {}\n",
                iso(a.at_ms),
                a.key,
                a.outcome,
                value(&a.value)
            ));
        }
    }
    if !d.effects.is_empty() {
        out.push_str("\neffects\n");
        for e in &d.effects {
            out.push_str(&format!("  {}  {}\n", iso(e.at_ms), e.key));
        }
    }
    if !d.notes.is_empty() {
        out.push_str("\noperators\n");
        for n in &d.notes {
            out.push_str(&format!("  {}  {}\n", iso(n.at_ms), n.what));
        }
    }
    if !d.pending.is_empty() {
        out.push_str("\nasks now\n");
        for q in &d.pending {
            out.push_str(&format!("  {}\n", question(q)));
        }
    }
    out
}

/// `key (method: "message")`.
fn question(q: &Asked) -> String {
    match &q.message {
        Some(m) => format!("{} ({}: {m:?})", q.key, q.method),
        None => format!("{} ({})", q.key, q.method),
    }
}

/// An answer's value as the server gave it: its hiding marker bare, any
/// shown value as compact JSON.
fn value(v: &Value) -> String {
    match v {
        Value::String(s) if s == "[hidden]" => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: u64 = 1_700_000_000_000;

    fn sample() -> CallDetail {
        serde_json::from_value(json!({
            "id": "d.0a1b2c", "kind": "durable", "tool": "deploy", "status": "waiting",
            "principal": "ada", "createdMs": NOW - 600_000, "updatedMs": NOW - 300_000,
            "round": 2, "waitingOn": ["elicitation/create"], "code": "v2",
            "arguments": {"service": "api", "env": "prod"},
            "rounds": [
                // The server's trail marks may come snake_case.
                {"round": 1, "at_ms": NOW - 600_000, "code": "v1", "end": "paused",
                 "asked": [{"key": "ok", "method": "elicitation/create", "message": "Deploy api?"}]},
                {"round": 2, "atMs": NOW - 300_000, "code": "v2", "end": "paused",
                 "asked": [{"key": "again", "method": "elicitation/create"}]}
            ],
            "pending": [{"key": "again", "method": "elicitation/create"}],
            "answers": [
                {"key": "ok", "atMs": NOW - 400_000, "outcome": "accepted", "value": "[hidden]"},
                {"key": "region", "atMs": NOW - 390_000, "outcome": "answered",
                 "value": {"content": {"region": "eu"}}}
            ],
            "effects": [{"key": "notify", "atMs": NOW - 350_000}],
            "codeVersions": ["v1", "v2"],
            "waitedMs": 100_000, "workedMs": 200_000,
            "traceId": "4bf92f3577b34da6a3ce929d0e0e4736"
        }))
        .unwrap()
    }

    #[test]
    fn show_renders_the_header_timeline_and_a_hidden_answer() {
        let out = render(&sample(), NOW);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "d.0a1b2c  deploy  waiting");
        for want in [
            "  principal  ada",
            "  started    2023-11-14T22:03:20Z",
            "  updated    2023-11-14T22:08:20Z (5m ago)",
            "  code       v2 (ran on v1, v2)",
            "  trace id   4bf92f3577b34da6a3ce929d0e0e4736",
            "  waited     1m 40s for the client, worked 3m 20s",
            "  waiting on elicitation/create",
            "    \"env\": \"prod\",",
            "    \"service\": \"api\"",
            "  2023-11-14T22:03:20Z  round 1  code v1  paused  asked ok (elicitation/create: \"Deploy api?\")",
            "  2023-11-14T22:08:20Z  round 2  code v2  paused  asked again (elicitation/create)",
            "  2023-11-14T22:06:40Z  ok  accepted  [hidden]",
            "  2023-11-14T22:06:50Z  region  answered  {\"content\":{\"region\":\"eu\"}}",
            "  2023-11-14T22:07:30Z  notify",
        ] {
            assert!(lines.contains(&want), "no line {want:?} in:\n{out}");
        }
        // The sections come in order.
        let at = |s: &str| out.find(s).unwrap();
        assert!(at("\narguments\n") < at("\ntimeline\n"));
        assert!(at("\ntimeline\n") < at("\nanswers\n"));
        assert!(at("\nanswers\n") < at("\neffects\n"));
        assert!(at("\neffects\n") < at("\nasks now\n"));
    }

    #[test]
    fn an_empty_principal_and_no_rounds_say_so() {
        let d: CallDetail = serde_json::from_value(json!({
            "id": "t.9f", "kind": "task", "tool": "report", "status": "working",
            "principal": "", "arguments": {}, "rounds": [], "answers": [], "effects": []
        }))
        .unwrap();
        let out = render(&d, NOW);
        assert!(out.contains("  principal  (none: an open server)\n"));
        assert!(out.contains("  (no rounds recorded)\n"));
        assert!(!out.contains("\nanswers\n"));
    }
}
