//! A durable-mcp server: MCP tools on Cloudflare Workers that can stop in
//! the middle of a call to ask the client something, and carry on later
//! with nothing lost across requests, restarts and deploys.
//!
//! - `deploy` asks the user where to deploy (a typed form), asks the
//!   client's model whether now is a good time (sampling), opens a change
//!   ticket exactly once (`cx.once`), and reports. It runs durably: between
//!   rounds its progress lives in a Durable Object. Its result comes with
//!   a view (MCP Apps, `ui/deploy.html`): hosts that speak the extension
//!   show a card drawn from the structured output rather than the text.
//! - `add` adds two numbers and answers with structured output.
//! - `check_account_issue` → `initiate_human_handoff`: tool chaining (seed
//!   004). The first tool names the next one, with its arguments, in
//!   `_meta.nextTool`; the runtime checks the chain before sending it.
//!
//! - `backup` is a long job run as a task (the tasks extension): the call
//!   is answered with a task id at once, and the job goes on in its own
//!   Durable Object, which wakes itself between steps with no client
//!   connected; `tasks/get` shows how far it got.
//!
//! - `promote` needs a person's approval on this worker's `/approve` page
//!   (URL-mode elicitation): the call waits, durably, until the page's form
//!   is posted (`approval.rs`).
//!
//! - `skills/safe-deploys`: a skill (the skills extension, SEP-2640) that
//!   teaches an agent to use these tools in order: back up, staging, then
//!   production. Hosts list it with `skills/list` and read its files as
//!   `skill://safe-deploys/…` resources.
//!
//! The ticket webhook comes from the Worker's configuration
//! (`TICKET_WEBHOOK`, a var or secret), never from a tool argument.

use durable_mcp::{
    ask, outbound, text, Bindings, CallToolResult, Cx, Elicitation, Json, Registry, SkillError,
    Tool, ToolError,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Duration;

mod approval;
mod view;
pub use approval::{approve_page, promote, PromoteArgs};
pub use view::{deploy_view, DeployStatus, Deployment, DEPLOY_VIEW};

/// What the tools share, read once per isolate from vars and secrets.
pub struct Settings {
    /// Where change tickets are opened; `None`: tickets are made up locally.
    pub ticket_webhook: Option<String>,
}

/// Deploys a service: asks where, checks with the model that now is a good
/// time, opens a change ticket once, and reports.
#[derive(Deserialize, JsonSchema)]
pub struct DeployArgs {
    /// The service to deploy.
    pub service: String,
}

/// Where a deployment goes.
#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// The staging environment.
    Staging,
    /// Production.
    Production,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Staging => "staging",
            Target::Production => "production",
        }
    }
}

/// The form the user fills in.
#[derive(Deserialize, JsonSchema)]
pub struct Where {
    /// Where to deploy.
    pub target: Target,
}

async fn deploy(cx: &mut Cx, args: DeployArgs) -> Result<CallToolResult, ToolError> {
    let service = &args.service;
    let form = cx
        .elicit::<Where>("target", format!("Where should {service} be deployed?"))
        .await?;
    let Elicitation::Accepted(Where { target }) = form else {
        return Deployment::cancelled(service)
            .answer(format!("Deployment of {service} cancelled by the user."));
    };
    let target = target.name();
    let verdict = cx
        .sample(
            "safety",
            ask(
                format!("Is it safe to deploy {service} to {target} right now? Answer yes or no."),
                50,
            ),
        )
        .await?;
    if !verdict.text().to_ascii_lowercase().contains("yes") {
        let said = verdict.text();
        return Deployment::refused(service, target, &said).answer(format!(
            "Not deploying {service} to {target}: the model said {said:?}."
        ));
    }
    let webhook = cx.state::<Settings>()?.ticket_webhook.clone();
    // The same on every round and retry of this call: the webhook can tell a
    // retry (after a crash in the middle of the POST) from a new ticket.
    let key = cx.idempotency_key("ticket");
    // A side effect runs once per call: a replay gets the recorded ticket.
    let ticket: String = cx
        .once("ticket", async || {
            open_ticket(webhook, &key, service, target).await
        })
        .await?;
    Deployment::deployed(service, target, &ticket)
        .answer(format!("Deployed {service} to {target} (ticket {ticket})."))
}

