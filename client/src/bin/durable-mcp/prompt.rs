//! Answers the server's questions with a person: terminal prompts
//! (dialoguer) when stdin is a terminal, one line per answer when it is a
//! pipe. Progress and task status go to stderr, as a spinner (indicatif) on
//! a terminal and as plain lines otherwise.

use std::io::{BufRead, IsTerminal};

use dialoguer::{Confirm, Input, Select};
use durable_mcp_client::Handler;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Map, Value};

/// The CLI's [`Handler`].
pub(crate) struct Prompter {
    tty: bool,
    lines: std::io::Lines<std::io::StdinLock<'static>>,
    spinner: Option<ProgressBar>,
    last_status: String,
}

impl Prompter {
    pub(crate) fn new() -> Self {
        Self {
            tty: std::io::stdin().is_terminal(),
            lines: std::io::stdin().lock().lines(),
            spinner: None,
            last_status: String::new(),
        }
    }

    /// The next piped line (end of input reads as empty).
    fn line(&mut self) -> String {
        self.lines
            .next()
            .and_then(Result::ok)
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    fn status(&mut self, text: String) {
        if text == self.last_status {
            return;
        }
        self.last_status = text.clone();
        if std::io::stderr().is_terminal() {
            let spinner = self.spinner.get_or_insert_with(|| {
                let s = ProgressBar::new_spinner();
                s.set_style(
                    ProgressStyle::with_template("{spinner} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                s.enable_steady_tick(std::time::Duration::from_millis(100));
                s
            });
            spinner.set_message(text);
        } else {
            eprintln!("… {text}");
        }
    }

    fn pause_spinner(&mut self) {
        if let Some(s) = self.spinner.take() {
            s.finish_and_clear();
        }
    }

    /// A URL-mode elicitation: the user opens the page themselves (never
    /// opened for them: the spec wants their consent first) and says when
    /// they are done there; the server goes on when the page says so, and
    /// asks again (the same URL) if they came back too early. From a pipe,
    /// one line: empty to go on, `!decline` or `!cancel`.
    fn url(&mut self, url: &str) -> Value {
        eprintln!("  open {url}");
        let choice = if self.tty {
            let actions = ["I'm done there", "Decline", "Cancel"];
            Select::with_theme(&dialoguer::theme::SimpleTheme)
                .items(&actions)
                .default(0)
                .interact()
                .unwrap_or(2)
        } else {
            match self.line().as_str() {
                "!decline" => 1,
                "!cancel" => 2,
                _ => 0,
            }
        };
        match choice {
            0 => json!({"action": "accept"}),
            1 => json!({"action": "decline"}),
            _ => json!({"action": "cancel"}),
        }
    }

    /// One field of a form: a value, or `None` to leave it out.
    fn field(&mut self, name: &str, schema: &Value, required: bool) -> Option<Value> {
        let title = schema["title"]
            .as_str()
            .or(schema["description"].as_str())
            .unwrap_or(name);
        let options = choices(schema);
        let kind = schema["type"].as_str().unwrap_or("string");
        if self.tty {
            let theme = dialoguer::theme::SimpleTheme;
            if let Some(opts) = options {
                let labels: Vec<String> = opts
                    .iter()
                    .map(|(v, t)| t.clone().unwrap_or_else(|| v.to_string()))
                    .collect();
                let i = Select::with_theme(&theme)
                    .with_prompt(title)
                    .items(&labels)
                    .default(0)
                    .interact()
                    .ok()?;
                return opts.get(i).map(|(v, _)| v.clone());
            }
            if kind == "boolean" {
                return Confirm::with_theme(&theme)
                    .with_prompt(title)
                    .interact()
                    .ok()
                    .map(Value::Bool);
            }
            let text: String = Input::with_theme(&theme)
                .with_prompt(title)
                .allow_empty(!required)
                .interact_text()
                .ok()?;
            return typed(kind, &text);
        }
        let text = self.line();
        if text.is_empty() {
            return None;
        }
        if let Some(opts) = options {
            if let Ok(n) = text.parse::<usize>() {
                if (1..=opts.len()).contains(&n) {
                    return Some(opts[n - 1].0.clone());
                }
            }
            return Some(Value::String(text));
        }
        typed(kind, &text)
    }
}

/// An enum's values with their titles (`enum`, or `oneOf` of `const`s).
fn choices(schema: &Value) -> Option<Vec<(Value, Option<String>)>> {
    if let Some(e) = schema["enum"].as_array() {
        let titles = schema["enumNames"].as_array();
        return Some(
            e.iter()
                .enumerate()
                .map(|(i, v)| {
                    (
                        v.clone(),
                        titles
                            .and_then(|t| t.get(i))
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    )
                })
                .collect(),
        );
    }
    let one_of = schema["oneOf"].as_array().or(schema["anyOf"].as_array())?;
    Some(
        one_of
            .iter()
            .filter_map(|o| {
                Some((
                    o.get("const")?.clone(),
                    o["title"].as_str().map(str::to_string),
                ))
            })
            .collect(),
    )
}

/// Text as the field's type.
fn typed(kind: &str, text: &str) -> Option<Value> {
    match kind {
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Some(json!(true)),
            "n" | "no" | "false" | "0" => Some(json!(false)),
            _ => Some(Value::String(text.to_string())),
        },
        "integer" => text
            .parse::<i64>()
            .ok()
            .map(Value::from)
            .or(Some(Value::String(text.to_string()))),
        "number" => text
            .parse::<f64>()
            .ok()
            .map(Value::from)
            .or(Some(Value::String(text.to_string()))),
        _ => Some(Value::String(text.to_string())),
    }
}

impl Handler for Prompter {
    fn elicit(&mut self, params: &Value) -> Value {
        self.pause_spinner();
        let message = params["message"].as_str().unwrap_or("The server asks:");
        eprintln!("? {message}");
        if params["mode"] == "url" {
            return self.url(params["url"].as_str().unwrap_or_default());
        }
        let schema = &params["requestedSchema"];
        let required: Vec<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut content = Map::new();
        let props: Vec<(String, Value)> = schema["properties"]
            .as_object()
            .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        if self.tty {
            let actions = ["Answer", "Decline", "Cancel"];
            let choice = Select::with_theme(&dialoguer::theme::SimpleTheme)
                .items(&actions)
                .default(0)
                .interact()
                .unwrap_or(2);
            match choice {
                0 => {}
                1 => return json!({"action": "decline"}),
                _ => return json!({"action": "cancel"}),
            }
        }
        for (i, (name, sub)) in props.iter().enumerate() {
            if !self.tty && i == 0 {
                // A first line of !decline / !cancel answers the whole form.
                let text = self.line();
                match text.as_str() {
                    "!decline" => return json!({"action": "decline"}),
                    "!cancel" => return json!({"action": "cancel"}),
                    _ => {}
                }
                if text.is_empty() {
                    continue;
                }
                let v = match choices(sub) {
                    Some(opts) => match text.parse::<usize>() {
                        Ok(n) if (1..=opts.len()).contains(&n) => Some(opts[n - 1].0.clone()),
                        _ => Some(Value::String(text)),
                    },
                    None => typed(sub["type"].as_str().unwrap_or("string"), &text),
                };
                if let Some(v) = v {
                    content.insert(name.clone(), v);
                }
                continue;
            }
            if let Some(v) = self.field(name, sub, required.contains(&name.as_str())) {
                content.insert(name.clone(), v);
            }
        }
        json!({"action": "accept", "content": content})
    }

    fn sample(&mut self, params: &Value) -> Value {
        self.pause_spinner();
        eprintln!("? The server asks the model:");
        for m in params["messages"].as_array().into_iter().flatten() {
            let text = m["content"]["text"].as_str().unwrap_or_default();
            eprintln!("  {}: {text}", m["role"].as_str().unwrap_or("user"));
        }
        let reply = if self.tty {
            Input::<String>::with_theme(&dialoguer::theme::SimpleTheme)
                .with_prompt("reply as the model")
                .interact_text()
                .unwrap_or_default()
        } else {
            self.line()
        };
        json!({"role": "assistant", "content": {"type": "text", "text": reply}, "model": "durable-mcp-cli"})
    }

    fn notify(&mut self, message: &Value) {
        let p = &message["params"];
        match message["method"].as_str().unwrap_or_default() {
            "notifications/progress" => {
                let text = match (p["progress"].as_f64(), p["total"].as_f64()) {
                    (Some(n), Some(t)) => {
                        format!("{n}/{t} {}", p["message"].as_str().unwrap_or_default())
                    }
                    (Some(n), None) => format!("{n} {}", p["message"].as_str().unwrap_or_default()),
                    _ => p["message"].as_str().unwrap_or_default().to_string(),
                };
                self.status(text);
            }
            "notifications/tasks" => {
                let status = p["status"].as_str().unwrap_or_default();
                let text = match p["statusMessage"].as_str() {
                    Some(m) => format!("task {status}: {m}"),
                    None => format!("task {status}"),
                };
                self.status(text);
                if matches!(status, "completed" | "failed" | "cancelled") {
                    self.pause_spinner();
                }
            }
            "notifications/message" => {
                self.pause_spinner();
                eprintln!("[{}] {}", p["level"].as_str().unwrap_or("info"), p["data"]);
            }
            _ => {}
        }
    }
}
