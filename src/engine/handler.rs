//! Storing `async fn(&mut Cx, Args) -> Result<T, ToolError>` behind one type.
//!
//! Any async fn item or async closure of that shape is a [`Handler`]; the
//! registry keeps it boxed as a [`BoxedHandler`] that takes JSON arguments.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Cx, ToolError};

/// A boxed future that need not be `Send` (Workers are single-threaded).
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Something the engine can run with a `Cx` and arguments of type `A`.
pub trait Handler<A, T>: 'static {
    /// Starts the body.
    fn call<'a>(&'a self, cx: &'a mut Cx, args: A) -> LocalFuture<'a, Result<T, ToolError>>;
}

impl<F, A, T> Handler<A, T> for F
where
    F: AsyncFn(&mut Cx, A) -> Result<T, ToolError> + 'static,
    A: 'static,
    T: 'static,
{
    fn call<'a>(&'a self, cx: &'a mut Cx, args: A) -> LocalFuture<'a, Result<T, ToolError>> {
        Box::pin(self(cx, args))
    }
}

/// A handler over typed arguments, taking JSON and deserializing it first,
/// and turning its output into `U`.
struct Typed<A, T, U, H> {
    inner: H,
    output: fn(T) -> Result<U, ToolError>,
    _types: PhantomData<fn(A) -> T>,
}

impl<A, T, U, H> Handler<Value, U> for Typed<A, T, U, H>
where
    A: DeserializeOwned + 'static,
    T: 'static,
    U: 'static,
    H: Handler<A, T>,
{
    fn call<'a>(&'a self, cx: &'a mut Cx, args: Value) -> LocalFuture<'a, Result<U, ToolError>> {
        // Absent arguments are an empty object, so `struct Args {}` and
        // all-optional structs work without the client sending `{}`.
        let args = if args.is_null() {
            Value::Object(Default::default())
        } else {
            args
        };
        match serde_json::from_value::<A>(args) {
            Ok(a) => {
                let output = self.output;
                let run = self.inner.call(cx, a);
                Box::pin(async move { run.await.and_then(output) })
            }
            Err(e) => Box::pin(std::future::ready(Err(ToolError::Failed(format!(
                "Invalid arguments: {e}"
            ))))),
        }
    }
}

/// A handler over JSON arguments, ready to store.
pub type BoxedHandler<T> = Box<dyn Handler<Value, T>>;

/// Boxes a typed handler so it takes JSON arguments.
pub fn boxed<A, T, H>(handler: H) -> BoxedHandler<T>
where
    A: DeserializeOwned + 'static,
    T: 'static,
    H: Handler<A, T>,
{
    boxed_map(handler, Ok)
}

/// Boxes a typed handler so it takes JSON arguments and its output goes
/// through `output` (a typed tool result becoming a `CallToolResult`).
pub fn boxed_map<A, T, U, H>(handler: H, output: fn(T) -> Result<U, ToolError>) -> BoxedHandler<U>
where
    A: DeserializeOwned + 'static,
    T: 'static,
    U: 'static,
    H: Handler<A, T>,
{
    Box::new(Typed {
        inner: handler,
        output,
        _types: PhantomData,
    })
}
