//! Pages a worker serves beside `/mcp`: where a URL-mode elicitation
//! ([`Cx::elicit_url`](crate::Cx::elicit_url)) sends the user, and where
//! the user's answer completes it.
//!
//! A page is a plain function of the request: it sees the method, the
//! query and form fields, who is calling (authenticated like an MCP
//! request), and the elicitation the request names (its `elicitationId`
//! parameter, verified). It answers HTML, and may complete that
//! elicitation with values (kept in the call's journal) and secrets
//! (sealed at rest, opened only for the tool, never sent to the client).
//!
//! ```
//! use durable_mcp::{Page, PageReply, Registry};
//!
//! fn approve(page: &Page) -> PageReply {
//!     match (page.method.as_str(), page.elicitation()) {
//!         ("POST", Some(_)) if page.field("decision") == Some("approve") => {
//!             PageReply::html("<p>Approved. You can close this tab.</p>")
//!                 .complete([("approved", "yes")])
//!         }
//!         (_, Some(id)) => PageReply::html(format!(
//!             "<form method=post><input type=hidden name=elicitationId value={id}>\
//!              <button name=decision value=approve>Approve</button></form>"
//!         )),
//!         (_, None) => PageReply::html("<p>Nothing to approve here.</p>").status(404),
//!     }
//! }
//!
//! let mut r = Registry::new();
//! r.page("/approve", approve);
//! ```

use std::rc::Rc;

use serde_json::{Map, Value};

use crate::auth::Caller;

/// A request to a page.
#[derive(Debug, Clone)]
pub struct Page {
    /// `GET` or `POST`.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query parameters.
    pub query: Vec<(String, String)>,
    /// The form fields of a POST (`application/x-www-form-urlencoded`).
    pub form: Vec<(String, String)>,
    /// Who is calling (authenticated like an MCP request).
    pub caller: Caller,
    /// The verified `elicitationId` the request names, if it names one
    /// this server issued to this caller.
    pub(crate) elicitation: Option<String>,
    /// What the named elicitation asks, read from the call's own storage.
    pub(crate) question: Option<Question>,
    /// The request's cookies (`Cookie`), name and value.
    pub(crate) cookies: Vec<(String, String)>,
}

/// What a pending URL elicitation asks, as the paused call recorded it:
/// read from the call's storage, never from the request, so whoever holds
/// the link cannot change what the page shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The message the tool asked with (what the client showed the user).
    pub message: String,
    /// What the tool chose to show on the page
    /// ([`Cx::elicit_url_showing`](crate::Cx::elicit_url_showing)), or
    /// `Value::Null`.
    pub details: Value,
}

impl Question {
    /// A detail by name, as text (`None` when absent or not a string).
    pub fn detail(&self, name: &str) -> Option<&str> {
        self.details.get(name).and_then(Value::as_str)
    }
}

impl Page {
    /// A form field, else a query parameter, by name.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .chain(&self.query)
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The elicitation this request names (its `elicitationId`, verified:
    /// issued by this server to this caller for a call it keeps), if any.
    pub fn elicitation(&self) -> Option<&str> {
        self.elicitation.as_deref()
    }

    /// What the named elicitation asks (its message and the details the
    /// tool chose to show), read from the paused call: `None` when the
    /// request names no elicitation of this caller's, or it is no longer
    /// waiting.
    pub fn question(&self) -> Option<&Question> {
        self.question.as_ref()
    }

    /// A cookie the request carries, by name (one a page set with
    /// [`PageReply::cookie`]).
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What a page answers.
#[derive(Debug, Clone, PartialEq)]
pub struct PageReply {
    pub(crate) status: u16,
    pub(crate) content_type: String,
    pub(crate) body: String,
    pub(crate) completion: Option<Completion>,
    /// Headers the page set: each replaces a default of the same name.
    pub(crate) headers: Vec<(String, String)>,
    /// Cookies the page sets.
    pub(crate) cookies: Vec<Cookie>,
}

/// A cookie a page sets ([`PageReply::cookie`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Cookie {
    name: String,
    value: String,
    path: Option<String>,
    max_age_s: Option<u64>,
    same_site: &'static str,
}

impl Cookie {
    /// A cookie with the safe defaults: `HttpOnly`, `SameSite=Lax`,
    /// `Secure` (on an `https` server), the page's own path, a session
    /// cookie.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
            path: None,
            max_age_s: None,
            same_site: "Lax",
        }
    }

    /// Sent for requests under `path` (default: the page's path).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Kept for `seconds` (`0` removes it).
    pub fn max_age(mut self, seconds: u64) -> Self {
        self.max_age_s = Some(seconds);
        self
    }

    /// `SameSite=Strict`: not sent when the browser arrives from another
    /// site (a link in a chat app), only on the page's own requests.
    pub fn strict(mut self) -> Self {
        self.same_site = "Strict";
        self
    }

    /// The `Set-Cookie` value for a page at `page_path` on an `https`
    /// server or not. Names and values are percent-encoded where a cookie
    /// cannot hold a character as it is.
    pub(crate) fn header(&self, page_path: &str, https: bool) -> String {
        let mut out = format!(
            "{}={}; Path={}; HttpOnly; SameSite={}",
            cookie_text(&self.name),
            cookie_text(&self.value),
            cookie_text(self.path.as_deref().unwrap_or(page_path)),
            self.same_site
        );
        if let Some(s) = self.max_age_s {
            out.push_str(&format!("; Max-Age={s}"));
        }
        if https {
            out.push_str("; Secure");
        }
        out
    }
}

