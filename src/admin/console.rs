//! The operator console at `/admin`: server-rendered HTML, pure functions
//! from the admin model to a page.
//!
//! The console is served under a strict CSP (`default-src 'none';
//! style-src 'unsafe-inline'; img-src data:; form-action 'self'; …`): no
//! script runs, so everything here is plain HTML, forms and inline SVG,
//! styled by one inline `<style>`. Every value that comes from data (tool
//! names, principals, arguments, messages, notes, ids, keys) passes
//! through [`escape`] (and [`enc`] first, where it goes into a URL): a
//! tool's code and a client's arguments are not the operator's.
//!
//! Actions are POST forms carrying the hidden `csrf` field the host
//! checks; the console itself only reads.

use serde_json::Value;

use super::model::{
    CallDetail, CallSummary, Filter, Kind, Listing, Policy, Standing, Status, VersionCalls,
    Versions, AGE_BUCKETS,
};
use crate::engine::{Asked, Mark, RoundEnd};
use crate::vec_map::VecSet;

// ---------------------------------------------------------------------
// Pages
// ---------------------------------------------------------------------

/// The overview: counts, the paused-by-age chart, the filter, one page of
/// calls, the tools an operator can pause or resume, and each tool's
/// versions with the calls on them.
pub(crate) fn overview(
    listing: &Listing,
    filter: &Filter,
    paused_tools: &[String],
    versions: &Versions,
    csrf: &str,
) -> String {
    let mut body = String::new();
    body.push_str("<h1>Paused calls</h1>\n");
    body.push_str(&status_cards(listing));
    body.push_str("<div class=\"row\">\n");
    body.push_str(&age_chart(listing));
    body.push_str(&tool_counts(listing));
    body.push_str("</div>\n");
    body.push_str(&filter_form(filter));
    body.push_str(&calls_table(listing));
    if let Some(cursor) = &listing.next_cursor {
        let mut query = filter_query(filter);
        query.push(("cursor", cursor.clone()));
        body.push_str(&format!(
            "<p><a href=\"{}\">Next page →</a></p>\n",
            escape(&href("/admin", &query))
        ));
    }
    body.push_str(&tools_section(listing, paused_tools, csrf));
    body.push_str(&versions_section(versions));
    body.push_str("<p><a href=\"/admin/limits\">Limits: each principal's usage →</a></p>\n");
    shell("durable-mcp — paused calls", &body)
}

/// Each principal's usage against its limits (`GET /admin/api/limits`'s
/// rows): `used/limit` per kind, a row for all its calls and one per
/// tool; the tasks waiting on a limit, linked.
pub(crate) fn limits_page(principals: &[serde_json::Value]) -> String {
    let mut body = String::from("<h1>Limits</h1>\n");
    if principals.is_empty() {
        body.push_str(
            "<p class=\"muted\">No principal is known (no API_TOKENS, none named in LIMITS).</p>\n",
        );
    } else {
        body.push_str(
            "<table class=\"limits\">\n<tr><th>Principal</th><th>Scope</th><th>Rate</th>\
             <th>Daily</th><th>Held</th><th>Active</th><th>Waiting</th></tr>\n",
        );
        for p in principals {
            body.push_str(&limit_rows(p));
        }
        body.push_str("</table>\n");
    }
    body.push_str("<p><a href=\"/admin\">← Back to the console</a></p>\n");
    shell("durable-mcp — limits", &body)
}

fn limit_rows(p: &serde_json::Value) -> String {
    let name = p["principal"].as_str().unwrap_or("");
    let name = if name.is_empty() { "(open)" } else { name };
    let cell = |s: &serde_json::Value, kind: &str| {
        let used = s[kind].as_u64().unwrap_or(0);
        let limit = &s["limits"][kind];
        let max =
            (limit.as_u64().map(|m| m.to_string())).or_else(|| limit.as_str().map(str::to_string));
        match max {
            Some(max) => format!("{used} / {}", escape(&max)),
            None => used.to_string(),
        }
    };
    let mut scopes = vec![("all calls".to_string(), &p["all"])];
    if let Some(tools) = p["tools"].as_object() {
        scopes.extend(tools.iter().map(|(t, s)| (format!("tool {t}"), s)));
    }
    let waiting: Vec<String> = (p["waiting"].as_array().into_iter().flatten())
        .filter_map(|w| w.as_str())
        .map(|id| {
            let link = format!("/admin/calls/{}", enc(id));
            format!(
                "<a href=\"{}\"><code>{}</code></a>",
                escape(&link),
                escape(id)
            )
        })
        .collect();
    let mut out = String::new();
    for (i, (scope, s)) in scopes.iter().enumerate() {
        let w = if i == 0 {
            waiting.join(" ")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{w}</td></tr>\n",
            escape(name),
            escape(scope),
            cell(s, "rate"),
            cell(s, "daily"),
            cell(s, "held"),
            cell(s, "active"),
        ));
    }
    out
}

