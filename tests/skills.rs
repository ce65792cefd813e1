//! The skills extension (SEP-2640) as a client sees it, through the test
//! server: the capability, `skills/list` and `skills/get`, each file as a
//! resource whose bytes match the entry's digest and size, directory reads,
//! and the errors the spec gives. Skills built in code here; the fixtures
//! worker's tests cover a directory bundled with `include_skills!`.

use base64::Engine as _;
use durable_mcp::http::HttpRequest;
use durable_mcp::testing::TestServer;
use durable_mcp::{Registry, Skill, SkillError};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const REFUNDS: &str = "---\nname: refunds\ndescription: Process refund requests\nlicense: MIT\n\
                       metadata:\n  version: \"2.1\"\n---\n# Refunds\n\nSee `examples/email.md`.\n";
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00";

fn refunds() -> Result<Skill, SkillError> {
    Skill::new(REFUNDS)?
        .under("acme/billing")?
        .file("examples/email.md", b"Dear customer,\n")?
        .file("examples/regional/eu.md", b"Dear EU customer,\n")?
        .file("assets/logo.png", PNG)
}

fn server() -> TestServer {
    let mut r = Registry::new();
    let hello = Skill::new("---\nname: hello\ndescription: Say hello\n---\nHello.\n");
    r.skill(refunds().expect("refunds"))
        .skill(hello.expect("hello"));
    TestServer::new(r)
}

fn digest(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// The bytes `resources/read` returns for `uri`: text as UTF-8, blobs decoded.
fn read_bytes(s: &mut TestServer, uri: &str) -> Vec<u8> {
    let r = s.call("resources/read", json!({"uri": uri}));
    let content = &r.json["result"]["contents"][0];
    match (content["text"].as_str(), content["blob"].as_str()) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (None, Some(blob)) => base64::engine::general_purpose::STANDARD
            .decode(blob)
            .expect("base64"),
        _ => panic!("no contents for {uri}: {}", r.json),
    }
}

/// A server with skills declares the extension, with `directoryRead`,
/// beside the `resources` capability it needs.
#[test]
fn a_server_with_skills_declares_the_extension() {
    let mut s = server();
    let caps = &s.call("server/discover", json!({})).json["result"]["capabilities"];
    assert_eq!(
        caps["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true})
    );
    assert!(caps["resources"].is_object());
}

/// Without skills nothing is declared and the methods are unknown.
#[test]
fn a_server_without_skills_knows_none_of_the_methods() {
    let mut s = TestServer::new(Registry::new());
    let caps = &s.call("server/discover", json!({})).json["result"]["capabilities"];
    assert!(caps.get("extensions").is_none(), "{caps}");
    for method in ["skills/list", "skills/get", "resources/directory/read"] {
        let r = s.call(method, json!({"uri": "skill://a/SKILL.md"}));
        assert_eq!(r.json["error"]["code"], -32601, "{method}: {}", r.json);
    }
}

/// `skills/list` gives every skill's entry, whole, on one page, with the
/// list-caching fields; each file's digest and size are of the bytes
/// `resources/read` returns.
#[test]
fn skills_list_entries_match_what_resources_read_returns() {
    let mut s = server();
    let r = s.call("skills/list", json!({}));
    let result = &r.json["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(
        result["ttlMs"].is_u64() && result["cacheScope"] == "public",
        "{result}"
    );
    assert!(result.get("nextCursor").is_none());
    let skills = result["skills"].as_array().expect("skills");
    let uris: Vec<&str> = skills.iter().filter_map(|e| e["uri"].as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://hello/SKILL.md"
        ]
    );
    let refunds = &skills[0];
    assert_eq!(
        refunds["frontmatter"],
        json!({"name": "refunds", "description": "Process refund requests", "license": "MIT",
               "metadata": {"version": "2.1"}})
    );
    let files = refunds["resources"].as_array().expect("resources");
    let listed: Vec<&str> = files.iter().filter_map(|f| f["uri"].as_str()).collect();
    assert_eq!(
        listed,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://acme/billing/refunds/assets/logo.png",
            "skill://acme/billing/refunds/examples/email.md",
            "skill://acme/billing/refunds/examples/regional/eu.md",
        ]
    );
    for file in files {
        let uri = file["uri"].as_str().expect("uri");
        let bytes = read_bytes(&mut s, uri);
        assert_eq!(file["size"], bytes.len(), "{uri}");
        assert_eq!(file["digest"], digest(&bytes), "{uri}");
    }
    assert_eq!(
        read_bytes(&mut s, "skill://acme/billing/refunds/assets/logo.png"),
        PNG
    );
    let manifest = s.call(
        "resources/read",
        json!({"uri": "skill://acme/billing/refunds/SKILL.md"}),
    );
    let manifest = &manifest.json["result"];
    assert_eq!(manifest["contents"][0]["mimeType"], "text/markdown");
    assert_eq!(manifest["contents"][0]["text"], REFUNDS);
    assert!(manifest["ttlMs"].is_u64(), "{manifest}");
}

