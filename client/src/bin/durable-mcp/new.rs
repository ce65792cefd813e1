//! `durable-mcp new`: writes a new worker crate that builds, tests and
//! serves as it is — the README's "first server in five minutes" done for
//! you. The files come from `templates/`, with `{{placeholders}}` filled in.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::Usage;

/// The wrangler the new crate's `package.json` pins: the one this
/// repository's `package.json` tests with (a unit test keeps them equal).
const WRANGLER_VERSION: &str = "4.86.0";

/// The registry requirement when no `--path` is given.
const REGISTRY_DEP: &str = "durable-mcp = \"0.1\"";

const USAGE: &str = concat!(
    "  durable-mcp new <name or path> [--path <durable-mcp checkout>]\n",
    "                  [--durable] [--task] [--oauth] [--dir <path>]\n",
);

const HELP: &str = "\
NEW
  Writes a new worker crate into <name or path>, as cargo new does: a new
  or empty directory, its missing parents made. The crate (and worker) is
  named for the path's last part: `new my-server`, `new ../my-server` and
  `new /tmp/x/my-server` all make my-server. The name: lowercase letters,
  digits, - and _, starting with a letter. The files: Cargo.toml,
  src/lib.rs (a `greet` tool that pauses for a form, with native tests),
  tests/deploy_check.rs (checks paused calls against changed code before a
  deploy: DEPLOY_CHECK=paused.json npm run check-deploy), wrangler.toml,
  .dev.vars (a fresh local STATE_KEYS), .gitignore, package.json (npm
  start, npm test, npm run check-deploy, npm run deploy) and a README.
  --path P          depend on the durable-mcp checkout at P (and start from
                    its Cargo.lock) rather than on durable-mcp from crates.io
  --durable         greet runs durably (Tool::durable) and sends once (cx.once)
  --task            add `countdown`, a task (Tool::task) that sleeps and asks
  --oauth           greet needs the scope <name>:write and reads cx.caller();
                    wrangler.toml gets the (commented) OAUTH_* vars
  --dir D           write into D rather than ./<name> (with a bare name only)
";

/// What `durable-mcp new` was asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Spec {
    /// The crate (and package, and worker) name.
    pub(crate) name: String,
    /// `durable-mcp = { path = … }` when set (absolute).
    pub(crate) path: Option<PathBuf>,
    pub(crate) durable: bool,
    pub(crate) task: bool,
    pub(crate) oauth: bool,
}

/// The help text for `new`, for the CLI's `--help`.
pub(crate) fn help() -> &'static str {
    HELP
}

/// Runs `durable-mcp new …` (`args`: what follows `new`).
pub(crate) fn run(args: &[String]) -> Result<ExitCode, Usage> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("USAGE\n{USAGE}\n{HELP}");
        return Ok(ExitCode::SUCCESS);
    }
    let (mut spec, dir) = parse(args)?;
    if let Some(p) = &spec.path {
        spec.path = Some(checkout(p)?);
    }
    let dir = dir.unwrap_or_else(|| PathBuf::from(&spec.name));
    match write_project(&spec, &dir) {
        Ok(files) => {
            let shown = dir.display();
            let from = match &spec.path {
                Some(p) => format!("durable-mcp from {}", p.display()),
                None => "durable-mcp from crates.io".to_string(),
            };
            println!("Created {} in {shown} ({from}):", spec.name);
            println!("  {}", files.join(", "));
            println!();
            println!("Next (once: rustup target add wasm32-unknown-unknown; cargo install worker-build):");
            println!("  cd {shown}");
            println!("  npm install   # wrangler");
            println!("  npm test      # cargo test: the tools' tests");
            println!("  npm start     # serves http://localhost:8787/mcp");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

fn parse(args: &[String]) -> Result<(Spec, Option<PathBuf>), Usage> {
    let mut spec = Spec::default();
    let mut dir = None;
    let mut name = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| Usage(format!("{a} needs a value")))
        };
        match a.as_str() {
            "--dir" => dir = Some(PathBuf::from(value()?)),
            "--path" => spec.path = Some(PathBuf::from(value()?)),
            "--durable" => spec.durable = true,
            "--task" => spec.task = true,
            "--oauth" => spec.oauth = true,
            other if other.starts_with('-') => {
                return Err(Usage(format!("new: unknown option {other}")))
            }
            other => {
                if name.is_some() {
                    return Err(Usage(format!("new: one name only (got {other} too)")));
                }
                name = Some(other.to_string());
            }
        }
    }
    let target =
        name.ok_or_else(|| Usage("new: no name (durable-mcp new <name or path>)".into()))?;
    let (name, at) = split_target(&target).map_err(|e| Usage(format!("new: {e}")))?;
    if let (Some(_), Some(d)) = (&at, &dir) {
        return Err(Usage(format!(
            "new: give the directory once: {target} is a path, and --dir names {}",
            d.display()
        )));
    }
    spec.name = name;
    Ok((spec, at.or(dir)))
}

