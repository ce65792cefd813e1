//! URL-mode elicitation (SEP-1036) as a tool sees it: the user is sent to
//! a page, and the call goes on when the page says the user is done. The
//! page's answer is recorded against the paused call where the server keeps
//! it (a durable call's object, a session, a task), so the wait may last as
//! long as the call does — restarts and deploys included.

use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Names the `elicitationId` of the request under a key.
pub(crate) type IdFn = Rc<dyn Fn(&str, Option<&str>) -> String>;
/// Opens what a page sealed.
pub(crate) type OpenFn = Rc<dyn Fn(&str) -> Option<Map<String, Value>>>;

/// What the server hands a call whose pauses it keeps, for URL-mode
/// elicitations: the `elicitationId` of the request asked under a key
/// (unforgeable, naming the call, the key and the caller), and how to open
/// what a page sealed for the tool.
#[derive(Clone)]
pub struct OutOfBand {
    /// The `elicitationId` for the request under `key`, for the page of
    /// the caller, or of the approver named (a principal: see
    /// [`Cx::elicit_url_from`](super::Cx::elicit_url_from)).
    pub id: IdFn,
    /// Opens what a page sealed (`None`: not sealed by this server).
    pub open: OpenFn,
    /// This server's origin as the call reached it: a URL given as a path
    /// (`/approve`) is a page of this worker's.
    pub origin: String,
}

impl std::fmt::Debug for OutOfBand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutOfBand")
    }
}

/// How a URL-mode elicitation ([`Cx::elicit_url`](super::Cx::elicit_url)) ended.
#[derive(Debug, Clone, PartialEq)]
pub enum UrlElicitation {
    /// The page completed it, with what it recorded.
    Completed(UrlCompletion),
    /// The user declined to go (in the client).
    Declined,
    /// The user dismissed it.
    Cancelled,
}

/// What the page recorded when it completed the elicitation: plain values
/// (they are in the call's journal) and secrets (sealed at rest, opened
/// only here, never sent to the client).
#[derive(Clone, PartialEq, Default)]
pub struct UrlCompletion {
    /// The page's plain values.
    pub data: Map<String, Value>,
    secrets: Map<String, Value>,
}

impl std::fmt::Debug for UrlCompletion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&String> = self.secrets.keys().collect();
        f.debug_struct("UrlCompletion")
            .field("data", &self.data)
            .field("secrets", &names)
            .finish()
    }
}

impl UrlCompletion {
    pub(crate) fn new(data: Map<String, Value>, secrets: Map<String, Value>) -> Self {
        Self { data, secrets }
    }

    /// One plain value, deserialized.
    pub fn field<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        self.data
            .get(name)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// One secret the page sealed (a third-party token, say). With the
    /// `page-secrets` feature, as [`PageReply::secret`](crate::PageReply::secret).
    #[cfg(feature = "page-secrets")]
    pub fn secret(&self, name: &str) -> Option<&str> {
        self.secrets.get(name).and_then(Value::as_str)
    }
}

/// `url` as an absolute URL: a path is one of this worker's pages.
pub(crate) fn absolute(origin: &str, url: &str) -> String {
    if url.starts_with('/') && !url.starts_with("//") {
        format!("{origin}{url}")
    } else {
        url.to_string()
    }
}

/// `url` with the elicitation id in it: at `{elicitationId}` where the
/// URL has that placeholder, else as the query parameter `elicitationId`.
pub(crate) fn with_id(url: &str, id: &str) -> String {
    if url.contains("{elicitationId}") {
        return url.replace("{elicitationId}", id);
    }
    let (base, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let sep = if base.contains('?') { '&' } else { '?' };
    let mut out = format!("{base}{sep}elicitationId={id}");
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_goes_where_the_url_says() {
        assert_eq!(with_id("https://x/a", "e1"), "https://x/a?elicitationId=e1");
        assert_eq!(
            with_id("https://x/a?b=1#f", "e1"),
            "https://x/a?b=1&elicitationId=e1#f"
        );
        assert_eq!(
            with_id("https://x/c/{elicitationId}", "e1"),
            "https://x/c/e1"
        );
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let mut s = Map::new();
        s.insert("token".into(), Value::String("gho_secret".into()));
        let c = UrlCompletion::new(Map::new(), s);
        #[cfg(feature = "page-secrets")]
        assert_eq!(c.secret("token"), Some("gho_secret"));
        assert!(!format!("{c:?}").contains("gho_secret"));
    }
}
