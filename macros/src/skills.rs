//! Reading a skills directory at compile time: its files, each
//! `SKILL.md`'s frontmatter as JSON (the YAML read here, not in the
//! worker), and the checks that make a bad skill a compile error.

use std::fmt::Write;
use std::path::{Path, PathBuf};

const MANIFEST: &str = "SKILL.md";

/// `$NAME` segments of `path` replaced by the environment's `NAME`.
pub(crate) fn expand_vars(path: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = path;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let var = &rest[at + 1..];
        let end = var
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(var.len());
        let name = &var[..end];
        let value = std::env::var(name)
            .map_err(|_| format!("include_skills!: ${name} is not set while building"))?;
        out.push_str(&value);
        rest = &var[end..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The expression for the directory at `dir`: `(files, frontmatters)`.
pub(crate) fn expand(dir: &str) -> Result<String, String> {
    let root = PathBuf::from(dir);
    let mut files = Vec::new();
    walk(&root, &root, &mut files)?;
    files.sort();
    let mut code = String::from("(&[");
    let mut frontmatters = String::new();
    for (rel, abs) in &files {
        let shown = abs.display().to_string();
        write!(
            code,
            "({rel:?}, ::core::include_bytes!({shown:?}) as &[u8]),"
        )
        .map_err(|e| e.to_string())?;
        if rel.rsplit('/').next() == Some(MANIFEST) {
            let json = frontmatter_json(rel, abs)?;
            write!(frontmatters, "({rel:?}, {json:?}),").map_err(|e| e.to_string())?;
        }
    }
    write!(
        code,
        "] as &[(&str, &[u8])], &[{frontmatters}] as &[(&str, &str)])"
    )
    .map_err(|e| e.to_string())?;
    Ok(code)
}

/// Every file under `dir` but those whose name starts with `.`, by its
/// `/`-separated path from `root`.
fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("include_skills!: cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or(".");
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            walk(root, &path, out)?;
        } else {
            let rel = path.strip_prefix(root).map_err(|e| e.to_string())?;
            let rel: Vec<_> = rel.iter().map(|s| s.to_string_lossy()).collect();
            out.push((rel.join("/"), path.clone()));
        }
    }
    Ok(())
}

/// The frontmatter of the `SKILL.md` at `abs` as JSON text, checked; its
/// folder named for the skill.
fn frontmatter_json(rel: &str, abs: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(abs).map_err(|e| format!("{rel}: {e}"))?;
    let fm = durable_mcp_frontmatter::parse(&text).map_err(|e| format!("{rel}: {e}"))?;
    let folder = rel.rsplit('/').nth(1).unwrap_or_default();
    let name = fm.get("name").and_then(|n| n.as_str()).unwrap_or_default();
    if folder != name {
        return Err(format!(
            "{rel}: the folder `{folder}` holds the skill named `{name}`: a skill's folder is named for it"
        ));
    }
    Ok(serde_json::Value::Object(fm).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the target's temp dir holding `files`.
    fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let root = std::env::temp_dir().join(format!("dmcp-skills-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (rel, text) in files {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap_or(&root)).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        root
    }

    const GOOD: &str = "---\nname: ship\ndescription: Ships it.\n---\n# Ship\n";

    #[test]
    fn a_directory_expands_to_its_files_and_frontmatters() {
        let root = tree(
            "good",
            &[
                ("ship/SKILL.md", GOOD),
                ("ship/refs/a.md", "a"),
                (".git/x", ""),
            ],
        );
        let code = expand(root.to_str().unwrap_or_default()).expect("expands");
        assert!(code.contains("\"ship/SKILL.md\""), "{code}");
        assert!(code.contains("\"ship/refs/a.md\""), "{code}");
        assert!(!code.contains(".git"), "{code}");
        assert!(code.contains(r#"\"name\":\"ship\""#), "{code}");
        assert!(code.contains(r#"\"description\":\"Ships it.\""#), "{code}");
    }

    #[test]
    fn a_bad_skill_is_an_error_naming_its_file() {
        let bad = tree(
            "bad",
            &[("ship/SKILL.md", "---\nname: Ship\ndescription: d\n---\n")],
        );
        let err = expand(bad.to_str().unwrap_or_default()).expect_err("refused");
        assert!(err.starts_with("ship/SKILL.md: name `Ship`"), "{err}");
        let misplaced = tree("misplaced", &[("boat/SKILL.md", GOOD)]);
        let err = expand(misplaced.to_str().unwrap_or_default()).expect_err("refused");
        assert!(
            err.contains("the folder `boat` holds the skill named `ship`"),
            "{err}"
        );
    }

    #[test]
    fn vars_are_read_from_the_build() {
        std::env::set_var("DMCP_SKILLS_TEST_DIR", "/x");
        assert_eq!(
            expand_vars("$DMCP_SKILLS_TEST_DIR/skills").as_deref(),
            Ok("/x/skills")
        );
        assert!(expand_vars("$DMCP_NOT_SET_ANYWHERE/s").is_err());
    }
}
