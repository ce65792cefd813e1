//! JSON read into the crate's own types by way of [`serde_json::Value`],
//! through one lean reader of a `Value`.
//!
//! `serde_json::from_str::<T>` compiles a reader of JSON text for each
//! `T` (a derived struct's came to about 3 KB of wasm, over 27 types in
//! the smallest worker), and `serde_json::from_value::<T>` another; read
//! here, text is read by the one reader `Value` has, and each `T` only
//! from a `Value`. What it costs: the text's tree, built and taken apart
//! (strings move out of it, not copied), on reads that are not a
//! request's hot path or are small (a sealed state, a journal's head).
//!
//! The `Value` is taken apart by [`Owned`] rather than by serde_json's own
//! reader of a `Value`, which also reads a struct from an array (by
//! position): that second path compiled a sequence reader into every
//! struct's reader (the smallest worker's wasm is 44 KB smaller without
//! it), and nothing this crate stores or is sent writes a struct as an
//! array. What differs from serde_json's readers: a struct, and a map,
//! read only from an object (an array is the invalid type it is); a map's
//! keys are strings (as every map this crate reads is keyed); a key given
//! twice keeps its last value (as a JWT reader may, RFC 7519 §4) instead
//! of being refused; an error about the shape names no line and column.
//! A user's types (a tool's arguments, a form's answers) keep
//! `serde_json::from_value` and all it reads.

use serde::de::value::StringDeserializer;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, Error as _,
    IntoDeserializer, MapAccess, SeqAccess, Unexpected, VariantAccess, Visitor,
};
use serde_json::{Error, Map, Value};

/// `text` as a `T` (see the module's docs).
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    from_value(serde_json::from_str::<Value>(text)?)
}

/// `bytes` (UTF-8 JSON) as a `T` (see the module's docs).
pub(crate) fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    from_value(serde_json::from_slice::<Value>(bytes)?)
}

/// `value` as a `T` (see the module's docs).
pub(crate) fn from_value<T: DeserializeOwned>(value: Value) -> serde_json::Result<T> {
    T::deserialize(Owned(value))
}

/// A `Value` read by value (see the module's docs).
pub(crate) struct Owned(pub(crate) Value);

/// What serde's errors call the value that was not what a reader expected.
fn unexpected(v: &Value) -> Unexpected<'_> {
    match v {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Unexpected::Unsigned(u),
            (_, Some(i)) => Unexpected::Signed(i),
            _ => Unexpected::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

fn invalid<T>(v: &Value, exp: &dyn de::Expected) -> Result<T, Error> {
    Err(Error::invalid_type(unexpected(v), exp))
}

/// An array's items, each read by the visitor; all of them must be read.
fn visit_seq<'de, V: Visitor<'de>>(items: Vec<Value>, visitor: V) -> Result<V::Value, Error> {
    let len = items.len();
    let mut seq = Items(items.into_iter());
    let out = visitor.visit_seq(&mut seq)?;
    match seq.0.len() {
        0 => Ok(out),
        _ => Err(Error::invalid_length(len, &"fewer elements in array")),
    }
}

/// An object's entries, each read by the visitor; all of them must be read.
fn visit_map<'de, V: Visitor<'de>>(map: Map<String, Value>, visitor: V) -> Result<V::Value, Error> {
    let len = map.len();
    let mut entries = Entries {
        iter: map.into_iter(),
        value: None,
    };
    let out = visitor.visit_map(&mut entries)?;
    match entries.iter.len() {
        0 => Ok(out),
        _ => Err(Error::invalid_length(len, &"fewer elements in map")),
    }
}

/// Readers of one kind of value (a number, a string, a boolean, an array,
/// an object): from it, anything else the wrong type.
macro_rules! one_kind {
    ($kind:ident($x:ident), $visitor:ident => $read:expr; $($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, $visitor: V) -> Result<V::Value, Error> {
            match self.0 {
                Value::$kind($x) => $read,
                other => invalid(&other, &$visitor),
            }
        }
    )*};
}

impl<'de> Deserializer<'de> for Owned {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => n.deserialize_any(visitor),
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => visit_seq(items, visitor),
            Value::Object(map) => visit_map(map, visitor),
        }
    }

    one_kind!(Number(n), visitor => n.deserialize_any(visitor);
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64);
    one_kind!(String(s), visitor => visitor.visit_string(s);
        deserialize_char deserialize_str deserialize_string deserialize_identifier);
    one_kind!(Bool(b), visitor => visitor.visit_bool(b); deserialize_bool);
    one_kind!(Array(items), visitor => visit_seq(items, visitor); deserialize_seq);
    one_kind!(Object(map), visitor => visit_map(map, visitor); deserialize_map);

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    /// Only from an object (see the module's docs).
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_map(visitor)
    }

    /// A unit variant as its name; any other as an object of one entry,
    /// its name and its content.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(name) => visitor.visit_enum(Variant(name, None)),
            Value::Object(map) if map.len() == 1 => match map.into_iter().next() {
                Some((name, content)) => visitor.visit_enum(Variant(name, Some(content))),
                None => Err(Error::custom("an empty enum object")),
            },
            Value::Object(_) => Err(Error::invalid_value(
                Unexpected::Map,
                &"map with a single key",
            )),
            other => invalid(&other, &"string or map"),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        drop(self);
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! { bytes byte_buf unit unit_struct }
}

