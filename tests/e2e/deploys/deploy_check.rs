//! The replay check of v1's paused calls against v2's code, run natively in
//! the user's v2 crate before v2 serves (tests/e2e/deploys.test.mjs copies
//! this to `tests/deploy_check.rs`, with the crate's name filled in).
//! Adapted from the check `durable-mcp new` scaffolds
//! (client/src/bin/durable-mcp/templates/deploy-check.rs.tmpl): the same
//! file of paused calls (`DEPLOY_CHECK`, as scripts/export-paused.mjs wrote
//! it) and the same table, plus one JSON line per call
//! (`deploy-check-json <Report>`) for the e2e test to read; and it does not
//! fail on a divergence: the test compares each verdict with what v2 then
//! does to the call.

use durable_mcp::replay::{check, versions, versions_table, PausedCall, Report, Verdict};
use durable_mcp::testing::TestServer;
use durable_mcp::Bindings;

#[test]
fn paused_calls_replay_on_this_code() {
    let Some(file) = std::env::var_os("DEPLOY_CHECK") else {
        println!("deploy check skipped: DEPLOY_CHECK names no file of paused calls");
        return;
    };
    let file = file.to_string_lossy().into_owned();
    let text =
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("DEPLOY_CHECK={file}: {e}"));
    let calls: Vec<PausedCall> = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("DEPLOY_CHECK={file}: not a JSON array of paused calls: {e}"));
    // The server as the Worker builds it; the check runs no effect, so the
    // webhook is never called.
    let registry = {{crate_ident}}::server(&Bindings::from_vars([(
        "TICKET_WEBHOOK",
        "http://127.0.0.1:9/never-called",
    )]));
    let s = TestServer::new(registry);
    let reports = check(&s.server, &calls);
    assert_eq!(reports.len(), calls.len());
    print!("{}", table(&reports));
    // Per tool and version: the paused calls on it, whether this code runs
    // it (a pinned call on a version it neither runs nor keeps parks), and
    // which kept versions hold no call any more (their bodies can go).
    print!(
        "\nversions held by paused calls:\n{}",
        versions_table(&versions(&s.server, &calls))
    );
    for r in &reports {
        println!(
            "deploy-check-json {}",
            serde_json::to_string(r).expect("a report serializes")
        );
    }
}

/// One line per call: id, tool, verdict, and what the new code does or why
/// it cannot.
fn table(reports: &[Report]) -> String {
    let mut rows = vec![["id", "tool", "verdict", "detail"].map(String::from)];
    for r in reports {
        let (verdict, detail) = match &r.verdict {
            Verdict::Continues { next } => ("continues", next.clone()),
            Verdict::AsksAgain { keys } => ("asks again", keys.join(", ")),
            Verdict::Diverges { key, why } if key.is_empty() => ("DIVERGES", why.clone()),
            Verdict::Diverges { key, why } => ("DIVERGES", format!("at {key:?}: {why}")),
            Verdict::Fails { message } => ("fails", message.clone()),
        };
        rows.push([r.id.clone(), r.tool.clone(), verdict.to_string(), detail]);
    }
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    let mut out = String::new();
    for [id, tool, verdict, detail] in &rows {
        let line = format!("{id:w0$}  {tool:w1$}  {verdict:w2$}  {detail}");
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let count = |f: fn(&Verdict) -> bool| reports.iter().filter(|r| f(&r.verdict)).count();
    out.push_str(&format!(
        "paused calls: {} ({} continue, {} ask again, {} diverge, {} fail)\n",
        reports.len(),
        count(|v| matches!(v, Verdict::Continues { .. })),
        count(|v| matches!(v, Verdict::AsksAgain { .. })),
        count(|v| matches!(v, Verdict::Diverges { .. })),
        count(|v| matches!(v, Verdict::Fails { .. })),
    ));
    out
}