/// `durable-mcp new`'s argument, as `cargo new` reads its path: the name
/// is its last part, checked (`check_name`). A bare name gives no
/// directory (the default, `./<name>`, or `--dir`); anything else (`./x`,
/// `../x`, `/tmp/x`, `x/`) is the directory itself.
pub(crate) fn split_target(target: &str) -> Result<(String, Option<PathBuf>), String> {
    let path = Path::new(target);
    let last = path.file_name().map(|n| n.to_string_lossy().into_owned());
    if target.is_empty() || last.as_deref() == Some(target) {
        check_name(target)?;
        return Ok((target.to_string(), None));
    }
    let Some(name) = last else {
        return Err(format!(
            "{target:?} does not end in a name: name the new directory (as in ../my-server)"
        ));
    };
    check_name(&name).map_err(|e| format!("{e} (the last part of the path {target:?})"))?;
    Ok((name, Some(path.to_path_buf())))
}

/// A name that is at once a crate, npm package and worker name: lowercase
/// ASCII letters, digits, `-` and `_`, starting with a letter, not a Rust
/// keyword or a name the standard library takes.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    const RESERVED: &str = "abstract alloc as async await become box break const continue core \
        crate do dyn else enum extern false final fn for gen if impl in let loop macro match mod \
        move mut override priv proc_macro proc-macro pub ref return self static std struct super \
        test trait true try type typeof unsafe unsized use virtual where while yield";
    let bad = |why: &str| Err(format!("{name:?} is not a valid crate name: {why}"));
    let Some(first) = name.chars().next() else {
        return bad("it is empty");
    };
    if !first.is_ascii_lowercase() {
        return bad("it must start with a lowercase letter");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '_'))
    {
        return bad(&format!(
            "{c:?} is not allowed (lowercase letters, digits, - and _ only)"
        ));
    }
    if name.len() > 63 {
        return bad("it is longer than 63 characters");
    }
    if RESERVED.split_whitespace().any(|k| k == name) {
        return bad("it is a Rust keyword or a standard crate's name");
    }
    Ok(())
}

/// `--path`: an absolute path to a durable-mcp checkout (its Cargo.toml
/// names the package `durable-mcp`).
fn checkout(path: &Path) -> Result<PathBuf, Usage> {
    let abs = std::fs::canonicalize(path)
        .map_err(|e| Usage(format!("new: --path {}: {e}", path.display())))?;
    let manifest = std::fs::read_to_string(abs.join("Cargo.toml")).unwrap_or_default();
    let is_it = manifest.split("\n[").next().is_some_and(|package| {
        package
            .lines()
            .any(|l| l.trim() == "name = \"durable-mcp\"")
    });
    if !is_it {
        return Err(Usage(format!(
            "new: --path {}: not a durable-mcp checkout (no Cargo.toml of package durable-mcp)",
            path.display()
        )));
    }
    Ok(abs)
}

