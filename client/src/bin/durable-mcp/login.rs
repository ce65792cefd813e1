//! Signing in from a terminal: the authorization page opened in a browser
//! (or its URL printed), the redirect back caught on a loopback port
//! (RFC 8252 §7.3), the tokens kept per server in owner-only files.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use durable_mcp_client::oauth::{Browser, FileStore, OAuth};
use durable_mcp_client::{Error, Result};

/// How long a sign-in waits for the browser to come back.
const WAIT: Duration = Duration::from_secs(300);

/// Where grants are kept: `$DURABLE_MCP_CONFIG_DIR/tokens`, else
/// `$XDG_CONFIG_HOME/durable-mcp/tokens`, else `~/.config/durable-mcp/tokens`.
pub(crate) fn token_dir() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = env("DURABLE_MCP_CONFIG_DIR")
        .or_else(|| env("XDG_CONFIG_HOME").map(|d| d.join("durable-mcp")))
        .or_else(|| env("HOME").map(|d| d.join(".config/durable-mcp")))
        .unwrap_or_else(|| PathBuf::from(".durable-mcp"));
    base.join("tokens")
}

/// Sign-in options from the command line.
#[derive(Default, Clone)]
pub(crate) struct SignInOptions {
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) no_browser: bool,
}

/// The CLI's OAuth: a loopback browser, tokens in [`token_dir`].
pub(crate) fn oauth(o: &SignInOptions) -> OAuth {
    let no_browser = o.no_browser || std::env::var_os("DURABLE_MCP_NO_BROWSER").is_some();
    let mut oauth = OAuth::new(Loopback {
        listener: None,
        open: !no_browser,
    })
    .with_store(FileStore::new(token_dir()));
    if let Some(id) = &o.client_id {
        oauth = oauth.with_client(id, o.client_secret.as_deref());
    }
    if let Some(url) = &o.client_metadata_url {
        oauth = oauth.with_client_metadata_url(url);
    }
    oauth
}

/// A browser on this machine, and a port on 127.0.0.1 it is sent back to.
struct Loopback {
    listener: Option<TcpListener>,
    open: bool,
}

impl Browser for Loopback {
    fn redirect_uri(&mut self) -> Result<String> {
        if self.listener.is_none() {
            let l = TcpListener::bind("127.0.0.1:0").map_err(io)?;
            self.listener = Some(l);
        }
        let port = self
            .listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port())
            .ok_or_else(|| Error::Auth("no loopback port".into()))?;
        Ok(format!("http://127.0.0.1:{port}/callback"))
    }

    fn authorize(&mut self, url: &str) -> Result<String> {
        self.redirect_uri()?;
        eprintln!("Sign in: open this URL in a browser\n  {url}");
        if self.open && webbrowser::open(url).is_err() {
            eprintln!("(could not open a browser here: open the URL yourself)");
        }
        let listener = self
            .listener
            .as_ref()
            .ok_or_else(|| Error::Auth("no loopback port".into()))?;
        let port = listener.local_addr().map_err(io)?.port();
        listener.set_nonblocking(true).map_err(io)?;
        let deadline = Instant::now() + WAIT;
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    if let Some(target) = callback(stream)? {
                        return Ok(format!("http://127.0.0.1:{port}{target}"));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err(Error::Auth(format!(
                            "no sign-in within {} s",
                            WAIT.as_secs()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(io(e)),
            }
        }
    }
}

fn io(e: std::io::Error) -> Error {
    Error::Auth(format!("the loopback redirect: {e}"))
}

/// Reads one request on the loopback port: the callback's path and query
/// (answered with a page saying the terminal has it), or `None` for
/// anything else (a favicon: 404).
fn callback(mut stream: TcpStream) -> Result<Option<String>> {
    stream.set_nonblocking(false).map_err(io)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(io)?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).map_err(io)?;
    let target = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let ours = target.starts_with("/callback?");
    let (status, body) = if ours {
        (
            "200 OK",
            "<!doctype html><title>Signed in</title><p>Done: you can close this tab and go back to the terminal.</p>",
        )
    } else {
        ("404 Not Found", "not found")
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    Ok(ours.then_some(target))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_catches_the_callback_and_ignores_the_rest() {
        let mut b = Loopback {
            listener: None,
            open: false,
        };
        let redirect = b.redirect_uri().unwrap();
        assert!(redirect.starts_with("http://127.0.0.1:"));
        let addr = redirect
            .trim_start_matches("http://")
            .trim_end_matches("/callback")
            .to_string();
        // The favicon first, the callback after it.
        let get = move |path: &'static str, after_ms: u64| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(after_ms));
                let mut s = TcpStream::connect(&addr).unwrap();
                write!(s, "GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
                let mut out = String::new();
                let _ = std::io::Read::read_to_string(&mut s, &mut out);
                out
            })
        };
        let favicon = get("/favicon.ico", 50);
        let cb = get("/callback?code=c&state=s", 500);
        let back = b.authorize("http://as/authorize").unwrap();
        assert!(back.ends_with("/callback?code=c&state=s"));
        assert!(favicon.join().unwrap().starts_with("HTTP/1.1 404"));
        assert!(cb.join().unwrap().starts_with("HTTP/1.1 200"));
    }
}
