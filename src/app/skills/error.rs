//! Why a skill cannot be served.

use std::fmt;

/// Why a skill cannot be served: its `SKILL.md` frontmatter breaks the Agent
/// Skills rules, a file's path cannot be a URI path, a file is there twice,
/// the skill is over the extension's limits …
///
/// A skill a host would refuse is refused here instead, when the worker
/// builds its registry: `include_skills!(…)?` in the entry function shows
/// the reason in the logs (and in `cargo test`, through the test server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillError {
    at: String,
    reason: String,
}

impl SkillError {
    pub(crate) fn new(at: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            at: at.into(),
            reason: reason.into(),
        }
    }

    /// The skill or file it is about (a path, relative to the skills
    /// directory when the skill came from one).
    pub fn at(&self) -> &str {
        &self.at
    }

    /// What is wrong with it.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skill {}: {}", self.at, self.reason)
    }
}

impl std::error::Error for SkillError {}
