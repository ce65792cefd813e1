//! The `WWW-Authenticate: Bearer …` challenge of a 401 or 403 (RFC 6750 §3,
//! RFC 9728 §5.1): where the resource's metadata is, which scope the
//! operation needs, and why the token was refused.

/// What a server's Bearer challenge says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: the Protected Resource Metadata URL.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the operation needs, in order.
    pub scope: Option<Vec<String>>,
    /// `error`: `invalid_token`, `insufficient_scope`, … (absent on a
    /// first 401 without credentials).
    pub error: Option<String>,
}

impl Challenge {
    /// The Bearer challenge among a header's challenges, if there is one.
    pub fn parse(header: &str) -> Option<Challenge> {
        let params = bearer_params(header)?;
        let mut c = Challenge::default();
        for (k, v) in params {
            match k.to_ascii_lowercase().as_str() {
                "resource_metadata" => c.resource_metadata = Some(v),
                "scope" => {
                    let scopes: Vec<String> = v.split_whitespace().map(str::to_string).collect();
                    if !scopes.is_empty() {
                        c.scope = Some(scopes);
                    }
                }
                "error" => c.error = Some(v),
                _ => {}
            }
        }
        Some(c)
    }

    /// Whether the token lacked a scope (a 403 to step up from).
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The auth-params of the `Bearer` challenge: `k=v` or `k="quoted \" v"`,
/// comma-separated; other schemes' challenges are skipped.
fn bearer_params(header: &str) -> Option<Vec<(String, String)>> {
    let mut rest = header.trim();
    loop {
        let (scheme, after) = split_token(rest);
        if scheme.is_empty() {
            return None;
        }
        let (params, next) = read_params(after);
        if scheme.eq_ignore_ascii_case("bearer") {
            return Some(params);
        }
        rest = next?;
    }
}

fn split_token(s: &str) -> (&str, &str) {
    let s = s.trim_start_matches([' ', ',']);
    let end = s.find([' ', ',', '=']).unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// Reads `k=v` pairs until the next scheme (a token not followed by `=`);
/// returns them and where that next challenge starts.
fn read_params(mut s: &str) -> (Vec<(String, String)>, Option<&str>) {
    let mut params = Vec::new();
    loop {
        let trimmed = s.trim_start_matches([' ', ',']);
        if trimmed.is_empty() {
            return (params, None);
        }
        let (key, after) = split_token(trimmed);
        let after_ws = after.trim_start();
        if key.is_empty() || !after_ws.starts_with('=') {
            return (params, Some(trimmed));
        }
        let value_start = after_ws[1..].trim_start();
        let (value, next) = if let Some(quoted) = value_start.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            value.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end.min(quoted.len())..])
        } else {
            let end = value_start.find([',', ' ']).unwrap_or(value_start.len());
            (value_start[..end].to_string(), &value_start[end..])
        };
        params.push((key.to_string(), value));
        s = next;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_step_up_challenge() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp", error_description="needs \"write\"""#,
        )
        .unwrap();
        assert!(c.insufficient_scope());
        assert_eq!(c.scope.unwrap(), vec!["mcp:basic", "mcp:write"]);
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://x/.well-known/oauth-protected-resource/mcp")
        );
    }

    #[test]
    fn finds_bearer_among_other_schemes() {
        let c = Challenge::parse(r#"Basic realm="x", Bearer scope=read"#).unwrap();
        assert_eq!(c.scope.unwrap(), vec!["read"]);
        assert_eq!(Challenge::parse("Bearer").unwrap(), Challenge::default());
        assert!(Challenge::parse(r#"Basic realm="x""#).is_none());
        assert!(Challenge::parse("").is_none());
    }
}
