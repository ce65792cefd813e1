//! The skills (SEP-2640) this worker bundles with `include_skills!`: every
//! folder holding a `SKILL.md` is a skill, each file under it is served as
//! it is on disk, and what the conformance suite looks for is there.

use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Value};

use durable_mcp::testing::TestServer;

use super::Harness;

/// A file of the fixtures' skills directory, as on disk.
fn on_disk(path: &str) -> Vec<u8> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("skills")
        .join(path);
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn entries(s: &mut TestServer) -> Vec<Value> {
    let r = s.call("skills/list", json!({}));
    r.json["result"]["skills"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Each folder with a `SKILL.md` is a skill at its path; a file outside
/// every skill's folder is not served.
#[test]
fn the_bundled_folders_are_the_skills() {
    let mut s = Harness::new();
    let uris: Vec<Value> = entries(&mut s).iter().map(|e| e["uri"].clone()).collect();
    assert_eq!(
        uris,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://pdf-processing/SKILL.md"
        ]
    );
    let r = s.call("resources/read", json!({"uri": "skill://README.md"}));
    assert_eq!(r.json["error"]["code"], -32602, "{}", r.json);
}

/// The entry's frontmatter is the file's, every field of it; every file is
/// listed with its size on disk and read back byte for byte (the PNG as a
/// base64 blob).
#[test]
fn every_bundled_file_is_listed_and_served_as_on_disk() {
    let mut s = Harness::new();
    let pdf = entries(&mut s)
        .into_iter()
        .find(|e| e["frontmatter"]["name"] == "pdf-processing")
        .expect("pdf-processing");
    assert_eq!(
        pdf["frontmatter"],
        json!({
            "name": "pdf-processing",
            "description": "Extract text and tables from PDF files, fill PDF forms, and merge documents.",
            "compatibility": "Needs Python 3 with pypdf",
            "allowed-tools": "Read Bash(python:*)",
            "metadata": {"author": "conformance", "version": "1.0"},
        })
    );
    let files = pdf["resources"].as_array().cloned().unwrap_or_default();
    assert_eq!(files.len(), 4, "{pdf}");
    for file in files {
        let uri = file["uri"].as_str().unwrap_or_default();
        let path = uri.trim_start_matches("skill://");
        let want = on_disk(path);
        assert_eq!(file["size"], want.len(), "{uri}");
        let r = s.call("resources/read", json!({"uri": uri}));
        let content = &r.json["result"]["contents"][0];
        let got = match content["text"].as_str() {
            Some(text) => text.as_bytes().to_vec(),
            None => base64::engine::general_purpose::STANDARD
                .decode(content["blob"].as_str().unwrap_or_default())
                .expect("a base64 blob"),
        };
        assert_eq!(got, want, "{uri}");
    }
    let r = s.call(
        "resources/read",
        json!({"uri": "skill://pdf-processing/assets/pixel.png"}),
    );
    assert_eq!(r.json["result"]["contents"][0]["mimeType"], "image/png");
}

/// What the suite's directory scenario needs: the first listed skill's root
/// has a folder in it, listed as `inode/directory`.
#[test]
fn the_first_skill_has_a_folder_to_descend_into() {
    let mut s = Harness::new();
    let r = s.call(
        "resources/directory/read",
        json!({"uri": "skill://acme/billing/refunds"}),
    );
    let children = &r.json["result"]["resources"];
    assert_eq!(
        children,
        &json!([
            {"uri": "skill://acme/billing/refunds/SKILL.md", "name": "refunds",
             "description": "Process customer refund requests per company policy.",
             "mimeType": "text/markdown", "size": on_disk("acme/billing/refunds/SKILL.md").len()},
            {"uri": "skill://acme/billing/refunds/examples", "name": "examples",
             "mimeType": "inode/directory"},
        ]),
        "{}",
        r.json
    );
}
