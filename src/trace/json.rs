//! JSON written straight to text, fields in the order they come: a round's
//! line is written once per round on the hot path, and building it as
//! `serde_json::Value` maps (a node and a key allocation per field, then a
//! second pass to print them) cost about as much as the round's storage.

use std::fmt::Write;

/// A JSON object being written into `out`; [`Object::end`] closes it.
pub(super) struct Object<'a> {
    out: &'a mut String,
    empty: bool,
}

impl<'a> Object<'a> {
    /// Opens an object at the end of `out`.
    pub(super) fn open(out: &'a mut String) -> Self {
        out.push('{');
        Self { out, empty: true }
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.out.push(',');
        }
        self.empty = false;
        string(self.out, key);
        self.out.push(':');
    }

    /// `"key": "value"`.
    pub(super) fn str(&mut self, key: &str, value: &str) -> &mut Self {
        self.key(key);
        string(self.out, value);
        self
    }

    /// `"key": value` for a number.
    pub(super) fn num(&mut self, key: &str, value: impl std::fmt::Display) -> &mut Self {
        self.key(key);
        // Writing to a `String` cannot fail.
        let _ = write!(self.out, "{value}");
        self
    }

    /// `"key": {…}`: the object returned is written in place, and must be
    /// ended before this one goes on.
    pub(super) fn object(&mut self, key: &str) -> Object<'_> {
        self.key(key);
        Object::open(self.out)
    }

    /// `"key": […]`, the array likewise.
    pub(super) fn array(&mut self, key: &str) -> Array<'_> {
        self.key(key);
        Array::open(self.out)
    }

    /// Closes the object.
    pub(super) fn end(self) {
        self.out.push('}');
    }
}

/// A JSON array being written; [`Array::end`] closes it.
pub(super) struct Array<'a> {
    out: &'a mut String,
    empty: bool,
}

impl<'a> Array<'a> {
    fn open(out: &'a mut String) -> Self {
        out.push('[');
        Self { out, empty: true }
    }

    fn next(&mut self) {
        if !self.empty {
            self.out.push(',');
        }
        self.empty = false;
    }

    /// An object element, written in place.
    pub(super) fn object(&mut self) -> Object<'_> {
        self.next();
        Object::open(self.out)
    }

    /// A string element.
    pub(super) fn str(&mut self, value: &str) {
        self.next();
        string(self.out, value);
    }

    /// Closes the array.
    pub(super) fn end(self) {
        self.out.push(']');
    }
}

/// `s` as a JSON string: quoted, with `"`, `\` and control characters
/// escaped (everything else, Unicode included, as it is).
pub(super) fn string(out: &mut String, s: &str) {
    out.push('"');
    let mut rest = s;
    while let Some(i) = rest.find(|c: char| c == '"' || c == '\\' || c < ' ') {
        out.push_str(&rest[..i]);
        let c = rest[i..].chars().next().unwrap_or(' ');
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
        }
        rest = &rest[i + c.len_utf8()..];
    }
    out.push_str(rest);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_it_writes_is_what_serde_json_reads() {
        let tricky = "a \"quote\", a \\ back\nslash\t\u{1} and ünïcode ✓";
        let mut out = String::new();
        let mut o = Object::open(&mut out);
        o.str("s", tricky).num("n", 42u64).num("neg", -7i64);
        {
            let mut inner = o.object("inner");
            inner.str("k", "v");
            inner.end();
        }
        {
            let mut a = o.array("list");
            a.str("x");
            let mut e = a.object();
            e.num("i", 1u8);
            e.end();
            a.end();
        }
        o.array("none").end();
        o.end();
        let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(
            v,
            serde_json::json!({"s": tricky, "n": 42, "neg": -7, "inner": {"k": "v"},
                "list": ["x", {"i": 1}], "none": []})
        );
    }
}
