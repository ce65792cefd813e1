//! Tool chaining (seed 004): a result's `_meta.nextTool = {tool, arguments}`
//! names the call to make next. The client makes it only if the server
//! lists that tool and the arguments fit its input schema, never more than
//! [`MAX_CHAIN`] calls in all, and never the same call twice (a cycle).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::{schema, Client, Error, Result};

/// The most calls one chain makes.
pub const MAX_CHAIN: usize = 5;

/// Why a chain was not followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainError {
    /// It would go past [`MAX_CHAIN`] calls; the last tool named is given.
    TooDeep(String),
    /// It names a call made before in this chain (tool and arguments).
    Cycle(String),
    /// It names a tool the server does not list.
    Unlisted(String),
    /// Its arguments do not fit the tool's input schema.
    BadArguments {
        /// The tool.
        tool: String,
        /// Why.
        why: String,
    },
}

impl std::fmt::Display for ChainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChainError::TooDeep(t) => write!(
                f,
                "stopped before {t}: a chain makes at most {MAX_CHAIN} calls"
            ),
            ChainError::Cycle(t) => write!(
                f,
                "stopped before {t}: the chain loops (this call was made before)"
            ),
            ChainError::Unlisted(t) => write!(f, "the next tool {t:?} is not listed by the server"),
            ChainError::BadArguments { tool, why } => {
                write!(
                    f,
                    "the arguments for the next tool {tool:?} do not fit its schema: {why}"
                )
            }
        }
    }
}

/// One call of a chain.
#[derive(Debug, Clone)]
pub struct Step {
    /// The tool called.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// Its result.
    pub result: Value,
}

/// The next call a result names, if any.
pub fn next_tool(result: &Value) -> Option<(String, Value)> {
    let next = result.get("_meta")?.get("nextTool")?;
    let tool = next.get("tool")?.as_str()?.to_string();
    let args = next
        .get("arguments")
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    Some((tool, args))
}

impl Client {
    /// Calls `name`, then each tool the results name in `_meta.nextTool`,
    /// checked as the seed asks. `on_step` sees each step as it is done.
    /// Returns every step; a refused chain is an [`Error::Chain`] (the
    /// steps done so far were seen by `on_step`).
    pub fn call_chain(
        &mut self,
        name: &str,
        arguments: Value,
        mut on_step: impl FnMut(&Step),
    ) -> Result<Vec<Step>> {
        let mut steps = Vec::new();
        let mut seen = BTreeSet::new();
        let (mut tool, mut args) = (name.to_string(), arguments);
        loop {
            seen.insert(format!("{tool} {args}"));
            let result = self.call_tool(&tool, args.clone())?;
            let step = Step {
                tool,
                arguments: args,
                result,
            };
            on_step(&step);
            let next = next_tool(&step.result);
            steps.push(step);
            let Some((next, next_args)) = next else {
                return Ok(steps);
            };
            self.check_next(&next, &next_args, steps.len(), &seen)?;
            (tool, args) = (next, next_args);
        }
    }

    fn check_next(
        &mut self,
        tool: &str,
        args: &Value,
        done: usize,
        seen: &BTreeSet<String>,
    ) -> Result<()> {
        let fail = |e| Err(Error::Chain(e));
        if seen.contains(&format!("{tool} {args}")) {
            return fail(ChainError::Cycle(tool.to_string()));
        }
        if done >= MAX_CHAIN {
            return fail(ChainError::TooDeep(tool.to_string()));
        }
        let tools = match &self.tools {
            Some(t) => t.clone(),
            None => self.list_tools()?,
        };
        let Some(listed) = tools.iter().find(|t| t["name"] == tool) else {
            return fail(ChainError::Unlisted(tool.to_string()));
        };
        let schema = listed.get("inputSchema").cloned().unwrap_or(Value::Null);
        if let Err(why) = schema::check(args, &schema) {
            return fail(ChainError::BadArguments {
                tool: tool.to_string(),
                why,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn next_tool_reads_the_seed_shape() {
        let r = json!({"content": [], "_meta": {"nextTool": {"tool": "b", "arguments": {"x": 1}}}});
        assert_eq!(next_tool(&r), Some(("b".into(), json!({"x": 1}))));
        assert_eq!(next_tool(&json!({"content": []})), None);
        assert_eq!(
            next_tool(&json!({"_meta": {"nextTool": {"arguments": {}}}})),
            None
        );
    }
}
