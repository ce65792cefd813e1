//! `calls list` as a person reads it, in the manner of `wrangler workflows
//! instances list`: a row per call in aligned columns, then the counts the
//! server keeps over every call (by status, by tool, paused by age). Also
//! the short durations (`45s`, `12m`) and times (ISO-8601 UTC) the other
//! views share.

use super::filter::STATUSES;
use super::model::{CallSummary, Listing};

/// The columns, in order.
const HEADER: [&str; 9] = [
    "ID",
    "KIND",
    "TOOL",
    "STATUS",
    "PRINCIPAL",
    "ROUND",
    "AGE",
    "WAITING ON",
    "NOTE",
];

/// A note is a sentence (why a call is parked, failed): its start is
/// enough in a table; `calls show` has it whole.
const NOTE_WIDTH: usize = 40;

/// One call's cells. The id is kept whole, long as a session call's
/// (`s.<h>.<stream>`) is: it is what `show` and `cancel` take.
fn row(c: &CallSummary, now_ms: u64) -> [String; 9] {
    let or_dash = |s: &str| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_string()
        }
    };
    [
        c.id.clone(),
        or_dash(&c.kind),
        or_dash(&c.tool),
        or_dash(&c.status),
        or_dash(&c.principal),
        c.round.to_string(),
        age(now_ms.saturating_sub(c.updated_ms)),
        or_dash(&c.waiting_on.join(",")),
        or_dash(&truncate(c.note.as_deref().unwrap_or_default(), NOTE_WIDTH)),
    ]
}

/// The calls of `listing` as a table, a header row first; `None` for a
/// page with no call.
pub(crate) fn table(listing: &Listing) -> Option<String> {
    if listing.calls.is_empty() {
        return None;
    }
    let rows: Vec<[String; 9]> = std::iter::once(HEADER.map(str::to_string))
        .chain(listing.calls.iter().map(|c| row(c, listing.now_ms)))
        .collect();
    let mut widths = [0usize; 9];
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            let pad = w - cell.chars().count();
            line.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    Some(out)
}