/// One call, whole: facts, arguments, the rounds, answers and effects; a
/// cancel form while it can still be cancelled.
pub(crate) fn call_page(detail: &CallDetail, now_ms: u64, csrf: &str) -> String {
    let s = &detail.summary;
    let mut body = String::new();
    body.push_str("<p><a href=\"/admin\">← All calls</a></p>\n");
    body.push_str(&format!(
        "<h1>{} {}</h1>\n",
        escape(&s.tool),
        status_badge(s.status)
    ));

    body.push_str("<dl class=\"facts\">\n");
    let versions = if detail.code_versions.is_empty() {
        "—".to_string()
    } else {
        detail.code_versions.join(" → ")
    };
    let facts: [(&str, String); 12] = [
        ("Id", s.id.clone()),
        ("Kind", s.kind.as_str().to_string()),
        ("Tool", s.tool.clone()),
        ("Status", s.status.as_str().to_string()),
        ("Principal", principal_text(&s.principal).to_string()),
        ("Started", when(s.created_ms)),
        (
            "Updated",
            format!(
                "{} ({} ago)",
                when(s.updated_ms),
                age(now_ms.saturating_sub(s.updated_ms))
            ),
        ),
        ("Round", s.round.to_string()),
        ("Code versions", versions),
        ("Trace id", or_dash(&detail.trace_id).to_string()),
        ("Waited for the client", age(detail.waited_ms)),
        ("Worked", age(detail.worked_ms)),
    ];
    for (term, value) in &facts {
        body.push_str(&format!(
            "<dt>{}</dt><dd>{}</dd>\n",
            escape(term),
            escape(value)
        ));
    }
    if let Some(note) = &s.note {
        body.push_str(&format!("<dt>Note</dt><dd>{}</dd>\n", escape(note)));
    }
    body.push_str("</dl>\n");

    if !s.status.is_final() {
        // Paused by an operator (its note says so): resumed here.
        let held = s
            .note
            .as_deref()
            .is_some_and(|n| n.starts_with("paused by an operator"));
        let (action, label) = if held {
            ("resume", "Resume call")
        } else {
            ("pause", "Pause call")
        };
        body.push_str(&format!(
            "<form method=\"post\" action=\"{}\">{}\
             <button type=\"submit\">{label}</button></form>\n",
            escape(&format!("/admin/calls/{}/{action}", enc(&s.id))),
            csrf_field(csrf)
        ));
        body.push_str(&format!(
            "<form method=\"post\" action=\"{}\">{}\
             <button type=\"submit\" class=\"danger\">Cancel call</button></form>\n",
            escape(&format!("/admin/calls/{}/cancel", enc(&s.id))),
            csrf_field(csrf)
        ));
    }

    body.push_str("<h2>Arguments</h2>\n");
    body.push_str(&format!(
        "<pre>{}</pre>\n",
        escape(&pretty(&detail.arguments))
    ));

    if !detail.pending.is_empty() {
        body.push_str("<h2>Asks now</h2>\n<ul>\n");
        for a in &detail.pending {
            body.push_str(&format!("<li>{}", asked_text(a)));
            if !s.status.is_final() && !a.method.starts_with("durable-mcp/") {
                body.push_str(&answer_form(&s.id, &a.key, csrf));
            }
            body.push_str("</li>\n");
        }
        body.push_str("</ul>\n");
    }

    body.push_str("<h2>Rounds</h2>\n");
    if detail.rounds.is_empty() {
        body.push_str("<p class=\"muted\">No rounds recorded.</p>\n");
    } else {
        body.push_str("<ol class=\"timeline\">\n");
        for m in &detail.rounds {
            body.push_str(&round_item(m));
        }
        body.push_str("</ol>\n");
    }

    body.push_str("<h2>Answers</h2>\n");
    if detail.answers.is_empty() {
        body.push_str("<p class=\"muted\">None.</p>\n");
    } else {
        body.push_str(
            "<table>\n<tr><th>Key</th><th>When</th><th>Outcome</th><th>By</th><th>Value</th><th></th></tr>\n",
        );
        for a in &detail.answers {
            // The user changed their mind: ask again from this question.
            let again = if s.status.is_final() {
                String::new()
            } else {
                format!(
                    "<form method=\"post\" action=\"{}\">{}<input type=\"hidden\" name=\"key\" \
                     value=\"{}\"><button type=\"submit\">Ask again from here</button></form>",
                    escape(&format!("/admin/calls/{}/rewind", enc(&s.id))),
                    csrf_field(csrf),
                    escape(&a.key)
                )
            };
            body.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{again}</td></tr>\n",
                escape(&a.key),
                escape(&when(a.at_ms)),
                escape(&a.outcome),
                escape(a.by.as_deref().unwrap_or("client")),
                escape(&json_text(&a.value))
            ));
        }
        body.push_str("</table>\n");
    }

    body.push_str("<h2>Effects</h2>\n");
    if detail.effects.is_empty() {
        body.push_str("<p class=\"muted\">None.</p>\n");
    } else {
        body.push_str("<table>\n<tr><th>Key</th><th>When</th></tr>\n");
        for e in &detail.effects {
            body.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{}</td></tr>\n",
                escape(&e.key),
                escape(&when(e.at_ms))
            ));
        }
        body.push_str("</table>\n");
    }

    if !detail.notes.is_empty() {
        body.push_str("<h2>Operators</h2>\n<ul>\n");
        for n in &detail.notes {
            body.push_str(&format!(
                "<li>{}: {}</li>\n",
                escape(&when(n.at_ms)),
                escape(&n.what)
            ));
        }
        body.push_str("</ul>\n");
    }

    shell(&format!("durable-mcp — {}", s.id), &body)
}

/// The form that answers the question `key` on the call's behalf: the
/// answer as the client would send it (an elicitation's
/// `{"action": "accept", "content": {…}}`), prefilled with an accept.
fn answer_form(id: &str, key: &str, csrf: &str) -> String {
    format!(
        "<form method=\"post\" action=\"{}\">{}<input type=\"hidden\" name=\"key\" value=\"{}\">\
         <textarea name=\"answer\" rows=\"2\" cols=\"60\">{}</textarea>\
         <button type=\"submit\">Answer for the client</button></form>",
        escape(&format!("/admin/calls/{}/answer", enc(id))),
        csrf_field(csrf),
        escape(key),
        escape(r#"{"action": "accept", "content": {}}"#)
    )
}

/// A minimal page: the outcome of an action, or an error.
pub(crate) fn message_page(title: &str, message: &str) -> String {
    let body = format!(
        "<h1>{}</h1>\n<p>{}</p>\n<p><a href=\"/admin\">← Back to the console</a></p>\n",
        escape(title),
        escape(message)
    );
    shell(title, &body)
}

// ---------------------------------------------------------------------
// Escaping and URLs
// ---------------------------------------------------------------------

/// HTML-escapes `s` for text and for quoted attribute values alike: the
/// five characters that can end a text run or an attribute.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes `s` for a path segment or a query value: every byte but
/// the unreserved ones (`A-Za-z0-9-._~`), so `/`, `?`, `#`, `&` and `%` in
/// an id or a tool's name cannot change where a link goes.
pub(crate) fn enc(s: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
    out
}

/// `path?k=v&…` with each value encoded (not yet HTML-escaped).
fn href(path: &str, query: &[(&str, String)]) -> String {
    let mut out = path.to_string();
    for (i, (k, v)) in query.iter().enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        out.push_str(&enc(k));
        out.push('=');
        out.push_str(&enc(v));
    }
    out
}

