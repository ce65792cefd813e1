//! `tools versions` as a person reads it: a row per tool and version (what
//! the server's code does with its calls, and how many wait, work, are
//! parked), then what to do about it: a kept version no call is on can be
//! removed; a missing one holds calls that park until a deploy brings it
//! back.

use super::model::{ToolVersions, VersionCalls, Versions};

/// The columns, in order.
const HEADER: [&str; 7] = [
    "TOOL", "POLICY", "VERSION", "CODE", "WAITING", "WORKING", "PARKED",
];

fn row(t: &ToolVersions, v: &VersionCalls) -> [String; 7] {
    let dash = |s: &str| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_string()
        }
    };
    [
        t.tool.clone(),
        dash(t.policy.as_deref().unwrap_or("not served")),
        dash(&v.version),
        dash(&v.standing),
        v.waiting.to_string(),
        v.working.to_string(),
        v.parked.to_string(),
    ]
}

/// The table and its notes; a line saying so when no tool has a version
/// or a call.
pub(crate) fn render(versions: &Versions) -> String {
    let rows: Vec<[String; 7]> = versions
        .tools
        .iter()
        .flat_map(|t| t.versions.iter().map(move |v| row(t, v)))
        .collect();
    if rows.is_empty() {
        return "no tool declares a version or has calls\n".into();
    }
    let all: Vec<[String; 7]> = std::iter::once(HEADER.map(str::to_string))
        .chain(rows)
        .collect();
    let mut widths = [0usize; 7];
    for r in &all {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in &all {
        let cells: Vec<String> = r
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i >= 4 {
                    format!("{c:>w$}")
                } else {
                    format!("{c:w$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&notes(versions));
    out
}

/// What an operator does next: each kept version with no call can go;
/// each missing one holds calls that park.
fn notes(versions: &Versions) -> String {
    let mut out = String::new();
    for t in &versions.tools {
        for v in &t.versions {
            let calls = v.waiting + v.working + v.parked;
            match v.standing.as_str() {
                "kept" if calls == 0 => out.push_str(&format!(
                    "{} {}: kept, no call left on it: its body can be removed (Tool::keeps)\n",
                    t.tool, v.version
                )),
                "missing" if calls > 0 => out.push_str(&format!(
                    "{} {}: {calls} call(s) on a version this code cannot run: they park \
                     (-32050, pinnedTo) until a deploy keeps it again\n",
                    t.tool,
                    if v.version.is_empty() {
                        "-"
                    } else {
                        &v.version
                    }
                )),
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sample() -> Versions {
        serde_json::from_value(json!({
            "tools": [
                {"tool": "deploy", "served": true, "current": "3", "policy": "pinned",
                 "keeps": ["2"], "versions": [
                    {"version": "3", "standing": "current", "waiting": 1, "working": 0, "parked": 0},
                    {"version": "2", "standing": "kept", "waiting": 0, "working": 0, "parked": 0},
                    {"version": "1", "standing": "missing", "waiting": 2, "working": 1, "parked": 12}
                 ]},
                {"tool": "old", "served": false, "keeps": [], "versions": [
                    {"version": "", "standing": "missing", "waiting": 1, "working": 0, "parked": 0}
                 ]}
            ],
            "nowMs": 5
        }))
        .expect("the sample reads")
    }

    fn cells(line: &str) -> Vec<&str> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect()
    }

    #[test]
    fn each_tool_version_is_a_row_with_its_counts_and_the_notes_say_what_next() {
        let text = render(&sample());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(cells(lines[0]), HEADER.to_vec());
        assert_eq!(
            cells(lines[1]),
            ["deploy", "pinned", "3", "current", "1", "0", "0"]
        );
        assert_eq!(
            cells(lines[3]),
            ["deploy", "pinned", "1", "missing", "2", "1", "12"]
        );
        assert_eq!(
            cells(lines[4]),
            ["old", "not served", "-", "missing", "1", "0", "0"]
        );
        // Counts are right-aligned under their header.
        assert_eq!(
            lines[0].find("PARKED").map(|i| i + 6),
            lines[3].find("12").map(|i| i + 2)
        );
        assert!(lines[5].starts_with("deploy 2: kept, no call left on it: its body can be removed"));
        assert!(lines[6].starts_with("deploy 1: 15 call(s) on a version this code cannot run"));
        assert!(lines[7].starts_with("old -: 1 call(s)"));
        assert_eq!(lines.len(), 8);
        assert_eq!(
            render(&Versions::default()),
            "no tool declares a version or has calls\n"
        );
    }
}
