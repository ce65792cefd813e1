//! `durable-mcp new <path>`, run as the built binary from a scratch
//! working directory: the crate is named for the path's last part and
//! written where the path says, relative or absolute, as `cargo new` does.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("durable-mcp-new-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(std::fs::create_dir_all(dir.join("work")).is_ok());
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `durable-mcp new <args>` run in `cwd`: (exit code, stdout, stderr).
fn new(cwd: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_durable-mcp"))
        .arg("new")
        .args(args)
        .current_dir(cwd)
        .output();
    let Ok(out) = out else {
        panic!("durable-mcp runs");
    };
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_default()
}

/// The `name = …` lines of the crate written in `dir`: Cargo.toml's,
/// wrangler.toml's, package.json's.
fn names(dir: &Path) -> (String, String, String) {
    let first = |text: String| {
        text.lines()
            .find(|l| l.starts_with("name = "))
            .map(str::to_string)
    };
    let pkg: serde_json::Value =
        serde_json::from_str(&read(dir, "package.json")).unwrap_or_default();
    (
        first(read(dir, "Cargo.toml")).unwrap_or_default(),
        first(read(dir, "wrangler.toml")).unwrap_or_default(),
        pkg["name"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn a_relative_path_up_and_into_missing_directories() {
    let s = Scratch::new("up");
    let work = s.0.join("work");
    let (code, stdout, stderr) = new(&work, &["../x/y/my-server"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.starts_with("Created my-server in ../x/y/my-server "),
        "{stdout}"
    );
    let dir = s.0.join("x/y/my-server");
    assert_eq!(
        names(&dir),
        (
            "name = \"my-server\"".into(),
            "name = \"my-server\"".into(),
            "my-server".into()
        )
    );
    assert!(dir.join("src/lib.rs").exists());
    assert!(!work.join("my-server").exists());
    // Again: the directory is taken now, and left as it is.
    let before = read(&dir, ".dev.vars");
    let (code, _, stderr) = new(&work, &["../x/y/my-server"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("already exists and is not empty"),
        "{stderr}"
    );
    assert_eq!(read(&dir, ".dev.vars"), before);
}

#[test]
fn an_absolute_path_a_dot_path_and_a_bare_name() {
    let s = Scratch::new("abs");
    let work = s.0.join("work");
    let abs = s.0.join("elsewhere/my_server");
    let (code, _, stderr) = new(&work, &[&abs.to_string_lossy(), "--task"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (cargo, wrangler, _) = names(&abs);
    assert_eq!(cargo, "name = \"my_server\"");
    assert_eq!(wrangler, "name = \"my-server\"");
    assert!(read(&abs, "src/lib.rs").contains("async fn countdown("));

    let (code, _, stderr) = new(&work, &["./foo"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(names(&work.join("foo")).0, "name = \"foo\"");

    let (code, _, stderr) = new(&work, &["bar"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(names(&work.join("bar")).0, "name = \"bar\"");
}

#[test]
fn a_bad_last_part_is_named_and_nothing_is_written() {
    let s = Scratch::new("bad");
    let work = s.0.join("work");
    for (target, part) in [
        ("../x/My Server", "\"My Server\""),
        ("../x/9lives", "\"9lives\""),
        ("./fn", "\"fn\""),
    ] {
        let (code, _, stderr) = new(&work, &[target]);
        assert_eq!(code, Some(64), "{target}: {stderr}");
        assert!(
            stderr.contains(&format!("{part} is not a valid crate name")),
            "{target}: {stderr}"
        );
        assert!(
            stderr.contains(&format!("{target:?}")),
            "{target}: {stderr}"
        );
    }
    for target in ["..", "."] {
        let (code, _, stderr) = new(&work, &[target]);
        assert_eq!(code, Some(64), "{target}: {stderr}");
        assert!(stderr.contains("does not end in a name"), "{stderr}");
    }
    let (code, _, stderr) = new(&work, &["../x/ok", "--dir", "y"]);
    assert_eq!(code, Some(64), "{stderr}");
    assert!(!s.0.join("x").exists());
    assert!(std::fs::read_dir(&work).is_ok_and(|mut d| d.next().is_none()));
}