/// The filter as the console's (and the API's) query names it, so a
/// "next page" link keeps what the operator narrowed to.
fn filter_query(filter: &Filter) -> Vec<(&'static str, String)> {
    let mut q = Vec::new();
    if let Some(t) = &filter.tool {
        q.push(("tool", t.clone()));
    }
    if !filter.status.is_empty() {
        q.push(("status", status_list(&filter.status)));
    }
    if let Some(p) = &filter.principal {
        q.push(("principal", p.clone()));
    }
    if let Some(k) = filter.kind {
        q.push(("kind", k.as_str().to_string()));
    }
    if let Some(ms) = filter.older_than_ms {
        q.push(("olderThan", duration_param(ms)));
    }
    q
}

// ---------------------------------------------------------------------
// Times
// ---------------------------------------------------------------------

/// `ms` since the epoch as ISO-8601 UTC to the second
/// (`2023-11-14T22:13:20Z`), with no date crate: days to a civil date.
pub(crate) fn iso(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, m, d) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of `days` after 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, for non-negative days only: a u64 clock
/// never goes before the epoch, so every step stays unsigned).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01, so a leap day ends each year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // March = 0
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// A time as shown: ISO-8601, or "unknown" for 0 (recorded before the
/// trail was).
fn when(ms: u64) -> String {
    if ms == 0 {
        "unknown".to_string()
    } else {
        iso(ms)
    }
}

/// A duration in its largest whole unit: `45s`, `12m`, `3h`, `2d`.
pub(crate) fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// A duration for the `olderThan` query: the largest unit that divides it
/// exactly (`1h`, `90s`), else plain ms, so a round trip keeps it exact.
fn duration_param(ms: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1000, "s"),
    ];
    UNITS
        .iter()
        .find(|(unit, _)| ms != 0 && ms.is_multiple_of(*unit))
        .map_or_else(|| ms.to_string(), |(unit, u)| format!("{}{u}", ms / unit))
}

// ---------------------------------------------------------------------
// Pieces of the overview
// ---------------------------------------------------------------------

/// A card per status (zeros included) and the total.
fn status_cards(listing: &Listing) -> String {
    let counts = &listing.counts;
    let mut out = String::from("<div class=\"cards\">\n");
    out.push_str(&format!(
        "<div class=\"card\"><div class=\"n\">{}</div>total</div>\n",
        counts.total
    ));
    for st in Status::ALL {
        let n = counts.by_status.get(st.as_str()).copied().unwrap_or(0);
        out.push_str(&format!(
            "<a class=\"card\" href=\"{}\"><div class=\"n\">{n}</div>{}</a>\n",
            escape(&href("/admin", &[("status", st.as_str().to_string())])),
            status_badge(st)
        ));
    }
    out.push_str("</div>\n");
    out
}

/// Calls by tool, each linking to the listing narrowed to it.
fn tool_counts(listing: &Listing) -> String {
    let mut out = String::from("<section>\n<h2>By tool</h2>\n");
    if listing.counts.by_tool.is_empty() {
        out.push_str("<p class=\"muted\">No calls kept.</p>\n");
    } else {
        out.push_str("<table>\n<tr><th>Tool</th><th>Calls</th></tr>\n");
        for (tool, n) in &listing.counts.by_tool {
            out.push_str(&format!(
                "<tr><td><a href=\"{}\">{}</a></td><td class=\"num\">{n}</td></tr>\n",
                escape(&href("/admin", &[("tool", tool.clone())])),
                escape(tool)
            ));
        }
        out.push_str("</table>\n");
    }
    out.push_str("</section>\n");
    out
}

/// Paused calls by age, as an inline SVG bar chart (no script, no image
/// fetch: the CSP allows neither). One bar per bucket, youngest first,
/// each labelled with its bucket and count.
fn age_chart(listing: &Listing) -> String {
    const BAR: u64 = 48;
    const GAP: u64 = 16;
    const PLOT: u64 = 100; // the tallest bar's height
    const TOP: u64 = 18; // room for the count above a bar
    const BOTTOM: u64 = 20; // room for the bucket's label
    let counts: Vec<(&str, usize)> = AGE_BUCKETS
        .iter()
        .map(|(b, _)| {
            let n = listing.counts.paused_by_age.get(*b).copied().unwrap_or(0);
            (*b, n)
        })
        .collect();
    let max = counts.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1);
    let width = GAP + (BAR + GAP) * AGE_BUCKETS.len() as u64;
    let height = TOP + PLOT + BOTTOM;

    let mut out = String::from("<section>\n<h2>Paused by age</h2>\n");
    out.push_str(&format!(
        "<svg class=\"chart\" role=\"img\" aria-label=\"Paused calls by age\" \
         width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">\n"
    ));
    for (i, (bucket, n)) in counts.iter().enumerate() {
        let x = GAP + (BAR + GAP) * i as u64;
        // u128: a count times the plot height cannot overflow.
        let mut h = (*n as u128 * u128::from(PLOT) / max as u128) as u64;
        if *n > 0 {
            h = h.max(2); // a non-empty bucket stays visible
        }
        let y = TOP + PLOT - h;
        let mid = x + BAR / 2;
        out.push_str(&format!(
            "<rect class=\"bar\" x=\"{x}\" y=\"{y}\" width=\"{BAR}\" height=\"{h}\">\
             <title>{}: {n}</title></rect>\n\
             <text x=\"{mid}\" y=\"{}\" text-anchor=\"middle\">{n}</text>\n\
             <text x=\"{mid}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
            escape(bucket),
            y.saturating_sub(4).max(12),
            TOP + PLOT + 15,
            escape(bucket)
        ));
    }
    out.push_str("</svg>\n</section>\n");
    out
}

