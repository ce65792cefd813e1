//! MCP Apps (SEP-1865, the `io.modelcontextprotocol/ui` extension): a tool
//! result the host shows as a small web page rather than as text.
//!
//! A [`View`] is an HTML page served as a `ui://` resource with the mime type
//! `text/html;profile=mcp-app`. A tool names it with
//! [`Tool::view`](super::Tool::view) (`_meta.ui.resourceUri`); a host that
//! speaks the extension reads the page once (`resources/read`), renders it in
//! a sandboxed iframe, and hands it the call's arguments and result over
//! `postMessage` (`ui/notifications/tool-input`, `ui/notifications/tool-result`).
//! The result's `structuredContent` is what the view renders; its `content`
//! stays the text the model reads, and what hosts without the extension show.
//!
//! Everything here is data for the host: the server declares the extension
//! in its capabilities as soon as it serves a view, lists and reads views
//! like any resource, and sends the same tools to every client.
//!
//! ```
//! use durable_mcp::app::ui::{Csp, View, Visibility};
//! use durable_mcp::testing::TestServer;
//! use durable_mcp::{text, Cx, Registry, Tool, ToolError};
//! use serde_json::json;
//!
//! async fn weather(_: &mut Cx, _: serde_json::Value) -> Result<durable_mcp::CallToolResult, ToolError> {
//!     Ok(text("Sunny, 22°C").with_structured(json!({"sky": "sunny", "celsius": 22})))
//! }
//!
//! let mut r = Registry::new();
//! r.view(
//!     View::new("ui://weather/card.html", "Weather card", "<!doctype html><html>…</html>")
//!         .csp(Csp::new().connect_domains(["https://api.example.com"]))
//!         .prefers_border(true),
//! )
//! .tool(Tool::new("weather", weather).view("ui://weather/card.html"))
//! .tool(Tool::new("refresh", weather).view("ui://weather/card.html").visibility([Visibility::App]));
//!
//! let mut s = TestServer::new(r);
//! let tools = s.call("tools/list", json!({}));
//! assert_eq!(tools.json["result"]["tools"][1]["_meta"]["ui"]["resourceUri"], "ui://weather/card.html");
//! let page = s.call("resources/read", json!({"uri": "ui://weather/card.html"}));
//! let page = &page.json["result"]["contents"][0];
//! assert_eq!(page["mimeType"], "text/html;profile=mcp-app");
//! assert_eq!(page["_meta"]["ui"]["csp"]["connectDomains"], json!(["https://api.example.com"]));
//! let caps = s.call("server/discover", json!({}));
//! assert!(caps.json["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/ui"].is_object());
//! ```

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::engine::{boxed, BoxedHandler, Cx, ToolError};
use crate::vec_map::VecMap;

/// The extension's identifier, under `capabilities.extensions`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The mime type of a view's HTML.
pub const UI_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The URI scheme the spec reserves for views.
const SCHEME: &str = "ui://";

/// The flat `_meta` key hosts read before `_meta.ui` existed. The spec
/// deprecates it; the reference server helper (`registerAppTool` of
/// `@modelcontextprotocol/ext-apps`) still writes it beside `_meta.ui`, for
/// those hosts, and so do we.
const LEGACY_RESOURCE_URI: &str = "ui/resourceUri";

/// `uri` in the `ui://` scheme: as given when it is, with the scheme put in
/// front when it is not (so a view and the tools naming it always agree).
fn view_uri(uri: &str) -> String {
    if uri.starts_with(SCHEME) {
        uri.to_string()
    } else {
        format!("{SCHEME}{uri}")
    }
}

/// Whether `uri` names a view.
pub(crate) fn is_view_uri(uri: &str) -> bool {
    uri.starts_with(SCHEME)
}

/// Which origins a view may reach (`_meta.ui.csp`). The host builds the
/// iframe's Content Security Policy from it and allows nothing undeclared;
/// a view that declares nothing gets the spec's restrictive default
/// (inline scripts and styles, `data:` images, no network).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Csp {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    connect_domains: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    resource_domains: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    frame_domains: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    base_uri_domains: Vec<String>,
}

fn strings<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Vec<String> {
    items.into_iter().map(Into::into).collect()
}

impl Csp {
    /// Nothing beyond the view itself.
    pub fn new() -> Self {
        Self::default()
    }

    /// Origins for `fetch`, XHR and WebSockets (`connect-src`).
    pub fn connect_domains<S: Into<String>>(
        mut self,
        origins: impl IntoIterator<Item = S>,
    ) -> Self {
        self.connect_domains = strings(origins);
        self
    }

