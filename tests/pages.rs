//! Listings that cost a page (issue 46): each keeper reads its rows by
//! (status, updated), so an operator's page reads at most its `limit` rows
//! per status from each; the cursor resumes every keeper where the page
//! ended; the counts are kept by the writes themselves, exact after any
//! mix of operations; a shard's sweep reads only the rows that are due.

use std::collections::BTreeSet;

use durable_mcp::engine::{Invocation, Journal};
use durable_mcp::kept::Status;
use durable_mcp::store::{CallStore, MemoryStore, StoredCall};
use durable_mcp::testing::{TestReply, TestServer};
use durable_mcp::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

const ADMIN: &str = "ops:admin-token-0123456789";
const TASKS: &str = "io.modelcontextprotocol/tasks";

async fn ask(cx: &mut Cx, _args: Value) -> Result<CallToolResult, ToolError> {
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let ok = cx.elicit_with("confirm", form("Go on?", schema)).await?;
    Ok(text(format!("{}", ok.accepted())))
}

fn server() -> TestServer {
    let mut r = Registry::new();
    r.tool(Tool::new("deploy", ask).durable());
    r.tool(Tool::new("release", ask).task());
    r.tool(Tool::new("chat", ask));
    TestServer::with_config(r, |c| {
        c.admin_tokens = durable_mcp::auth::parse_api_tokens(ADMIN).expect("as the test set it up");
    })
}

fn admin(s: &mut TestServer, path: &str) -> TestReply {
    s.admin("admin-token-0123456789", "GET", path, None)
}

fn start_durable(s: &mut TestServer) {
    let r = s.call_tool("deploy", json!({}), json!({}));
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
}

fn start_task(s: &mut TestServer) {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "extensions": {TASKS: {}}},
    });
    let r = s.call(
        "tools/call",
        json!({"name": "release", "arguments": {}, "_meta": meta}),
    );
    assert_eq!(r.json["result"]["resultType"], "task", "{}", r.json);
    s.fire_alarms();
}

/// Every page of `query`, followed by its cursor: the ids in order, and
/// the first page's answer.
fn all_pages(s: &mut TestServer, query: &str, limit: usize) -> (Vec<(u64, String)>, Value) {
    let mut out = Vec::new();
    let mut first = None;
    let mut cursor: Option<String> = None;
    for _ in 0..10_000 {
        let c = cursor
            .as_ref()
            .map(|c| format!("&cursor={c}"))
            .unwrap_or_default();
        let r = admin(s, &format!("/admin/api/calls?limit={limit}{query}{c}"));
        assert_eq!(r.status, 200, "{}", r.json);
        let calls = r.json["calls"].as_array().expect("a page").clone();
        assert!(calls.len() <= limit);
        out.extend(calls.iter().map(|c| {
            (
                c["updatedMs"].as_u64().expect("a time"),
                c["id"].as_str().expect("an id").to_string(),
            )
        }));
        first.get_or_insert(r.json.clone());
        match r.json["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return (out, first.unwrap_or_default()),
        }
    }
    panic!("the pages did not end");
}

/// Pages of 7 across 16 shards, the hub's tasks and a session hold every
/// call exactly once, oldest change first, whatever the filter; the counts
/// and `matched` are the listing's truth.
#[test]
fn paging_across_shards_gives_every_row_once_in_order() {
    let mut s = server();
    for i in 0..60 {
        start_durable(&mut s);
        if i % 6 == 0 {
            start_task(&mut s);
        }
        // Several calls change in the same millisecond: ids break ties.
        if i % 3 == 0 {
            s.now_ms += 1_000;
        }
    }
    let (rows, first) = all_pages(&mut s, "", 7);
    let want: usize = 60 + 10;
    assert_eq!(rows.len(), want, "{first}");
    assert_eq!(first["counts"]["total"], want);
    assert_eq!(first["matched"], want);
    let set: BTreeSet<&(u64, String)> = rows.iter().collect();
    assert_eq!(set.len(), rows.len(), "no row twice");
    let mut sorted = rows.clone();
    sorted.sort();
    assert_eq!(rows, sorted, "oldest change first, ids breaking ties");
    // A filter by status and kind: the same truth, fewer rows.
    let (tasks, first) = all_pages(&mut s, "&kind=task&status=waiting", 3);
    assert_eq!(tasks.len(), 10);
    assert_eq!(first["matched"], 10);
    assert!(tasks.iter().all(|(_, id)| id.starts_with("t.")));
    // Cancel a few: they move to `cancelled`, the pages follow.
    let some: Vec<String> = rows
        .iter()
        .filter(|(_, id)| id.starts_with("d."))
        .take(5)
        .map(|(_, id)| id.clone())
        .collect();
    let r = s.admin(
        "admin-token-0123456789",
        "POST",
        "/admin/api/calls/cancel",
        Some(&json!({"ids": some})),
    );
    assert_eq!(
        r.json["done"].as_array().map(Vec::len),
        Some(5),
        "{}",
        r.json
    );
    let (waiting, first) = all_pages(&mut s, "&status=waiting", 4);
    assert_eq!(waiting.len(), want - 5);
    assert_eq!(first["counts"]["byStatus"]["cancelled"], 5);
    assert_eq!(first["counts"]["byStatus"]["waiting"], want - 5);
    let (cancelled, _) = all_pages(&mut s, "&status=cancelled", 2);
    let cancelled: BTreeSet<String> = cancelled.into_iter().map(|(_, id)| id).collect();
    assert_eq!(cancelled, some.into_iter().collect());
    // Older than: the counts of the index say how many pass.
    s.now_ms += 60_000;
    start_durable(&mut s);
    let (old, first) = all_pages(&mut s, "&olderThan=30s", 9);
    assert_eq!(old.len(), want);
    assert_eq!(first["matched"], want);
    // A cursor this server did not give is refused, clearly.
    let r = admin(&mut s, "/admin/api/calls?cursor=not-a-cursor");
    assert_eq!(r.status, 400, "{}", r.json);
    assert!(r.json.to_string().contains("cursor"), "{}", r.json);
}

