//! `tools/list`, `resources/list`, `resources/templates/list` and
//! `prompts/list` (one page each), and the cache fields 2026-07-28 adds to
//! a list.

use serde_json::{json, Value};

use crate::server::Server;

/// `ttlMs` and `cacheScope`: lists are the same for every caller unless
/// auth is on, in which case only the caller may cache them.
pub(crate) fn add_cache_fields(server: &Server, result: &mut Value) {
    result["ttlMs"] = json!(server.config.list_ttl_ms);
    let scope = if server.config.sign_in.is_open() {
        "public"
    } else {
        "private"
    };
    result["cacheScope"] = json!(scope);
}

pub(super) fn list(server: &Server, key: &str, items: impl Iterator<Item = Value>) -> Value {
    let mut result = json!({"resultType": "complete", key: items.collect::<Vec<_>>()});
    add_cache_fields(server, &mut result);
    result
}