    /// Origins for scripts, styles, images, fonts and media
    /// (`script-src`, `style-src`, `img-src`, `font-src`, `media-src`);
    /// `https://*.example.com` covers the subdomains.
    pub fn resource_domains<S: Into<String>>(
        mut self,
        origins: impl IntoIterator<Item = S>,
    ) -> Self {
        self.resource_domains = strings(origins);
        self
    }

    /// Origins for nested iframes (`frame-src`; none by default).
    pub fn frame_domains<S: Into<String>>(mut self, origins: impl IntoIterator<Item = S>) -> Self {
        self.frame_domains = strings(origins);
        self
    }

    /// Base URIs the document may set (`base-uri`; its own by default).
    pub fn base_uri_domains<S: Into<String>>(
        mut self,
        origins: impl IntoIterator<Item = S>,
    ) -> Self {
        self.base_uri_domains = strings(origins);
        self
    }

    fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// A browser capability a view asks the host for (`_meta.ui.permissions`).
/// The host may refuse: a view should detect the feature, not assume it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    /// The camera.
    Camera,
    /// The microphone.
    Microphone,
    /// The user's location.
    Geolocation,
    /// Writing to the clipboard.
    ClipboardWrite,
}

impl Permission {
    fn key(self) -> &'static str {
        match self {
            Self::Camera => "camera",
            Self::Microphone => "microphone",
            Self::Geolocation => "geolocation",
            Self::ClipboardWrite => "clipboardWrite",
        }
    }
}

/// Who may call a tool (`_meta.ui.visibility`; both when not set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// The model: the host lists the tool to it.
    Model,
    /// The app: a view of this server, through the host.
    App,
}

/// A view's `_meta.ui`, as the spec spells it.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct ViewMeta {
    #[serde(skip_serializing_if = "Csp::is_empty")]
    csp: Csp,
    /// Each requested permission as `{}` (the spec's shape).
    #[serde(skip_serializing_if = "VecMap::is_empty")]
    permissions: VecMap<&'static str, Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    domain: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prefers_border: Option<bool>,
}

/// An MCP Apps view: an HTML page served as a `ui://` resource for the
/// tools that name it ([`Tool::view`](super::Tool::view)); register it
/// with [`Registry::view`](super::Registry::view). See the
/// [module docs](self) for a whole example.
///
/// The page should be self-contained (bundle its scripts and styles in the
/// HTML, `include_str!` it at compile time): the host allows it no origin
/// it did not declare in [`View::csp`]. It talks to the host with JSON-RPC
/// over `postMessage`: `ui/initialize`, then `ui/notifications/initialized`,
/// then it receives the tool's input and result.
#[derive(Debug, Clone)]
pub struct View {
    uri: String,
    listing: Map<String, Value>,
    html: Cow<'static, str>,
    meta: ViewMeta,
}

impl View {
    /// The page `html` at `uri` (`ui://…`; the scheme is added when
    /// missing), listed as `name`.
    pub fn new(uri: &str, name: &str, html: impl Into<Cow<'static, str>>) -> Self {
        let uri = view_uri(uri);
        let mut listing = Map::new();
        listing.insert("uri".into(), json!(uri));
        listing.insert("name".into(), json!(name));
        listing.insert("mimeType".into(), json!(UI_MIME_TYPE));
        Self {
            uri,
            listing,
            html: html.into(),
            meta: ViewMeta::default(),
        }
    }

    /// Sets the human-facing title of its listing.
    pub fn title(mut self, title: &str) -> Self {
        self.listing.insert("title".into(), json!(title));
        self
    }

    /// Sets the description of its listing.
    pub fn description(mut self, description: &str) -> Self {
        self.listing
            .insert("description".into(), json!(description));
        self
    }

    /// The origins it may reach (none by default).
    pub fn csp(mut self, csp: Csp) -> Self {
        self.meta.csp = csp;
        self
    }

    /// The browser capabilities it asks for.
    pub fn permissions(mut self, wanted: impl IntoIterator<Item = Permission>) -> Self {
        self.meta.permissions = wanted.into_iter().map(|p| (p.key(), Map::new())).collect();
        self
    }

    /// A dedicated origin for its sandbox (for OAuth callbacks or an API's
    /// CORS allow-list). The format is the host's: read its documentation.
    pub fn domain(mut self, domain: &str) -> Self {
        self.meta.domain = Some(domain.to_string());
        self
    }

    /// Whether the host draws a border and background around it. Hosts'
    /// defaults differ, so the spec recommends saying.
    pub fn prefers_border(mut self, border: bool) -> Self {
        self.meta.prefers_border = Some(border);
        self
    }