/// Opens a change ticket with the webhook, or makes one up without it.
async fn open_ticket(
    webhook: Option<String>,
    idempotency_key: &str,
    service: &str,
    target: &str,
) -> Result<String, ToolError> {
    let Some(url) = webhook else {
        return Ok(format!("LOCAL-{service}-{target}"));
    };
    let body = json!({"service": service, "target": target});
    let headers = [("idempotency-key", idempotency_key)];
    let answer = outbound::post_json(&url, &body, &headers).await?;
    answer["ticket"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| ToolError::failed("the ticket webhook answered without a ticket"))
}

/// Adds two numbers.
#[derive(Deserialize, JsonSchema)]
pub struct AddArgs {
    /// The first number.
    pub a: f64,
    /// The second number.
    pub b: f64,
}

/// A sum.
#[derive(Serialize, JsonSchema)]
pub struct Sum {
    /// `a + b`.
    pub sum: f64,
}

async fn add(_: &mut Cx, args: AddArgs) -> Result<Json<Sum>, ToolError> {
    Ok(Json(Sum {
        sum: args.a + args.b,
    }))
}

/// Looks into a customer's account issue, and hands a locked account over
/// to a human specialist by naming the next tool to call.
#[derive(Deserialize, JsonSchema)]
pub struct IssueArgs {
    /// The customer's id.
    pub customer_id: String,
    /// What the customer reports.
    pub issue: String,
}

/// How urgent a handoff is.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum Urgency {
    /// It can wait for the next business day.
    Low,
    /// The customer cannot use their account.
    High,
}

/// Hands a customer over to a human specialist and opens a support ticket.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HandoffArgs {
    /// The customer's id.
    pub customer_id: String,
    /// The kind of issue (`account_locked`, …).
    pub issue_type: String,
    /// How urgent it is.
    pub urgency: Urgency,
}

async fn check_account_issue(_: &mut Cx, args: IssueArgs) -> Result<CallToolResult, ToolError> {
    if !args.issue.to_ascii_lowercase().contains("locked") {
        return Ok(text(format!(
            "Resolved for customer {}: {}",
            args.customer_id, args.issue
        )));
    }
    // The next step is not for the model to infer: the tool names it.
    let next = HandoffArgs {
        customer_id: args.customer_id,
        issue_type: "account_locked".into(),
        urgency: Urgency::High,
    };
    Ok(text("This account lockout requires specialist assistance.")
        .with_next_tool("initiate_human_handoff", next))
}

async fn initiate_human_handoff(
    _: &mut Cx,
    args: HandoffArgs,
) -> Result<CallToolResult, ToolError> {
    let urgency = match args.urgency {
        Urgency::Low => "low",
        Urgency::High => "high",
    };
    Ok(text(format!(
        "Handed customer {} over to a specialist ({}, {urgency} urgency).",
        args.customer_id, args.issue_type
    )))
}

/// Backs up a database, part by part: a long job, run as a task.
#[derive(Deserialize, JsonSchema)]
pub struct BackupArgs {
    /// The database to back up.
    pub database: String,
    /// How many parts to copy, a second each (default 3, at most 20).
    pub parts: Option<u32>,
}

async fn backup(cx: &mut Cx, args: BackupArgs) -> Result<CallToolResult, ToolError> {
    let parts = args.parts.unwrap_or(3).clamp(1, 20);
    for part in 1..=parts {
        cx.status(format!("copying part {part} of {parts}"));
        // Nothing is held open while it waits: the task's Durable Object
        // sets its alarm and wakes itself (across restarts too).
        cx.sleep(&format!("part-{part}"), Duration::from_secs(1))
            .await?;
    }
    Ok(text(format!(
        "Backed up {} in {parts} parts.",
        args.database
    )))
}