/// `skills/get` answers the same entry as the listing, without a cursor;
/// a URI that names no skill is `-32602`.
#[test]
fn skills_get_answers_a_served_skill_and_refuses_others() {
    let mut s = server();
    let list = s.call("skills/list", json!({}));
    let r = s.call("skills/get", json!({"uri": "skill://hello/SKILL.md"}));
    let result = &r.json["result"];
    assert_eq!(result["skill"], list.json["result"]["skills"][1]);
    assert!(result["ttlMs"].is_u64() && result["cacheScope"].is_string());
    assert!(result.get("nextCursor").is_none());
    for uri in [
        "skill://nope/SKILL.md",
        "skill://acme/billing/refunds/examples/email.md",
        "skill://hello",
    ] {
        let r = s.call("skills/get", json!({"uri": uri}));
        assert_eq!(r.json["error"]["code"], -32602, "{uri}: {}", r.json);
    }
    let r = s.call("skills/get", json!({}));
    assert_eq!(r.json["error"]["code"], -32602, "{}", r.json);
}

/// Each `SKILL.md` is in `resources/list`, named and described by its
/// frontmatter; the other files are not listed there, but are read.
#[test]
fn resources_list_shows_each_skill_md_from_its_frontmatter() {
    let mut s = server();
    let r = s.call("resources/list", json!({}));
    let resources = r.json["result"]["resources"].as_array().expect("resources");
    assert_eq!(resources.len(), 2, "{}", r.json);
    assert_eq!(
        resources[0],
        json!({"uri": "skill://acme/billing/refunds/SKILL.md", "name": "refunds",
               "description": "Process refund requests", "mimeType": "text/markdown",
               "size": REFUNDS.len()})
    );
    let r = s.call("resources/read", json!({"uri": "skill://hello/nope.md"}));
    assert_eq!(r.json["error"]["code"], -32602, "{}", r.json);
}