    /// Its `ui://` URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// `_meta` carrying its `ui` metadata, or `None` when it declares none.
    fn ui_meta(&self) -> Option<Value> {
        let ui = serde_json::to_value(&self.meta).ok()?;
        let declared = ui.as_object().is_some_and(|m| !m.is_empty());
        declared.then(|| json!({ "ui": ui }))
    }

    /// Its `resources/list` entry: the `_meta.ui` there lets a host review
    /// the view's policy before it reads the page.
    pub fn listing(&self) -> Value {
        Value::Object(self.listing_map())
    }

    fn listing_map(&self) -> Map<String, Value> {
        let mut listing = self.listing.clone();
        if let Some(meta) = self.ui_meta() {
            listing.insert("_meta".into(), meta);
        }
        listing
    }

    /// Its `resources/read` contents: the page, with the same `_meta.ui`.
    pub fn contents(&self) -> Vec<Value> {
        let mut page = Map::new();
        page.insert("uri".into(), json!(self.uri));
        page.insert("mimeType".into(), json!(UI_MIME_TYPE));
        page.insert("text".into(), json!(self.html));
        if let Some(meta) = self.ui_meta() {
            page.insert("_meta".into(), meta);
        }
        vec![Value::Object(page)]
    }

    /// What the registry keeps: its URI, its listing, and a reader that
    /// answers with the page.
    pub(crate) fn into_parts(self) -> (String, Map<String, Value>, BoxedHandler<Vec<Value>>) {
        let contents = self.contents();
        let listing = self.listing_map();
        let read = async move |_: &mut Cx, _: Value| Ok::<_, ToolError>(contents.clone());
        (self.uri, listing, boxed(read))
    }
}

/// Edits a tool listing's `_meta` and `_meta.ui` (each made an object if
/// it was not one), keeping whatever else they hold.
fn edit_tool_meta(
    listing: &mut Map<String, Value>,
    edit: impl FnOnce(&mut Map<String, Value>, &mut Map<String, Value>),
) {
    let mut meta = match listing.remove("_meta") {
        Some(Value::Object(meta)) => meta,
        _ => Map::new(),
    };
    let mut ui = match meta.remove("ui") {
        Some(Value::Object(ui)) => ui,
        _ => Map::new(),
    };
    edit(&mut meta, &mut ui);
    meta.insert("ui".into(), Value::Object(ui));
    listing.insert("_meta".into(), Value::Object(meta));
}

/// Names the view that renders a tool's results.
pub(crate) fn name_view(listing: &mut Map<String, Value>, uri: &str) {
    let uri = view_uri(uri);
    edit_tool_meta(listing, |meta, ui| {
        ui.insert("resourceUri".into(), json!(uri));
        meta.insert(LEGACY_RESOURCE_URI.into(), json!(uri));
    });
}

/// Says who may call a tool.
pub(crate) fn set_visibility(
    listing: &mut Map<String, Value>,
    who: impl IntoIterator<Item = Visibility>,
) {
    let mut list: Vec<Visibility> = Vec::new();
    for v in who {
        if !list.contains(&v) {
            list.push(v);
        }
    }
    edit_tool_meta(listing, |_, ui| {
        ui.insert("visibility".into(), json!(list));
    });
}

