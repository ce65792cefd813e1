//! Paths inside a skill namespace: which segments a `skill://` URI can
//! carry as they are, and what a file's `mimeType` is.

/// `skill://`: the scheme SEP-2640 recommends for skills.
pub(crate) const SCHEME: &str = "skill://";

/// The `mimeType` of a directory resource (`resources/directory/read`).
pub(crate) const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// Whether `segment` can be one segment of a `skill://` URI exactly as
/// written: RFC 3986's unreserved characters and sub-delimiters (which
/// also makes a first segment a valid authority), and not `.` or `..`,
/// which a URL parser would fold away. Hosts compare URIs after parsing
/// them; a name that needs percent-encoding would reach them spelled
/// another way.
pub(super) fn is_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=".contains(&b))
}

/// Why `path` (segments joined by `/`) cannot be a path in a skill URI, or
/// `None` when it can.
pub(super) fn path_problem(path: &str) -> Option<String> {
    path.split('/').find(|s| !is_segment(s)).map(|s| {
        format!(
            "`{s}` cannot be a URI path segment as it is: use letters, digits and `-._~!$&'()*+,;=`"
        )
    })
}

/// The `mimeType` of a skill file: `text/markdown` for markdown (every
/// `SKILL.md`), else what its extension says; without a known extension,
/// `text/plain` for UTF-8 and `application/octet-stream` for bytes.
pub(super) fn mime_type(path: &str, bytes: &[u8]) -> &'static str {
    if path.ends_with(".md") {
        return "text/markdown";
    }
    match super::mime::by_extension(path) {
        Some(mime) => mime,
        None if std::str::from_utf8(bytes).is_ok() => "text/plain",
        None => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_what_a_uri_carries_unchanged() {
        for ok in ["a", "FORMS.md", "v1.2", "a_b~c", "x+y"] {
            assert!(is_segment(ok), "{ok}");
        }
        for bad in ["", ".", "..", "a b", "a/b", "a?b", "a#b", "a%20b", "é"] {
            assert!(!is_segment(bad), "{bad}");
        }
        assert!(path_problem("references/FORMS.md").is_none());
        assert!(path_problem("references//x").is_some());
        assert!(path_problem("my file.md").is_some_and(|p| p.contains("`my file.md`")));
    }

    #[test]
    fn mime_types_come_from_extensions() {
        assert_eq!(mime_type("SKILL.md", b""), "text/markdown");
        assert_eq!(mime_type("templates/page.html", b""), "text/html");
        assert_eq!(mime_type("data.json", b"{}"), "application/json");
        assert_eq!(mime_type("logo.png", b"\x89PNG"), "image/png");
        assert_eq!(mime_type("LICENSE", b"MIT"), "text/plain");
        assert_eq!(mime_type("blob", b"\xff\xfe"), "application/octet-stream");
    }
}
