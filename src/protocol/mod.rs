//! JSON-RPC and MCP message shapes for both protocol eras.
//!
//! # Layout
//! - `jsonrpc.rs`: parsing one message, building replies.
//! - `versions.rs`: protocol versions and the `_meta` keys of 2026-07-28.
//! - `kinds.rs`: log levels and list kinds.
//! - `method.rs`: every method a client sends, named once.
//! - `params.rs`: each method's params, typed.

pub mod jsonrpc;
mod kinds;
pub mod method;
pub mod params;
pub mod versions;

pub use jsonrpc::{
    notification, parse_message, parse_value, result_bytes, result_response, Message, Notification,
    Request, Response,
};
pub use kinds::{ListKind, LogLevel};
pub use method::Method;
pub use params::ClientRequest;

use serde_json::Value;

/// A JSON object of `entries`, moved in. `json!` serializes every value it
/// interpolates into a new one: for a form's schema or a state token, a deep
/// copy per round (three percent of an MRTR round's first request).
pub fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn an_object_is_what_json_would_build() {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        assert_eq!(
            super::object([("mode", "form".into()), ("requestedSchema", schema.clone())]),
            json!({"mode": "form", "requestedSchema": schema}),
        );
        assert_eq!(super::object([]), json!({}));
    }
}
