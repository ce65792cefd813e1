//! SEP-2243 custom headers (2026-07-28): a tool's input schema may mark a
//! top-level parameter with `"x-mcp-header": "Region"`, and a `tools/call`
//! of it then mirrors the argument in `Mcp-Param-Region`, so an
//! intermediary can route on it without reading the body.
//!
//! A tool whose annotations break the rules (an empty or non-token name, two
//! parameters with one name in any case, a parameter that is not a string,
//! integer or boolean) must not be used: [`check_annotations`] says why,
//! and [`Client::list_tools`](crate::Client::list_tools) leaves such a tool
//! out on the 2026-07-28 wire. Only top-level `properties` are read:
//! annotations anywhere else are not mirrored.

use serde_json::Value;

use crate::transport::header_value;

/// The parameter types an annotated parameter may have.
const PRIMITIVES: [&str; 3] = ["string", "integer", "boolean"];

/// Why the `x-mcp-header` annotations of `input_schema` are invalid, or
/// `Ok` (also for a schema without any).
pub fn check_annotations(input_schema: &Value) -> Result<(), String> {
    let mut seen: Vec<String> = Vec::new();
    for (param, schema) in annotated(input_schema) {
        let Some(name) = schema["x-mcp-header"].as_str() else {
            return Err(format!("{param}: x-mcp-header must be a string"));
        };
        if name.is_empty() {
            return Err(format!("{param}: x-mcp-header must not be empty"));
        }
        if !name.bytes().all(is_tchar) {
            return Err(format!(
                "{param}: x-mcp-header {name:?} is not an HTTP header name (RFC 9110 token)"
            ));
        }
        let lower = name.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(format!(
                "{param}: x-mcp-header {name:?} is used twice (names are case-insensitive)"
            ));
        }
        seen.push(lower);
        if !is_primitive(&schema["type"]) {
            return Err(format!(
                "{param}: x-mcp-header is only for string, integer or boolean parameters"
            ));
        }
    }
    Ok(())
}

/// The `Mcp-Param-{Name}` headers (name, encoded value) a `tools/call` with
/// `arguments` carries for a tool with `input_schema`: one per annotated
/// parameter the arguments give a non-null value. Strings are sent as they
/// are when they are visible ASCII without outer spaces, else as
/// `=?base64?…?=`; numbers and booleans as their JSON text.
pub fn param_headers(input_schema: &Value, arguments: &Value) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    for (param, schema) in annotated(input_schema) {
        let Some(name) = schema["x-mcp-header"].as_str() else {
            continue;
        };
        let value = match arguments.get(param) {
            Some(Value::String(s)) => header_value(s),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
            // Null or absent: the header is left out. An object or array
            // has no header form (and an annotation on one is invalid).
            _ => continue,
        };
        headers.push((format!("Mcp-Param-{name}"), value));
    }
    headers
}

/// The top-level parameters that carry an `x-mcp-header` annotation.
fn annotated(input_schema: &Value) -> impl Iterator<Item = (&String, &Value)> {
    input_schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, s)| s.get("x-mcp-header").is_some())
}

/// A `type` of string, integer or boolean (a list may add `"null"`).
fn is_primitive(t: &Value) -> bool {
    match t {
        Value::String(t) => PRIMITIVES.contains(&t.as_str()),
        Value::Array(ts) => {
            let names: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
            names.len() == ts.len()
                && names.iter().any(|t| PRIMITIVES.contains(t))
                && names.iter().all(|t| *t == "null" || PRIMITIVES.contains(t))
        }
        _ => false,
    }
}

/// An RFC 9110 `tchar`: what a header name is made of.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }

    #[test]
    fn valid_annotations_pass() {
        let s = schema(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "debug": {"type": ["boolean", "null"], "x-mcp-header": "Debug"},
            "query": {"type": "string"}}));
        assert_eq!(check_annotations(&s), Ok(()));
        assert_eq!(check_annotations(&json!({"type": "object"})), Ok(()));
    }

    #[test]
    fn invalid_annotations_are_refused() {
        for bad in [
            json!({"v": {"type": "string", "x-mcp-header": ""}}),
            json!({"v": {"type": "object", "x-mcp-header": "Data"}}),
            json!({"v": {"type": "array", "x-mcp-header": "Items"}}),
            json!({"v": {"type": "null", "x-mcp-header": "Nil"}}),
            json!({"v": {"x-mcp-header": "Untyped"}}),
            json!({"a": {"type": "string", "x-mcp-header": "Region"},
                   "b": {"type": "string", "x-mcp-header": "region"}}),
            json!({"v": {"type": "string", "x-mcp-header": "My Region"}}),
            json!({"v": {"type": "string", "x-mcp-header": "Region:Primary"}}),
            json!({"v": {"type": "string", "x-mcp-header": "Région"}}),
            json!({"v": {"type": "string", "x-mcp-header": "Region\t1"}}),
            json!({"v": {"type": "string", "x-mcp-header": 7}}),
        ] {
            assert!(check_annotations(&schema(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn arguments_are_mirrored_and_encoded() {
        let s = schema(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "name": {"type": "string", "x-mcp-header": "Name"},
            "method": {"type": "string", "x-mcp-header": "Method"},
            "query": {"type": "string"}}));
        let args = json!({"region": "us-west1", "priority": 42, "verbose": null,
                          "name": " padded ", "method": "m", "query": "SELECT 1"});
        let mut headers = param_headers(&s, &args);
        headers.sort();
        assert_eq!(
            headers,
            vec![
                ("Mcp-Param-Method".to_string(), "m".to_string()),
                (
                    "Mcp-Param-Name".to_string(),
                    "=?base64?IHBhZGRlZCA=?=".to_string()
                ),
                ("Mcp-Param-Priority".to_string(), "42".to_string()),
                ("Mcp-Param-Region".to_string(), "us-west1".to_string()),
            ]
        );
    }
}
