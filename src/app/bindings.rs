//! What the Worker gives the server at start: its vars, secrets and
//! bindings. The entry function reads what its tools need from here and
//! puts it in the registry's shared state.

use crate::vec_map::VecMap;

/// The Worker's vars and secrets (and, in the Worker, its `Env` for KV, D1,
/// services and the rest). Natively, [`Bindings::from_vars`] stands in for
/// them in tests.
pub struct Bindings {
    vars: VecMap<String, String>,
    #[cfg(all(feature = "worker", target_arch = "wasm32"))]
    env: Option<worker::Env>,
}

impl Bindings {
    /// Bindings with only these vars (tests, or a host other than Workers).
    pub fn from_vars<K, V>(vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            #[cfg(all(feature = "worker", target_arch = "wasm32"))]
            env: None,
        }
    }

    /// The Worker's own bindings.
    #[cfg(all(feature = "worker", target_arch = "wasm32"))]
    pub fn from_env(env: worker::Env) -> Self {
        Self {
            vars: VecMap::new(),
            env: Some(env),
        }
    }

    /// A var (`[vars]` in wrangler.toml) or secret (`.dev.vars` locally,
    /// `wrangler secret put` when deployed) by name; `None` when it is
    /// unset or empty.
    pub fn var(&self, name: &str) -> Option<String> {
        #[cfg(all(feature = "worker", target_arch = "wasm32"))]
        if let Some(env) = &self.env {
            // A var and a secret are each a string property of `env`: one
            // read. (`Env::secret` and `Env::var` check the value's
            // constructor by name first, three crossings more, and format
            // an error for every unset name; the server's configuration
            // asks for some 25 names as an isolate starts.)
            return js_sys::Reflect::get(env, &wasm_bindgen::JsValue::from_str(name))
                .ok()
                .and_then(|v| v.as_string())
                .filter(|s| !s.is_empty());
        }
        self.vars.get(name).filter(|s| !s.is_empty()).cloned()
    }

    /// The Worker's `Env`, for bindings other than vars: `env().kv("NAME")`,
    /// `env().d1("DB")`, `env().service("API")` … (`None` outside a Worker).
    #[cfg(all(feature = "worker", target_arch = "wasm32"))]
    pub fn env(&self) -> Option<&worker::Env> {
        self.env.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vars_are_read_by_name_and_empty_ones_are_unset() {
        let b = Bindings::from_vars([("A", "1"), ("B", "")]);
        assert_eq!(b.var("A").as_deref(), Some("1"));
        assert_eq!(b.var("B"), None);
        assert_eq!(b.var("C"), None);
    }
}
