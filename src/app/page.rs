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
}

/// What a page answers.
#[derive(Debug, Clone, PartialEq)]
pub struct PageReply {
    pub(crate) status: u16,
    pub(crate) content_type: String,
    pub(crate) body: String,
    pub(crate) completion: Option<Completion>,
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
        }
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
    /// never sent to the client.
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