/// The filter, a GET form pre-filled with what the listing is narrowed to.
fn filter_form(filter: &Filter) -> String {
    let mut out = String::from("<form class=\"filter\" method=\"get\" action=\"/admin\">\n");
    out.push_str(&text_input(
        "Tool",
        "tool",
        filter.tool.as_deref().unwrap_or(""),
    ));

    // One status per option; a filter of several (from a typed URL such
    // as `status=waiting,parked`) keeps its own option so it round-trips.
    let chosen = status_list(&filter.status);
    let mut options = vec![(String::new(), "any".to_string())];
    if filter.status.len() > 1 {
        options.push((chosen.clone(), chosen.clone()));
    }
    for st in Status::ALL {
        options.push((st.as_str().to_string(), st.as_str().to_string()));
    }
    out.push_str(&select("Status", "status", &options, &chosen));

    out.push_str(&text_input(
        "Principal",
        "principal",
        filter.principal.as_deref().unwrap_or(""),
    ));
    let kinds: Vec<(String, String)> = std::iter::once((String::new(), "any".to_string()))
        .chain(
            Kind::ALL
                .into_iter()
                .map(|k| (k.as_str().to_string(), k.as_str().to_string())),
        )
        .collect();
    let kind = filter.kind.map_or("", Kind::as_str);
    out.push_str(&select("Kind", "kind", &kinds, kind));
    let older = filter.older_than_ms.map(duration_param).unwrap_or_default();
    out.push_str(&text_input(
        "Older than (90s, 15m, 2h, 7d)",
        "olderThan",
        &older,
    ));
    out.push_str("<button type=\"submit\">Filter</button> <a href=\"/admin\">Clear</a>\n</form>\n");
    out
}

fn text_input(label: &str, name: &str, value: &str) -> String {
    format!(
        "<label>{} <input type=\"text\" name=\"{}\" value=\"{}\"></label>\n",
        escape(label),
        escape(name),
        escape(value)
    )
}

/// A `<select>` of `(value, label)` options with `chosen` selected.
fn select(label: &str, name: &str, options: &[(String, String)], chosen: &str) -> String {
    let mut out = format!(
        "<label>{} <select name=\"{}\">",
        escape(label),
        escape(name)
    );
    for (value, text) in options {
        let sel = if value == chosen { " selected" } else { "" };
        out.push_str(&format!(
            "<option value=\"{}\"{sel}>{}</option>",
            escape(value),
            escape(text)
        ));
    }
    out.push_str("</select></label>\n");
    out
}

/// The page of calls.
fn calls_table(listing: &Listing) -> String {
    let mut out = format!(
        "<h2>Calls</h2>\n<p class=\"muted\">{} match; showing {}.</p>\n",
        listing.matched,
        listing.calls.len()
    );
    out.push_str(
        "<table class=\"calls\">\n<tr><th>Id</th><th>Kind</th><th>Tool</th><th>Status</th>\
         <th>Principal</th><th>Round</th><th>Age</th><th>Waiting on</th><th>Note</th></tr>\n",
    );
    if listing.calls.is_empty() {
        out.push_str("<tr><td colspan=\"9\" class=\"muted\">No calls match.</td></tr>\n");
    }
    for c in &listing.calls {
        out.push_str(&call_row(c, listing.now_ms));
    }
    out.push_str("</table>\n");
    out
}

fn call_row(c: &CallSummary, now_ms: u64) -> String {
    format!(
        "<tr><td><a href=\"{}\"><code>{}</code></a></td><td>{}</td><td>{}</td><td>{}</td>\
         <td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>\n",
        escape(&format!("/admin/calls/{}", enc(&c.id))),
        escape(&c.id),
        escape(c.kind.as_str()),
        escape(&c.tool),
        status_badge(c.status),
        escape(principal_text(&c.principal)),
        c.round,
        escape(&age(now_ms.saturating_sub(c.updated_ms))),
        escape(&c.waiting_on.join(", ")),
        escape(c.note.as_deref().unwrap_or("")),
    )
}

/// Every tool that has calls or is paused, with the form that pauses or
/// resumes it.
fn tools_section(listing: &Listing, paused_tools: &[String], csrf: &str) -> String {
    let paused: VecSet<&str> = paused_tools.iter().map(String::as_str).collect();
    let tools: VecSet<&str> = listing
        .counts
        .by_tool
        .keys()
        .map(String::as_str)
        .chain(paused.iter().copied())
        .collect();
    let mut out = String::from("<h2>Tools</h2>\n");
    if tools.is_empty() {
        out.push_str("<p class=\"muted\">No tools with calls, none paused.</p>\n");
        return out;
    }
    out.push_str("<table>\n<tr><th>Tool</th><th>State</th><th></th></tr>\n");
    for tool in tools {
        let is_paused = paused.contains(tool);
        let (state, action, label) = if is_paused {
            (
                "<span class=\"badge st-parked\">paused</span>",
                "resume",
                "Resume tool",
            )
        } else {
            ("running", "pause", "Pause tool")
        };
        out.push_str(&format!(
            "<tr><td>{}</td><td>{state}</td><td><form method=\"post\" action=\"{}\">{}\
             <button type=\"submit\">{label}</button></form></td></tr>\n",
            escape(tool),
            escape(&format!("/admin/tools/{}/{action}", enc(tool))),
            csrf_field(csrf)
        ));
    }
    out.push_str("</table>\n");
    out
}