/// The server: called once per isolate with the Worker's vars and secrets.
pub fn server(env: &Bindings) -> Result<Registry, SkillError> {
    let mut r = Registry::new();
    r.state(Settings {
        ticket_webhook: env.var("TICKET_WEBHOOK"),
    })
    .view(deploy_view())
    .tool(
        Tool::new("deploy", deploy)
            .title("Deploy a service")
            .output_schema_of::<Deployment>()
            .view(DEPLOY_VIEW)
            .durable(),
    )
    .tool(Tool::new("add", add))
    .tool(Tool::new("check_account_issue", check_account_issue))
    .tool(Tool::new("initiate_human_handoff", initiate_human_handoff))
    .tool(Tool::new("backup", backup).task())
    .tool(
        Tool::new("promote", promote)
            .title("Promote a service to production (approved on a page)")
            .durable(),
    )
    .page("/approve", approve_page)
    // skills/: how an agent ships a service with these tools (SEP-2640),
    // bundled into the Worker at compile time.
    .skills(durable_mcp::include_skills!("$CARGO_MANIFEST_DIR/skills")?);
    Ok(r)
}

durable_mcp::entry!(server);

#[cfg(test)]
mod tests {
    use durable_mcp::testing::TestServer;
    use serde_json::{json, Value};

    use super::*;