/// Declares the extension in `capabilities` (beside any other extension):
/// the settings a client declares too, the mime types of the views.
pub(crate) fn declare_extension(capabilities: &mut Value) {
    let Some(capabilities) = capabilities.as_object_mut() else {
        return;
    };
    let extensions = capabilities
        .entry("extensions")
        .or_insert_with(|| json!({}));
    if !extensions.is_object() {
        *extensions = json!({});
    }
    if let Some(extensions) = extensions.as_object_mut() {
        extensions.insert(UI_EXTENSION.into(), json!({ "mimeTypes": [UI_MIME_TYPE] }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_without_policy_lists_no_meta_and_reads_its_page() {
        let v = View::new("ui://a/b.html", "B", "<!doctype html><p>hi</p>");
        assert_eq!(
            v.listing(),
            json!({"uri": "ui://a/b.html", "name": "B", "mimeType": UI_MIME_TYPE})
        );
        assert_eq!(
            v.contents(),
            vec![json!({"uri": "ui://a/b.html", "mimeType": UI_MIME_TYPE,
                        "text": "<!doctype html><p>hi</p>"})]
        );
    }

    #[test]
    fn the_policy_is_spelled_as_the_spec_spells_it_in_the_listing_and_the_page() {
        let v = View::new("b.html", "B", String::from("<p>"))
            .title("Bee")
            .description("a bee")
            .csp(
                Csp::new()
                    .connect_domains(["https://api.example.com"])
                    .resource_domains(["https://*.cdn.example.com"])
                    .frame_domains(["https://www.youtube.com"])
                    .base_uri_domains(["https://cdn.example.com"]),
            )
            .permissions([Permission::ClipboardWrite, Permission::Camera])
            .domain("abc.example.net")
            .prefers_border(false);
        assert_eq!(v.uri(), "ui://b.html", "the scheme is added");
        let ui = json!({
            "csp": {
                "connectDomains": ["https://api.example.com"],
                "resourceDomains": ["https://*.cdn.example.com"],
                "frameDomains": ["https://www.youtube.com"],
                "baseUriDomains": ["https://cdn.example.com"],
            },
            "permissions": {"camera": {}, "clipboardWrite": {}},
            "domain": "abc.example.net",
            "prefersBorder": false,
        });
        assert_eq!(v.listing()["_meta"]["ui"], ui);
        assert_eq!(v.listing()["title"], "Bee");
        assert_eq!(v.listing()["description"], "a bee");
        assert_eq!(v.contents()[0]["_meta"]["ui"], ui);
    }

    #[test]
    fn a_tool_names_its_view_both_ways_and_keeps_other_meta() {
        let mut listing = Map::new();
        listing.insert("_meta".into(), json!({"other": 1}));
        name_view(&mut listing, "cards/x");
        set_visibility(&mut listing, [Visibility::App, Visibility::App]);
        assert_eq!(
            listing["_meta"],
            json!({
                "other": 1,
                "ui": {"resourceUri": "ui://cards/x", "visibility": ["app"]},
                "ui/resourceUri": "ui://cards/x",
            })
        );
    }

    fn server(views: bool) -> crate::testing::TestServer {
        let mut r = crate::Registry::new();
        let job = async |_: &mut Cx, _: Value| Ok::<_, ToolError>(crate::text("done"));
        r.tool(crate::Tool::new("job", job).task().view("ui://job.html"));
        if views {
            r.view(
                View::new("ui://job.html", "Job", "<!doctype html><p>job</p>").prefers_border(true),
            );
        }
        crate::testing::TestServer::new(r)
    }

    #[test]
    fn both_wires_declare_the_extension_when_a_view_is_served_and_only_then() {
        let ui = json!({"mimeTypes": [UI_MIME_TYPE]});
        let mut s = server(true);
        let caps = s.call("server/discover", json!({})).json["result"]["capabilities"].clone();
        assert_eq!(caps["extensions"][UI_EXTENSION], ui, "{caps}");
        assert!(caps["extensions"]["io.modelcontextprotocol/tasks"].is_object());
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let headers = [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        let r = s.raw("POST", &headers, init);
        assert_eq!(
            r.json["result"]["capabilities"]["extensions"][UI_EXTENSION], ui,
            "{}",
            r.json
        );
        let mut s = server(false);
        let caps = s.call("server/discover", json!({})).json["result"]["capabilities"].clone();
        assert!(caps["extensions"].get(UI_EXTENSION).is_none(), "{caps}");
        let r = s.raw("POST", &headers, init);
        assert!(
            r.json["result"]["capabilities"].get("extensions").is_none(),
            "{}",
            r.json
        );
    }

    #[test]
    fn a_host_lists_the_tool_and_the_view_and_reads_the_page() {
        let mut s = server(true);
        let tools = s.call("tools/list", json!({}));
        assert_eq!(
            tools.json["result"]["tools"][0]["_meta"]["ui"],
            json!({"resourceUri": "ui://job.html"})
        );
        let listed = s.call("resources/list", json!({}));
        assert_eq!(
            listed.json["result"]["resources"],
            json!([{"uri": "ui://job.html", "name": "Job", "mimeType": UI_MIME_TYPE,
                    "_meta": {"ui": {"prefersBorder": true}}}])
        );
        let read = s.call("resources/read", json!({"uri": "ui://job.html"}));
        assert_eq!(
            read.json["result"]["resultType"], "complete",
            "{}",
            read.json
        );
        assert_eq!(
            read.json["result"]["contents"],
            json!([{"uri": "ui://job.html", "mimeType": UI_MIME_TYPE, "text": "<!doctype html><p>job</p>",
                    "_meta": {"ui": {"prefersBorder": true}}}])
        );
    }

    #[test]
    fn the_extension_joins_the_others() {
        let mut caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        declare_extension(&mut caps);
        assert_eq!(
            caps["extensions"],
            json!({"io.modelcontextprotocol/tasks": {},
                   UI_EXTENSION: {"mimeTypes": [UI_MIME_TYPE]}})
        );
        let mut caps = json!({"tools": {}});
        declare_extension(&mut caps);
        assert_eq!(
            caps["extensions"][UI_EXTENSION]["mimeTypes"][0],
            UI_MIME_TYPE
        );
    }
}
