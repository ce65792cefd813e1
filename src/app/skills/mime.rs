//! A skill file's `mimeType` from its extension. The full table
//! (`mime_guess`, over a thousand extensions) costs a worker about 75 KiB
//! of wasm, most of it names no skill folder holds; so it is linked only
//! with the `skill-mime-types` feature, and without it a short table of
//! the types skill folders hold answers, giving what the full table gives
//! for each of them.

/// The extensions skill folders commonly hold, with the type `mime_guess`
/// gives each (a test holds them equal). Markdown is answered before this.
#[cfg(any(test, not(feature = "skill-mime-types")))]
const COMMON: &[(&str, &str)] = &[
    ("css", "text/css"),
    ("csv", "text/csv"),
    ("gif", "image/gif"),
    ("gz", "application/gzip"),
    ("htm", "text/html"),
    ("html", "text/html"),
    ("ico", "image/x-icon"),
    ("jpeg", "image/jpeg"),
    ("jpg", "image/jpeg"),
    ("js", "text/javascript"),
    ("json", "application/json"),
    ("markdown", "text/markdown"),
    ("mjs", "application/javascript"),
    ("mp3", "audio/mpeg"),
    ("mp4", "video/mp4"),
    ("pdf", "application/pdf"),
    ("png", "image/png"),
    ("py", "text/plain"),
    ("rs", "text/x-rust"),
    ("sh", "application/x-sh"),
    ("sql", "application/x-sql"),
    ("svg", "image/svg+xml"),
    ("tar", "application/x-tar"),
    ("toml", "text/x-toml"),
    ("tsv", "text/tab-separated-values"),
    ("ttf", "font/ttf"),
    ("txt", "text/plain"),
    ("wasm", "application/wasm"),
    ("wav", "audio/wav"),
    ("webp", "image/webp"),
    ("woff2", "font/woff2"),
    ("xml", "text/xml"),
    ("yaml", "text/x-yaml"),
    ("yml", "text/x-yaml"),
    ("zip", "application/zip"),
];

/// The type `path`'s extension names, if the table knows it.
#[cfg(feature = "skill-mime-types")]
pub(super) fn by_extension(path: &str) -> Option<&'static str> {
    mime_guess::from_path(path).first_raw()
}

/// The type `path`'s extension names, if the short table knows it.
#[cfg(not(feature = "skill-mime-types"))]
pub(super) fn by_extension(path: &str) -> Option<&'static str> {
    common(path)
}

#[cfg(any(test, not(feature = "skill-mime-types")))]
fn common(path: &str) -> Option<&'static str> {
    let ext = extension(path)?;
    COMMON
        .iter()
        .find(|(e, _)| e.eq_ignore_ascii_case(ext))
        .map(|(_, mime)| *mime)
}

/// What follows the last `.` of the file's name, as `Path::extension`
/// reads it: a name starting with its only `.` has none.
#[cfg(any(test, not(feature = "skill-mime-types")))]
fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => Some(ext),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_table_reads_extensions_as_paths_do() {
        assert_eq!(common("a/b/logo.PNG"), Some("image/png"));
        assert_eq!(common("data.tar.gz"), Some("application/gzip"));
        assert_eq!(common(".png"), None);
        assert_eq!(common("dir.png/file"), None);
        assert_eq!(common("file."), None);
    }

    /// With the full table linked, the short one gives what it gives.
    #[cfg(feature = "skill-mime-types")]
    #[test]
    fn the_short_table_agrees_with_the_full_one() {
        for (ext, mime) in COMMON {
            let path = format!("f.{ext}");
            assert_eq!(by_extension(&path), Some(*mime), "{ext}");
        }
        for path in [
            "a/b/logo.PNG",
            "data.tar.gz",
            ".png",
            "dir.png/file",
            "file.",
        ] {
            assert_eq!(by_extension(path), common(path), "{path}");
        }
    }
}