/// An array's items, read one by one.
struct Items(std::vec::IntoIter<Value>);

impl<'de> SeqAccess<'de> for Items {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0
            .next()
            .map(|v| seed.deserialize(Owned(v)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

/// An object's entries, read one by one: the key, then its value.
struct Entries {
    iter: serde_json::map::IntoIter,
    value: Option<Value>,
}

impl<'de> MapAccess<'de> for Entries {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.iter.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        let key: StringDeserializer<Error> = key.into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(v) => seed.deserialize(Owned(v)),
            None => Err(Error::custom("value is missing")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An enum's variant: its name, and its content unless it is a unit.
struct Variant(String, Option<Value>);

impl<'de> EnumAccess<'de> for Variant {
    type Error = Error;
    type Variant = Content;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Content), Error> {
        let name: StringDeserializer<Error> = self.0.into_deserializer();
        Ok((seed.deserialize(name)?, Content(self.1)))
    }
}

/// A variant's content (`None`: given as its name alone).
struct Content(Option<Value>);

impl<'de> VariantAccess<'de> for Content {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.0 {
            None | Some(Value::Null) => Ok(()),
            Some(other) => invalid(&other, &"unit variant"),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        match self.0 {
            Some(v) => seed.deserialize(Owned(v)),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"newtype variant",
            )),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Some(Value::Array(items)) => visit_seq(items, visitor),
            Some(other) => invalid(&other, &"tuple variant"),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"tuple variant",
            )),
        }
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Some(Value::Object(map)) => visit_map(map, visitor),
            Some(other) => invalid(&other, &"struct variant"),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"struct variant",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Row {
        name: String,
        count: u32,
        #[serde(default)]
        maybe: Option<i64>,
        tags: Vec<String>,
        kind: Kind,
        #[serde(default)]
        rest: Value,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Plain,
        Weighted(f64),
        Pair(u8, u8),
        Named { at: String },
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Tagged {
        One { n: u32 },
        Two,
    }

    fn row(kind: Value) -> Value {
        json!({"name": "a", "count": 3, "tags": ["x", "y"], "kind": kind, "extra": true})
    }

    #[test]
    fn reads_what_serde_json_reads_from_an_object() {
        for kind in [
            json!("plain"),
            json!({"weighted": 0.5}),
            json!({"pair": [1, 2]}),
            json!({"named": {"at": "b"}}),
        ] {
            let ours: Row = from_value(row(kind.clone())).expect("reads");
            let theirs: Row = serde_json::from_value(row(kind)).expect("reads");
            assert_eq!(ours, theirs);
        }
        let v = json!({"name": "a", "count": 1, "maybe": -4, "tags": [], "kind": "plain", "rest": {"k": [1, null]}});
        let ours: Row = from_value(v.clone()).expect("reads");
        assert_eq!(ours, serde_json::from_value::<Row>(v).expect("reads"));
        assert_eq!(ours.rest, json!({"k": [1, null]}));
        assert_eq!(ours.maybe, Some(-4));
        let t: Tagged = from_value(json!({"type": "one", "n": 7})).expect("reads");
        assert_eq!(t, Tagged::One { n: 7 });
        assert_eq!(
            from_value::<Tagged>(json!({"type": "two"})).expect("reads"),
            Tagged::Two
        );
        let arr: [u64; 3] = from_value(json!([1, 2, 3])).expect("reads");
        assert_eq!(arr, [1, 2, 3]);
        let text: Row = from_str(&row(json!("plain")).to_string()).expect("reads");
        assert_eq!(text.tags, ["x", "y"]);
    }

    #[test]
    fn errors_say_what_serde_json_says() {
        let cases = [
            json!({"name": 1, "count": 3, "tags": [], "kind": "plain"}),
            json!({"name": "a", "count": -1, "tags": [], "kind": "plain"}),
            json!({"name": "a", "count": 3, "tags": "x", "kind": "plain"}),
            json!({"name": "a", "count": 3, "tags": [], "kind": "nope"}),
            json!({"name": "a", "count": 3, "tags": [], "kind": {"a": 1, "b": 2}}),
            json!({"name": "a", "count": 3, "tags": [], "kind": {"weighted": "x"}}),
            json!({"name": "a", "tags": [], "kind": "plain"}),
            json!(7),
        ];
        for v in cases {
            let ours = from_value::<Row>(v.clone())
                .expect_err("refused")
                .to_string();
            let theirs = serde_json::from_value::<Row>(v)
                .expect_err("refused")
                .to_string();
            assert_eq!(ours, theirs);
        }
        let long = from_value::<[u64; 2]>(json!([1, 2, 3])).expect_err("refused");
        assert_eq!(
            long.to_string(),
            serde_json::from_value::<[u64; 2]>(json!([1, 2, 3]))
                .expect_err("refused")
                .to_string()
        );
    }

    #[test]
    fn a_struct_is_not_read_from_an_array() {
        let v = json!(["a", 3, null, [], "plain", null]);
        assert!(
            serde_json::from_value::<Row>(v.clone()).is_ok(),
            "serde_json reads it by position"
        );
        let e = from_value::<Row>(v).expect_err("refused");
        assert_eq!(e.to_string(), "invalid type: sequence, expected struct Row");
    }
}