/// `resources/directory/read` lists a directory's direct children: files
/// with their listing, folders as `inode/directory`; above a skill too.
/// Anything else is `-32602`.
#[test]
fn directory_reads_list_direct_children() {
    let mut s = server();
    let uris = |s: &mut TestServer, uri: &str| -> Vec<(String, String)> {
        let r = s.call("resources/directory/read", json!({"uri": uri}));
        assert_eq!(
            r.json["result"]["resultType"], "complete",
            "{uri}: {}",
            r.json
        );
        let children = r.json["result"]["resources"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        children
            .iter()
            .map(|c| {
                let (uri, mime) = (c["uri"].as_str(), c["mimeType"].as_str());
                (
                    uri.unwrap_or("").to_string(),
                    mime.unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let dir = |u: &str| (u.to_string(), "inode/directory".to_string());
    let md = |u: &str| (u.to_string(), "text/markdown".to_string());
    assert_eq!(
        uris(&mut s, "skill://acme/billing/refunds"),
        [
            md("skill://acme/billing/refunds/SKILL.md"),
            dir("skill://acme/billing/refunds/assets"),
            dir("skill://acme/billing/refunds/examples"),
        ]
    );
    assert_eq!(
        uris(&mut s, "skill://acme/billing/refunds/examples"),
        [
            md("skill://acme/billing/refunds/examples/email.md"),
            dir("skill://acme/billing/refunds/examples/regional"),
        ]
    );
    assert_eq!(uris(&mut s, "skill://acme"), [dir("skill://acme/billing")]);
    for uri in [
        "skill://acme/billing/refunds/SKILL.md",
        "skill://acme/billing/refunds/",
        "skill://nope",
        "skill://",
        "skill:",
        "https://example.com",
    ] {
        let r = s.call("resources/directory/read", json!({"uri": uri}));
        assert_eq!(r.json["error"]["code"], -32602, "{uri}: {}", r.json);
    }
}

/// A skill nested in another is its own skill, and its files are the
/// parent's too; each file is one resource.
#[test]
fn a_nested_skill_is_listed_and_its_files_belong_to_its_parent() {
    let parent = "---\nname: forms\ndescription: All forms\n---\n";
    let child = "---\nname: w9\ndescription: The W-9 form\n---\n";
    let skills = Skill::from_files([
        ("forms/SKILL.md", parent.as_bytes().into()),
        ("forms/w9/SKILL.md", child.as_bytes().into()),
        ("forms/w9/fields.md", b"TIN".as_slice().into()),
    ])
    .expect("skills");
    let mut r = Registry::new();
    r.skills(skills);
    let mut s = TestServer::new(r);
    let list = s.call("skills/list", json!({}));
    let skills = list.json["result"]["skills"].as_array().expect("skills");
    assert_eq!(skills.len(), 2);
    assert_eq!(skills[0]["resources"].as_array().map(Vec::len), Some(3));
    assert_eq!(skills[1]["uri"], "skill://forms/w9/SKILL.md");
    assert_eq!(read_bytes(&mut s, "skill://forms/w9/fields.md"), b"TIN");
}

/// A skill a host would refuse is refused when it is built, saying why.
#[test]
fn a_skill_that_breaks_the_rules_is_refused_with_a_reason() {
    let err = Skill::new("---\nname: x\n---\n").expect_err("no description");
    assert!(err.to_string().contains("description"), "{err}");
    let skill = Skill::new("---\nname: x\ndescription: d\n---\n").expect("x");
    let err = skill.clone().file("SKILL.md", b"again").expect_err("twice");
    assert!(err.to_string().contains("has its SKILL.md"), "{err}");
    let err = (skill
        .clone()
        .file("a.md", b"1")
        .and_then(|s| s.file("a.md", b"2")))
    .expect_err("a file twice");
    assert!(err.to_string().contains("already"), "{err}");
    let err = skill
        .clone()
        .under("a b")
        .expect_err("a prefix with a space");
    assert!(err.to_string().contains("`a b`"), "{err}");
    let big = vec![0u8; 16 * 1024 * 1024];
    let err = skill.clone().file("big.bin", big).expect_err("over 16 MiB");
    assert!(err.to_string().contains("16 MiB"), "{err}");
    let mut many = Ok(skill);
    for i in 0..511 {
        many = many.and_then(|s| s.file(&format!("f{i}.txt"), b"x"));
    }
    let err = many
        .and_then(|s| s.file("one-more.txt", b"x"))
        .expect_err("513 files");
    assert!(err.to_string().contains("512"), "{err}");
}

/// On the 2025-11-25 session wire the extension is declared in
/// `initialize`, and the methods answer without the 2026 cache fields.
#[test]
fn sessions_see_the_extension_and_its_methods_too() {
    let mut s = server();
    let post = |s: &mut TestServer, session: Option<&str>, body: Value| {
        let mut headers = vec![
            ("host".to_string(), "127.0.0.1:8787".to_string()),
            ("content-type".to_string(), "application/json".to_string()),
            (
                "accept".to_string(),
                "application/json, text/event-stream".to_string(),
            ),
        ];
        if let Some(id) = session {
            headers.push(("mcp-session-id".to_string(), id.to_string()));
            headers.push(("mcp-protocol-version".to_string(), "2025-11-25".to_string()));
        }
        s.send(HttpRequest {
            method: "POST".into(),
            path: "/mcp".into(),
            headers,
            body: body.to_string().into_bytes(),
        })
    };
    let init = post(
        &mut s,
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
    );
    let caps = &init.json["result"]["capabilities"];
    assert_eq!(
        caps["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true}),
        "{}",
        init.json
    );
    let session = init.header("mcp-session-id").expect("session").to_string();
    let r = post(
        &mut s,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 1, "method": "skills/get",
               "params": {"uri": "skill://hello/SKILL.md"}}),
    );
    assert_eq!(
        r.json["result"]["skill"]["uri"], "skill://hello/SKILL.md",
        "{}",
        r.json
    );
    assert!(r.json["result"].get("ttlMs").is_none());
    let r = post(
        &mut s,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
               "params": {"uri": "skill://hello/SKILL.md"}}),
    );
    assert!(
        r.json["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.ends_with("Hello.\n")),
        "{}",
        r.json
    );
}