/// `s` with what may not stand in a cookie (controls, space, `;`, `,`,
/// `"`, `\\`, non-ASCII) percent-encoded.
fn cookie_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_graphic() && !matches!(b, b';' | b',' | b'"' | b'\\' | b'%') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A page's answer to the elicitation its request names.
#[derive(Clone, PartialEq, Default)]
pub struct Completion {
    pub(crate) data: Map<String, Value>,
    pub(crate) secrets: Map<String, Value>,
}

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&String> = self.secrets.keys().collect();
        f.debug_struct("Completion")
            .field("data", &self.data)
            .field("secrets", &names)
            .finish()
    }
}

impl PageReply {
    /// An HTML page (200).
    pub fn html(body: impl Into<String>) -> Self {
        Self {
            status: 200,
            content_type: "text/html; charset=utf-8".into(),
            body: body.into(),
            completion: None,
            headers: Vec::new(),
            cookies: Vec::new(),
        }
    }

    /// A redirect (`303 See Other`) to `location` (a path on this server,
    /// or an absolute URL: a third-party sign-in, say).
    pub fn redirect(location: impl Into<String>) -> Self {
        Self::text("")
            .status(303)
            .header("location", location.into())
    }

    /// With header `name` set to `value`, replacing the default of that
    /// name: every page answers with `Content-Security-Policy`,
    /// `X-Frame-Options`, `Referrer-Policy`, `X-Content-Type-Options` and
    /// `Cache-Control` defaults (see the guide), which a page may loosen
    /// or tighten here. Internal and hop-by-hop names are ignored.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers
            .push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    /// With a cookie set (`Set-Cookie`, with [`Cookie`]'s safe defaults).
    pub fn cookie(mut self, cookie: Cookie) -> Self {
        // Rendered where the page's path and scheme are known.
        self.cookies.push(cookie);
        self
    }

    /// Plain text (200).
    pub fn text(body: impl Into<String>) -> Self {
        Self {
            content_type: "text/plain; charset=utf-8".into(),
            ..Self::html(body)
        }
    }

    /// With HTTP status `status`.
    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// Completes the elicitation the request names with these values: the
    /// paused call's body gets them from `cx.elicit_url` as
    /// [`UrlCompletion::field`](crate::UrlCompletion::field). They are kept
    /// in the call's journal as they are: a secret goes in
    /// [`PageReply::secret`]. If the completion is refused (no
    /// elicitation, another caller's, already completed) the user gets an
    /// error page instead of this one.
    pub fn complete<K: Into<String>, V: Into<String>>(
        mut self,
        values: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let c = self.completion.get_or_insert_with(Completion::default);
        for (k, v) in values {
            c.data.insert(k.into(), Value::String(v.into()));
        }
        self
    }

    /// Completes the elicitation (as [`PageReply::complete`]) with a secret
    /// — a third-party token, say: sealed before it is stored, read by the
    /// tool with [`UrlCompletion::secret`](crate::UrlCompletion::secret),
    /// never sent to the client. With the `page-secrets` feature (which
    /// links ChaCha20-Poly1305 into the worker).
    #[cfg(feature = "page-secrets")]
    pub fn secret(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let c = self.completion.get_or_insert_with(Completion::default);
        c.secrets.insert(name.into(), Value::String(value.into()));
        self
    }
}

/// A page handler.
pub type PageHandler = Rc<dyn Fn(&Page) -> PageReply>;

/// A registered page: its path and handler.
#[derive(Clone)]
pub struct PageRoute {
    pub(crate) path: String,
    pub(crate) handler: PageHandler,
}

impl std::fmt::Debug for PageRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageRoute")
            .field("path", &self.path)
            .finish()
    }
}

impl PageRoute {
    pub(crate) fn new(path: &str, handler: impl Fn(&Page) -> PageReply + 'static) -> Self {
        Self {
            path: path.to_string(),
            handler: Rc::new(handler),
        }
    }
}
