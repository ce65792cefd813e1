//! A small JSON Schema check: what a client needs to refuse a chained call
//! whose arguments do not fit the listed tool (type, required, properties,
//! enum, const, nested objects and arrays). Unknown keywords pass. And
//! what a form answer takes from its schema: the defaults of the fields it
//! leaves out (SEP-1034).
//!
//! Schemas are only read, never rewritten or resolved: every keyword a
//! server sends (`$schema`, `$defs`, `$anchor`, `allOf`, `if`/`then`/`else`
//! …) stays in the tool as listed, and a `$ref` is never fetched (SEP-2106:
//! a network reference must not be dereferenced automatically).

use serde_json::Value;

/// Why `value` does not fit `schema`, or `Ok`.
pub fn check(value: &Value, schema: &Value) -> Result<(), String> {
    check_at(value, schema, "arguments")
}

fn check_at(value: &Value, schema: &Value, at: &str) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        return Ok(());
    };
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| type_fits(value, t)) {
            return Err(format!("{at} must be {}", types.join(" or ")));
        }
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            return Err(format!(
                "{at} must be one of {}",
                Value::Array(options.clone())
            ));
        }
    }
    if let Some(c) = s.get("const") {
        if c != value {
            return Err(format!("{at} must be {c}"));
        }
    }
    if let Value::Object(obj) = value {
        if let Some(required) = s.get("required").and_then(Value::as_array) {
            for key in required.iter().filter_map(Value::as_str) {
                if !obj.contains_key(key) {
                    return Err(format!("{at}.{key} is required"));
                }
            }
        }
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (key, sub) in props {
                if let Some(v) = obj.get(key) {
                    check_at(v, sub, &format!("{at}.{key}"))?;
                }
            }
        }
    }
    if let (Value::Array(items), Some(sub)) = (value, s.get("items")) {
        for (i, v) in items.iter().enumerate() {
            check_at(v, sub, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// Fills the fields an accepted form answer (`content`) leaves out with
/// the `default` its requested schema gives them (SEP-1034: a client sends
/// the defaults of the fields the user did not change). A field the answer
/// has, even as `null`, is kept; a `content` that is not an object becomes
/// one when there is a default to put in it.
pub fn apply_defaults(content: &mut Value, schema: &Value) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, sub) in props {
        let Some(default) = sub.get("default") else {
            continue;
        };
        if !content.is_object() {
            *content = Value::Object(Default::default());
        }
        if let Some(obj) = content.as_object_mut() {
            obj.entry(key.clone()).or_insert_with(|| default.clone());
        }
    }
}

fn type_fits(value: &Value, t: &str) -> bool {
    match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "null" => value.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn required_types_and_enums_are_checked() {
        let schema = json!({"type": "object", "required": ["id", "urgency"],
            "properties": {"id": {"type": "string"}, "urgency": {"enum": ["low", "high"]},
                           "n": {"type": "integer"}}});
        assert!(check(&json!({"id": "1", "urgency": "high"}), &schema).is_ok());
        assert_eq!(
            check(&json!({"id": "1"}), &schema),
            Err("arguments.urgency is required".into())
        );
        assert!(check(&json!({"id": 1, "urgency": "low"}), &schema).is_err());
        assert!(check(&json!({"id": "1", "urgency": "soon"}), &schema).is_err());
        assert!(check(&json!({"id": "1", "urgency": "low", "n": 1.5}), &schema).is_err());
    }

    #[test]
    fn defaults_fill_only_the_fields_left_out() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "verified": {"type": "boolean", "default": true},
            "note": {"type": "string"}}});
        let mut content = json!({"age": 41});
        apply_defaults(&mut content, &schema);
        assert_eq!(
            content,
            json!({"name": "John Doe", "age": 41, "verified": true})
        );
        let mut missing = Value::Null;
        apply_defaults(&mut missing, &schema);
        assert_eq!(missing["name"], "John Doe");
        let mut untouched = Value::Null;
        apply_defaults(&mut untouched, &json!({"properties": {"x": {}}}));
        assert_eq!(untouched, Value::Null);
    }
}
