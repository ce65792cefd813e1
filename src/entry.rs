//! [`entry!`](crate::entry): the one line that turns a crate into a Worker.

use crate::app::Registry;

/// What an entry function may return: the registry, or a result whose error
/// is shown (in the logs and as an internal error) when building fails.
pub trait IntoRegistry {
    /// The registry, or why there is none.
    fn into_registry(self) -> Result<Registry, String>;
}

impl IntoRegistry for Registry {
    fn into_registry(self) -> Result<Registry, String> {
        Ok(self)
    }
}

impl<E: std::fmt::Display> IntoRegistry for Result<Registry, E> {
    fn into_registry(self) -> Result<Registry, String> {
        self.map_err(|e| e.to_string())
    }
}

/// Checks, at compile time on every target, that an entry function has the
/// right shape (and counts as used where the Worker items are not built).
#[doc(hidden)]
pub const fn check_entry<F, R>(_: &F)
where
    F: Fn(&crate::app::Bindings) -> R,
    R: IntoRegistry,
{
}

/// Makes this crate a Worker serving MCP at `/mcp`.
///
/// `entry!(build)` takes a function `fn(&Bindings) -> Registry` (or
/// `-> Result<Registry, E>` with `E: Display`). It is called once per
/// isolate, on the first request, with the Worker's vars, secrets and
/// bindings; the registry it returns serves every request of that isolate.
///
/// In the Worker build (wasm32) the macro expands to the `fetch` event and
/// the `McpObject` Durable Object class that `wrangler.toml` binds as
/// `MCP_OBJECTS`; elsewhere it expands to nothing, so the crate still
/// builds and tests natively. Your crate depends on `worker` (for wasm32)
/// because the expansion uses its macros.
///
/// ```
/// use durable_mcp::{Bindings, Registry, Tool, Cx, ToolError};
///
/// async fn hello(_: &mut Cx, _: serde_json::Value) -> Result<String, ToolError> {
///     Ok("hello".into())
/// }
///
/// fn server(_: &Bindings) -> Registry {
///     let mut r = Registry::new();
///     r.tool(Tool::new("hello", hello));
///     r
/// }
///
/// durable_mcp::entry!(server);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! entry {
    ($build:path) => {
        const _: () = $crate::check_entry(&$build);

        #[cfg(target_arch = "wasm32")]
        mod __durable_mcp_entry {
            #[allow(unused_imports)]
            use super::*;
            // The class's generated glue names `wasm_bindgen` unqualified.
            #[allow(unused_imports)]
            use ::worker::wasm_bindgen;

            fn build(
                bindings: &$crate::Bindings,
            ) -> ::core::result::Result<$crate::Registry, ::std::string::String> {
                $crate::IntoRegistry::into_registry($build(bindings))
            }

            // Synchronous: see `durable_mcp::worker::fetch` (a `Response`,
            // or a promise of one only when something waits).
            #[::worker::wasm_bindgen::prelude::wasm_bindgen(wasm_bindgen = ::worker::wasm_bindgen)]
            pub fn fetch(
                req: ::worker::worker_sys::web_sys::Request,
                env: ::worker::Env,
                ctx: ::worker::wasm_bindgen::JsValue,
            ) -> ::worker::wasm_bindgen::JsValue {
                $crate::worker::fetch(req, env, ctx, build)
            }

            // The server built as the module loads, not on the first
            // request (`durable_mcp::worker::at_start`).
            #[::worker::wasm_bindgen::prelude::wasm_bindgen(start, private, wasm_bindgen = ::worker::wasm_bindgen)]
            fn __durable_mcp_start() {
                $crate::worker::at_start(build)
            }

            /// Every durable call, 2025-11-25 session and the listen hub.
            #[::worker::durable_object]
            pub struct McpObject {
                inner: $crate::worker::Object,
            }

            impl ::worker::DurableObject for McpObject {
                fn new(state: ::worker::State, env: ::worker::Env) -> Self {
                    Self {
                        inner: $crate::worker::Object::new(state, env, build),
                    }
                }

                async fn fetch(
                    &self,
                    req: ::worker::Request,
                ) -> ::worker::Result<::worker::Response> {
                    self.inner.fetch(req).await
                }

                async fn alarm(&self) -> ::worker::Result<::worker::Response> {
                    self.inner.alarm().await
                }
            }
        }
    };
}
