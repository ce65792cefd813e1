//! Skills (SEP-2640, the `io.modelcontextprotocol/skills` extension):
//! directories of instructions for an agent, shipped with the server that
//! they teach the agent to use.
//!
//! A skill is a directory holding a `SKILL.md` — YAML frontmatter with at
//! least `name` and `description`, then markdown — and any files beside it
//! (references, scripts, templates). A server that serves skills declares
//! the extension and:
//!
//! - lists them (`skills/list`) and answers one by its URI (`skills/get`):
//!   each entry carries the `SKILL.md` URI, its frontmatter as JSON, and
//!   every file's URI, SHA-256 digest and size, so a host can check what
//!   it reads;
//! - serves every file as a resource, `skill://<skill-path>/<file>`, read
//!   with `resources/read` (each `SKILL.md` is also in `resources/list`);
//! - lists directories (`resources/directory/read`, declared as
//!   `directoryRead`): a skill's root, each folder in it.
//!
//! Ship them in your worker crate as a directory, bundled at compile time
//! by one call in your entry function,
//! `r.skills(durable_mcp::include_skills!("$CARGO_MANIFEST_DIR/skills")?)`
//! (see [`include_skills!`](crate::include_skills)): each folder holding a
//! `SKILL.md` is a skill, named by its folder.
//!
//! ```text
//! my-worker/
//! ├── Cargo.toml
//! ├── src/lib.rs
//! └── skills/
//!     └── release-notes/           skill://release-notes/SKILL.md
//!         ├── SKILL.md
//!         └── templates/entry.md   skill://release-notes/templates/entry.md
//! ```
//!
//! Or build one in code with [`Skill::new`]:
//!
//! ```
//! use durable_mcp::testing::TestServer;
//! use durable_mcp::{Registry, Skill, SkillError};
//! use serde_json::json;
//!
//! # fn main() -> Result<(), SkillError> {
//! let skill = Skill::new("---\nname: refunds\ndescription: Process refund requests\n---\n\
//!                         Answer with the template in `examples/email.md`.\n")?
//!     .under("acme/billing")?
//!     .file("examples/email.md", b"Dear customer, ...")?;
//! let mut r = Registry::new();
//! r.skill(skill);
//!
//! let mut s = TestServer::new(r);
//! let list = s.call("skills/list", json!({}));
//! let entry = &list.json["result"]["skills"][0];
//! assert_eq!(entry["uri"], "skill://acme/billing/refunds/SKILL.md");
//! assert_eq!(entry["frontmatter"]["description"], "Process refund requests");
//! assert_eq!(entry["resources"][1]["uri"], "skill://acme/billing/refunds/examples/email.md");
//! assert_eq!(entry["resources"][1]["size"], 18);
//! let file = s.call("resources/read", json!({"uri": "skill://acme/billing/refunds/examples/email.md"}));
//! assert_eq!(file.json["result"]["contents"][0]["text"], "Dear customer, ...");
//! # Ok(())
//! # }
//! ```
//!
//! A skill is checked as it is built, as a host would check it: the Agent
//! Skills rules on its frontmatter (`name` is 1-64 lowercase letters,
//! digits and single hyphens, and the last segment of the skill's path;
//! `description` is 1-1024 characters; `metadata` maps strings to
//! strings), paths a URI carries as written, each file once, and the
//! extension's limits (512 files and 16 MiB a skill). A [`SkillError`]
//! says what broke a rule.
//!
//! # Layout
//! - `mod.rs`: [`Skill`], built from a `SKILL.md` and files; what the server reads of it.
//! - `frontmatter.rs`: the frontmatter found, read as YAML, held to the Agent Skills rules.
//! - `paths.rs`: segments a `skill://` URI carries; a file's `mimeType`.
//! - `mime.rs`: the `mimeType` an extension names (the full table with the
//!   `skill-mime-types` feature, else a short one).
//! - `tree.rs`: a tree of files grouped into skills ([`Skill::from_files`], [`include_skills!`](crate::include_skills)).
//! - `error.rs`: [`SkillError`].

mod error;
mod mime;
pub(crate) mod paths;
mod tree;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::rc::Rc;

use base64::Engine as _;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::engine::{boxed, hex, BoxedHandler, Cx, ToolError};

pub use error::SkillError;
#[doc(hidden)]
pub use tree::__private;

/// The extension's identifier, under `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// A skill's manifest file, at its root.
const MANIFEST: &str = "SKILL.md";

/// The limits SEP-2640 sets on one skill: hosts must accept skills up to
/// them, and servers should not serve larger ones.
const MAX_FILES: usize = 512;
const MAX_BYTES: usize = 16 * 1024 * 1024;

/// A skill: its `SKILL.md` and the files beside it, served at
/// `skill://<path>/…` where `<path>` ends in the skill's name. See the
/// [module docs](self).
#[derive(Debug, Clone)]
pub struct Skill {
    /// `<skill-path>`: organizational prefix segments, then the name.
    path: String,
    frontmatter: Map<String, Value>,
    /// `SKILL.md` first, the others sorted by path.
    files: Vec<SkillFile>,
}

