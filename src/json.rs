//! JSON text read into a type by way of [`serde_json::Value`].
//!
//! `serde_json::from_str::<T>` compiles a reader of JSON text for each
//! `T` (a derived struct's came to about 3 KB of wasm, over 27 types in
//! the smallest worker), and `serde_json::from_value::<T>` another; read
//! here, text is read by the one reader `Value` has, and each `T` only
//! from a `Value`. What it costs: the text's tree, built and taken apart
//! (strings move out of it, not copied), on reads that are not a
//! request's hot path or are small (a sealed state, a journal's head).
//! What differs: a key given twice keeps its last value (as a JWT reader
//! may, RFC 7519 §4) instead of being refused, and an error about the
//! shape names no line and column.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// `text` as a `T` (see the module's docs).
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    T::deserialize(serde_json::from_str::<Value>(text)?)
}

/// `bytes` (UTF-8 JSON) as a `T` (see the module's docs).
pub(crate) fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    T::deserialize(serde_json::from_slice::<Value>(bytes)?)
}
