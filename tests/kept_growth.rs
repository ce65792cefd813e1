//! Storage that grows with the work (issue 42), natively through
//! `durable_mcp::testing`, with the test store refusing rows as local
//! workerd's SQLite does: a durable call of many rounds with 20 KB
//! answers, and one whose effects record 5 × 500 KB, complete; the bytes a
//! round writes do not grow with the round number; an effect's output
//! past the call's cap fails the call once, and no retry runs it again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use durable_mcp::store::WORKERD_ROW_LIMIT;
use durable_mcp::testing::TestServer;
use durable_mcp::{text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

static EFFECTS: AtomicUsize = AtomicUsize::new(0);
static HUGE: AtomicUsize = AtomicUsize::new(0);

/// An agent loop: asks the client's model `rounds` times.
async fn agent(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    let rounds = args["rounds"].as_u64().unwrap_or(1);
    let mut total = 0;
    for i in 0..rounds {
        let r = cx
            .sample(&format!("s{i}"), durable_mcp::ask("go on", 10))
            .await?;
        total += r.text().len();
    }
    Ok(text(format!("{rounds} rounds, {total} bytes")))
}

/// Records `count` effects of `bytes` each, one per round.
async fn outputs(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    let count = args["count"].as_u64().unwrap_or(1);
    let bytes = args["bytes"].as_u64().unwrap_or(1) as usize;
    let mut total = 0;
    for i in 0..count {
        cx.checkpoint(&format!("c{i}")).await?;
        let out: String = cx
            .once(&format!("e{i}"), async || {
                EFFECTS.fetch_add(1, Ordering::SeqCst);
                Ok("x".repeat(bytes))
            })
            .await?;
        total += out.len();
    }
    Ok(text(format!("{total} bytes of outputs")))
}

/// One effect whose output no kept call may hold.
async fn huge(cx: &mut Cx, _args: Value) -> Result<CallToolResult, ToolError> {
    cx.checkpoint("c").await?;
    let out: Vec<String> = cx
        .once("huge", async || {
            HUGE.fetch_add(1, Ordering::SeqCst);
            Ok(vec!["y".repeat(1 << 20); 70])
        })
        .await?;
    // A pause after it: the round's output has to be kept.
    cx.checkpoint("after").await?;
    Ok(text(format!("{} parts", out.len())))
}

fn server() -> TestServer {
    let mut r = Registry::new();
    r.tool(Tool::new("agent", agent).durable());
    r.tool(Tool::new("outputs", outputs).durable());
    r.tool(Tool::new("huge", huge).durable());
    let mut s = TestServer::with_config(r, |_| {});
    s.row_limit = Some(WORKERD_ROW_LIMIT);
    s
}

fn bytes_written(s: &TestServer) -> u64 {
    s.objects.values().map(|o| o.call.bytes_written()).sum()
}

fn sample_answer(key: &str, size: usize) -> Value {
    json!({ key: {"role": "assistant", "model": "m",
                  "content": {"type": "text", "text": "z".repeat(size)}} })
}

/// Drives `agent` through `rounds` rounds; the bytes each round wrote.
fn run_agent(s: &mut TestServer, rounds: u64, size: usize) -> (Value, Vec<u64>) {
    let args = json!({"rounds": rounds});
    let mut r = s.call_tool("agent", args.clone(), json!({}));
    let mut per_round = Vec::new();
    for i in 0..rounds {
        assert_eq!(
            r.json["result"]["resultType"], "input_required",
            "round {i}: {}",
            r.json
        );
        let state = r.json["result"]["requestState"].clone();
        let before = bytes_written(s);
        r = s.call_tool(
            "agent",
            args.clone(),
            json!({"requestState": state, "inputResponses": sample_answer(&format!("s{i}"), size)}),
        );
        per_round.push(bytes_written(s) - before);
    }
    (r.json, per_round)
}

#[test]
fn a_thousand_rounds_of_20_kb_answers_complete_and_each_writes_what_it_added() {
    let mut s = server();
    let started = Instant::now();
    let (end, per_round) = run_agent(&mut s, 1000, 20_000);
    assert_eq!(
        end["result"]["content"][0]["text"], "1000 rounds, 20000000 bytes",
        "{end}"
    );
    // Linear, not quadratic: the last rounds write what the early ones
    // did (once the trail holds its most marks, by round 64).
    let early: u64 = per_round[100..110].iter().sum();
    let late: u64 = per_round[980..990].iter().sum();
    assert!(
        late * 10 <= early * 11,
        "rounds 980-989 wrote {late} bytes, rounds 100-109 {early}"
    );
    // The whole call wrote about what it holds, not its square (20 GB).
    let total: u64 = per_round.iter().sum();
    assert!(total < 60_000_000, "{total} bytes written");
    eprintln!(
        "1000 rounds: {:?}, {} bytes written, rounds 100-109 {early} B, 980-989 {late} B",
        started.elapsed(),
        total
    );
}

#[test]
fn a_cold_object_reads_the_log_back_and_the_call_goes_on() {
    let mut s = server();
    let args = json!({"rounds": 3});
    let mut r = s.call_tool("agent", args.clone(), json!({}));
    for i in 0..3 {
        // As if the object were evicted between rounds: nothing warm.
        for o in s.objects.values() {
            o.call.evict();
        }
        let state = r.json["result"]["requestState"].clone();
        r = s.call_tool(
            "agent",
            args.clone(),
            json!({"requestState": state, "inputResponses": sample_answer(&format!("s{i}"), 600_000)}),
        );
    }
    assert_eq!(
        r.json["result"]["content"][0]["text"], "3 rounds, 1800000 bytes",
        "{}",
        r.json
    );
}

#[test]
fn five_effects_of_500_kb_run_once_each_and_the_call_completes() {
    let mut s = server();
    let args = json!({"count": 5, "bytes": 500_000});
    let before = EFFECTS.load(Ordering::SeqCst);
    let mut r = s.call_tool("outputs", args.clone(), json!({}));
    for _ in 0..5 {
        let state = r.json["result"]["requestState"].clone();
        let next = s.call_tool("outputs", args.clone(), json!({"requestState": state}));
        // An exact retry of the round gets the same reply, no effect run.
        let again = s.call_tool("outputs", args.clone(), json!({"requestState": state}));
        assert_eq!(again.json["result"], next.json["result"]);
        r = next;
    }
    assert_eq!(
        r.json["result"]["content"][0]["text"], "2500000 bytes of outputs",
        "{}",
        r.json
    );
    assert_eq!(EFFECTS.load(Ordering::SeqCst) - before, 5);
}

#[test]
fn an_output_past_the_cap_fails_the_call_once_and_never_runs_again() {
    let mut s = server();
    let r = s.call_tool("huge", json!({}), json!({}));
    let state = r.json["result"]["requestState"].clone();
    let first = s.call_tool("huge", json!({}), json!({"requestState": state}));
    assert_eq!(first.json["error"]["code"], -32603, "{}", first.json);
    let message = first.json["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("grown past"), "{message}");
    for _ in 0..5 {
        let again = s.call_tool("huge", json!({}), json!({"requestState": state}));
        assert!(again.json["error"].is_object(), "{}", again.json);
    }
    assert_eq!(HUGE.load(Ordering::SeqCst), 1, "the effect ran once");
}