/// A page of `limit` reads at most `limit` rows per status of each shard.
#[test]
fn a_page_reads_at_most_its_limit_per_shard() {
    let mut s = server();
    for _ in 0..200 {
        start_durable(&mut s);
    }
    let before: u64 = s.objects.values().map(|o| o.call.rows_read()).sum();
    let r = admin(&mut s, "/admin/api/calls?status=waiting&limit=5");
    assert_eq!(r.json["calls"].as_array().map(Vec::len), Some(5));
    assert_eq!(r.json["counts"]["byStatus"]["waiting"], 200);
    for (name, o) in &s.objects {
        if name.starts_with("calls:") {
            assert!(
                o.call.rows_read() <= 5,
                "{name} read {}",
                o.call.rows_read()
            );
        }
    }
    let after: u64 = s.objects.values().map(|o| o.call.rows_read()).sum();
    assert!(after - before <= 16 * 5);
}

fn call(tool: &str, status: Status, updated_ms: u64) -> StoredCall {
    let mut journal = Journal::new();
    journal.invocation = Some(Invocation {
        tool: tool.into(),
        arguments: json!({}),
    });
    StoredCall {
        version: 1,
        status,
        tomb: false,
        claimed_at_ms: 0,
        journal,
        last_reply: None,
        updated_ms,
    }
}

/// A small deterministic generator (no dependency for it).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Saves, claims, status changes, deletes, purges and sweeps in a random
/// order: the counts each write keeps equal a count of every row, after
/// every step.
#[test]
fn the_kept_counts_equal_a_full_count_after_random_operations() {
    let store = MemoryStore::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let tools = ["a", "b", "c"];
    let mut now = 1_000_000u64;
    for step in 0..3_000 {
        now += rng.below(5_000);
        let id = format!("s0-{:04}", rng.below(120));
        let tool = tools[rng.below(3) as usize];
        match rng.below(7) {
            0 | 1 => {
                let status = Status::ALL[rng.below(6) as usize];
                store.save(&id, &call(tool, status, now)).expect("saved");
            }
            2 => store.claim(&id, now).expect("claimed"),
            3 => store.delete(&id).expect("deleted"),
            4 => {
                if let Some(c) = store.load(&id).expect("loaded").filter(|c| c.retained()) {
                    store.save(&id, &c.tombstone()).expect("purged");
                }
            }
            5 => {
                if let Some(mut c) = store.load(&id).expect("loaded").filter(|c| !c.tomb) {
                    c.status = Status::Cancelled;
                    c.updated_ms = now;
                    store.save(&id, &c).expect("cancelled");
                }
            }
            _ => {
                store.sweep(now, 200_000, 50_000).expect("swept");
            }
        }
        assert_eq!(
            store.tally().expect("counted"),
            store.counted(),
            "step {step}"
        );
    }
}

/// A sweep reads the rows that are due, and none of the others.
#[test]
fn a_sweep_reads_only_the_rows_that_are_due() {
    let store = MemoryStore::new();
    let now = 10_000_000u64;
    let (ttl, retain) = (1_000_000, 100_000);
    // 500 rows in no hurry; 7 idle past the TTL, 4 finished past retention.
    for i in 0..500 {
        store
            .save(
                &format!("s0-live{i:03}"),
                &call("t", Status::ALL[i % 6], now - 10),
            )
            .expect("saved");
    }
    for i in 0..7 {
        store
            .save(
                &format!("s0-idle{i}"),
                &call("t", Status::Waiting, now - ttl - 1),
            )
            .expect("saved");
    }
    for i in 0..4 {
        store
            .save(
                &format!("s0-done{i}"),
                &call("t", Status::Completed, now - retain - 1),
            )
            .expect("saved");
    }
    let before = store.rows_read();
    let next = store.sweep(now, ttl, retain).expect("swept");
    assert_eq!(
        store.rows_read() - before,
        7 + 4,
        "only the due rows are read"
    );
    assert_eq!(
        store.len(),
        500 + 4,
        "idle rows gone, finished ones tombstones"
    );
    assert_eq!(store.tally().expect("counted"), store.counted());
    assert_eq!(
        store.tally().expect("counted")["t"].iter().sum::<u64>(),
        500
    );
    // The next due: the tombstones' TTL or a live finished row's retention.
    assert_eq!(next, Some(now - 10 + retain));
    let before = store.rows_read();
    store.sweep(now, ttl, retain).expect("swept");
    assert_eq!(store.rows_read(), before, "nothing due, nothing read");
}