/// Per tool and version: what the code does with its calls (current,
/// kept, upgrades, missing: they park) and how many wait, work, are
/// parked; a kept version no call is on says it can be removed.
fn versions_section(versions: &Versions) -> String {
    let mut out = String::from("<h2>Tool versions</h2>\n");
    if versions.tools.iter().all(|t| t.versions.is_empty()) {
        out.push_str("<p class=\"muted\">No tool declares a version or has calls.</p>\n");
        return out;
    }
    out.push_str(
        "<table class=\"versions\">\n<tr><th>Tool</th><th>Policy</th><th>Version</th>\
         <th>Code</th><th>Waiting</th><th>Working</th><th>Parked</th></tr>\n",
    );
    for t in &versions.tools {
        let policy = match t.policy {
            Some(Policy::Pinned) => "pinned",
            Some(Policy::Upgrade) => "upgrade",
            None => "not served",
        };
        for v in &t.versions {
            out.push_str(&version_row(&t.tool, policy, v));
        }
    }
    out.push_str("</table>\n");
    out
}

fn version_row(tool: &str, policy: &str, v: &VersionCalls) -> String {
    let badge = match v.standing {
        Standing::Missing => "st-failed",
        Standing::Kept => "st-waiting",
        Standing::Upgrades => "st-cancelled",
        Standing::Current => "st-completed",
    };
    let removable = if v.removable() {
        " <span class=\"muted\">(no call left: can be removed)</span>"
    } else {
        ""
    };
    format!(
        "<tr><td><a href=\"{}\">{}</a></td><td>{policy}</td><td><code>{}</code></td>\
         <td><span class=\"badge {badge}\">{}</span>{removable}</td><td class=\"num\">{}</td>\
         <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
        escape(&href("/admin", &[("tool", tool.to_string())])),
        escape(tool),
        escape(or_dash(&v.version)),
        v.standing.as_str(),
        v.waiting,
        v.working,
        v.parked,
    )
}

// ---------------------------------------------------------------------
// Pieces of a call's page
// ---------------------------------------------------------------------

