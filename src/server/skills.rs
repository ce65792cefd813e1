//! The skills extension's side of the server (SEP-2640): `skills/list`,
//! `skills/get` and `resources/directory/read`, the extension in the
//! capabilities, each `SKILL.md` in `resources/list`, and skill files for
//! `resources/read`. What a skill is, and its files, is `app::skills`.
//!
//! Every answer comes from the registry alone, the same on both wires; a
//! registry without skills declares nothing and knows none of the methods.

use serde_json::{json, Value};

use crate::app::skills::paths::{DIRECTORY_MIME_TYPE, SCHEME};
use crate::app::skills::SKILLS_EXTENSION;
use crate::app::{Registry, Resource};
use crate::error::McpError;
use crate::protocol::{ClientRequest, Method};

/// Adds the extension to `capabilities` when skills are served. Every
/// directory of a skill is served as one, so `directoryRead` is promised.
pub(crate) fn declare(registry: &Registry, capabilities: &mut Value) {
    if registry.skills.is_empty() {
        return;
    }
    let extensions = &mut capabilities["extensions"];
    if !extensions.is_object() {
        *extensions = json!({});
    }
    extensions[SKILLS_EXTENSION] = json!({"directoryRead": true});
}

/// The result of a skills method, or `None` when `method` is not one (or
/// no skill is served). Callers add the cache fields.
pub(crate) fn method(
    registry: &Registry,
    method: Method,
    params: &ClientRequest,
) -> Option<Result<Value, McpError>> {
    if registry.skills.is_empty() {
        return None;
    }
    Some(match method {
        // One page: an entry is never split, and the listing is whole.
        Method::SkillsList => Ok(json!({
            "resultType": "complete",
            "skills": registry.skills.iter().map(|s| s.entry()).collect::<Vec<_>>(),
        })),
        Method::SkillsGet => get(registry, params),
        Method::ResourcesDirectoryRead => read_directory(registry, params),
        _ => return None,
    })
}

/// `skills/get`: the entry of the skill whose `SKILL.md` is `uri`.
fn get(registry: &Registry, params: &ClientRequest) -> Result<Value, McpError> {
    let uri = params.uri()?;
    // -32602 as the spec says, sent with HTTP 400 like any invalid params:
    // clients take a 404 for a missing endpoint, not for this answer.
    let skill = registry.skills.iter().find(|s| s.uri() == uri);
    let skill = skill.ok_or_else(|| {
        McpError::invalid_params(format!("No skill is served at {uri}"))
            .with_data(json!({"uri": uri}))
    })?;
    Ok(json!({"resultType": "complete", "skill": skill.entry()}))
}

/// `resources/directory/read`: the direct children of a directory of the
/// skill namespace — a skill's root, a folder in it, or a prefix above
/// skills — files with their listing, folders as `inode/directory`.
fn read_directory(registry: &Registry, params: &ClientRequest) -> Result<Value, McpError> {
    let uri = params.uri()?;
    let not_a_directory = || {
        McpError::invalid_params(format!("{uri} is not a directory resource"))
            .with_data(json!({"uri": uri}))
    };
    // `skill://` alone, or a trailing slash, names no directory.
    if uri.len() <= SCHEME.len() || !uri.starts_with(SCHEME) || uri.ends_with('/') {
        return Err(not_a_directory());
    }
    let inside = format!("{uri}/");
    let mut children: Vec<Value> = Vec::new();
    let mut last_folder: Option<&str> = None;
    // Sorted by URI: the files of one folder are next to each other.
    for file in registry
        .skill_files
        .iter()
        .filter(|f| f.uri.starts_with(&inside))
    {
        let rest = &file.uri[inside.len()..];
        match rest.split_once('/') {
            None => children.push(file.listing()),
            Some((folder, _)) if last_folder != Some(folder) => {
                last_folder = Some(folder);
                children.push(json!({
                    "uri": format!("{inside}{folder}"),
                    "name": folder,
                    "mimeType": DIRECTORY_MIME_TYPE,
                }));
            }
            Some(_) => {}
        }
    }
    if children.is_empty() {
        return Err(not_a_directory());
    }
    Ok(json!({"resultType": "complete", "resources": children}))
}

/// The `resources/list` entries of skills: each skill's `SKILL.md` (the
/// other files are reached through the entry or a directory read).
pub(crate) fn listings(registry: &Registry) -> impl Iterator<Item = Value> + '_ {
    registry.skills.iter().filter_map(move |s| {
        let uri = s.uri();
        file(registry, &uri).map(Resource::listing)
    })
}

/// The skill file at `uri`, for `resources/read`.
pub(crate) fn file<'a>(registry: &'a Registry, uri: &str) -> Option<&'a Resource> {
    let files = &registry.skill_files;
    files
        .binary_search_by(|f| f.uri.as_str().cmp(uri))
        .ok()
        .and_then(|i| files.get(i))
}