/// Creates `dir` (or takes it when empty) and writes the crate into it;
/// returns the files written.
fn write_project(spec: &Spec, dir: &Path) -> Result<Vec<String>, String> {
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if entries.next().is_some() {
            return Err(format!(
                "{} already exists and is not empty: nothing written (choose another directory)",
                dir.display()
            ));
        }
    }
    let mut files = render_files(spec, &state_key()?);
    if let Some(lock) = spec.path.as_ref().map(|p| p.join("Cargo.lock")) {
        // The versions the checkout was tested with (among them the
        // wasm-bindgen its wasm-bindgen-cli matches); cargo drops the rest.
        if let Ok(text) = std::fs::read_to_string(lock) {
            files.push(("Cargo.lock", text));
        }
    }
    for (file, text) in &files {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(files.into_iter().map(|(f, _)| f.to_string()).collect())
}

/// A fresh local signing key: 32 bytes from the OS's CSPRNG, URL-safe
/// base64 (43 characters).
fn state_key() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| format!("no random bytes for the key: {e}"))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// Every file of the new crate, by path, with `state_key` in `.dev.vars`.
pub(crate) fn render_files(spec: &Spec, state_key: &str) -> Vec<(&'static str, String)> {
    let name = spec.name.as_str();
    let dep = match &spec.path {
        Some(p) => format!(
            "durable-mcp = {{ path = {} }}",
            toml_string(&p.to_string_lossy())
        ),
        None => REGISTRY_DEP.to_string(),
    };
    let oauth_vars = if spec.oauth {
        render(
            include_str!("templates/oauth-vars.toml.tmpl"),
            &[("name", name)],
        )
    } else {
        String::new()
    };
    let oauth_readme = if spec.oauth {
        render(
            include_str!("templates/oauth-readme.md.tmpl"),
            &[("name", name)],
        )
    } else {
        String::new()
    };
    let tool_list = tool_docs(spec, "");
    vec![
        (
            "Cargo.toml",
            render(
                include_str!("templates/Cargo.toml.tmpl"),
                &[("name", name), ("durable_mcp_dep", &dep)],
            ),
        ),
        ("src/lib.rs", render_lib(spec)),
        (
            "tests/deploy_check.rs",
            render(
                include_str!("templates/deploy-check.rs.tmpl"),
                &[("crate_ident", &name.replace('-', "_"))],
            ),
        ),
        (
            "wrangler.toml",
            render(
                include_str!("templates/wrangler.toml.tmpl"),
                &[
                    ("worker_name", &name.replace('_', "-")),
                    ("oauth_vars", &oauth_vars),
                ],
            ),
        ),
        (
            ".dev.vars",
            render(
                include_str!("templates/dev.vars.tmpl"),
                &[("state_key", state_key)],
            ),
        ),
        (
            ".gitignore",
            include_str!("templates/gitignore.tmpl").to_string(),
        ),
        (
            "package.json",
            render(
                include_str!("templates/package.json.tmpl"),
                &[("name", name), ("wrangler_version", WRANGLER_VERSION)],
            ),
        ),
        (
            "README.md",
            render(
                include_str!("templates/README.md.tmpl"),
                &[
                    ("name", name),
                    ("tool_list", &tool_list),
                    ("oauth_readme", &oauth_readme),
                ],
            ),
        ),
    ]
}

/// The tools, as a Markdown list wrapped at 79 columns, each line after
/// `prefix` (`//! ` in the crate docs).
fn tool_docs(spec: &Spec, prefix: &str) -> String {
    let mut greet = String::from(
        "`greet` asks the user how to greet someone (a typed form: the call \
         pauses until it is answered), then answers.",
    );
    if spec.durable {
        greet.push_str(
            " It sends the greeting once (`cx.once`), and runs durably: between \
             rounds its progress lives in a Durable Object.",
        );
    }
    if spec.oauth {
        greet.push_str(&format!(
            " With sign-in on, it needs the `{}:write` scope, and greets from \
             the caller (`cx.caller()`).",
            spec.name
        ));
    }
    let mut items = vec![greet];
    if spec.task {
        items.push(
            "`countdown` counts down a second a step, then asks whether to \
             launch. It runs as a task when the client declares the tasks \
             extension: the work goes on in the task's own Durable Object, with \
             no client connected."
                .to_string(),
        );
    }
    let mut lines = Vec::new();
    for item in items {
        let mut line = format!("{prefix}-");
        for word in item.split(' ') {
            if line.len() + 1 + word.len() > 79 && line.trim_end().len() > prefix.len() + 1 {
                lines.push(line);
                line = format!("{prefix} ");
            }
            line.push(' ');
            line.push_str(word);
        }
        lines.push(line);
    }
    lines.join("\n")
}