/// One round of the timeline.
fn round_item(m: &Mark) -> String {
    let mut out = format!(
        "<li><span class=\"muted\">{}</span> round {} {}",
        escape(&when(m.at_ms)),
        m.round,
        end_badge(m.end)
    );
    if !m.code.is_empty() {
        out.push_str(&format!(" on <code>{}</code>", escape(&m.code)));
    }
    if let Some(why) = &m.why {
        out.push_str(&format!(" — {}", escape(why)));
    }
    if !m.asked.is_empty() {
        out.push_str("\n<ul>\n");
        for a in &m.asked {
            out.push_str(&format!("<li>asked {}</li>\n", asked_text(a)));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</li>\n");
    out
}

/// A question: its key, method and (an elicitation's) message.
fn asked_text(a: &Asked) -> String {
    let mut out = format!(
        "<code>{}</code> via <code>{}</code>",
        escape(&a.key),
        escape(&a.method)
    );
    if let Some(msg) = &a.message {
        out.push_str(&format!(": “{}”", escape(msg)));
    }
    out
}

fn end_badge(end: RoundEnd) -> String {
    // A round's end, colored like the status it leads to.
    let (class, text) = match end {
        RoundEnd::Paused => ("waiting", "paused"),
        RoundEnd::Completed => ("completed", "completed"),
        RoundEnd::Failed => ("failed", "failed"),
        RoundEnd::Parked => ("parked", "parked"),
        RoundEnd::Cancelled => ("cancelled", "cancelled"),
    };
    format!("<span class=\"badge st-{class}\">{text}</span>")
}

// ---------------------------------------------------------------------
// Shared
// ---------------------------------------------------------------------

/// The hidden field every POST form carries; the host refuses a POST
/// without the session's value.
fn csrf_field(csrf: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        escape(csrf)
    )
}

fn status_badge(st: Status) -> String {
    let s = escape(st.as_str());
    format!("<span class=\"badge st-{s}\">{s}</span>")
}

fn status_list(statuses: &[Status]) -> String {
    statuses
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// A principal as shown: an open server's calls have none.
fn principal_text(p: &str) -> &str {
    if p.is_empty() {
        "(anonymous)"
    } else {
        p
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "—"
    } else {
        s
    }
}

/// Arguments as indented JSON.
fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// A value as compact JSON text (`"[hidden]"` for a hidden answer).
fn json_text(v: &Value) -> String {
    v.to_string()
}

/// Colors for the status badges, shared by the cards, the table and the
/// timeline.
const STYLE: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5rem auto;max-width:72rem;padding:0 1rem;color:#1f2328}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.6rem}
a{color:#0969da}code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9em}
pre{background:#f6f8fa;border:1px solid #d0d7de;padding:.75rem;overflow:auto}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right}.muted{color:#656d76}
.cards{display:flex;flex-wrap:wrap;gap:.5rem}.card{border:1px solid #d0d7de;border-radius:6px;padding:.5rem .8rem;min-width:6rem;text-decoration:none;color:inherit}
.card .n{font-size:1.5rem;font-weight:600}
.row{display:flex;flex-wrap:wrap;gap:2rem}
.badge{display:inline-block;border-radius:1em;padding:0 .55em;font-size:.85em;color:#fff;background:#6e7781}
.st-waiting{background:#bf8700}.st-working{background:#0969da}.st-parked{background:#8250df}
.st-completed{background:#1a7f37}.st-failed{background:#cf222e}.st-cancelled{background:#6e7781}
.chart .bar{fill:#bf8700}.chart text{font-size:12px;fill:#1f2328}
form.filter label{margin-right:.75rem}form{display:inline}
button{font:inherit;padding:.15rem .6rem}button.danger{color:#fff;background:#cf222e;border:1px solid #a40e26}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dl.facts dt{font-weight:600}dl.facts dd{margin:0}
ol.timeline li{margin:.3rem 0}
";

/// The page around a body: the same head and style everywhere. No script
/// and no external resource: the CSP allows neither.
fn shell(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::admin::model::{AnswerView, Counts, EffectView};

    const EVIL_TOOL: &str = "x\"><img src=x onerror=alert(1)>";
    const EVIL_PRINCIPAL: &str = "p'><img src=y>";

    fn summary(id: &str, tool: &str, status: Status, updated_ms: u64) -> CallSummary {
        CallSummary {
            id: id.into(),
            kind: Kind::Durable,
            tool: tool.into(),
            status,
            principal: "ada".into(),
            created_ms: 1_000,
            updated_ms,
            round: 2,
            waiting_on: vec!["elicitation/create".into()],
            note: None,
            code: "v1".into(),
            version: String::new(),
        }
    }

    fn listing(calls: Vec<CallSummary>, now_ms: u64) -> Listing {
        Listing {
            counts: Counts::of(&calls, now_ms),
            matched: calls.len(),
            calls,
            next_cursor: None,
            now_ms,
            paused_tools: Vec::new(),
        }
    }

    fn detail(status: Status, arguments: Value) -> CallDetail {
        CallDetail {
            summary: summary("d.abc/1", "deploy", status, 5_000),
            arguments,
            rounds: vec![Mark {
                round: 1,
                at_ms: 1_700_000_000_000,
                code: "v1".into(),
                end: RoundEnd::Paused,
                asked: vec![Asked {
                    key: "ok".into(),
                    method: "elicitation/create".into(),
                    message: Some("Deploy <b>now</b>?".into()),
                }],
                why: None,
            }],
            pending: Vec::new(),
            answers: vec![AnswerView {
                key: "ok".into(),
                at_ms: 1_700_000_004_000,
                outcome: "accepted".into(),
                value: json!("[hidden]"),
                by: None,
            }],
            effects: vec![EffectView {
                key: "deploy".into(),
                at_ms: 0,
            }],
            code_versions: vec!["v1".into()],
            waited_ms: 4_000,
            worked_ms: 120_000,
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn escape_covers_the_five_characters_and_enc_keeps_only_unreserved() {
        assert_eq!(
            escape(r#"<a href="x">&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(enc("AZaz09-._~"), "AZaz09-._~");
        assert_eq!(enc("a/b?c#d&e%f g"), "a%2Fb%3Fc%23d%26e%25f%20g");
        assert_eq!(enc("é"), "%C3%A9");
    }

    #[test]
    fn a_script_in_the_arguments_is_text() {
        let d = detail(
            Status::Waiting,
            json!({"note": "<script>alert(1)</script>"}),
        );
        let html = call_page(&d, 10_000, "tok");
        assert!(!html.contains("<script"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        // The question's message is text too.
        assert!(html.contains("Deploy &lt;b&gt;now&lt;/b&gt;?"));
        // Pretty-printed, inside <pre>.
        assert!(html.contains("<pre>{\n  &quot;note&quot;"));
    }

    #[test]
    fn a_hostile_tool_name_and_principal_never_become_markup() {
        let mut c = summary("d.1", EVIL_TOOL, Status::Waiting, 0);
        c.principal = EVIL_PRINCIPAL.into();
        c.note = Some("<img src=z>".into());
        let mut l = listing(vec![c], 90_000);
        l.next_cursor = Some("c\"<img>".into());
        let filter = Filter {
            tool: Some(EVIL_TOOL.into()),
            principal: Some(EVIL_PRINCIPAL.into()),
            ..Filter::default()
        };
        let html = overview(
            &l,
            &filter,
            &[EVIL_TOOL.to_string()],
            &Versions::default(),
            "t\"<img>",
        );
        assert!(!html.contains("<img"), "{html}");
        // In text, escaped.
        assert!(html.contains("<td>x&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</td>"));
        assert!(html.contains("<td>p&#39;&gt;&lt;img src=y&gt;</td>"));
        // In the filter's values, escaped.
        assert!(html.contains("value=\"x&quot;&gt;&lt;img src=x onerror=alert(1)&gt;\""));
        assert!(html.contains("value=\"p&#39;&gt;&lt;img src=y&gt;\""));
        // In URLs, percent-encoded.
        let enc_tool = "x%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E";
        assert!(html.contains(&format!("action=\"/admin/tools/{enc_tool}/resume\"")));
        assert!(html.contains(&format!("href=\"/admin?tool={enc_tool}\"")));
        assert!(html.contains(&format!(
            "href=\"/admin?tool={enc_tool}&amp;principal=p%27%3E%3Cimg%20src%3Dy%3E&amp;cursor=c%22%3Cimg%3E\""
        )));
        // The csrf value is escaped too.
        assert!(html.contains("name=\"csrf\" value=\"t&quot;&lt;img&gt;\""));
    }

    #[test]
    fn the_chart_has_one_labelled_bar_per_bucket() {
        let now = 10 * 86_400_000;
        let calls = vec![
            summary("d.a", "t", Status::Waiting, now - 1_000),
            summary("d.b", "t", Status::Waiting, now - 2_000),
            summary("d.c", "t", Status::Parked, now - 600_000),
            summary("d.d", "t", Status::Waiting, now - 3 * 86_400_000),
            summary("d.e", "t", Status::Completed, now - 3 * 86_400_000),
        ];
        let html = overview(
            &listing(calls, now),
            &Filter::default(),
            &[],
            &Versions::default(),
            "tok",
        );
        assert_eq!(
            html.matches("<rect class=\"bar\"").count(),
            AGE_BUCKETS.len()
        );
        for (bucket, n) in [("&lt;1m", 2), ("&lt;1h", 1), ("&lt;1d", 0), ("≥1d", 1)] {
            assert!(
                html.contains(&format!("<title>{bucket}: {n}</title>")),
                "{bucket}"
            );
            assert!(html.contains(&format!("text-anchor=\"middle\">{bucket}</text>")));
        }
        // The fullest bucket is the tallest; an empty one has no height.
        assert!(html.contains("height=\"100\"><title>&lt;1m: 2</title>"));
        assert!(html.contains("height=\"0\"><title>&lt;1d: 0</title>"));
        // Buckets appear youngest first.
        let pos = |b: &str| html.find(&format!("<title>{b}:")).unwrap_or(usize::MAX);
        assert!(pos("&lt;1m") < pos("&lt;1h") && pos("&lt;1h") < pos("&lt;1d"));
        assert!(pos("&lt;1d") < pos("≥1d"));
    }

    #[test]
    fn an_empty_or_odd_listing_renders() {
        let html = overview(
            &Listing::default(),
            &Filter::default(),
            &[],
            &Versions::default(),
            "",
        );
        assert_eq!(
            html.matches("<rect class=\"bar\"").count(),
            AGE_BUCKETS.len()
        );
        assert!(html.contains("No calls match."));
        assert!(html.starts_with("<!doctype html>"));
        assert!(html.contains("<title>durable-mcp — paused calls</title>"));
        // Huge counts, a clock behind the calls: no panic.
        let mut l = listing(vec![summary("d.a", "t", Status::Waiting, u64::MAX)], 0);
        l.counts.paused_by_age = BTreeMap::from([("<1m".to_string(), usize::MAX)]);
        let html = overview(&l, &Filter::default(), &[], &Versions::default(), "");
        assert!(html.contains("<td class=\"num\">0s</td>"));
    }

    #[test]
    fn each_tool_gets_pause_or_resume_with_the_csrf_field() {
        let calls = vec![
            summary("d.a", "alpha", Status::Waiting, 0),
            summary("d.b", "beta", Status::Parked, 0),
        ];
        let paused = vec!["beta".to_string(), "gamma".to_string()];
        let html = overview(
            &listing(calls, 1),
            &Filter::default(),
            &paused,
            &Versions::default(),
            "s3cret",
        );
        assert!(html.contains("action=\"/admin/tools/alpha/pause\""));
        assert!(!html.contains("/admin/tools/alpha/resume"));
        assert!(html.contains("action=\"/admin/tools/beta/resume\""));
        assert!(!html.contains("/admin/tools/beta/pause"));
        // A paused tool without calls is listed too.
        assert!(html.contains("action=\"/admin/tools/gamma/resume\""));
        assert_eq!(html.matches(">Pause tool</button>").count(), 1);
        assert_eq!(html.matches(">Resume tool</button>").count(), 2);
        assert_eq!(
            html.matches("<input type=\"hidden\" name=\"csrf\" value=\"s3cret\">")
                .count(),
            3
        );
        assert_eq!(html.matches("class=\"badge st-parked\">paused<").count(), 2);
    }

    #[test]
    fn the_filter_form_is_prefilled_and_the_next_page_keeps_it() {
        let mut l = listing(vec![summary("d.a", "alpha", Status::Waiting, 0)], 1);
        l.next_cursor = Some("abc".into());
        let filter = Filter {
            tool: Some("alpha".into()),
            status: vec![Status::Waiting, Status::Parked],
            principal: None,
            kind: Some(Kind::Task),
            older_than_ms: Some(3_600_000),
        };
        let html = overview(&l, &filter, &[], &Versions::default(), "tok");
        assert!(html.contains("name=\"tool\" value=\"alpha\""));
        assert!(html.contains("<option value=\"waiting,parked\" selected>"));
        assert!(html.contains("<option value=\"task\" selected>"));
        assert!(html.contains("name=\"olderThan\" value=\"1h\""));
        assert!(html.contains(
            "href=\"/admin?tool=alpha&amp;status=waiting%2Cparked&amp;kind=task&amp;olderThan=1h&amp;cursor=abc\""
        ));
        // The id links to its page, encoded.
        assert!(html.contains("href=\"/admin/calls/d.a\""));

        let one = Filter {
            status: vec![Status::Failed],
            ..Filter::default()
        };
        let html = overview(&l, &one, &[], &Versions::default(), "tok");
        assert!(html.contains("<option value=\"failed\" selected>"));
        assert!(!html.contains("<select name=\"status\"><option value=\"\" selected>"));
        let html = overview(&l, &Filter::default(), &[], &Versions::default(), "tok");
        assert!(html.contains("<select name=\"status\"><option value=\"\" selected>any"));
    }

    #[test]
    fn a_call_page_cancels_only_what_is_not_final() {
        let live = call_page(&detail(Status::Waiting, json!({})), 10_000, "tok");
        assert!(live.contains("action=\"/admin/calls/d.abc%2F1/cancel\""));
        assert!(live.contains("<input type=\"hidden\" name=\"csrf\" value=\"tok\">"));
        for st in [Status::Completed, Status::Failed, Status::Cancelled] {
            let done = call_page(&detail(st, json!({})), 10_000, "tok");
            assert!(!done.contains("/cancel"), "{st:?}");
            assert!(!done.contains("name=\"csrf\""), "{st:?}");
        }
    }

    #[test]
    fn a_waiting_call_page_answers_for_its_client_and_asks_again() {
        let mut d = detail(Status::Waiting, json!({}));
        d.pending = vec![Asked {
            key: "safety".into(),
            method: "sampling/createMessage".into(),
            message: None,
        }];
        d.notes = vec![crate::engine::Note {
            at_ms: 1_700_000_000_000,
            what: "answered \"ok\" (operator:<ops>)".into(),
        }];
        let html = call_page(&d, 10_000, "tok");
        assert!(html.contains("action=\"/admin/calls/d.abc%2F1/answer\""));
        assert!(html.contains("<input type=\"hidden\" name=\"key\" value=\"safety\">"));
        assert!(html.contains("action=\"/admin/calls/d.abc%2F1/rewind\""));
        assert!(html.contains("<input type=\"hidden\" name=\"key\" value=\"ok\">"));
        assert!(html.contains("(operator:&lt;ops&gt;)"), "escaped");
        let done = call_page(&detail(Status::Completed, json!({})), 10_000, "tok");
        assert!(!done.contains("/answer") && !done.contains("/rewind"));
    }

    #[test]
    fn a_call_page_shows_facts_rounds_answers_and_effects() {
        let html = call_page(
            &detail(Status::Waiting, json!({"env": "prod"})),
            65_000,
            "t",
        );
        assert!(html.contains("href=\"/admin\""));
        assert!(html.contains("<dd>d.abc/1</dd>"));
        assert!(html.contains("<dd>1970-01-01T00:00:01Z</dd>"));
        assert!(html.contains("<dd>1970-01-01T00:00:05Z (1m ago)</dd>"));
        assert!(html.contains("<dd>0af7651916cd43dd8448eb211c80319c</dd>"));
        assert!(html.contains("<dd>4s</dd>") && html.contains("<dd>2m</dd>"));
        assert!(html.contains("<ol class=\"timeline\">"));
        assert!(html.contains("2023-11-14T22:13:20Z"));
        assert!(html.contains("<code>elicitation/create</code>"));
        // The answer's value as JSON text; an effect of unknown time.
        assert!(html.contains("<code>&quot;[hidden]&quot;</code>"));
        assert!(html.contains("<td><code>deploy</code></td><td>unknown</td>"));
    }

    #[test]
    fn iso_dates_come_from_days_without_a_date_crate() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(1_700_000_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(iso(1_709_251_199_999), "2024-02-29T23:59:59Z");
        assert_eq!(iso(4_102_444_800_000), "2100-01-01T00:00:00Z");
        assert_eq!(iso(253_402_300_799_000), "9999-12-31T23:59:59Z");
        // The end of a u64 clock: no panic.
        assert!(iso(u64::MAX).ends_with('Z'));
    }

    #[test]
    fn ages_use_their_largest_whole_unit() {
        assert_eq!(age(0), "0s");
        assert_eq!(age(999), "0s");
        assert_eq!(age(45_000), "45s");
        assert_eq!(age(59_999), "59s");
        assert_eq!(age(60_000), "1m");
        assert_eq!(age(12 * 60_000 + 30_000), "12m");
        assert_eq!(age(3 * 3_600_000), "3h");
        assert_eq!(age(86_399_999), "23h");
        assert_eq!(age(2 * 86_400_000), "2d");
        assert_eq!(duration_param(90_000), "90s");
        assert_eq!(duration_param(1_500), "1500");
        assert_eq!(duration_param(0), "0");
        assert_eq!(duration_param(7 * 86_400_000), "7d");
    }

    #[test]
    fn a_message_page_escapes_title_and_message() {
        let html = message_page("Done <b>", "Cancelled \"d.1\" & more");
        assert!(html.contains("<title>Done &lt;b&gt;</title>"));
        assert!(html.contains("<h1>Done &lt;b&gt;</h1>"));
        assert!(html.contains("<p>Cancelled &quot;d.1&quot; &amp; more</p>"));
        assert!(html.contains("href=\"/admin\""));
    }

    #[test]
    fn each_tool_version_shows_its_standing_and_counts_escaped() {
        let code = [crate::admin::model::ToolCode {
            name: EVIL_TOOL.into(),
            current: Some("3".into()),
            pinned: true,
            keeps: vec!["2".into()],
        }];
        let mut old = summary("d.1", EVIL_TOOL, Status::Parked, 1);
        old.version = "1<b>".into();
        let v = Versions::of(&code, &[old], 5);
        let html = overview(&Listing::default(), &Filter::default(), &[], &v, "tok");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert!(html.contains("<code>1&lt;b&gt;</code>"), "{html}");
        assert!(html.contains(">missing</span>"), "{html}");
        assert!(html.contains(">kept</span> <span class=\"muted\">(no call left: can be removed)"));
        assert!(html.contains(">current</span>"));
        assert!(html.contains("<td>pinned</td>"));
        let empty = overview(
            &Listing::default(),
            &Filter::default(),
            &[],
            &Versions::default(),
            "",
        );
        assert!(empty.contains("No tool declares a version or has calls."));
    }

    #[test]
    fn the_limits_page_shows_usage_against_limits_escaped() {
        let rows = vec![serde_json::json!({"principal": EVIL_PRINCIPAL,
            "all": {"limits": {"held": 2, "rate": "10/60s"}, "rate": 3, "daily": 3, "held": 1, "active": 0},
            "tools": {EVIL_TOOL: {"limits": {"active": 1}, "rate": 0, "daily": 0, "held": 1, "active": 1}},
            "waiting": ["t.abc"]})];
        let page = super::limits_page(&rows);
        assert!(!page.contains("<img"), "{page}");
        assert!(
            page.contains("3 / 10/60s") && page.contains("1 / 2"),
            "{page}"
        );
        assert!(page.contains("href=\"/admin/calls/t.abc\""), "{page}");
        assert!(super::limits_page(&[]).contains("No principal is known"));
    }
}
