//! JSON Schemas derived from Rust types (schemars), shaped for MCP.
//!
//! - Tool input and output schemas: JSON Schema 2020-12 (MCP's default
//!   dialect) with subschemas inlined, so clients that do not follow `$ref`
//!   still see every field.
//! - Elicitation forms: MCP allows only a flat object of primitive fields.
//!   [`form_schema`] derives the schema, folds `Option<T>` into "not
//!   required", and refuses anything else with a message naming the field.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

/// The schema of `T` as schemars derives it (2020-12, inlined, no `$schema`).
fn derive<T: JsonSchema>() -> Value {
    let mut schema = generator().into_root_schema_for::<T>().to_value();
    tidy(&mut schema);
    schema
}

/// The generator every schema is derived with: made in one function, not
/// in each type's [`derive`].
fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
}

/// Shapes what schemars derives for clients: doc comments wrapped over
/// several lines read as one paragraph (blank lines still separate
/// paragraphs), and Rust's number formats (`double`, `uint8` …), which no
/// JSON Schema validator knows, are dropped.
fn tidy(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(d)) = m.get_mut("description") {
                *d = d
                    .split("\n\n")
                    .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
                    .collect::<Vec<_>>()
                    .join("\n\n");
            }
            let is_num = |t: &Value| t == "number" || t == "integer";
            let numeric = match m.get("type") {
                Some(Value::Array(types)) => types.iter().any(is_num),
                Some(t) => is_num(t),
                None => false,
            };
            if numeric {
                m.remove("format");
            }
            m.values_mut().for_each(tidy);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// A tool's `inputSchema` (or `outputSchema`) from its type: an object
/// schema without the type's name as `title`. A type whose schema is not an
/// object (`serde_json::Value`, which accepts anything) gets `{"type":
/// "object"}`, the loosest schema MCP allows there.
pub fn object_schema<T: JsonSchema>() -> Value {
    let mut schema = derive::<T>();
    match schema.as_object_mut() {
        Some(m) if m.get("type") == Some(&json!("object")) => {
            m.remove("title");
            schema
        }
        _ => json!({"type": "object"}),
    }
}

/// Checks `value` against the parts of a JSON Schema a tool's declared
/// output relies on (`type`, `properties`, `required`, `items`, `enum`),
/// naming the first place it differs. Used on `structuredContent`: a
/// result that breaks the tool's `outputSchema` (a non-finite number
/// serialized as `null`, say) is a tool error, not a broken answer.
pub fn check(value: &Value, schema: &Value) -> Result<(), String> {
    check_at("$", value, schema)
}

fn check_at(path: &str, value: &Value, schema: &Value) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        return Ok(());
    };
    if let Some(t) = s.get("type") {
        let allowed: Vec<&str> = match t {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let fits = |t: &str| match t {
            "null" => value.is_null(),
            "boolean" => value.is_boolean(),
            "string" => value.is_string(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => true,
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| fits(t)) {
            let found = match value {
                Value::Null => "null".to_string(),
                v => v.to_string(),
            };
            return Err(format!("{path} is {found}, not {}", allowed.join(" or ")));
        }
    }
    if let Some(Value::Array(options)) = s.get("enum") {
        if !options.contains(value) {
            return Err(format!(
                "{path} is {value}, not one of {}",
                Value::Array(options.clone())
            ));
        }
    }
    if let Value::Object(fields) = value {
        for name in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(n) = name.as_str() {
                if !fields.contains_key(n) {
                    return Err(format!("{path}.{n} is missing"));
                }
            }
        }
        for (name, sub) in s
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if let Some(v) = fields.get(name) {
                check_at(&format!("{path}.{name}"), v, sub)?;
            }
        }
    }
    if let (Value::Array(items), Some(sub)) = (value, s.get("items")) {
        for (i, v) in items.iter().enumerate() {
            check_at(&format!("{path}[{i}]"), v, sub)?;
        }
    }
    Ok(())
}

