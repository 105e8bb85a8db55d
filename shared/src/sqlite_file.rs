//! One SQLite file, as the local stores (clarify, sessions) keep theirs:
//! created with its folder, in WAL mode (readers do not block the writer),
//! and used from async code on the blocking pool. Private: folders it
//! makes are the owner's only (0700), and the file with its `-wal` and
//! `-shm` is 0600, tightened (with a warning) when found looser; whoever
//! can open the store can read every question, answer and session, and
//! write an approval's decision. So a store file that is a symlink, is not
//! a plain file, or belongs to another user is refused, and so is a folder
//! others may write into that is not sticky (anyone could swap the files).

use std::fs::Permissions;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};

/// An open SQLite file, shared by a store's calls.
#[derive(Clone)]
pub struct SqliteFile {
    conn: Arc<Mutex<Connection>>,
}

impl SqliteFile {
    /// Opens (creating) the file and its folder, and runs `schema`; all
    /// private (see the module).
    pub fn open(path: &Path, schema: &str) -> Result<Self, String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        owned_folder(path)?;
        owned_files(path)?;
        // Made 0600 before SQLite sees it: SQLite gives `-wal` and `-shm`
        // the database file's mode. Never through a symlink.
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(FILE_MODE)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        private_files(path)?;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .and_then(|_| conn.busy_timeout(std::time::Duration::from_secs(5)))
            .and_then(|_| conn.execute_batch(schema))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        private_files(path)?;
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

/// What the folders a store makes may be.
const DIR_MODE: u32 = 0o700;
/// What a store's files may be.
const FILE_MODE: u32 = 0o600;

/// The database file and its `-wal` and `-shm`, as SQLite names them.
fn store_files(path: &Path) -> [PathBuf; 3] {
    let with = |suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    [path.to_path_buf(), with("-wal"), with("-shm")]
}

/// Refuses a store whose folder others may write into (unless sticky, as
/// /tmp: there they cannot replace a file that is ours).
fn owned_folder(path: &Path) -> Result<(), String> {
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    let meta =
        std::fs::metadata(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(format!(
            "{} holds a store but others may write into it (mode {:o}): anyone could swap \
             the store's files; give Toolgate a folder of its own (TOOLGATE_DATA_DIR)",
            dir.display(),
            mode & 0o7777
        ));
    }
    Ok(())
}

/// Refuses a store file that is a symlink, not a plain file, or another
/// user's (someone who can write it can write an approval's decision).
fn owned_files(path: &Path) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    for file in store_files(path) {
        let Ok(meta) = std::fs::symlink_metadata(&file) else {
            continue;
        };
        if meta.file_type().is_symlink() || !meta.file_type().is_file() {
            return Err(format!(
                "{} is not a plain file (a symlink, or something else): refusing to use it as a store",
                file.display()
            ));
        }
        if meta.uid() != me {
            return Err(format!(
                "{} belongs to another user (uid {}): refusing to use it as a store",
                file.display(),
                meta.uid()
            ));
        }
    }
    Ok(())
}

/// Tightens each of the store's files that exists to 0600.
fn private_files(path: &Path) -> Result<(), String> {
    for file in store_files(path) {
        let Ok(meta) = std::fs::symlink_metadata(&file) else {
            continue;
        };
        if !meta.file_type().is_file() {
            return Err(format!("{} is not a plain file", file.display()));
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode & !FILE_MODE == 0 {
            continue;
        }
        std::fs::set_permissions(&file, Permissions::from_mode(FILE_MODE))
            .map_err(|e| format!("cannot make {} private (0600): {e}", file.display()))?;
        tracing::warn!(
            file = %file.display(),
            was = format!("{mode:o}"),
            "a store file others could read is now the owner's only (0600)"
        );
    }
    Ok(())
}

/// Makes the data folder the owner's only (0700) when it exists and others
/// may enter or read it; a folder that is not the user's, or is shared on
/// purpose (sticky, as /tmp), is left as it is, with a warning. A folder
/// that does not exist yet is made 0700 by the first store that needs it.
pub fn keep_private(dir: &Path) {
    let Ok(meta) = std::fs::metadata(dir) else {
        return;
    };
    let mode = meta.permissions().mode() & 0o7777;
    if !meta.is_dir() || mode & !DIR_MODE == 0 {
        return;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me || mode & 0o1000 != 0 {
        tracing::warn!(
            folder = %dir.display(),
            mode = format!("{mode:o}"),
            "the data folder is shared (not yours, or sticky): left as it is; give Toolgate a folder of its own (TOOLGATE_DATA_DIR)"
        );
        return;
    }
    match std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)) {
        Ok(()) => tracing::warn!(
            folder = %dir.display(),
            was = format!("{mode:o}"),
            "the data folder others could enter is now the owner's only (0700)"
        ),
        Err(e) => tracing::warn!(
            folder = %dir.display(),
            error = %e,
            "cannot make the data folder private (0700)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn folders_and_files_are_the_owners_only_even_when_found_looser() {
        let root = std::env::temp_dir().join(format!("tg-sqlite-private-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let db = root.join("a/b/store.sqlite3");
        let f = SqliteFile::open(&db, "CREATE TABLE IF NOT EXISTS t (x);").unwrap();
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("a/b")), 0o700);
        for file in store_files(&db) {
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
        drop(f);
        // Found looser: the files are tightened, the data folder too.
        for file in store_files(&db) {
            if file.exists() {
                std::fs::set_permissions(&file, Permissions::from_mode(0o644)).unwrap();
            }
        }
        std::fs::set_permissions(&root, Permissions::from_mode(0o755)).unwrap();
        keep_private(&root);
        assert_eq!(mode(&root), 0o700);
        let _f = SqliteFile::open(&db, "").unwrap();
        for file in store_files(&db) {
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
        // A shared folder (sticky, as /tmp) is left alone.
        let shared = root.join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, Permissions::from_mode(0o1777)).unwrap();
        keep_private(&shared);
        assert_eq!(mode(&shared), 0o1777);
        let _ = std::fs::remove_dir_all(&root);
    }

    /// What another local user could plant: a symlink, a file of theirs, a
    /// folder anyone may write into. Each is refused, never used.
    #[test]
    fn planted_store_files_and_open_folders_are_refused() {
        let root = std::env::temp_dir().join(format!("tg-sqlite-planted-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::set_permissions(&root, Permissions::from_mode(0o700)).unwrap();
        let victim = root.join("victim");
        std::fs::write(&victim, b"keep me").unwrap();
        let db = root.join("link.sqlite3");
        std::os::unix::fs::symlink(&victim, &db).unwrap();
        let e = SqliteFile::open(&db, "").err().unwrap();
        assert!(e.contains("not a plain file"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
        // A -wal planted as a symlink beside a store of ours.
        let db = root.join("wal.sqlite3");
        std::os::unix::fs::symlink(&victim, root.join("wal.sqlite3-wal")).unwrap();
        let e = SqliteFile::open(&db, "").err().unwrap();
        assert!(e.contains("-wal is not a plain file"), "{e}");
        // A file of another user's (the tests run as root where they can
        // give one away; elsewhere this case cannot be set up).
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            let theirs = root.join("theirs.sqlite3");
            std::fs::write(&theirs, b"").unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            let e = SqliteFile::open(&theirs, "").err().unwrap();
            assert!(e.contains("belongs to another user"), "{e}");
        }
        // A folder others may write into, not sticky.
        let open = root.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, Permissions::from_mode(0o777)).unwrap();
        let e = SqliteFile::open(&open.join("s.sqlite3"), "").err().unwrap();
        assert!(e.contains("others may write into it"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
