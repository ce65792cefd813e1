//! The library's and the client's modules form layers: no import cycle between two modules,
//! neither between top-level modules (`server` → `host` → `server`) nor
//! between siblings (`server::methods` → `server::modern` → …). A parent
//! and its children may name each other (a `mod.rs` re-exports, a child
//! uses its parent's types); every other path is one-way.
//!
//! The graph is read from the source: every `crate::…`, `super::…` and
//! `self::…` path outside comments and `#[cfg(test)]` modules, resolved to
//! the file that defines it (following `pub use child::Name` re-exports).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

fn modules(root: &Path) -> BTreeMap<Module, String> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                // `src/bin/*`: binaries, each a crate of its own.
                if path.parent() != Some(root) || path.file_name() != Some("bin".as_ref()) {
                    dirs.push(path);
                }
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .expect("under the root")
                .with_extension("");
            let mut module: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            // `foo/tests.rs` is `#[cfg(test)] mod tests;`: test code may
            // reach anywhere.
            if module.last().map(String::as_str) == Some("tests") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source file");
            out.insert(module, strip(&text));
        }
    }
    out
}

/// The source without `//` comments and without its inline test module.
fn strip(text: &str) -> String {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    code.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path the source names after `crate::`, `super::` or `self::`,
/// with `{a, b::c}` groups expanded one level (enough for `use` lines).
fn paths(code: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for head in ["crate::", "super::", "self::"] {
        let mut rest = code;
        while let Some(i) = rest.find(head) {
            let before = rest[..i].chars().last();
            rest = &rest[i + head.len()..];
            if before.is_some_and(|c| is_ident(c) || c == ':' || c == '$') {
                continue;
            }
            let mut segs = Vec::new();
            let mut s = rest;
            loop {
                let n = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
                if n == 0 {
                    break;
                }
                segs.push(s[..n].to_string());
                s = &s[n..];
                if let Some(t) = s.strip_prefix("::") {
                    s = t;
                } else {
                    break;
                }
            }
            let head = head.trim_end_matches("::").to_string();
            if let Some(group) = s.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let first = item
                        .trim()
                        .split(|c: char| !is_ident(c))
                        .next()
                        .unwrap_or("");
                    if !first.is_empty() {
                        let mut p = segs.clone();
                        p.push(first.to_string());
                        out.push((head.clone(), p));
                    }
                }
            } else if !segs.is_empty() {
                out.push((head, segs));
            }
        }
    }
    out
}

/// `pub use child::{A, B as C}` in each module: name → child module.
fn reexports(mods: &BTreeMap<Module, String>) -> BTreeMap<Module, BTreeMap<String, Module>> {
    let mut out: BTreeMap<Module, BTreeMap<String, Module>> = BTreeMap::new();
    for (module, code) in mods {
        for line in code.split(';') {
            let line = line.trim();
            let Some(rest) = line.strip_prefix("pub").map(str::trim_start) else {
                continue;
            };
            let rest = rest.strip_prefix("(crate)").unwrap_or(rest).trim_start();
            let Some(rest) = rest.strip_prefix("use ") else {
                continue;
            };
            let Some((child, items)) = rest.split_once("::") else {
                continue;
            };
            let mut child_mod = module.clone();
            child_mod.push(child.trim().to_string());
            if !mods.contains_key(&child_mod) {
                continue;
            }
            for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
                let name = item.rsplit(" as ").next().unwrap_or("").trim();
                let name = name.rsplit("::").next().unwrap_or("");
                if !name.is_empty() {
                    out.entry(module.clone())
                        .or_default()
                        .insert(name.to_string(), child_mod.clone());
                }
            }
        }
    }
    out
}

