//! A tree of files grouped into skills: every folder holding a `SKILL.md`
//! is a skill, named by that folder, and every file below it is one of its
//! files. This is what [`include_skills!`](crate::include_skills) bundles.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::{paths, Skill, SkillError, MANIFEST};

/// How a tree's `SKILL.md` becomes its frontmatter: read from the text at
/// run time ([`Skill::from_files`]), or looked up among those read at
/// compile time ([`include_skills!`](crate::include_skills)).
type Reader<'a> = &'a dyn Fn(&str, &str) -> Result<Map<String, Value>, String>;

impl Skill {
    /// The skills in a tree of files, each given by its path (relative to
    /// the tree's root, `/`-separated) and its bytes. Each folder holding a
    /// `SKILL.md` is a skill: its path is the skill's path, its last
    /// segment the skill's name (which must be the frontmatter's `name`),
    /// and every file below it one of its files. A skill nested in another
    /// is also a part of it, as SEP-2640 says. Names starting with `.` are
    /// left out, as are files in no skill's folder.
    ///
    /// [`include_skills!`](crate::include_skills) calls it with a directory
    /// bundled at compile time; call it yourself with files from elsewhere.
    pub fn from_files<P: AsRef<str>>(
        files: impl IntoIterator<Item = (P, Cow<'static, [u8]>)>,
    ) -> Result<Vec<Skill>, SkillError> {
        let files = files
            .into_iter()
            .map(|(p, b)| (p.as_ref().trim_matches('/').to_string(), b))
            .collect();
        from_tree(files, &|_, text| durable_mcp_frontmatter::parse(text))
    }
}

/// The skills in `files` (paths trimmed of `/`), each `SKILL.md`'s
/// frontmatter from `read`.
fn from_tree(
    mut files: Vec<(String, Cow<'static, [u8]>)>,
    read: Reader<'_>,
) -> Result<Vec<Skill>, SkillError> {
    files.retain(|(p, _)| !p.split('/').any(|s| s.starts_with('.')));
    // Paths are unique: unstable orders them the same, with less code.
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let roots: Vec<&str> = files
        .iter()
        .filter_map(|(p, _)| match p.strip_suffix(MANIFEST) {
            Some("") => Some(Err(SkillError::new(
                p.as_str(),
                "a SKILL.md belongs in a folder named for its skill",
            ))),
            Some(dir) => dir.strip_suffix('/').map(Ok),
            None => None,
        })
        .collect::<Result<_, _>>()?;
    roots
        .iter()
        .map(|root| skill_at(root, &files, read))
        .collect()
}

/// The skill whose folder is `root`, from the sorted `files`.
fn skill_at(
    root: &str,
    files: &[(String, Cow<'static, [u8]>)],
    read: Reader<'_>,
) -> Result<Skill, SkillError> {
    let mut skill = manifest_at(root, files, read)?;
    if let Some(problem) = paths::path_problem(root) {
        return Err(SkillError::new(root, problem));
    }
    if let Some((prefix, _)) = root.rsplit_once('/') {
        skill = skill.under(prefix)?;
    }
    let inside = format!("{root}/");
    for (path, bytes) in files {
        match path.strip_prefix(&inside) {
            Some(MANIFEST) | None => {}
            Some(rel) => {
                skill = skill
                    .file(rel, bytes.clone())
                    .map_err(|e| SkillError::new(path.as_str(), e.reason()))?
            }
        }
    }
    Ok(skill)
}

/// The skill of the `SKILL.md` in the folder `root`, named for its folder.
fn manifest_at(
    root: &str,
    files: &[(String, Cow<'static, [u8]>)],
    read: Reader<'_>,
) -> Result<Skill, SkillError> {
    let manifest = format!("{root}/{MANIFEST}");
    let text = files
        .iter()
        .find(|(p, _)| *p == manifest)
        .map(|(_, bytes)| utf8(bytes.clone()))
        .transpose()
        .map_err(|e| SkillError::new(manifest.as_str(), e))?
        .unwrap_or_default();
    let skill = read(&manifest, &text)
        .and_then(|fm| Skill::with_frontmatter(text, fm).map_err(|e| e.reason().to_string()))
        .map_err(|e| SkillError::new(manifest.as_str(), e))?;
    let folder = root.rsplit_once('/').map_or(root, |(_, f)| f);
    if folder != skill.name() {
        return Err(SkillError::new(
            manifest.as_str(),
            format!(
                "the folder `{folder}` holds the skill named `{}`: a skill's folder is named for it",
                skill.name()
            ),
        ));
    }
    Ok(skill)
}

/// `bytes` as text, borrowed when they are.
fn utf8(bytes: Cow<'static, [u8]>) -> Result<Cow<'static, str>, &'static str> {
    const NOT_UTF8: &str = "SKILL.md is not UTF-8";
    match bytes {
        Cow::Borrowed(b) => std::str::from_utf8(b)
            .map(Cow::Borrowed)
            .map_err(|_| NOT_UTF8),
        Cow::Owned(b) => String::from_utf8(b).map(Cow::Owned).map_err(|_| NOT_UTF8),
    }
}

/// What [`include_skills!`](crate::include_skills) expands to uses; not
/// an API.
#[doc(hidden)]
pub mod __private {
    use std::borrow::Cow;

    use super::{from_tree, Skill, SkillError};

    pub use durable_mcp_macros::skills_dir;

    /// A bundled directory's files: `(path, bytes)`.
    pub type Files = &'static [(&'static str, &'static [u8])];
    /// Its `SKILL.md`s' frontmatters as JSON text: `(path, json)`.
    pub type Frontmatters = &'static [(&'static str, &'static str)];

    /// The skills of a directory bundled by [`skills_dir!`]: its files and
    /// the frontmatters read from them while the worker was compiled.
    pub fn bundled((files, frontmatters): (Files, Frontmatters)) -> Result<Vec<Skill>, SkillError> {
        let files = files
            .iter()
            .map(|(p, b)| ((*p).to_string(), Cow::Borrowed(*b)))
            .collect();
        from_tree(files, &|manifest, _| {
            let json = frontmatters
                .iter()
                .find(|(p, _)| *p == manifest)
                .map_or("", |(_, j)| j);
            crate::json::from_str(json).map_err(|e| format!("the bundled frontmatter: {e}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &'static str)]) -> Result<Vec<Skill>, SkillError> {
        Skill::from_files(files.iter().map(|(p, b)| (*p, Cow::Borrowed(b.as_bytes()))))
    }

    const A: &str = "---\nname: a\ndescription: The a skill\n---\nA\n";
    const B: &str = "---\nname: b\ndescription: The b skill\n---\nB\n";

    #[test]
    fn each_folder_with_a_skill_md_is_a_skill_with_every_file_below_it() {
        let skills = tree(&[
            ("README.md", "not in a skill"),
            ("a/SKILL.md", A),
            ("a/refs/one.md", "1"),
            ("a/.DS_Store", "x"),
            ("a/nested/b/SKILL.md", B),
            ("a/nested/b/two.md", "2"),
            ("team/b/SKILL.md", B),
        ])
        .expect("skills");
        let uris: Vec<String> = skills.iter().map(Skill::uri).collect();
        assert_eq!(
            uris,
            [
                "skill://a/SKILL.md",
                "skill://a/nested/b/SKILL.md",
                "skill://team/b/SKILL.md"
            ]
        );
        let files: Vec<String> = skills[0].files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(
            files,
            [
                "SKILL.md",
                "nested/b/SKILL.md",
                "nested/b/two.md",
                "refs/one.md"
            ]
        );
        assert_eq!(skills[1].files.len(), 2);
    }

    #[test]
    fn a_misplaced_or_misnamed_skill_is_refused() {
        let err = tree(&[("SKILL.md", A)]).expect_err("at the root");
        assert!(err.reason().contains("folder named for"), "{err}");
        let err = tree(&[("x/SKILL.md", A)]).expect_err("misnamed");
        assert_eq!(err.at(), "x/SKILL.md");
        assert!(
            err.reason()
                .contains("folder `x` holds the skill named `a`"),
            "{err}"
        );
        let err = tree(&[("a/SKILL.md", A), ("a/my file.md", "")]).expect_err("path");
        assert_eq!(err.at(), "a/my file.md");
        let err = tree(&[("a/SKILL.md", "no frontmatter")]).expect_err("frontmatter");
        assert_eq!(err.at(), "a/SKILL.md");
    }
}
