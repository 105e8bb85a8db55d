//! One SQLite file, as the local stores (clarify, sessions) keep theirs:
//! created with its folder, in WAL mode (readers do not block the writer),
//! and used from async code on the blocking pool.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

/// An open SQLite file, shared by a store's calls.
#[derive(Clone)]
pub struct SqliteFile {
    conn: Arc<Mutex<Connection>>,
}

impl SqliteFile {
    /// Opens (creating) the file and its folder, and runs `schema`.
    pub fn open(path: &Path, schema: &str) -> Result<Self, String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let conn = Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .and_then(|_| conn.busy_timeout(std::time::Duration::from_secs(5)))
            .and_then(|_| conn.execute_batch(schema))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` on the connection, off the async threads.
    pub async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let c = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&c).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())?
    }
}