fn graph(root: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mods = modules(root);
    let reexp = reexports(&mods);
    let resolve = |parts: &[String]| -> Option<Module> {
        for k in (1..=parts.len()).rev() {
            let m = parts[..k].to_vec();
            if mods.contains_key(&m) {
                if let Some(child) = parts.get(k).and_then(|n| reexp.get(&m)?.get(n)) {
                    return Some(child.clone());
                }
                return Some(m);
            }
        }
        None
    };
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, code) in &mods {
        for (head, segs) in paths(code) {
            // `super` of a file is its parent module; of a `mod.rs` too,
            // because `module` already names the directory.
            let mut full: Module = match head.as_str() {
                "crate" => vec![],
                "self" => module.clone(),
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            let mut segs = segs.as_slice();
            while segs.first().map(String::as_str) == Some("super") {
                full.pop();
                segs = &segs[1..];
            }
            full.extend(segs.iter().cloned());
            let Some(target) = resolve(&full) else {
                continue;
            };
            let related = target.starts_with(module) || module.starts_with(&target);
            if !related {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    edges
}

/// One cycle through `edges`, if there is any.
fn find_cycle(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        v: &Module,
        edges: &BTreeMap<Module, BTreeSet<Module>>,
        state: &mut BTreeMap<Module, bool>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        state.insert(v.clone(), false);
        stack.push(v.clone());
        for w in edges.get(v).into_iter().flatten() {
            match state.get(w) {
                Some(false) => {
                    let at = stack.iter().position(|m| m == w).expect("on the stack");
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(w.clone());
                    return Some(cycle);
                }
                Some(true) => {}
                None => {
                    if let Some(c) = visit(w, edges, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(v.clone(), true);
        None
    }
    let mut state = BTreeMap::new();
    for v in edges.keys() {
        if !state.contains_key(v) {
            if let Some(c) = visit(v, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn show(cycle: &[Module]) -> String {
    cycle
        .iter()
        .map(|m| m.join("::"))
        .collect::<Vec<_>>()
        .join(" → ")
}

#[test]
fn no_import_cycles_between_modules() {
    no_cycles(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
}

#[test]
fn no_import_cycles_between_the_client_modules() {
    no_cycles(&Path::new(env!("CARGO_MANIFEST_DIR")).join("client/src"));
}

/// The crate at `root` has no cycle, between modules nor between
/// top-level ones.
fn no_cycles(root: &Path) {
    let edges = graph(root);
    assert!(edges.len() > 10, "the graph reads the source: {edges:?}");
    if let Some(cycle) = find_cycle(&edges) {
        panic!("import cycle between modules: {}", show(&cycle));
    }
    // The same graph seen from the top: `server::methods → host::route`
    // counts as `server → host`.
    let mut top: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (a, bs) in &edges {
        for b in bs {
            if a[..1] != b[..1] {
                top.entry(a[..1].to_vec())
                    .or_default()
                    .insert(b[..1].to_vec());
            }
        }
    }
    if let Some(cycle) = find_cycle(&top) {
        panic!("import cycle between top-level modules: {}", show(&cycle));
    }
}

#[test]
fn the_checker_finds_a_planted_cycle() {
    let dir = std::env::temp_dir().join(format!("layering-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).expect("the planted crate");
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").expect("the planted crate");
    std::fs::write(dir.join("a/mod.rs"), "mod x;\nmod y;\npub use x::Thing;\n")
        .expect("the planted crate");
    std::fs::write(
        dir.join("a/x.rs"),
        "use super::y::Other;\npub struct Thing;\n",
    )
    .expect("the planted crate");
    std::fs::write(dir.join("a/y.rs"), "pub struct Other;\n").expect("the planted crate");
    std::fs::write(dir.join("b.rs"), "use crate::a::Thing; // crate::b\n")
        .expect("the planted crate");
    let edges = graph(&dir);
    assert_eq!(find_cycle(&edges), None, "{edges:?}");
    // `a::y` naming `b` closes a::y → b → a::x → a::y.
    std::fs::write(dir.join("a/y.rs"), "use crate::b::*;\npub struct Other;\n")
        .expect("the planted crate");
    let edges = graph(&dir);
    let cycle = find_cycle(&edges).expect("a cycle");
    std::fs::remove_dir_all(&dir).expect("the planted crate");
    assert!(show(&cycle).contains("b"), "{}", show(&cycle));
}