/// The `requestedSchema` of an elicitation form for `T`, or why `T` cannot
/// be a form.
pub fn form_schema<T: JsonSchema>() -> Result<Value, String> {
    let name = std::any::type_name::<T>();
    let schema = derive::<T>();
    let refuse = |why: String| {
        Err(format!(
            "{name} cannot be an elicitation form: {why}; MCP forms are flat objects whose \
             fields are strings, numbers, integers, booleans, string enums or lists of enum strings"
        ))
    };
    let Some(top) = schema.as_object() else {
        return refuse("its schema is not an object".into());
    };
    if top.get("type") != Some(&json!("object")) {
        return refuse("it is not a struct with named fields".into());
    }
    let mut properties = Map::new();
    for (field, prop) in top
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        match flat_field(prop) {
            Ok(p) => properties.insert(field.clone(), p),
            Err(why) => return refuse(format!("field `{field}` {why}")),
        };
    }
    let mut form = json!({"type": "object", "properties": properties});
    if let Some(required) = top.get("required") {
        form["required"] = required.clone();
    }
    Ok(form)
}

/// One form field, normalized: `Option<T>`'s null alternative dropped.
fn flat_field(prop: &Value) -> Result<Value, String> {
    let mut p = prop
        .as_object()
        .cloned()
        .ok_or_else(|| "has no schema".to_string())?;
    drop_null_alternative(&mut p);
    let kind = p.get("type").and_then(Value::as_str).map(str::to_string);
    match kind.as_deref() {
        Some("string") | Some("boolean") => {}
        Some("number") | Some("integer") => {}
        Some("array") => {
            let items = p.get("items").cloned().unwrap_or(Value::Null);
            let mut items = items
                .as_object()
                .cloned()
                .ok_or_else(|| "is a list of unknown items".to_string())?;
            drop_null_alternative(&mut items);
            if !is_string_enum(&items) {
                return Err("is a list of something other than enum strings".into());
            }
            p.insert("items".into(), Value::Object(items));
        }
        Some("object") => return Err("is a nested object".into()),
        _ if is_string_enum(&p) => {
            p.insert("type".into(), json!("string"));
            titled_options(&mut p);
        }
        _ => return Err("has no primitive type".into()),
    }
    Ok(Value::Object(p))
}

/// `{"type": ["string", "null"]}` → `"string"`; `{"anyOf": [X, {"type":
/// "null"}]}` → X (keeping the outer description/title/default); `null`
/// out of `enum`.
fn drop_null_alternative(p: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = p.get("type") {
        let rest: Vec<Value> = types
            .iter()
            .filter(|t| *t != &json!("null"))
            .cloned()
            .collect();
        if rest.len() == 1 {
            p.insert("type".into(), rest[0].clone());
        }
    }
    if let Some(Value::Array(values)) = p.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alts)) = p.get(key) else {
            continue;
        };
        let rest: Vec<&Value> = alts
            .iter()
            .filter(|a| {
                a.get("type") != Some(&json!("null")) && a.get("const") != Some(&Value::Null)
            })
            .collect();
        if rest.len() == 1 && rest.len() < alts.len() {
            if let Some(inner) = rest[0].as_object().cloned() {
                p.remove(key);
                for (k, v) in inner {
                    p.entry(k).or_insert(v);
                }
                drop_null_alternative(p);
            }
        }
    }
}

/// Variant docs become option titles (MCP's titled single-select enum:
/// `oneOf: [{const, title}]`); options without any label collapse to a
/// plain `enum` list, the form every client renders.
fn titled_options(p: &mut Map<String, Value>) {
    let Some(Value::Array(options)) = p.get("oneOf") else {
        return;
    };
    let titled: Vec<Value> = options
        .iter()
        .map(|o| {
            let label = o.get("title").or_else(|| o.get("description"));
            match label {
                Some(l) => json!({"const": o["const"], "title": l}),
                None => json!({"const": o["const"]}),
            }
        })
        .collect();
    if titled.iter().any(|o| o.get("title").is_some()) {
        p.insert("oneOf".into(), Value::Array(titled));
    } else {
        p.remove("oneOf");
        let values: Vec<Value> = titled.iter().map(|o| o["const"].clone()).collect();
        p.insert("enum".into(), Value::Array(values));
    }
}

