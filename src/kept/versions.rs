//! Draining a tool's earlier versions: per tool and per version, the
//! unfinished calls it holds (waiting, working, parked) and what the code
//! does with them — runs them on its current body, on a body it keeps
//! ([`Tool::keeps`](crate::Tool::keeps)), on the current body although
//! they started on another version (an `upgrade` tool), or cannot run
//! them (a pinned call whose version the code no longer keeps: it parks
//! with `-32050`, `data.pinnedTo`). The admin API (`GET
//! /admin/api/tools/versions`), the console and the deploy check read
//! it. Sans-IO: the calls and the code are handed in.

use serde::{Deserialize, Serialize};

use super::Status;
use crate::app::{earlier_body, Registry, Tool};
use crate::vec_map::{VecMap, VecSet};

/// What a code runs of one tool: its current version, its policy, the
/// earlier versions it keeps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCode {
    /// The tool's name.
    pub name: String,
    /// Its declared version (`None`: it declares none).
    pub current: Option<String>,
    /// Whether it pins its calls ([`Tool::pinned`](crate::Tool::pinned)).
    pub pinned: bool,
    /// The earlier versions whose bodies it keeps, in the order kept.
    pub keeps: Vec<String>,
}

impl ToolCode {
    /// What `tool` runs.
    pub fn of(tool: &Tool) -> Self {
        Self {
            name: tool.name.clone(),
            current: tool.current_version().map(str::to_string),
            pinned: tool.is_pinned(),
            keeps: tool.kept_versions().map(str::to_string).collect(),
        }
    }

    /// What every tool of `registry` runs.
    pub fn all(registry: &Registry) -> Vec<Self> {
        registry.tools.iter().map(Self::of).collect()
    }

    /// What this code does with a call whose last round ran on `version`
    /// (`""`: none recorded), as the tool picks its body.
    pub fn standing(&self, version: &str) -> Standing {
        let last = (!version.is_empty()).then_some(version);
        match earlier_body(self.pinned, self.current.as_deref(), last) {
            None if version == self.current.as_deref().unwrap_or("") => Standing::Current,
            None => Standing::Upgrades,
            Some(v) if self.keeps.iter().any(|k| k == v) => Standing::Kept,
            Some(_) => Standing::Missing,
        }
    }
}

/// What a code does with the calls on one version of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// The tool's current version: its calls run on the current body.
    Current,
    /// An earlier version whose body the code keeps: its (pinned) calls
    /// run on it.
    Kept,
    /// An earlier version (or none recorded) whose calls run on the current
    /// body: the tool upgrades its calls, or they started before it
    /// declared a version.
    Upgrades,
    /// A version the code cannot run: its pinned calls park (`-32050`,
    /// `data.pinnedTo`), or the tool is no longer served at all.
    Missing,
}

impl Standing {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Current => "current",
            Self::Kept => "kept",
            Self::Upgrades => "upgrades",
            Self::Missing => "missing",
        }
    }
}

/// A tool's calls pinned or not: `pinned` or `upgrade`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Each call goes on on the body of the version it last ran on.
    Pinned,
    /// Every round runs the current body.
    Upgrade,
}

/// One version of a tool: the unfinished calls on it, by status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionCalls {
    /// The version (`""`: calls that recorded none).
    pub version: String,
    /// What the code does with its calls.
    pub standing: Standing,
    /// Calls paused on a question (or a timer).
    pub waiting: usize,
    /// Calls with a round running.
    pub working: usize,
    /// Calls parked (their code changed, an operator paused them, their
    /// tool is paused).
    pub parked: usize,
}

impl VersionCalls {
    /// Every unfinished call on it.
    pub fn calls(&self) -> usize {
        self.waiting + self.working + self.parked
    }

    /// A kept version no call is on any more: its body can be removed.
    pub fn removable(&self) -> bool {
        self.standing == Standing::Kept && self.calls() == 0
    }
}

/// One tool: what the code runs of it and the calls on each version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolVersions {
    /// The tool's name.
    pub tool: String,
    /// Whether the code serves it (a tool found only on kept calls is not).
    pub served: bool,
    /// Its current version, when it declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// Its policy (absent for a tool not served).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// The earlier versions it keeps.
    #[serde(default)]
    pub keeps: Vec<String>,
    /// Its current version, each kept one and each other one calls are
    /// on: current first, then kept ones in the order kept, then the rest.
    pub versions: Vec<VersionCalls>,
}

