//! A `SKILL.md`'s frontmatter: found between its `---` lines, read as YAML
//! into the JSON object a skill entry carries verbatim, and held to the
//! Agent Skills rules a host checks before it loads the skill.
//!
//! Its own crate so that `durable-mcp`'s `include_skills!` reads the YAML
//! when the worker is compiled (in `durable-mcp-macros`), and a worker
//! links a YAML reader only when it makes a skill from text at run time
//! (`Skill::new`, `Skill::from_files`).

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

/// The Agent Skills limits on `description` and `compatibility`, in
/// characters.
const DESCRIPTION_MAX: usize = 1024;
const COMPATIBILITY_MAX: usize = 500;

/// Keys of `metadata` under this prefix are reserved for MCP extensions
/// (SEP-2640 defines none yet).
const RESERVED_METADATA: &str = "io.modelcontextprotocol/";

/// The YAML between a leading `---` line and the next line that is `---`
/// (trailing blanks allowed), after an optional byte-order mark: what hosts
/// and the conformance suite read as the frontmatter.
fn yaml_block(markdown: &str) -> Option<&str> {
    let text = markdown.strip_prefix('\u{feff}').unwrap_or(markdown);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut end = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\n', '\r', ' ', '\t']) == "---" {
            return Some(&rest[..end]);
        }
        end += line.len();
    }
    None
}

/// The frontmatter of `markdown` as a JSON object, checked against the
/// Agent Skills rules; `Err` says why not.
pub fn parse(markdown: &str) -> Result<Map<String, Value>, String> {
    let yaml = yaml_block(markdown).ok_or(
        "SKILL.md must begin with YAML frontmatter: a `---` line, the fields, then a `---` line",
    )?;
    let docs = YamlLoader::load_from_str(yaml)
        .map_err(|e| format!("the frontmatter is not valid YAML: {e}"))?;
    let frontmatter = match docs.first().map(to_json).transpose()? {
        Some(Value::Object(map)) => map,
        _ => return Err("the frontmatter must be a mapping of fields (`name: …`)".into()),
    };
    check(&frontmatter)?;
    Ok(frontmatter)
}

/// YAML to JSON, as a host's YAML 1.2 reader sees it. What JSON cannot
/// carry (non-finite numbers, keys that are not strings) is refused rather
/// than changed: the entry's frontmatter must equal the file's.
fn to_json(yaml: &Yaml) -> Result<Value, String> {
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(raw) => yaml
            .as_f64()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("`{raw}` has no JSON number; quote it"))?,
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Yaml::Hash(pairs) => {
            let mut map = Map::new();
            for (key, value) in pairs {
                let Yaml::String(key) = key else {
                    return Err(format!("the key {key:?} must be a string; quote it"));
                };
                map.insert(key.clone(), to_json(value)?);
            }
            Value::Object(map)
        }
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err("the frontmatter has an unresolved alias".into())
        }
    })
}

/// The Agent Skills rules on the fields a host validates: `name`,
/// `description`, `compatibility` and `metadata`.
fn check(frontmatter: &Map<String, Value>) -> Result<(), String> {
    match frontmatter.get("name") {
        Some(Value::String(name)) if is_skill_name(name) => {}
        Some(Value::String(name)) => {
            return Err(format!(
                "name `{name}` must be 1-64 lowercase letters, digits and single hyphens, \
                 not starting or ending with a hyphen"
            ))
        }
        _ => return Err("the frontmatter needs `name`, a string".into()),
    }
    match frontmatter.get("description") {
        Some(Value::String(d)) if !d.is_empty() && d.chars().count() <= DESCRIPTION_MAX => {}
        _ => {
            return Err(format!(
                "the frontmatter needs `description`, a string of 1-{DESCRIPTION_MAX} characters"
            ))
        }
    }
    match frontmatter.get("compatibility") {
        None => {}
        Some(Value::String(c)) if !c.is_empty() && c.chars().count() <= COMPATIBILITY_MAX => {}
        Some(_) => {
            return Err(format!(
                "`compatibility` must be a string of 1-{COMPATIBILITY_MAX} characters"
            ))
        }
    }
    match frontmatter.get("metadata") {
        None => {}
        Some(Value::Object(m)) if m.values().all(Value::is_string) => {
            if let Some(key) = m.keys().find(|k| k.starts_with(RESERVED_METADATA)) {
                return Err(format!(
                    "metadata key `{key}` is under `{RESERVED_METADATA}`, reserved for MCP extensions"
                ));
            }
        }
        Some(_) => return Err("`metadata` must map strings to strings (quote numbers)".into()),
    }
    Ok(())
}

/// The Agent Skills naming rule: 1-64 of `a-z`, `0-9` and `-`, no hyphen
/// first, last or twice in a row.
pub fn is_skill_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_frontmatter_is_the_yaml_between_the_dashes_as_json() {
        let md = "\u{feff}---\r\nname: pdf-tools\r\ndescription: \"Fill: forms\"\r\nlicense: MIT\r\n\
                  metadata:\r\n  version: \"1.0\"\r\nrating: 4.5\r\ntags: [a, b]\r\n---  \r\n# Body\r\n";
        let fm = parse(md).expect("parses");
        assert_eq!(
            Value::Object(fm),
            json!({"name": "pdf-tools", "description": "Fill: forms", "license": "MIT",
                   "metadata": {"version": "1.0"}, "rating": 4.5, "tags": ["a", "b"]})
        );
    }

    #[test]
    fn broken_frontmatter_says_why() {
        let cases = [
            ("# no frontmatter\n", "must begin with YAML frontmatter"),
            ("---\nname: x\n", "must begin with YAML frontmatter"),
            ("---\n- a\n---\n", "mapping of fields"),
            ("---\ndescription: d\n---\n", "needs `name`"),
            ("---\nname: Bad_Name\ndescription: d\n---\n", "lowercase"),
            ("---\nname: ok\n---\n", "needs `description`"),
            (
                "---\nname: ok\ndescription: d\nmetadata:\n  v: 1\n---\n",
                "strings to strings",
            ),
            (
                "---\nname: ok\ndescription: d\nx: .inf\n---\n",
                "no JSON number",
            ),
            (
                "---\nname: ok\ndescription: d\n1: x\n---\n",
                "must be a string",
            ),
            (
                "---\nname: ok\nname: ok\ndescription: d\n---\n",
                "not valid YAML",
            ),
            (
                "---\nname: ok\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: y\n---\n",
                "reserved",
            ),
        ];
        for (md, why) in cases {
            let err = parse(md).expect_err(md);
            assert!(err.contains(why), "{md:?}: {err}");
        }
    }

    #[test]
    fn skill_names_follow_the_agent_skills_rules() {
        for ok in ["a", "pdf-processing", "x1-2", &"a".repeat(64)] {
            assert!(is_skill_name(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a.b", &"a".repeat(65)] {
            assert!(!is_skill_name(bad), "{bad}");
        }
    }
}