/// A string enum: `{"enum": [strings]}` or `{"oneOf": [{"const": string}…]}`.
fn is_string_enum(p: &Map<String, Value>) -> bool {
    let typed_ok = matches!(p.get("type"), None | Some(Value::String(_)))
        && p.get("type").is_none_or(|t| t == "string");
    let plain = p
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_string));
    let titled = p.get("oneOf").and_then(Value::as_array).is_some_and(|v| {
        !v.is_empty()
            && v.iter()
                .all(|c| c.get("const").is_some_and(Value::is_string))
    });
    typed_ok && (plain || titled)
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    /// Where to deploy.
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Target {
        Staging,
        Production,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Limits {
        cpu: u32,
    }

    /// Deploys
    /// things.
    ///
    /// Carefully.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        /// The service.
        service: String,
        target: Option<Target>,
        limits: Limits,
        tags: Vec<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Form {
        /// Your name.
        name: String,
        age: Option<u8>,
        target: Target,
        maybe_target: Option<Target>,
        agree: bool,
        targets: Vec<Target>,
    }

    #[test]
    fn input_schemas_keep_nested_optional_and_enum_fields() {
        let s = object_schema::<Nested>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["description"], "Deploys things.\n\nCarefully.");
        assert!(s["properties"]["limits"]["properties"]["cpu"]
            .get("format")
            .is_none());
        assert!(s.get("title").is_none() && s.get("$schema").is_none());
        assert_eq!(s["properties"]["service"]["description"], "The service.");
        assert_eq!(s["properties"]["limits"]["type"], "object");
        assert_eq!(
            s["properties"]["limits"]["properties"]["cpu"]["type"],
            "integer"
        );
        assert_eq!(s["properties"]["tags"]["items"]["type"], "string");
        let required: Vec<&str> = s["required"]
            .as_array()
            .expect("required")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(required.contains(&"service") && required.contains(&"limits"));
        assert!(!required.contains(&"target"), "Option fields are optional");
        let target = s["properties"]["target"].to_string();
        assert!(
            target.contains("staging") && target.contains("production"),
            "{target}"
        );
    }

    #[test]
    fn values_are_checked_against_types_required_fields_items_and_enums() {
        let schema = json!({"type": "object", "required": ["sum"], "properties": {
            "sum": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}}});
        assert_eq!(check(&json!({"sum": 1.5, "tags": ["a"]}), &schema), Ok(()));
        assert_eq!(
            check(&json!({"sum": null}), &schema),
            Err("$.sum is null, not number".into())
        );
        assert_eq!(check(&json!({}), &schema), Err("$.sum is missing".into()));
        assert!(check(&json!({"sum": 1, "tags": ["c"]}), &schema)
            .is_err_and(|e| e.starts_with("$.tags[0] is \"c\"")));
        assert!(check(&json!([]), &schema).is_err());
    }

    #[test]
    fn untyped_arguments_get_an_open_object_schema() {
        assert_eq!(object_schema::<Value>(), json!({"type": "object"}));
    }

    #[test]
    fn forms_are_flat_with_options_folded_into_not_required() {
        let f = form_schema::<Form>().expect("a flat form");
        let p = &f["properties"];
        assert_eq!(
            p["name"],
            json!({"type": "string", "description": "Your name."})
        );
        assert_eq!(p["age"]["type"], "integer");
        assert!(p["age"].get("format").is_none());
        assert_eq!(p["target"]["type"], "string");
        assert_eq!(p["target"]["enum"], json!(["staging", "production"]));
        assert_eq!(p["maybe_target"]["type"], "string");
        assert_eq!(p["maybe_target"]["enum"], json!(["staging", "production"]));
        assert_eq!(p["agree"]["type"], "boolean");
        assert_eq!(p["targets"]["type"], "array");
        assert_eq!(
            p["targets"]["items"]["enum"],
            json!(["staging", "production"])
        );
        let required = f["required"].as_array().expect("required");
        assert!(required.contains(&json!("name")) && !required.contains(&json!("age")));
    }

    /// Sizes.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Size {
        /// Small one
        S,
        /// Large one
        L,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Pick {
        size: Size,
    }

    #[test]
    fn documented_variants_become_titled_options() {
        let f = form_schema::<Pick>().expect("flat");
        assert_eq!(f["properties"]["size"]["type"], "string");
        assert_eq!(
            f["properties"]["size"]["oneOf"],
            json!([{"const": "S", "title": "Small one"}, {"const": "L", "title": "Large one"}])
        );
    }

    #[test]
    fn a_nested_form_is_refused_naming_the_field() {
        let err = form_schema::<Nested>().expect_err("not flat");
        assert!(err.contains("field `limits` is a nested object"), "{err}");
        assert!(err.contains("cannot be an elicitation form"), "{err}");
        #[derive(Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Lists {
            names: Vec<String>,
        }
        let err = form_schema::<Lists>().expect_err("free lists are not allowed");
        assert!(err.contains("field `names`"), "{err}");
        assert!(form_schema::<String>().is_err());
    }
}
