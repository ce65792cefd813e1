//! `API_TOKENS`: static bearer tokens, each standing for a named principal.

use super::{bearer, ct_eq};

/// Parses `principal:token,…` into `(token, principal)` pairs. Every entry
/// must name a principal and a token; a value that is set but yields no
/// usable entry is an error, so a typo refuses to serve instead of turning
/// authentication off. Errors name the entry by position, never its
/// token.
pub fn parse_api_tokens(value: &str) -> Result<Vec<(String, String)>, String> {
    let mut tokens: Vec<(String, String)> = Vec::new();
    for (i, item) in value.split(',').enumerate() {
        let n = i + 1;
        let item = item.trim();
        if item.is_empty() {
            return Err(format!(
                "API_TOKENS entry {n} is empty (write principal:token, comma-separated)"
            ));
        }
        let Some((who, token)) = item.split_once(':') else {
            return Err(format!(
                "API_TOKENS entry {n} has no principal (write principal:token)"
            ));
        };
        let (who, token) = (who.trim(), token.trim());
        if who.is_empty() {
            return Err(format!(
                "API_TOKENS entry {n} has an empty principal (write principal:token)"
            ));
        }
        // What a client can present: the token must read back through
        // `bearer` as itself, or its principal could never sign in.
        let header = format!("Bearer {token}");
        if bearer(Some(&header)) != Some(token) {
            return Err(format!(
                "API_TOKENS entry {n} ({who}) has an empty token or one with characters a bearer token cannot hold"
            ));
        }
        if tokens
            .iter()
            .any(|(t, _)| ct_eq(t.as_bytes(), token.as_bytes()))
        {
            return Err(format!(
                "API_TOKENS entry {n} ({who}) repeats another entry's token"
            ));
        }
        tokens.push((token.to_string(), who.to_string()));
    }
    Ok(tokens)
}

/// The principal an `Authorization` header's bearer token stands for, or
/// `None`. Every configured token is compared, in constant time, so timing
/// tells nothing about which matched or how much of one did.
pub fn authenticate_api_token<'a>(
    tokens: &'a [(String, String)],
    authorization: Option<&str>,
) -> Option<&'a str> {
    let presented = bearer(authorization)?;
    tokens.iter().fold(None, |hit, (token, who)| {
        if ct_eq(token.as_bytes(), presented.as_bytes()) {
            Some(who.as_str())
        } else {
            hit
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_tokens_parse_to_token_and_principal() {
        assert_eq!(
            parse_api_tokens(" alice:tok-a , bob:tok-b"),
            Ok(vec![
                ("tok-a".to_string(), "alice".to_string()),
                ("tok-b".to_string(), "bob".to_string())
            ])
        );
    }

    #[test]
    fn a_malformed_value_is_an_error_that_names_no_token() {
        for bad in [
            "s3cretA,s3cretB",
            "alice:",
            "alice: ",
            ":s3cretA",
            "",
            " ",
            "alice:s3cretA,",
            "alice:s3cret A",
            "alice:s3cretA,bob:s3cretA",
        ] {
            let e = parse_api_tokens(bad).expect_err(bad);
            assert!(e.starts_with("API_TOKENS entry "), "{bad}: {e}");
            assert!(!e.contains("s3cret"), "{bad}: the error shows a token: {e}");
        }
    }

    #[test]
    fn only_a_configured_token_authenticates_and_an_empty_one_never_does() {
        let tokens = parse_api_tokens("alice:tok-a,bob:tok-b").expect("parses");
        assert_eq!(
            authenticate_api_token(&tokens, Some("Bearer tok-b")),
            Some("bob")
        );
        assert_eq!(
            authenticate_api_token(&tokens, Some("bearer tok-a")),
            Some("alice")
        );
        for header in [None, Some("Bearer "), Some("Bearer"), Some("Bearer tok-")] {
            assert_eq!(authenticate_api_token(&tokens, header), None, "{header:?}");
        }
        // Even a list that holds an empty token (built by hand, not parsed)
        // lets no empty credential in.
        let by_hand = vec![(String::new(), "alice".to_string())];
        assert_eq!(authenticate_api_token(&by_hand, Some("Bearer ")), None);
    }
}
