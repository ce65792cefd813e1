//! `durable-mcp`: call any MCP server's tools from a terminal.
//!
//! ```text
//! durable-mcp tools <url> [--wire W]
//! durable-mcp call <url> <tool> [--arg key=value]... [--args JSON]
//!                  [--wire auto|modern|session|saga|sketch] [--no-tasks] [--no-chain] [--json]
//! durable-mcp new <name or path> [--path <durable-mcp checkout>]
//!                 [--durable] [--task] [--oauth] [--dir <path>]
//! durable-mcp login <url> [--client-id ID [--client-secret S]]
//!                   [--client-metadata-url URL] [--no-browser]
//! durable-mcp logout <url>
//! durable-mcp admin <url> calls|tools|console ...
//! ```
//!
//! A server that asks for sign-in (a 401) gets it: `login` ahead of time,
//! or inline on the first call; tokens are kept per server and refreshed
//! when they expire, a paused call included (`login.rs`).
//!
//! Forms the server asks for become prompts, one per field; a sampling
//! request asks you for the model's reply. Progress and task status show on
//! stderr. Chained calls (`_meta.nextTool`) are followed, checked. See
//! `--help` for answering from a pipe. `new` writes a new worker crate
//! (`new.rs`, from the files in `templates/`). `admin` drives the server's
//! admin API (`admin.rs`).

mod admin;
mod login;
mod new;
mod prompt;

use std::process::ExitCode;

use durable_mcp_client::{Client, Error, Step, Wire};
use serde_json::{Map, Value};

const HELP: &str = "\
durable-mcp — call an MCP server's tools from a terminal

USAGE
  durable-mcp tools <url> [--wire W]
  durable-mcp call <url> <tool> [--arg key=value]... [--args JSON] [options]
  durable-mcp new <name or path> [--path <durable-mcp checkout>]
                  [--durable] [--task] [--oauth] [--dir <path>]
  durable-mcp login <url> [sign-in options]
  durable-mcp logout <url>
  durable-mcp admin <url> calls list|show|cancel|export|purge [options]
  durable-mcp admin <url> tools list|pause|resume [name]
  durable-mcp admin <url> console [--no-browser]

OPTIONS
  --arg key=value   an argument; the value is read as JSON when it parses
                    (3, true, [\"a\"]), as a string otherwise
  --args JSON       all arguments as one JSON object
  --wire W          auto (default: 2026-07-28 if the server answers
                    server/discover, else a 2025-11-25 session), modern,
                    session, saga, sketch
  --no-tasks        do not declare the tasks extension
  --no-chain        do not follow _meta.nextTool
  --json            print each result as JSON

SIGN-IN
  A server that answers 401 is signed in to with OAuth, as the MCP
  authorization spec describes: `login` does it ahead of time, any other
  command when the server first asks. The authorization page opens in a
  browser (or its URL is printed) and comes back to a loopback port. Tokens
  are kept per server, owner-only, in $DURABLE_MCP_CONFIG_DIR/tokens (else
  $XDG_CONFIG_HOME/durable-mcp/tokens, else ~/.config/durable-mcp/tokens),
  and refreshed when they expire; `logout` forgets them.
  --client-id ID           a client registered beforehand (else a client ID
  --client-secret S        metadata document, else dynamic registration)
  --client-metadata-url U  this client's Client ID Metadata Document (HTTPS)
  --no-browser             print the URL only (also DURABLE_MCP_NO_BROWSER)

ANSWERING
  At a terminal, forms and sampling requests are prompts. From a pipe, one
  line per answer: for a form, one line per field in the order of its
  properties (alphabetical); a first line of !decline or !cancel answers
  the whole form so; an empty line leaves an optional field out. Booleans
  read y/yes/true/1 and n/no/false/0; an enum reads its value or its
  1-based position. For a sampling request, one line: the model's reply.
";

const EXIT: &str = "\
EXIT
  0 success; 1 the tool reported an error (isError), or `new` found its
  directory not empty or could not write it; 2 a protocol, transport,
  sign-in or chain error; 64 usage (a bad option, an invalid name).
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("new") => new::run(&args[1..]),
        Some("admin") => admin::run(&args[1..]),
        _ => run(&args),
    };
    match outcome {
        Ok(code) => code,
        Err(Usage(m)) => {
            eprintln!("{m}\n\n{}", help());
            ExitCode::from(64)
        }
    }
}

struct Usage(String);

/// The whole help text: the commands, answering, `new`, `admin`, exit codes.
fn help() -> String {
    format!("{HELP}\n{}\n{}\n{EXIT}", new::help(), admin::help())
}

struct Options {
    url: String,
    tool: Option<String>,
    /// `--arg` values as typed; read against the tool's schema later.
    raw_args: Vec<(String, String)>,
    arguments: Map<String, Value>,
    wire: Wire,
    tasks: bool,
    chain: bool,
    json: bool,
    sign_in: login::SignInOptions,
}

fn parse(args: &[String]) -> Result<(String, Options), Usage> {
    let mut it = args.iter();
    let command = it.next().ok_or_else(|| Usage("no command".into()))?.clone();
    if command == "--help" || command == "-h" || command == "help" {
        return Ok((command, empty_options()));
    }
    let url = it.next().ok_or_else(|| Usage("no url".into()))?.clone();
    let mut o = Options {
        url,
        ..empty_options()
    };
    if command == "call" {
        o.tool = Some(it.next().ok_or_else(|| Usage("no tool".into()))?.clone());
    }
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| Usage(format!("{a} needs a value")))
        };
        match a.as_str() {
            "--arg" => {
                let kv = value()?;
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| Usage(format!("--arg {kv}: expected key=value")))?;
                o.raw_args.push((k.to_string(), v.to_string()));
            }
            "--args" => match serde_json::from_str(&value()?) {
                Ok(Value::Object(m)) => o.arguments.extend(m),
                _ => return Err(Usage("--args must be a JSON object".into())),
            },
            "--wire" => o.wire = value()?.parse().map_err(Usage)?,
            "--no-tasks" => o.tasks = false,
            "--no-chain" => o.chain = false,
            "--json" => o.json = true,
            "--client-id" => o.sign_in.client_id = Some(value()?),
            "--client-secret" => o.sign_in.client_secret = Some(value()?),
            "--client-metadata-url" => o.sign_in.client_metadata_url = Some(value()?),
            "--no-browser" => o.sign_in.no_browser = true,
            other => return Err(Usage(format!("unknown option {other}"))),
        }
    }
    Ok((command, o))
}