/// One file of a skill.
#[derive(Clone)]
struct SkillFile {
    /// Relative to the skill's root, `/`-separated.
    path: String,
    /// Shared with the handler that reads it (not copied: a bundled file's
    /// bytes stay where the compiler put them).
    bytes: Rc<Cow<'static, [u8]>>,
    mime_type: &'static str,
    /// `sha256:<64 lowercase hex>` of the bytes, made when first listed
    /// (not on a worker's first request, unless it lists skills).
    digest: OnceCell<String>,
}

/// Its path, size and digest: not the bytes, which can be megabytes.
impl std::fmt::Debug for SkillFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillFile")
            .field("path", &self.path)
            .field("size", &self.bytes.len())
            .field("mime_type", &self.mime_type)
            .field("digest", &self.digest.get())
            .finish()
    }
}

impl SkillFile {
    fn digest(&self) -> &str {
        self.digest
            .get_or_init(|| format!("sha256:{}", hex(&Sha256::digest(&**self.bytes))))
    }

    fn new(path: &str, bytes: Cow<'static, [u8]>) -> Self {
        Self {
            mime_type: paths::mime_type(path, &bytes),
            digest: OnceCell::new(),
            path: path.to_string(),
            bytes: Rc::new(bytes),
        }
    }
}

impl Skill {
    /// A skill from the text of its `SKILL.md`, served at
    /// `skill://<name>/SKILL.md` (`name` from the frontmatter; see
    /// [`under`](Self::under) for a longer path). `Err` when the
    /// frontmatter is missing or breaks the Agent Skills rules.
    pub fn new(skill_md: impl Into<Cow<'static, str>>) -> Result<Self, SkillError> {
        let text: Cow<'static, str> = skill_md.into();
        let frontmatter =
            durable_mcp_frontmatter::parse(&text).map_err(|e| SkillError::new(MANIFEST, e))?;
        Self::with_frontmatter(text, frontmatter)
    }

    /// A skill from its `SKILL.md` and that file's frontmatter, already
    /// read and checked (at compile time, for [`include_skills!`](crate::include_skills)).
    fn with_frontmatter(
        text: Cow<'static, str>,
        frontmatter: Map<String, Value>,
    ) -> Result<Self, SkillError> {
        let name = match frontmatter.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => return Err(SkillError::new(MANIFEST, "the frontmatter needs `name`")),
        };
        let bytes = match text {
            Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        };
        Ok(Self {
            files: vec![SkillFile::new(MANIFEST, bytes)],
            path: name,
            frontmatter,
        })
    }

    /// Serves the skill under an organizational prefix: `under("acme/billing")`
    /// puts skill `refunds` at `skill://acme/billing/refunds/SKILL.md`.
    pub fn under(mut self, prefix: &str) -> Result<Self, SkillError> {
        let prefix = prefix.trim_matches('/');
        if let Some(problem) = paths::path_problem(prefix) {
            return Err(SkillError::new(prefix, problem));
        }
        self.path = format!("{prefix}/{}", self.name());
        Ok(self)
    }

    /// Adds a file at `path` (relative to the skill's root, `/`-separated:
    /// `references/FORMS.md`). Its `mimeType` comes from its extension
    /// (the common ones; every extension `mime_guess` knows with the
    /// `skill-mime-types` feature); it is read as text when it is UTF-8,
    /// as a base64 blob otherwise.
    pub fn file(
        mut self,
        path: &str,
        bytes: impl Into<Cow<'static, [u8]>>,
    ) -> Result<Self, SkillError> {
        let at = || format!("{}/{path}", self.path);
        if let Some(problem) = paths::path_problem(path) {
            return Err(SkillError::new(at(), problem));
        }
        let bytes = bytes.into();
        let place = match self.files[1..].binary_search_by(|f| f.path.as_str().cmp(path)) {
            _ if path == MANIFEST => {
                return Err(SkillError::new(at(), "the skill has its SKILL.md"))
            }
            Ok(_) => return Err(SkillError::new(at(), "the skill has this file already")),
            Err(i) => i + 1,
        };
        if self.files.len() >= MAX_FILES {
            return Err(SkillError::new(
                at(),
                format!("a skill has at most {MAX_FILES} files, SKILL.md included"),
            ));
        }
        if self.size() + bytes.len() > MAX_BYTES {
            return Err(SkillError::new(
                at(),
                format!("a skill's files add up to at most {MAX_BYTES} bytes (16 MiB)"),
            ));
        }
        self.files.insert(place, SkillFile::new(path, bytes));
        Ok(self)
    }

    /// Its name (`name` in the frontmatter).
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }

    /// The URI of its `SKILL.md`, which names the skill.
    pub fn uri(&self) -> String {
        self.file_uri(MANIFEST)
    }

    /// Its frontmatter, as JSON.
    pub fn frontmatter(&self) -> &Map<String, Value> {
        &self.frontmatter
    }

    /// Its entry in `skills/list` and `skills/get`: the `SKILL.md` URI, the
    /// frontmatter, and every file with its digest and size.
    pub fn entry(&self) -> Value {
        let resources: Vec<Value> = self
            .files
            .iter()
            .map(|f| json!({"uri": self.file_uri(&f.path), "digest": f.digest(), "size": f.bytes.len()}))
            .collect();
        json!({"uri": self.uri(), "frontmatter": self.frontmatter, "resources": resources})
    }

    /// The total size of its files, in bytes.
    fn size(&self) -> usize {
        self.files.iter().map(|f| f.bytes.len()).sum()
    }

    fn file_uri(&self, path: &str) -> String {
        format!("{}{}/{path}", paths::SCHEME, self.path)
    }

    /// Each file as a resource: its URI, its listing (`name`, `mimeType`,
    /// `size`; a `SKILL.md` is named and described by its frontmatter, as
    /// SEP-2640 asks) and the handler that reads it.
    pub(crate) fn resources(
        &self,
    ) -> impl Iterator<Item = (String, Map<String, Value>, BoxedHandler<Vec<Value>>)> + '_ {
        self.files.iter().map(|f| {
            let uri = self.file_uri(&f.path);
            let mut meta = Map::new();
            meta.insert("uri".into(), json!(uri));
            if f.path == MANIFEST {
                meta.insert("name".into(), json!(self.name()));
                if let Some(d) = self.frontmatter.get("description") {
                    meta.insert("description".into(), d.clone());
                }
            } else {
                let name = f.path.rsplit('/').next().unwrap_or_default();
                meta.insert("name".into(), json!(name));
            }
            meta.insert("mimeType".into(), json!(f.mime_type));
            meta.insert("size".into(), json!(f.bytes.len()));
            (uri.clone(), meta, reader(uri, f))
        })
    }
}