/// `src/lib.rs` for `spec`.
pub(crate) fn render_lib(spec: &Spec) -> String {
    let name = spec.name.as_str();
    let mut finish = String::new();
    if spec.oauth {
        finish.push_str(include_str!("templates/greet-caller.rs.tmpl"));
    }
    finish.push_str(if spec.durable {
        include_str!("templates/greet-send.rs.tmpl")
    } else {
        "    Ok(text(greeting))\n"
    });
    let helpers = if spec.durable {
        include_str!("templates/send.rs.tmpl")
    } else {
        ""
    };
    let greet = render(
        include_str!("templates/greet.rs.tmpl"),
        &[("greet_finish", &finish), ("greet_helpers", helpers)],
    );
    let countdown = if spec.task {
        include_str!("templates/countdown.rs.tmpl")
    } else {
        ""
    };
    let mut greet_tool = vec!["Tool::new(\"greet\", greet)".to_string()];
    greet_tool.push(".title(\"Greet someone\")".to_string());
    if spec.durable {
        greet_tool.push(".durable()".to_string());
    }
    if spec.oauth {
        greet_tool.push(format!(
            ".scopes([{}])",
            rust_string(&format!("{name}:write"))
        ));
    }
    let mut register = vec![registration(&greet_tool)];
    if spec.task {
        register.push(registration(&[
            "Tool::new(\"countdown\", countdown)".into(),
            ".title(\"Count down, then launch\")".into(),
            ".task()".into(),
        ]));
    }
    let mut tests = String::new();
    if spec.task {
        tests.push_str(include_str!("templates/test-countdown.rs.tmpl"));
    }
    let sent = |g: &str| {
        if spec.durable {
            format!("{g} (sent: local-{})", g.len())
        } else {
            g.to_string()
        }
    };
    if spec.oauth {
        let expected = sent("Hi, Grace! (from ada)");
        tests.push_str(&render(
            include_str!("templates/test-oauth.rs.tmpl"),
            &[("name", name), ("oauth_expected", &expected)],
        ));
    }
    render(
        include_str!("templates/lib.rs.tmpl"),
        &[
            ("name", name),
            ("tool_docs", &tool_docs(spec, "//! ")),
            (
                "std_uses",
                if spec.task {
                    "use std::time::Duration;"
                } else {
                    ""
                },
            ),
            ("greet", &greet),
            ("countdown", countdown),
            ("register", &register.join("\n")),
            ("greet_expected", &sent("Good day, Ada.")),
            ("tests", &tests),
        ],
    )
}

/// `r.tool(<chain>);` laid out as rustfmt lays it out: on one line when
/// the chain is short, one call a line otherwise.
fn registration(chain: &[String]) -> String {
    let one_line = chain.concat();
    // rustfmt's default `chain_width`.
    if one_line.len() <= 60 {
        return format!("    r.tool({one_line});");
    }
    let mut out = format!("    r.tool(\n        {}", chain[0]);
    for call in &chain[1..] {
        out.push_str(&format!("\n            {call}"));
    }
    out.push_str(",\n    );");
    out
}