/// The lines under the table: how much of the match this is, and the
/// server's counts over every kept call.
pub(crate) fn summary(listing: &Listing, shown: usize) -> String {
    let c = &listing.counts;
    let mut out = String::new();
    if listing.next_cursor.is_some() {
        out.push_str(&format!(
            "showing {shown} of {} matching calls (--all for every page)\n",
            listing.matched
        ));
    } else if shown == 0 {
        out.push_str("no calls match\n");
    }
    // Known statuses in the server's order, then any newer one.
    let by_status: Vec<String> = STATUSES
        .iter()
        .filter_map(|s| c.by_status.get(*s).map(|n| (*s, *n)))
        .chain(
            c.by_status
                .iter()
                .filter(|(s, _)| !STATUSES.contains(&s.as_str()))
                .map(|(s, n)| (s.as_str(), *n)),
        )
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    let total = format!("{} {}", c.total, plural(c.total, "call", "calls"));
    if by_status.is_empty() {
        out.push_str(&total);
    } else {
        out.push_str(&format!("{total}: {}", by_status.join(", ")));
    }
    out.push('\n');
    let mut tools: Vec<(&String, &usize)> = c.by_tool.iter().filter(|(_, n)| **n > 0).collect();
    // The busiest tool first: the one an operator looks at.
    tools.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    if !tools.is_empty() {
        let t: Vec<String> = tools.iter().map(|(t, n)| format!("{t} {n}")).collect();
        out.push_str(&format!("by tool: {}\n", t.join(", ")));
    }
    let paused: usize = c.paused_by_age.values().sum();
    if paused > 0 {
        // The server's buckets, youngest first.
        let order = ["<1m", "<1h", "<1d", "≥1d"];
        let mut ages: Vec<(&str, usize)> = order
            .iter()
            .filter_map(|b| c.paused_by_age.get(*b).map(|n| (*b, *n)))
            .collect();
        ages.extend(
            c.paused_by_age
                .iter()
                .filter(|(b, _)| !order.contains(&b.as_str()))
                .map(|(b, n)| (b.as_str(), *n)),
        );
        let a: Vec<String> = ages.iter().map(|(b, n)| format!("{b} {n}")).collect();
        out.push_str(&format!("paused for: {}\n", a.join(", ")));
    }
    if !listing.paused_tools.is_empty() {
        out.push_str(&format!(
            "paused tools: {}\n",
            listing.paused_tools.join(", ")
        ));
    }
    out
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// An age in its largest whole unit: `45s`, `12m`, `3h`, `2d`.
pub(crate) fn age(ms: u64) -> String {
    let s = ms / 1_000;
    match s {
        0..60 => format!("{s}s"),
        60..3_600 => format!("{}m", s / 60),
        3_600..86_400 => format!("{}h", s / 3_600),
        _ => format!("{}d", s / 86_400),
    }
}

/// A longer span in its two largest units (`1h 12m`, `3s`, `250ms`): how
/// long a call waited and worked.
pub(crate) fn span(ms: u64) -> String {
    if ms < 1_000 {
        return format!("{ms}ms");
    }
    let units = [(86_400, "d"), (3_600, "h"), (60, "m"), (1, "s")];
    let mut rest = ms / 1_000;
    let mut parts = Vec::new();
    for (size, name) in units {
        if rest >= size || !parts.is_empty() {
            parts.push(format!("{}{name}", rest / size));
            rest %= size;
        }
        if parts.len() == 2 {
            break;
        }
    }
    // `2h 0m` reads as `2h`.
    if parts.len() == 2 && parts[1].starts_with('0') {
        parts.pop();
    }
    parts.join(" ")
}

/// A time (ms since the epoch) as ISO-8601 UTC to the second; `-` for 0,
/// which the server sends for a time it does not know.
pub(crate) fn iso(ms: u64) -> String {
    if ms == 0 {
        return "-".to_string();
    }
    let secs = ms / 1_000;
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let rem = secs % 86_400;
    // Days to a civil date (Howard Hinnant's algorithm), with no
    // date crate for one line of output.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// `s` cut to `max` characters, the cut marked with `…`.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    let s = s.lines().next().unwrap_or_default();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: u64 = 1_700_000_000_000;

    fn sample() -> Listing {
        serde_json::from_value(json!({
            "calls": [
                {"id": "d.0a1b2c", "kind": "durable", "tool": "deploy", "status": "waiting",
                 "principal": "ada", "createdMs": NOW - 3 * 86_400_000, "updatedMs": NOW - 2 * 86_400_000 - 5,
                 "round": 3, "waitingOn": ["elicitation/create"], "code": "v2"},
                {"id": "t.9f8e", "kind": "task", "tool": "report", "status": "parked",
                 "principal": "", "createdMs": NOW - 4 * 3_600_000, "updatedMs": NOW - 3 * 3_600_000,
                 "round": 1,
                 "note": "the code changed so that this call cannot be replayed: step `charge` was removed"},
                {"id": "s.77aa.3", "kind": "session", "tool": "deploy", "status": "working",
                 "principal": "bob", "createdMs": NOW - 60_000, "updatedMs": NOW - 45_000, "round": 2,
                 "waitingOn": ["sampling/createMessage", "roots/list"]}
            ],
            "matched": 30,
            "counts": {
                "total": 30,
                "byStatus": {"waiting": 20, "working": 5, "parked": 3, "completed": 2,
                             "failed": 0, "cancelled": 0},
                "byTool": {"deploy": 20, "report": 10},
                "pausedByAge": {"<1m": 0, "<1h": 4, "<1d": 9, "≥1d": 10}
            },
            "nextCursor": "c2",
            "nowMs": NOW,
            "pausedTools": ["report"]
        }))
        .unwrap()
    }

    /// The cells of a table line, split on runs of two or more spaces.
    fn cells(line: &str) -> Vec<&str> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect()
    }

    #[test]
    fn the_table_has_every_column_aligned_and_the_ages_from_updated() {
        let t = table(&sample()).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(cells(lines[0]), HEADER.to_vec());
        assert_eq!(
            cells(lines[1]),
            [
                "d.0a1b2c",
                "durable",
                "deploy",
                "waiting",
                "ada",
                "3",
                "2d",
                "elicitation/create",
                "-"
            ]
        );
        let task = cells(lines[2]);
        assert_eq!(
            &task[..7],
            ["t.9f8e", "task", "report", "parked", "-", "1", "3h"]
        );
        assert_eq!(task[7], "-");
        // The note is cut to its column, the cut marked.
        assert_eq!(task[8].chars().count(), NOTE_WIDTH);
        assert!(task[8].starts_with("the code changed so"));
        assert!(task[8].ends_with('…'));
        assert_eq!(
            cells(lines[3])[6..8],
            ["45s", "sampling/createMessage,roots/list"]
        );
        // Aligned: every row's AGE starts where the header's does.
        let col = lines[0].find("AGE").unwrap();
        for l in &lines[1..] {
            let age = &l[col..];
            assert!(
                age.starts_with("2d") || age.starts_with("3h") || age.starts_with("45s"),
                "{l}"
            );
        }
        assert!(table(&Listing::default()).is_none());
    }

    #[test]
    fn the_summary_counts_by_status_and_tool_and_says_there_is_more() {
        let s = summary(&sample(), 3);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines,
            [
                "showing 3 of 30 matching calls (--all for every page)",
                "30 calls: 20 waiting, 5 working, 3 parked, 2 completed",
                "by tool: deploy 20, report 10",
                "paused for: <1m 0, <1h 4, <1d 9, ≥1d 10",
                "paused tools: report",
            ]
        );
        let empty = summary(&Listing::default(), 0);
        assert_eq!(empty, "no calls match\n0 calls\n");
    }

    #[test]
    fn ages_spans_and_times_read_as_people_write_them() {
        assert_eq!(age(45_999), "45s");
        assert_eq!(age(12 * 60_000 + 59_000), "12m");
        assert_eq!(age(3 * 3_600_000 + 1), "3h");
        assert_eq!(age(2 * 86_400_000 + 86_399_000), "2d");
        assert_eq!(span(250), "250ms");
        assert_eq!(span(3_000), "3s");
        assert_eq!(span(3_600_000 + 12 * 60_000 + 5_000), "1h 12m");
        assert_eq!(span(2 * 3_600_000), "2h");
        assert_eq!(iso(NOW), "2023-11-14T22:13:20Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(iso(0), "-");
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("line one\nline two", 40), "line one");
    }
}
