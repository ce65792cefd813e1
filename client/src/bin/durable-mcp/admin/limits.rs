//! `limits` as a person reads it: a row per principal and scope (over all
//! of its calls, or one tool's), each kind's count against its limit.

use serde_json::Value;

const HEADER: [&str; 6] = ["PRINCIPAL", "SCOPE", "RATE", "DAILY", "HELD", "ACTIVE"];

/// `used/limit`, or the count alone where no limit is set.
fn cell(scope: &Value, kind: &str) -> String {
    let used = scope[kind].as_u64().unwrap_or(0);
    let limit = &scope["limits"][kind];
    match (limit.as_u64(), limit.as_str()) {
        (Some(max), _) => format!("{used}/{max}"),
        (None, Some(rate)) => format!("{used}/{rate}"),
        _ => used.to_string(),
    }
}

/// The table of `GET /admin/api/limits[/<principal>]`'s answer.
pub(crate) fn render(v: &Value) -> String {
    let mut rows: Vec<[String; 6]> = vec![HEADER.map(str::to_string)];
    let mut notes = String::new();
    for p in v["principals"].as_array().into_iter().flatten() {
        let name = p["principal"].as_str().unwrap_or("");
        let name = if name.is_empty() { "(open)" } else { name };
        let mut scopes = vec![("all".to_string(), &p["all"])];
        if let Some(tools) = p["tools"].as_object() {
            scopes.extend(tools.iter().map(|(t, s)| (format!("tool {t}"), s)));
        }
        let waiting: Vec<&str> = (p["waiting"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        if !waiting.is_empty() {
            let list = waiting.join(", ");
            notes.push_str(&format!("{name}: tasks waiting for a limit: {list}\n"));
        }
        for (scope, s) in scopes {
            rows.push([
                name.to_string(),
                scope,
                cell(s, "rate"),
                cell(s, "daily"),
                cell(s, "held"),
                cell(s, "active"),
            ]);
        }
    }
    if rows.len() == 1 {
        return "no principal is known: name one (limits <principal>)\n".into();
    }
    let mut widths = [0usize; 6];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out + &notes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn counts_show_against_their_limits() {
        let v = json!({"principals": [{"principal": "ada",
            "all": {"limits": {"held": 2, "rate": "10/60s"}, "rate": 3, "daily": 3, "held": 1, "active": 0},
            "tools": {"ask": {"limits": {"active": 1}, "rate": 0, "daily": 0, "held": 1, "active": 1}},
            "waiting": ["t.abc"]}]});
        let t = super::render(&v);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert_eq!(lines[3], "ada: tasks waiting for a limit: t.abc", "{t}");
        assert!(
            lines[1].starts_with("ada") && lines[1].contains("3/10/60s"),
            "{t}"
        );
        assert!(lines[1].contains("1/2"), "{t}");
        assert!(
            lines[2].contains("tool ask") && lines[2].ends_with("1/1"),
            "{t}"
        );
        assert!(super::render(&json!({"principals": []})).contains("no principal"));
    }
}
