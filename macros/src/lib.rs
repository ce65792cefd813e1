//! Compile-time work of `durable-mcp`. Use it through `durable-mcp`
//! (`durable_mcp::include_skills!`), which names what this expands to.

use proc_macro::{TokenStream, TokenTree};

mod skills;

/// A skills directory bundled and checked while the crate is compiled:
/// every file as `(path, include_bytes!(…))` and every `SKILL.md`'s
/// frontmatter as JSON text, `(&[…], &[…])`. A frontmatter that breaks the
/// Agent Skills rules, or a skill in a folder not named for it, is a
/// compile error naming the file. Called by `durable_mcp::include_skills!`.
#[doc(hidden)]
#[proc_macro]
pub fn skills_dir(input: TokenStream) -> TokenStream {
    let expanded = literal_path(input).and_then(|dir| skills::expand(&dir));
    let code = match expanded {
        Ok(code) => code,
        Err(why) => format!("::core::compile_error!({why:?})"),
    };
    code.parse().unwrap_or_else(|_| {
        "::core::compile_error!(\"include_skills!: could not expand\")"
            .parse()
            .unwrap_or_default()
    })
}

/// The one string literal the macro takes, with `$VAR`s (as
/// `$CARGO_MANIFEST_DIR`) replaced by the build's environment.
fn literal_path(input: TokenStream) -> Result<String, String> {
    let mut tokens = input.into_iter();
    let lit = match (tokens.next(), tokens.next()) {
        (Some(TokenTree::Literal(lit)), None) => lit.to_string(),
        // A literal passed through a macro_rules `tt` may arrive grouped.
        (Some(TokenTree::Group(g)), None) => return literal_path(g.stream()),
        _ => return Err("include_skills! takes one string literal: the directory".into()),
    };
    let path = lit
        .strip_prefix('"')
        .and_then(|l| l.strip_suffix('"'))
        .filter(|l| !l.contains('\\'))
        .ok_or("include_skills! takes a plain string literal (no escapes, not raw)")?;
    skills::expand_vars(path)
}