/// Fills in `{{key}}` placeholders. A placeholder alone on its line is
/// replaced by its value's lines, and the line dropped when it is empty.
pub(crate) fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    for line in template.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let alone = vars
            .iter()
            .find(|(k, _)| body.trim() == format!("{{{{{k}}}}}"));
        match alone {
            Some((_, v)) if v.trim().is_empty() => {}
            Some((_, v)) => {
                out.push_str(v.trim_end_matches('\n'));
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => {
                let mut l = line.to_string();
                for (k, v) in vars {
                    l = l.replace(&format!("{{{{{k}}}}}"), v);
                }
                out.push_str(&l);
            }
        }
    }
    out
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `s` as a Rust string literal (`s` is a checked name: nothing to escape
/// but what `toml_string` escapes the same way).
fn rust_string(s: &str) -> String {
    format!("{s:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(durable: bool, task: bool, oauth: bool) -> Spec {
        Spec {
            name: "demo".into(),
            path: None,
            durable,
            task,
            oauth,
        }
    }

    fn every_variant() -> Vec<Spec> {
        let mut all = Vec::new();
        for bits in 0..8 {
            all.push(spec(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0));
        }
        all
    }

    fn file<'a>(files: &'a [(&'static str, String)], name: &str) -> &'a str {
        files
            .iter()
            .find(|(f, _)| *f == name)
            .map(|(_, t)| t.as_str())
            .unwrap_or_default()
    }

    /// The `[section]` headers of a TOML text, in order.
    fn sections(toml: &str) -> Vec<&str> {
        toml.lines()
            .map(str::trim)
            .filter(|l| l.starts_with('['))
            .collect()
    }

    #[test]
    fn placeholders_are_filled_and_empty_lines_dropped() {
        let t = "a {{x}} b\n{{block}}\n{{empty}}\nend {{x}}\n";
        let out = render(t, &[("x", "1"), ("block", "l1\nl2\n"), ("empty", "")]);
        assert_eq!(out, "a 1 b\nl1\nl2\nend 1\n");
    }

    #[test]
    fn no_placeholder_is_left_in_any_file_of_any_variant() {
        for s in every_variant() {
            for (f, text) in render_files(&s, "k") {
                let left = text.find("{{").and_then(|i| {
                    let rest = &text[i + 2..];
                    let end = rest.find("}}")?;
                    let key = &rest[..end];
                    key.chars()
                        .all(|c| c.is_ascii_lowercase() || c == '_')
                        .then_some(key)
                });
                assert_eq!(left, None, "{f} of {s:?}: a placeholder left");
            }
        }
    }

    #[test]
    fn cargo_toml_is_a_standalone_worker_crate_in_every_variant() {
        for s in every_variant() {
            let files = render_files(&s, "k");
            let toml = file(&files, "Cargo.toml");
            assert!(toml.starts_with("[package]\nname = \"demo\"\n"), "{toml}");
            assert_eq!(
                sections(toml),
                [
                    "[package]",
                    "[lib]",
                    "[dependencies]",
                    "[target.'cfg(target_arch = \"wasm32\")'.dependencies]",
                    "[package.metadata.wasm-pack.profile.release]",
                    "[profile.release]",
                    "[profile.release.package.sha2]",
                    "[workspace]",
                ]
            );
            for line in [
                "crate-type = [\"cdylib\", \"rlib\"]",
                "durable-mcp = \"0.1\"",
                "serde = { version = \"1\", features = [\"derive\"] }",
                "serde_json = \"1\"",
                "schemars = \"1\"",
                "worker = \"0.8.7\"",
                "opt-level = \"z\"",
                "lto = true",
                "codegen-units = 1",
                "strip = true",
                "opt-level = 3",
                "wasm-opt = [\"-Oz\", \"--one-caller-inline-max-function-size=300\"]",
            ] {
                assert!(toml.lines().any(|l| l == line), "{line} in\n{toml}");
            }
            // Every line is a section, a comment, blank or key = value with
            // a well-formed value (a quoted string, a number, a boolean, an
            // inline table or an array).
            for line in toml
                .lines()
                .filter(|l| !l.is_empty() && !l.starts_with(['#', '[']))
            {
                let (key, value) = line.split_once(" = ").unwrap_or_default();
                assert!(
                    !key.is_empty()
                        && key
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c)),
                    "key of {line:?}"
                );
                let balanced = |open: char, close: char| {
                    value.starts_with(open)
                        && value.ends_with(close)
                        && value.matches(open).count() == value.matches(close).count()
                };
                let ok = (value.starts_with('"')
                    && value.ends_with('"')
                    && value.matches('"').count() == 2)
                    || value.parse::<i64>().is_ok()
                    || value == "true"
                    || value == "false"
                    || balanced('{', '}')
                    || balanced('[', ']');
                assert!(
                    ok && value.matches('"').count() % 2 == 0,
                    "value of {line:?}"
                );
            }
        }
    }

    #[test]
    fn a_path_dependency_is_absolute_and_quoted() {
        let s = Spec {
            path: Some(PathBuf::from("/src/durable \"mcp\"")),
            ..spec(false, false, false)
        };
        let files = render_files(&s, "k");
        let toml = file(&files, "Cargo.toml");
        assert!(
            toml.lines()
                .any(|l| l == r#"durable-mcp = { path = "/src/durable \"mcp\"" }"#),
            "{toml}"
        );
        assert!(!toml.contains("durable-mcp = \"0.1\""));
    }

    #[test]
    fn lib_rs_has_each_variants_markers() {
        for s in every_variant() {
            let lib = render_lib(&s);
            let has = |m: &str| lib.contains(m);
            for m in [
                "use durable_mcp::{text, Bindings, CallToolResult, Cx, Elicitation, Registry, Tool, ToolError};",
                "async fn greet(cx: &mut Cx, args: GreetArgs)",
                ".elicit::<Manner>(\"manner\"",
                "durable_mcp::entry!(server);",
                "#[cfg(test)]",
                "use durable_mcp::testing::TestServer;",
                "fn greet_asks_how_then_answers()",
            ] {
                assert!(has(m), "{m} in {s:?}:\n{lib}");
            }
            assert_eq!(has(".durable()"), s.durable, "{s:?}");
            assert_eq!(has("cx.once(\"send\""), s.durable, "{s:?}");
            assert_eq!(has(".task()"), s.task, "{s:?}");
            assert_eq!(has("async fn countdown("), s.task, "{s:?}");
            assert_eq!(has("cx.sleep("), s.task, "{s:?}");
            assert_eq!(has("use std::time::Duration;"), s.task, "{s:?}");
            assert_eq!(has("fn countdown_runs_as_a_task"), s.task, "{s:?}");
            assert_eq!(has(".scopes([\"demo:write\"])"), s.oauth, "{s:?}");
            assert_eq!(has("cx.caller()"), s.oauth, "{s:?}");
            assert_eq!(
                has("fn with_sign_in_greet_needs_its_scope"),
                s.oauth,
                "{s:?}"
            );
            // rustfmt keeps at most one blank line in a row.
            assert!(!lib.contains("\n\n\n"), "{s:?}:\n{lib}");
            assert_eq!(lib.matches('{').count(), lib.matches('}').count(), "{s:?}");
        }
    }

    #[test]
    fn wrangler_toml_binds_the_object_and_comments_oauth() {
        for s in every_variant() {
            let files = render_files(&s, "k");
            let w = file(&files, "wrangler.toml");
            for line in [
                "name = \"demo\"",
                "main = \"build/worker/shim.mjs\"",
                "compatibility_date = \"2026-04-20\"",
                "command = \"worker-build --release\"",
                "[[durable_objects.bindings]]",
                "name = \"MCP_OBJECTS\"",
                "class_name = \"McpObject\"",
                "[[migrations]]",
                "tag = \"v1\"",
                "new_sqlite_classes = [\"McpObject\"]",
            ] {
                assert!(w.lines().any(|l| l == line), "{line} in\n{w}");
            }
            assert_eq!(w.contains("# OAUTH_ISSUER = "), s.oauth, "{w}");
            assert_eq!(w.contains("# OAUTH_SCOPES = "), s.oauth, "{w}");
            assert_eq!(w.contains("Sign-in (OAuth)"), s.oauth, "{w}");
            assert!(!w.lines().any(|l| l.starts_with("OAUTH_")), "{w}");
        }
    }

    #[test]
    fn a_worker_name_has_dashes_for_underscores() {
        let s = Spec {
            name: "my_server".into(),
            ..spec(false, false, false)
        };
        let files = render_files(&s, "k");
        assert!(file(&files, "wrangler.toml").starts_with("name = \"my-server\"\n"));
        assert!(file(&files, "Cargo.toml").contains("name = \"my_server\"\n"));
    }

    #[test]
    fn the_other_files() {
        let files = render_files(&spec(false, false, true), "KEY_0123");
        let vars = file(&files, ".dev.vars");
        assert!(
            vars.lines().any(|l| l == "STATE_KEYS=dev:KEY_0123"),
            "{vars}"
        );
        assert!(vars
            .lines()
            .any(|l| l == "ALLOWED_HOSTS=localhost,127.0.0.1,[::1]"));
        assert!(vars
            .lines()
            .any(|l| l == "ALLOWED_ORIGINS=localhost,127.0.0.1,[::1]"));
        let ignore: Vec<&str> = file(&files, ".gitignore").lines().collect();
        assert_eq!(
            ignore,
            [
                "target/",
                "build/",
                "node_modules/",
                ".wrangler/",
                ".dev.vars"
            ]
        );
        let package = file(&files, "package.json");
        let json: serde_json::Value = serde_json::from_str(package).unwrap_or_default();
        assert_eq!(json["name"], "demo");
        assert_eq!(json["scripts"]["start"], "wrangler dev");
        assert_eq!(json["scripts"]["test"], "cargo test");
        assert_eq!(
            json["scripts"]["check-deploy"],
            "cargo test --test deploy_check -- --nocapture"
        );
        assert_eq!(json["scripts"]["deploy"], "wrangler deploy");
        assert_eq!(json["devDependencies"]["wrangler"], WRANGLER_VERSION);
        let readme = file(&files, "README.md");
        for m in [
            "# demo",
            "npm start",
            "npm test",
            "wrangler secret put STATE_KEYS",
            "demo:write",
            "DEPLOY_CHECK=paused.json npm run check-deploy",
            "scripts/export-paused.mjs",
        ] {
            assert!(readme.contains(m), "{m} in\n{readme}");
        }
    }

    #[test]
    fn every_variant_has_the_deploy_check_for_its_crate() {
        for s in every_variant() {
            let files = render_files(&s, "k");
            let check = file(&files, "tests/deploy_check.rs");
            for m in [
                "use durable_mcp::replay::{check, versions, versions_table, PausedCall, Report, Verdict};",
                "std::env::var_os(\"DEPLOY_CHECK\")",
                "versions_table(&versions(&s.server, &calls))",
                "let registry = demo::server(&Bindings::from_vars::<&str, &str>([]));",
                "let reports = check(&s.server, &calls);",
                "Verdict::Diverges { .. }",
                "deploy check skipped",
            ] {
                assert!(check.contains(m), "{m} in {s:?}:\n{check}");
            }
            assert!(!check.contains("\n\n\n"), "{check}");
        }
        // A crate name with dashes is a Rust path with underscores.
        let files = render_files(&spec_named("my-server"), "k");
        let check = file(&files, "tests/deploy_check.rs");
        assert!(
            check.contains("let registry = my_server::server("),
            "{check}"
        );
    }

    #[test]
    fn the_wrangler_pin_is_the_repositorys() {
        // Only in a checkout (the published crate has no ../package.json).
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../package.json");
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(json["devDependencies"]["wrangler"], WRANGLER_VERSION);
    }

    #[test]
    fn state_keys_are_fresh_and_long() {
        let (a, b) = (
            state_key().unwrap_or_default(),
            state_key().unwrap_or_default(),
        );
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    }

    #[test]
    fn names_are_checked() {
        for ok in ["demo", "my-server", "my_server2", "a"] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "", "2fast", "-x", "My", "a.b", "a b", "é", "test", "fn", "std",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert!(check_name(&"a".repeat(64)).is_err());
    }

    #[test]
    fn parse_reads_the_flags() {
        let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let Ok((s, dir)) = parse(&args("demo --dir /tmp/x --durable --task --oauth")) else {
            panic!("parses");
        };
        assert_eq!(dir, Some(PathBuf::from("/tmp/x")));
        assert_eq!((s.durable, s.task, s.oauth), (true, true, true));
        assert_eq!(s.name, "demo");
        assert!(parse(&args("demo --nope")).is_err());
        assert!(parse(&args("demo other")).is_err());
        assert!(parse(&args("--durable")).is_err());
        assert!(parse(&args("Demo")).is_err());
        assert!(parse(&args("demo --dir")).is_err());
    }

    #[test]
    fn a_path_names_the_crate_by_its_last_part() {
        assert_eq!(split_target("demo"), Ok(("demo".into(), None)));
        for (target, name) in [
            ("../my-server", "my-server"),
            ("./foo", "foo"),
            ("/tmp/x/my_server", "my_server"),
            ("a/b/c2", "c2"),
            ("demo/", "demo"),
            ("../x/./demo", "demo"),
        ] {
            assert_eq!(
                split_target(target),
                Ok((name.to_string(), Some(PathBuf::from(target)))),
                "{target}"
            );
        }
        // The bad part is named, and the path it came from.
        let e = split_target("../x/My Server").err().unwrap_or_default();
        assert!(
            e.starts_with("\"My Server\" is not a valid crate name"),
            "{e}"
        );
        assert!(e.contains("\"../x/My Server\""), "{e}");
        let e = split_target("/tmp/fn").err().unwrap_or_default();
        assert!(e.starts_with("\"fn\" is not a valid crate name"), "{e}");
        // A directory named ok above a bad last part does not help, and a
        // bad directory above a good last part does not matter.
        assert!(split_target("my-server/9lives").is_err());
        assert!(split_target("My Dir/my-server").is_ok());
        for no_name in ["..", ".", "/", "../.."] {
            let e = split_target(no_name).err().unwrap_or_default();
            assert!(e.contains("does not end in a name"), "{no_name}: {e}");
        }
        assert!(split_target("")
            .err()
            .unwrap_or_default()
            .contains("not a valid crate name"));
    }

    #[test]
    fn parse_takes_a_path_or_a_dir_not_both() {
        let args = |s: &[&str]| s.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        let Ok((s, dir)) = parse(&args(&["../servers/my-server", "--task"])) else {
            panic!("parses");
        };
        assert_eq!(s.name, "my-server");
        assert!(s.task);
        assert_eq!(dir, Some(PathBuf::from("../servers/my-server")));
        let Ok((s, dir)) = parse(&args(&["my-server", "--dir", "/tmp/elsewhere"])) else {
            panic!("parses");
        };
        assert_eq!(
            (s.name.as_str(), dir),
            ("my-server", Some(PathBuf::from("/tmp/elsewhere")))
        );
        assert!(parse(&args(&["../my-server", "--dir", "/tmp/y"])).is_err());
        assert!(parse(&args(&["../My-Server"])).is_err());
        assert!(parse(&args(&[".."])).is_err());
    }

    #[test]
    fn a_path_with_missing_parents_is_made() {
        let root =
            std::env::temp_dir().join(format!("durable-mcp-new-parents-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let Ok((s, Some(dir))) = split_target(&format!("{}/a/b/my-server", root.display()))
            .map(|(name, dir)| (spec_named(&name), dir))
        else {
            panic!("splits");
        };
        assert!(write_project(&s, &dir).is_ok());
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        assert!(read("Cargo.toml").starts_with("[package]\nname = \"my-server\"\n"));
        assert!(read("wrangler.toml").starts_with("name = \"my-server\"\n"));
        let _ = std::fs::remove_dir_all(&root);
    }

    fn spec_named(name: &str) -> Spec {
        Spec {
            name: name.into(),
            ..spec(false, false, false)
        }
    }

    #[test]
    fn a_non_empty_directory_is_refused_and_left_alone() {
        let dir = std::env::temp_dir().join(format!("durable-mcp-new-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(std::fs::create_dir_all(&dir).is_ok());
        assert!(std::fs::write(dir.join("keep.txt"), "mine").is_ok());
        let r = write_project(&spec(false, false, false), &dir);
        assert!(r.is_err_and(|e| e.contains("not empty")));
        assert!(!dir.join("Cargo.toml").exists());
        // An empty one is used.
        let empty = dir.join("empty");
        assert!(std::fs::create_dir_all(&empty).is_ok());
        let r = write_project(&spec(false, true, false), &empty);
        assert!(r.is_ok_and(|files| files.contains(&"src/lib.rs".to_string())));
        assert!(empty.join("src/lib.rs").exists());
        assert!(empty.join("tests/deploy_check.rs").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