/// Per tool the code serves and per tool found on `calls` (each its tool,
/// the version its last round ran on, its status; finished calls are not
/// counted), sorted by name.
pub fn tally<'a>(
    code: &[ToolCode],
    calls: impl IntoIterator<Item = (&'a str, &'a str, Status)>,
) -> Vec<ToolVersions> {
    let mut counts: VecMap<&str, VecMap<&str, [usize; 3]>> = VecMap::new();
    for (tool, version, status) in calls {
        let at = match status {
            Status::Waiting => 0,
            Status::Working => 1,
            Status::Parked => 2,
            _ => continue,
        };
        counts
            .or_insert_with(tool, VecMap::new)
            .or_insert_with(version, Default::default)[at] += 1;
    }
    let mut names: Vec<&str> = code.iter().map(|t| t.name.as_str()).collect();
    names.extend(counts.keys().copied());
    names.sort_unstable();
    names.dedup();
    let none = VecMap::new();
    names
        .into_iter()
        .map(|name| {
            let on = counts.get(name).unwrap_or(&none);
            one_tool(code.iter().find(|t| t.name == name), name, on)
        })
        .collect()
}

/// One tool's versions, from the counts of its calls by version.
fn one_tool(code: Option<&ToolCode>, name: &str, on: &VecMap<&str, [usize; 3]>) -> ToolVersions {
    let mut order: Vec<&str> = Vec::new();
    if let Some(c) = code {
        order.push(c.current.as_deref().unwrap_or(""));
        order.extend(c.keeps.iter().map(String::as_str));
    }
    order.extend(on.keys().copied());
    let mut seen = VecSet::new();
    order.retain(|v| seen.insert(*v));
    let versions = order
        .into_iter()
        .map(|v| {
            let [waiting, working, parked] = on.get(v).copied().unwrap_or_default();
            VersionCalls {
                version: v.to_string(),
                standing: code.map_or(Standing::Missing, |c| c.standing(v)),
                waiting,
                working,
                parked,
            }
        })
        .collect();
    ToolVersions {
        tool: name.to_string(),
        served: code.is_some(),
        current: code.and_then(|c| c.current.clone()),
        policy: code.map(|c| {
            if c.pinned {
                Policy::Pinned
            } else {
                Policy::Upgrade
            }
        }),
        keeps: code.map(|c| c.keeps.clone()).unwrap_or_default(),
        versions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deploy(current: &str, pinned: bool, keeps: &[&str]) -> ToolCode {
        ToolCode {
            name: "deploy".into(),
            current: Some(current.into()),
            pinned,
            keeps: keeps.iter().map(|k| k.to_string()).collect(),
        }
    }

    #[test]
    fn a_pinned_tool_runs_its_current_and_kept_versions_and_parks_the_rest() {
        let c = deploy("3", true, &["2"]);
        assert_eq!(c.standing("3"), Standing::Current);
        assert_eq!(c.standing("2"), Standing::Kept);
        assert_eq!(c.standing("1"), Standing::Missing);
        assert_eq!(c.standing(""), Standing::Upgrades);
        let u = deploy("3", false, &[]);
        assert_eq!(u.standing("1"), Standing::Upgrades);
    }

    #[test]
    fn calls_are_counted_per_tool_version_and_status_and_finished_ones_are_not() {
        let code = [deploy("3", true, &["2"])];
        let calls = [
            ("deploy", "1", Status::Waiting),
            ("deploy", "1", Status::Parked),
            ("deploy", "3", Status::Working),
            ("deploy", "3", Status::Completed),
            ("gone", "", Status::Waiting),
        ];
        let t = tally(&code, calls);
        assert_eq!(t.len(), 2);
        let d = &t[0];
        assert_eq!(
            (d.tool.as_str(), d.served, d.policy),
            ("deploy", true, Some(Policy::Pinned))
        );
        let rows: Vec<(&str, Standing, usize, usize, usize)> = d
            .versions
            .iter()
            .map(|v| {
                (
                    v.version.as_str(),
                    v.standing,
                    v.waiting,
                    v.working,
                    v.parked,
                )
            })
            .collect();
        assert_eq!(
            rows,
            vec![
                ("3", Standing::Current, 0, 1, 0),
                ("2", Standing::Kept, 0, 0, 0),
                ("1", Standing::Missing, 1, 0, 1),
            ]
        );
        assert!(d.versions[1].removable());
        assert!(!t[1].served);
        assert_eq!(t[1].versions[0].standing, Standing::Missing);
    }
}
