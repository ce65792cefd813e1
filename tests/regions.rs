//! Durable calls kept near their callers (issue 46, acceptance 4), natively
//! through `durable_mcp::testing`: a new call goes to a shard of its
//! caller's region (`request.cf.continent`), whose object is opened with
//! that region's location hint; its id names the shard, so a later round
//! from anywhere reaches it. With `CALL_JURISDICTION` its shard is in that
//! jurisdiction's namespace. Ids made before regions name the objects they
//! always did.

use std::sync::atomic::{AtomicUsize, Ordering};

use durable_mcp::host::Placement;
use durable_mcp::testing::{TestReply, TestServer};
use durable_mcp::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

const OPS: &str = "admin-token-0123456789";

/// Effect runs, per test (a call rebuilt elsewhere would run it again).
static RUNS: [AtomicUsize; 5] = [const { AtomicUsize::new(0) }; 5];

/// Books once, then asks to confirm.
async fn book(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    let slot = args["slot"].as_u64().unwrap_or(0) as usize;
    let n: usize = cx
        .once("book", async || {
            Ok(RUNS[slot].fetch_add(1, Ordering::SeqCst) + 1)
        })
        .await?;
    let schema = json!({"type": "object", "properties": {}});
    let yes = cx.elicit_with("confirm", form("Confirm?", schema)).await?;
    Ok(text(format!("booking {n} {}", yes.action)))
}

fn server(f: impl FnOnce(&mut durable_mcp::server::Config)) -> TestServer {
    let mut r = Registry::new();
    r.tool(Tool::new("book", book).durable());
    TestServer::with_config(r, |c| {
        c.admin_tokens =
            durable_mcp::auth::parse_api_tokens(&format!("ops:{OPS}")).expect("tokens");
        f(c);
    })
}

/// The first round, from `continent`: its state.
fn first_round(s: &mut TestServer, continent: Option<&str>, slot: u64) -> String {
    s.cf_continent = continent.map(str::to_string);
    let r = s.call_tool("book", json!({"slot": slot}), json!({}));
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    r.json["result"]["requestState"]
        .as_str()
        .expect("a state")
        .to_string()
}

/// The answering round, from `continent`.
fn answer(s: &mut TestServer, continent: Option<&str>, slot: u64, state: &str) -> TestReply {
    s.cf_continent = continent.map(str::to_string);
    let extra = json!({"requestState": state,
                       "inputResponses": {"confirm": {"action": "accept", "content": {}}}});
    s.call_tool("book", json!({"slot": slot}), extra)
}

