//! Grants kept on disk, one file per server, readable by their owner only.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;

use super::{Grant, TokenStore};
use crate::{Error, Result};

/// Keeps each server's grant in its own file under a directory: the
/// directory `0700`, the files `0600` (on Unix), written whole then renamed
/// so a crash never leaves half a token.
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: PathBuf,
}

impl FileStore {
    /// A store in `dir` (created when first written).
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self {
            dir: dir.as_ref().to_path_buf(),
        }
    }

    /// The file of `server`'s grant: the URL in URL-safe base64, so every
    /// server has its own name and no URL can climb out of the directory.
    pub fn path_of(&self, server: &str) -> PathBuf {
        let name = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(server.as_bytes());
        self.dir.join(format!("{name}.json"))
    }

    fn make_dir(&self) -> std::io::Result<()> {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&self.dir)
    }
}

fn io(e: std::io::Error) -> Error {
    Error::Auth(format!("the token store: {e}"))
}

impl TokenStore for FileStore {
    fn load(&mut self, server: &str) -> Option<Grant> {
        let text = std::fs::read_to_string(self.path_of(server)).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn save(&mut self, server: &str, grant: &Grant) -> Result<()> {
        self.make_dir().map_err(io)?;
        let path = self.path_of(server);
        let tmp = path.with_extension("json.tmp");
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        let mut f = o.open(&tmp).map_err(io)?;
        let text = serde_json::to_string_pretty(grant)
            .map_err(|e| Error::Auth(format!("the token store: {e}")))?;
        f.write_all(text.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }

    fn remove(&mut self, server: &str) -> Result<()> {
        match std::fs::remove_file(self.path_of(server)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::oauth::Registration;

    #[test]
    fn keeps_grants_owner_only() {
        let dir = std::env::temp_dir().join(format!("dmcp-store-{}", std::process::id()));
        let mut s = FileStore::new(&dir);
        let server = "http://127.0.0.1:1/mcp";
        assert!(s.load(server).is_none());
        let g = Grant {
            resource: server.into(),
            issuer: "http://as".into(),
            token_endpoint: "http://as/token".into(),
            client: Registration {
                client_id: "c".into(),
                client_secret: None,
                auth_method: "none".into(),
            },
            access_token: "at".into(),
            refresh_token: Some("rt".into()),
            expires_at: Some(1),
            scopes: vec!["a".into()],
        };
        s.save(server, &g).unwrap();
        assert_eq!(s.load(server).unwrap().refresh_token.as_deref(), Some("rt"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&s.path_of(server)), 0o600);
            assert_eq!(mode(&dir), 0o700);
        }
        assert!(!format!("{g:?}").contains("rt\""));
        s.remove(server).unwrap();
        assert!(s.load(server).is_none());
        s.remove(server).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