fn empty_options() -> Options {
    Options {
        url: String::new(),
        tool: None,
        raw_args: Vec::new(),
        arguments: Map::new(),
        wire: Wire::Auto,
        tasks: true,
        chain: true,
        json: false,
        sign_in: login::SignInOptions::default(),
    }
}

/// An `--arg` value: a string where the tool's schema says string (so
/// `id=12345` stays "12345"), otherwise JSON when it parses, else a string.
fn arg_value(v: &str, schema: Option<&Value>) -> Value {
    let is_string = schema
        .and_then(|s| s.get("type"))
        .is_some_and(|t| t == "string");
    if is_string {
        return Value::String(v.to_string());
    }
    serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()))
}

fn run(args: &[String]) -> Result<ExitCode, Usage> {
    let (command, o) = parse(args)?;
    let mut client = Client::new(&o.url, prompt::Prompter::new())
        .with_wire(o.wire)
        .with_tasks(o.tasks)
        .with_url_elicitation(true)
        .with_oauth(login::oauth(&o.sign_in));
    let outcome = match command.as_str() {
        "--help" | "-h" | "help" => {
            print!("{}", help());
            return Ok(ExitCode::SUCCESS);
        }
        "tools" => client.list_tools().map(|tools| {
            for t in tools {
                print_tool(&t);
            }
            ExitCode::SUCCESS
        }),
        "login" => client.sign_in().map(|()| {
            if let Some(g) = client.grant() {
                eprintln!(
                    "Signed in to {} by {}{}",
                    o.url,
                    g.issuer,
                    if g.scopes.is_empty() {
                        String::new()
                    } else {
                        format!(" (scopes: {})", g.scopes.join(" "))
                    }
                );
            }
            ExitCode::SUCCESS
        }),
        "logout" => client.sign_out().map(|()| {
            eprintln!("Signed out of {}", o.url);
            ExitCode::SUCCESS
        }),
        "call" => {
            let tool = o.tool.clone().unwrap_or_default();
            typed_arguments(&mut client, &tool, &o)
                .and_then(|args| call(&mut client, &tool, args, &o))
        }
        other => return Err(Usage(format!("unknown command {other}"))),
    };
    client.close();
    Ok(outcome.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    }))
}

/// The call's arguments: `--args`, then each `--arg` read against the
/// listed tool's input schema (listed once; a server that does not list the
/// tool gets the values as JSON-or-string).
fn typed_arguments(client: &mut Client, tool: &str, o: &Options) -> Result<Value, Error> {
    let mut args = o.arguments.clone();
    if !o.raw_args.is_empty() {
        let tools = client.list_tools()?;
        let props = tools
            .iter()
            .find(|t| t["name"] == tool)
            .and_then(|t| t["inputSchema"]["properties"].as_object().cloned());
        for (k, v) in &o.raw_args {
            args.insert(
                k.clone(),
                arg_value(v, props.as_ref().and_then(|p| p.get(k))),
            );
        }
    }
    Ok(Value::Object(args))
}

fn call(client: &mut Client, tool: &str, args: Value, o: &Options) -> Result<ExitCode, Error> {
    let json = o.json;
    let show = |step: &Step| {
        eprintln!("▶ {} {}", step.tool, step.arguments);
        print_result(&step.result, json);
    };
    let last = if o.chain {
        client.call_chain(tool, args, show)?.pop().map(|s| s.result)
    } else {
        let result = client.call_tool(tool, args.clone())?;
        show(&Step {
            tool: tool.to_string(),
            arguments: args,
            result: result.clone(),
        });
        Some(result)
    };
    let failed = last.is_some_and(|r| r["isError"] == true);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_tool(t: &Value) {
    let name = t["name"].as_str().unwrap_or_default();
    let desc = t["description"].as_str().unwrap_or_default();
    let first = desc.lines().next().unwrap_or_default();
    let params: Vec<String> = t["inputSchema"]["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    println!("{name}({})  {first}", params.join(", "));
}

fn print_result(result: &Value, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(result).unwrap_or_default()
        );
        return;
    }
    let mut printed = false;
    for block in result["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => println!("{}", block["text"].as_str().unwrap_or_default()),
            Some(other) => println!("[{other} content]"),
            None => {}
        }
        printed = true;
    }
    if !printed {
        if let Some(s) = result.get("structuredContent") {
            println!("{}", serde_json::to_string_pretty(s).unwrap_or_default());
        }
    }
    if result["isError"] == true {
        eprintln!("(the tool reported an error)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arg_values_follow_the_schema_then_json() {
        let string = json!({"type": "string"});
        assert_eq!(arg_value("12345", Some(&string)), json!("12345"));
        assert_eq!(arg_value("12345", None), json!(12345));
        assert_eq!(
            arg_value("true", Some(&json!({"type": "boolean"}))),
            json!(true)
        );
        assert_eq!(arg_value("locked out", None), json!("locked out"));
        assert_eq!(arg_value("[1,2]", None), json!([1, 2]));
    }
}