    #[test]
    fn promote_waits_for_the_approval_page_and_goes_on() {
        use durable_mcp::http::HttpRequest;
        let mut s = TestServer::new(server(&Bindings::from_vars([("A", "")])).expect("builds"));
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}},
        });
        let call = |s: &mut TestServer, extra: Value| {
            let mut p = json!({"name": "promote", "arguments": {"service": "api"}, "_meta": meta});
            if let (Some(p), Value::Object(e)) = (p.as_object_mut(), extra) {
                p.extend(e);
            }
            s.call("tools/call", p)
        };
        let r = call(&mut s, json!({}));
        let asked = &r.json["result"]["inputRequests"]["approval"]["params"];
        assert_eq!(asked["mode"], "url", "{}", r.json);
        let url = asked["url"].as_str().expect("url");
        let id = url.split("elicitationId=").nth(1).expect("id").to_string();
        let state = r.json["result"]["requestState"].clone();

        // The user posts the approval form.
        let body = format!("elicitationId={id}&note=looks+good");
        let page = s.send(HttpRequest {
            method: "POST".into(),
            path: "/approve".into(),
            headers: vec![
                ("host".into(), "127.0.0.1:8787".into()),
                (
                    "content-type".into(),
                    "application/x-www-form-urlencoded".into(),
                ),
            ],
            body: body.into_bytes(),
        });
        assert_eq!(page.status, 200, "{}", page.text);

        // The client comes back (its user consented to open the page).
        let r = call(
            &mut s,
            json!({"requestState": state, "inputResponses": {"approval": {"action": "accept"}}}),
        );
        assert_eq!(
            r.json["result"]["content"][0]["text"],
            "Promoted api to production (approved: looks good).",
            "{}",
            r.json
        );
    }

    #[test]
    fn deploy_asks_where_then_the_model_then_finishes() {
        let mut s = TestServer::new(server(&Bindings::from_vars([("A", "")])).expect("builds"));
        let r = s.call_tool("deploy", json!({"service": "api"}), json!({}));
        let res = &r.json["result"];
        assert_eq!(res["resultType"], "input_required", "{}", r.json);
        let form = &res["inputRequests"]["target"]["params"];
        assert_eq!(form["message"], "Where should api be deployed?");
        assert_eq!(
            form["requestedSchema"]["properties"]["target"]["oneOf"],
            json!([{"const": "staging", "title": "The staging environment."},
                   {"const": "production", "title": "Production."}])
        );
        let state = res["requestState"].clone();
        let r = s.call_tool(
            "deploy",
            json!({"service": "api"}),
            json!({"requestState": state, "inputResponses":
                {"target": {"action": "accept", "content": {"target": "staging"}}}}),
        );
        let state = r.json["result"]["requestState"].clone();
        let r = s.call_tool(
            "deploy",
            json!({"service": "api"}),
            json!({"requestState": state, "inputResponses":
                {"safety": {"role": "assistant", "content": {"type": "text", "text": "yes"}}}}),
        );
        assert_eq!(
            r.json["result"]["content"][0]["text"],
            "Deployed api to staging (ticket LOCAL-api-staging).",
            "{}",
            r.json
        );
        assert_eq!(
            r.json["result"]["structuredContent"],
            json!({"service": "api", "status": "deployed", "target": "staging",
                   "ticket": "LOCAL-api-staging"})
        );
    }

    #[test]
    fn a_refused_deploy_tells_its_view_what_the_model_said() {
        let mut s = TestServer::new(server(&Bindings::from_vars([("A", "")])).expect("builds"));
        let r = s.call_tool("deploy", json!({"service": "api"}), json!({}));
        let state = r.json["result"]["requestState"].clone();
        let r = s.call_tool(
            "deploy",
            json!({"service": "api"}),
            json!({"requestState": state, "inputResponses":
                {"target": {"action": "accept", "content": {"target": "production"}}}}),
        );
        let state = r.json["result"]["requestState"].clone();
        let r = s.call_tool(
            "deploy",
            json!({"service": "api"}),
            json!({"requestState": state, "inputResponses":
                {"safety": {"role": "assistant", "content": {"type": "text", "text": "no, freeze"}}}}),
        );
        // The output schema admits it (the runtime checks it before sending).
        assert!(r.json["result"].get("isError").is_none(), "{}", r.json);
        assert_eq!(
            r.json["result"]["structuredContent"],
            json!({"service": "api", "status": "refused", "target": "production",
                   "reason": "no, freeze"})
        );
    }

    #[test]
    fn deploy_names_its_view_and_a_host_can_read_it() {
        let mut s = TestServer::new(server(&Bindings::from_vars([("A", "")])).expect("builds"));
        let r = s.call("tools/list", json!({}));
        let tools = r.json["result"]["tools"].as_array().expect("tools").clone();
        let deploy = tools
            .iter()
            .find(|t| t["name"] == "deploy")
            .expect("deploy");
        assert_eq!(deploy["_meta"]["ui"]["resourceUri"], DEPLOY_VIEW);
        let statuses: Vec<&Value> = deploy["outputSchema"]["properties"]["status"]["oneOf"]
            .as_array()
            .map(|o| o.iter().map(|s| &s["const"]).collect())
            .unwrap_or_default();
        assert_eq!(
            statuses,
            [&json!("deployed"), &json!("cancelled"), &json!("refused")]
        );
        let r = s.call("resources/read", json!({"uri": DEPLOY_VIEW}));
        let page = &r.json["result"]["contents"][0];
        assert_eq!(page["mimeType"], "text/html;profile=mcp-app", "{}", r.json);
        assert!(page["text"]
            .as_str()
            .is_some_and(|html| html.starts_with("<!doctype html>")));
        assert_eq!(page["_meta"]["ui"], json!({"prefersBorder": true}));
    }

    #[test]
    fn a_locked_account_chains_to_the_handoff_with_valid_arguments() {
        let mut s = TestServer::new(server(&Bindings::from_vars([("A", "")])).expect("builds"));
        let r = s.call_tool(
            "check_account_issue",
            json!({"customer_id": "12345", "issue": "My account is locked"}),
            json!({}),
        );
        let next = &r.json["result"]["_meta"]["nextTool"];
        assert_eq!(next["tool"], "initiate_human_handoff", "{}", r.json);
        assert_eq!(
            next["arguments"],
            json!({"customerId": "12345", "issueType": "account_locked", "urgency": "high"})
        );
        let r = s.call_tool(
            "initiate_human_handoff",
            next["arguments"].clone(),
            json!({}),
        );
        assert_eq!(
            r.json["result"]["content"][0]["text"],
            "Handed customer 12345 over to a specialist (account_locked, high urgency)."
        );
        let r = s.call_tool(
            "check_account_issue",
            json!({"customer_id": "1", "issue": "wrong address"}),
            json!({}),
        );
        assert!(
            r.json["result"].get("_meta").is_none(),
            "no chain: {}",
            r.json
        );
    }

    #[test]
    fn tools_list_shows_schemas_derived_from_the_types() {
        let mut s = TestServer::new(server(&Bindings::from_vars([("A", "")])).expect("builds"));
        let r = s.call("tools/list", json!({}));
        let tools = r.json["result"]["tools"].as_array().expect("tools").clone();
        let deploy = tools
            .iter()
            .find(|t| t["name"] == "deploy")
            .expect("deploy");
        assert_eq!(
            deploy["inputSchema"]["properties"]["service"]["description"],
            "The service to deploy."
        );
        assert!(deploy["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Deploys a service")));
        let add = tools.iter().find(|t| t["name"] == "add").expect("add");
        assert_eq!(add["outputSchema"]["properties"]["sum"]["type"], "number");
    }

    #[test]
    fn backup_runs_as_a_task_when_the_client_allows_it() {
        let mut s = TestServer::new(server(&Bindings::from_vars([("A", "")])).expect("builds"));
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities":
                {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        });
        let r = s.call(
            "tools/call",
            json!({"name": "backup", "arguments": {"database": "orders", "parts": 2}, "_meta": meta}),
        );
        let task = &r.json["result"];
        assert_eq!(task["resultType"], "task", "{}", r.json);
        assert_eq!(task["statusMessage"], "copying part 1 of 2");
        let id = task["taskId"].as_str().unwrap_or_default().to_string();
        for _ in 0..2 {
            s.now_ms += 1000;
            s.fire_alarms();
        }
        let r = s.call("tasks/get", json!({"taskId": id, "_meta": meta}));
        assert_eq!(r.json["result"]["status"], "completed", "{}", r.json);
        assert_eq!(
            r.json["result"]["result"]["content"][0]["text"],
            "Backed up orders in 2 parts."
        );
    }

    #[test]
    fn the_safe_deploys_skill_is_listed_and_its_files_are_read() {
        let mut s = TestServer::new(server(&Bindings::from_vars([("A", "")])).expect("builds"));
        let r = s.call("skills/list", json!({}));
        let skill = &r.json["result"]["skills"][0];
        assert_eq!(skill["uri"], "skill://safe-deploys/SKILL.md", "{}", r.json);
        assert_eq!(skill["frontmatter"]["name"], "safe-deploys");
        let files: Vec<&str> = skill["resources"]
            .as_array()
            .map(|f| f.iter().filter_map(|f| f["uri"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            files,
            [
                "skill://safe-deploys/SKILL.md",
                "skill://safe-deploys/references/rollback.md"
            ]
        );
        let r = s.call(
            "resources/read",
            json!({"uri": "skill://safe-deploys/references/rollback.md"}),
        );
        let text = r.json["result"]["contents"][0]["text"].as_str();
        assert!(text.is_some_and(|t| t.starts_with("# When a deploy is refused")));
    }

    /// A page request as a browser sends it: no `Authorization`, maybe a
    /// cookie.
    fn browse(
        s: &mut TestServer,
        method: &str,
        path: &str,
        cookie: Option<&str>,
        body: &str,
    ) -> durable_mcp::testing::TestReply {
        let mut headers = vec![("host".to_string(), "127.0.0.1:8787".to_string())];
        if let Some(c) = cookie {
            headers.push(("cookie".into(), c.to_string()));
        }
        if method == "POST" {
            headers.push((
                "content-type".into(),
                "application/x-www-form-urlencoded".into(),
            ));
        }
        s.send(durable_mcp::http::HttpRequest {
            method: method.into(),
            path: path.into(),
            headers,
            body: body.as_bytes().to_vec(),
        })
    }

    #[test]
    fn with_sign_in_the_approval_link_opens_once_for_its_user_and_shows_what_is_approved() {
        let registry = server(&Bindings::from_vars([("A", "")])).expect("builds");
        let mut s = TestServer::with_config(registry, |c| {
            c.sign_in = durable_mcp::auth::SignIn::ApiTokens(
                durable_mcp::auth::parse_api_tokens("alice:token-of-alice,bob:token-of-bob")
                    .expect("tokens"),
            );
        });
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}},
        });
        let call = |s: &mut TestServer, extra: Value| {
            let mut p = json!({"name": "promote", "arguments": {"service": "api"}, "_meta": meta});
            if let (Some(p), Value::Object(e)) = (p.as_object_mut(), extra) {
                p.extend(e);
            }
            s.request("tools/call", p, |h| {
                h.push(("authorization".into(), "Bearer token-of-alice".into()))
            })
        };
        let r = call(&mut s, json!({}));
        let asked = &r.json["result"]["inputRequests"]["approval"]["params"];
        let url = asked["url"]
            .as_str()
            .unwrap_or_else(|| panic!("{}", r.json));
        let path = &url[url.find("/approve").expect("page path")..];
        let state = r.json["result"]["requestState"].clone();

        // Opened by a browser (no credentials): the link is exchanged for a
        // pass and the browser sent back to the same URL.
        let first = browse(&mut s, "GET", path, None, "");
        assert_eq!(first.status, 303, "{}", first.text);
        assert_eq!(first.header("location"), Some(path));
        let set = first.header("set-cookie").expect("a pass");
        assert!(set.starts_with("dmcp-pass-"), "{set}");
        for attr in ["HttpOnly", "SameSite=Lax", "Path=/approve", "Max-Age="] {
            assert!(set.contains(attr), "{attr} in {set}");
        }
        let cookie = set.split(';').next().expect("name=value").to_string();
        assert_eq!(first.header("x-frame-options"), Some("DENY"));

        // The link opens once: a second browser gets what an unknown link
        // gets, and learns nothing of the call.
        let again = browse(&mut s, "GET", path, None, "");
        assert_eq!(again.status, 404, "{}", again.text);
        assert!(!again.text.contains("api"), "{}", again.text);

        // With the pass: what is approved, from the paused call itself.
        let page = browse(&mut s, "GET", path, Some(&cookie), "");
        assert_eq!(page.status, 200, "{}", page.text);
        assert!(
            page.text.contains("<dd id=service>api</dd>"),
            "{}",
            page.text
        );
        assert!(page.text.contains("promote to production"), "{}", page.text);
        for (name, want) in [
            ("x-frame-options", "DENY"),
            ("referrer-policy", "no-referrer"),
            ("x-content-type-options", "nosniff"),
            ("cache-control", "no-store"),
        ] {
            assert_eq!(page.header(name), Some(want), "{name}");
        }
        let csp = page.header("content-security-policy").expect("csp");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        // A query edited by hand changes nothing shown.
        let edited = browse(
            &mut s,
            "GET",
            &format!("{path}&service=payments&action=delete"),
            Some(&cookie),
            "",
        );
        assert!(
            edited.text.contains("<dd id=service>api</dd>"),
            "{}",
            edited.text
        );
        assert!(!edited.text.contains("payments"), "{}", edited.text);

        // Another user (their own token) is not let in.
        let bob = s.send(durable_mcp::http::HttpRequest {
            method: "GET".into(),
            path: path.to_string(),
            headers: vec![
                ("host".into(), "127.0.0.1:8787".into()),
                ("authorization".into(), "Bearer token-of-bob".into()),
            ],
            body: Vec::new(),
        });
        assert_eq!(bob.status, 404, "{}", bob.text);

        // The user approves with the pass; the call goes on.
        let id = path.split("elicitationId=").nth(1).expect("id");
        let body = format!("elicitationId={id}&note=ok");
        let done = browse(&mut s, "POST", "/approve", Some(&cookie), &body);
        assert_eq!(done.status, 200, "{}", done.text);
        assert!(done.text.contains("Approved"), "{}", done.text);
        let r = call(
            &mut s,
            json!({"requestState": state, "inputResponses": {"approval": {"action": "accept"}}}),
        );
        assert_eq!(
            r.json["result"]["content"][0]["text"], "Promoted api to production (approved: ok).",
            "{}",
            r.json
        );
        // After completion the pass opens nothing.
        let after = browse(&mut s, "GET", path, Some(&cookie), "");
        assert_eq!(after.status, 404, "{}", after.text);
        let twice = browse(&mut s, "POST", "/approve", Some(&cookie), &body);
        assert_eq!(twice.status, 404, "{}", twice.text);
    }
}