/// Every kept call's admin id, as an operator lists them.
fn listed(s: &mut TestServer) -> Vec<String> {
    let r = s.admin(OPS, "GET", "/admin/api/calls?limit=500", None);
    assert_eq!(r.status, 200, "{}", r.json);
    r.json["calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| c["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The objects keeping calls (not the hub, nor the empty shards an
/// operator's listing read).
fn call_objects(s: &TestServer) -> Vec<(&String, Placement)> {
    (s.objects.iter())
        .filter(|(name, o)| name.starts_with("call") && !o.call.is_empty())
        .map(|(name, o)| (name, o.placement))
        .collect()
}

fn only_object(s: &TestServer) -> (String, Placement) {
    let objects = call_objects(s);
    assert_eq!(objects.len(), 1, "{:?}", s.objects.keys());
    (objects[0].0.clone(), objects[0].1)
}

/// A call started in Europe is kept in a European shard, its object opened
/// with the `weur` hint; its next round, sent from North America, reaches
/// that same object and completes, the effect run once.
#[test]
fn a_european_call_is_kept_in_europe_and_answered_from_anywhere() {
    let mut s = server(|_| {});
    let state = first_round(&mut s, Some("EU"), 0);
    let (name, placement) = only_object(&s);
    assert!(name.starts_with("calls:weur"), "{name}");
    assert_eq!(placement.hint, Some("weur"));
    assert_eq!(placement.jurisdiction, None);
    // The id names its region and shard: the operator sees it so.
    let ids = listed(&mut s);
    assert_eq!(ids.len(), 1);
    let shard = name.trim_start_matches("calls:");
    assert!(ids[0].starts_with(&format!("d.s{shard}-")), "{ids:?}");

    let r = answer(&mut s, Some("NA"), 0, &state);
    assert_eq!(
        r.json["result"]["content"][0]["text"], "booking 1 accept",
        "{}",
        r.json
    );
    assert_eq!(only_object(&s).0, name, "the same object, no American one");
    assert_eq!(s.objects[&name].call.len(), 1);
    assert_eq!(RUNS[0].load(Ordering::SeqCst), 1);
    let detail = s.admin(OPS, "GET", &format!("/admin/api/calls/{}", ids[0]), None);
    assert_eq!(detail.status, 200, "{}", detail.json);
    assert_eq!(detail.json["status"], "completed", "{}", detail.json);
}

/// With `CALL_JURISDICTION=eu` every new call's shard is in the EU
/// jurisdiction's namespace, whatever its caller's region; later rounds
/// reach it there.
#[test]
fn with_a_jurisdiction_the_shard_is_made_in_its_namespace() {
    let mut s = server(|c| c.call_jurisdiction = Some("eu"));
    let state = first_round(&mut s, Some("EU"), 1);
    let (name, placement) = only_object(&s);
    assert!(name.starts_with("calls:eu"), "{name}");
    assert_eq!(placement.jurisdiction, Some("eu"));
    assert_eq!(placement.hint, None, "the jurisdiction places it");
    let r = answer(&mut s, Some("AS"), 1, &state);
    assert_eq!(
        r.json["result"]["content"][0]["text"], "booking 1 accept",
        "{}",
        r.json
    );
    assert_eq!(only_object(&s).0, name);

    // A caller elsewhere, or with no region at all, goes there too.
    for continent in [Some("NA"), None] {
        first_round(&mut s, continent, 1);
    }
    for (name, placement) in call_objects(&s) {
        assert!(name.starts_with("calls:eu"), "{name}");
        assert_eq!(placement.jurisdiction, Some("eu"));
    }
    assert_eq!(listed(&mut s).len(), 3);
}

/// Ids made before regions (`s<n>-<hex>`, and bare hex with
/// `CALL_SHARDS=0`) keep routing to the objects they named, plainly
/// opened, whatever region the next round comes from.
#[test]
fn ids_made_before_regions_still_reach_their_objects() {
    let mut s = server(|c| c.call_shards_per_region = 0);
    let state = first_round(&mut s, Some("EU"), 2);
    let (old, placement) = only_object(&s);
    assert!(
        old.strip_prefix("calls:")
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())),
        "{old}"
    );
    assert_eq!(placement, Placement::default());
    // Regions on: the old call stays where it is.
    s.server.config.call_shards_per_region = 4;
    let r = answer(&mut s, Some("OC"), 2, &state);
    assert_eq!(
        r.json["result"]["content"][0]["text"], "booking 1 accept",
        "{}",
        r.json
    );
    assert_eq!(only_object(&s).0, old);

    let mut s = server(|c| c.call_shards = 0);
    let state = first_round(&mut s, Some("EU"), 3);
    let (own, placement) = only_object(&s);
    assert!(own.starts_with("call:"), "{own}");
    assert_eq!(placement, Placement::default());
    s.server.config.call_shards = 16;
    let r = answer(&mut s, Some("EU"), 3, &state);
    assert_eq!(
        r.json["result"]["content"][0]["text"], "booking 1 accept",
        "{}",
        r.json
    );
    assert_eq!(only_object(&s).0, own);
}

/// No `cf` (local development) or a continent with no region: the shards
/// of no region, as before; every region's shard is listed.
#[test]
fn a_caller_with_no_region_goes_to_the_shards_of_no_region() {
    let mut s = server(|_| {});
    for continent in [None, Some("AN"), Some("SA"), Some("AF")] {
        first_round(&mut s, continent, 4);
    }
    let mut hints: Vec<Option<&str>> = call_objects(&s).iter().map(|(_, p)| p.hint).collect();
    hints.sort();
    assert_eq!(
        hints,
        [None, None, Some("afr"), Some("sam")],
        "{:?}",
        s.objects.keys()
    );
    assert_eq!(listed(&mut s).len(), 4);
    // The listing read every shard, each opened as its name says.
    for (name, object) in &s.objects {
        let hint = object.placement.hint;
        match name
            .strip_prefix("calls:")
            .map(|n| n.trim_end_matches(|c: char| c.is_ascii_digit()))
        {
            Some("") | None => assert_eq!(hint, None, "{name}"),
            Some(place) => assert_eq!(hint, Some(place), "{name}"),
        }
    }
}