/// The handler that reads one file: the same bytes its digest covers, as
/// `text` when they are UTF-8 and as a base64 `blob` otherwise. The
/// content is made per read, so the bytes are not held twice.
fn reader(uri: String, file: &SkillFile) -> BoxedHandler<Vec<Value>> {
    let (bytes, mime_type) = (Rc::clone(&file.bytes), file.mime_type);
    boxed(
        async move |_: &mut Cx, _: Value| -> Result<Vec<Value>, ToolError> {
            let mut content = json!({"uri": uri, "mimeType": mime_type});
            match std::str::from_utf8(&bytes) {
                Ok(text) => content["text"] = json!(text),
                Err(_) => {
                    content["blob"] =
                        json!(base64::engine::general_purpose::STANDARD.encode(&**bytes))
                }
            }
            Ok(vec![content])
        },
    )
}

/// Bundles a directory of skills into the worker at compile time, and
/// reads it into [`Skill`]s: `Result<Vec<Skill>, SkillError>`.
///
/// The path is a string literal; start it with `$CARGO_MANIFEST_DIR` (your
/// crate's root), as in `include_skills!("$CARGO_MANIFEST_DIR/skills")`.
/// Each folder in it holding a `SKILL.md` is a skill named by that folder
/// (`skills/acme/refunds/SKILL.md` is `skill://acme/refunds/SKILL.md`), and
/// every file below that folder is one of its files; see
/// [`Skill::from_files`] for the rest. The files are in the wasm as they
/// are, read in place; their digests are made once per isolate, when
/// first listed. Each
/// `SKILL.md`'s frontmatter is read (YAML) and checked while the crate
/// compiles: a frontmatter that breaks the Agent Skills rules, or a skill
/// in a folder not named for it, is a compile error naming the file, and
/// the worker links no YAML reader for it.
///
/// Cargo rebuilds the crate when a bundled file changes, but not when a
/// file is added: add `println!("cargo:rerun-if-changed=skills");` to a
/// `build.rs`, or touch `src/lib.rs`, after adding one.
///
/// ```
/// use durable_mcp::{Bindings, Registry, SkillError};
///
/// fn server(_: &Bindings) -> Result<Registry, SkillError> {
///     let mut r = Registry::new();
///     // In your crate: "$CARGO_MANIFEST_DIR/skills". This crate's own
///     // doctests read the quickstart's.
///     r.skills(durable_mcp::include_skills!("$CARGO_MANIFEST_DIR/examples/quickstart/skills")?);
///     Ok(r)
/// }
///
/// durable_mcp::entry!(server);
/// # fn main() {
/// #     let r = server(&Bindings::from_vars([("A", "")])).expect("the quickstart's skills are valid");
/// #     let mut s = durable_mcp::testing::TestServer::new(r);
/// #     let list = s.call("skills/list", serde_json::json!({}));
/// #     assert!(list.json["result"]["skills"][0]["uri"].is_string(), "{}", list.json);
/// # }
/// ```
#[macro_export]
macro_rules! include_skills {
    // `tt`, not `literal`: a `literal` fragment reaches the proc macro
    // wrapped in a group.
    ($dir:tt) => {
        $crate::app::skills::__private::bundled($crate::app::skills::__private::skills_dir!($dir))
    };
}
