//! Header values in the 2026-07-28 `=?base64?<b64 of UTF-8>?=` form.
//!
//! HTTP header values are ASCII; MCP carries names that are not (a tool called
//! `café`) by base64-encoding their UTF-8 bytes between these markers.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use std::borrow::Cow;

const PREFIX: &str = "=?base64?";
const SUFFIX: &str = "?=";

/// Decodes a header value: the `=?base64?…?=` form becomes its UTF-8 text,
/// anything else is returned as is (borrowed: every mirrored header is
/// checked on every request, and most are plain). `None` when the encoded
/// form is broken.
pub fn decode_header_value(raw: &str) -> Option<Cow<'_, str>> {
    let raw = raw.trim();
    let encoded = raw
        .get(..PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(PREFIX))
        && raw.ends_with(SUFFIX)
        && raw.len() >= PREFIX.len() + SUFFIX.len();
    if encoded {
        let inner = &raw[PREFIX.len()..raw.len() - SUFFIX.len()];
        let bytes = STANDARD.decode(inner).ok()?;
        String::from_utf8(bytes).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(raw))
    }
}

/// Encodes a value for a header: plain when it is visible ASCII without
/// leading or trailing space, the base64 form otherwise.
pub fn encode_header_value(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.starts_with(PREFIX);
    if plain {
        value.to_string()
    } else {
        format!("{PREFIX}{}{SUFFIX}", STANDARD.encode(value.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_values_pass_through() {
        assert_eq!(
            decode_header_value("tools/call").as_deref(),
            Some("tools/call")
        );
        assert_eq!(encode_header_value("test_simple_text"), "test_simple_text");
    }

    #[test]
    fn base64_values_decode_to_utf8() {
        let enc = encode_header_value("café ☕");
        assert!(enc.starts_with("=?base64?"));
        assert_eq!(decode_header_value(&enc).as_deref(), Some("café ☕"));
        assert_eq!(
            decode_header_value("=?BASE64?Y2Fmw6k=?=").as_deref(),
            Some("café")
        );
    }

    #[test]
    fn broken_base64_is_rejected() {
        assert_eq!(decode_header_value("=?base64?***?="), None);
        assert_eq!(decode_header_value("=?base64?/w==?="), None, "not UTF-8");
    }

    #[test]
    fn values_with_edge_spaces_are_encoded() {
        assert!(encode_header_value(" x").starts_with("=?base64?"));
    }
}
