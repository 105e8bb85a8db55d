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

/// One step of a store's schema, from one version to the next.
pub type Upgrade = fn(&Connection) -> rusqlite::Result<()>;

/// A store's shape, versioned in the file (`PRAGMA user_version`), so that
/// a file an older Toolgate wrote is brought forward at open, and one a
/// newer Toolgate wrote is refused rather than misread.
pub struct Schema {
    /// Its tables as version 1 had them (`CREATE TABLE IF NOT EXISTS`),
    /// made first at every open.
    pub tables: &'static [&'static str],
    /// `upgrades[i]` takes a file from version `i + 1` to `i + 2`; a new
    /// file goes through them all. Version 1 is also a file from before
    /// versions were recorded (`user_version` 0), which may already have
    /// some of what an upgrade adds: an upgrade checks before it changes.
    pub upgrades: &'static [Upgrade],
    /// Indexes (`IF NOT EXISTS`), made after the upgrades (they may need
    /// a column an upgrade adds).
    pub indexes: &'static [&'static str],
    /// Whether each commit waits for the disk (SQLite's `synchronous=FULL`).
    /// Otherwise (`NORMAL`, in WAL mode; FULL where the file cannot be in
    /// WAL mode) a commit survives the process crashing but the last ones
    /// may be lost if the machine does: no fsync per commit, which was ~1
    /// ms of every session call.
    pub sync_each_commit: bool,
}

impl Schema {
    /// The version this build writes.
    pub const fn version(&self) -> u32 {
        1 + self.upgrades.len() as u32
    }

    /// Brings `conn`'s file to [`Schema::version`], in one transaction.
    fn apply(&self, conn: &mut Connection) -> Result<(), String> {
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| e.to_string())?;
        let found: u32 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| e.to_string())?;
        let latest = self.version();
        if found > latest {
            return Err(format!(
                "it was written by a newer Toolgate (schema version {found}; this one reads up \
                 to {latest}): run that version, or give this one another data folder"
            ));
        }
        let step = |e: rusqlite::Error| e.to_string();
        for t in self.tables {
            tx.execute_batch(t).map_err(step)?;
        }
        let from = found.max(1) as usize - 1;
        for (i, up) in self.upgrades.iter().enumerate().skip(from) {
            up(&tx).map_err(|e| format!("upgrading it to schema version {}: {e}", i + 2))?;
        }
        for ix in self.indexes {
            tx.execute_batch(ix).map_err(step)?;
        }
        tx.pragma_update(None, "user_version", latest)
            .map_err(step)?;
        tx.commit().map_err(step)
    }
}

impl SqliteFile {
    /// Opens (creating) the file and its folder, and brings it to
    /// `schema`'s version; all private (see the module).
    pub fn open(path: &Path, schema: &Schema) -> Result<Self, String> {
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
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        // NORMAL is safe only in WAL mode, which a file system may refuse
        // (SQLite then keeps its rollback journal): FULL there.
        let wal = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))
            .map_err(|e| format!("{}: {e}", path.display()))?
            .eq_ignore_ascii_case("wal");
        let synchronous = if schema.sync_each_commit || !wal {
            "FULL"
        } else {
            "NORMAL"
        };
        conn.pragma_update(None, "synchronous", synchronous)
            .and_then(|_| conn.busy_timeout(std::time::Duration::from_secs(5)))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        schema
            .apply(&mut conn)
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
fn store_files(path: &Path) -> [PathBuf; 4] {
    [
        path.to_path_buf(),
        beside(path, "-wal"),
        beside(path, "-shm"),
        beside(path, KEY_SUFFIX),
    ]
}

/// The file named as the database with `suffix` added.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// The key file's suffix ([`private_key_file`]): kept, checked and made
/// private with the database's own files.
const KEY_SUFFIX: &str = "-mcp.key";

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

/// The secret kept beside the SQLite database `db` (`{db}-mcp.key`,
/// owner-only), made once with 32 random bytes (hex): every process on that
/// database reads the same one. It is made whole before it appears (written
/// under a name of its own, then linked), so a reader never sees half of
/// one, and of two processes making it at once, the first link wins. Never
/// read through a symlink, nor from a file another user owns.
pub fn private_key_file(db: &Path) -> Result<Vec<u8>, String> {
    use std::io::{Read, Write};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let path = beside(db, KEY_SUFFIX);
    let shown = path.display();
    let read = || -> Result<Vec<u8>, String> {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| format!("{shown}: {e}"))?;
        let meta = f.metadata().map_err(|e| format!("{shown}: {e}"))?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        if !meta.is_file() || meta.uid() != unsafe { libc::geteuid() } {
            return Err(format!(
                "{shown} is not a plain file of this user's: refusing it as the MCP state key"
            ));
        }
        let mut key = Vec::new();
        f.read_to_end(&mut key)
            .map_err(|e| format!("{shown}: {e}"))?;
        Ok(key)
    };
    if path.exists() {
        return read();
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness: {e}"))?;
    let fresh = crate::approvals::hex(&bytes);
    let tmp = beside(&path, &format!(".{}", std::process::id()));
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(&tmp)
        .and_then(|mut f| f.write_all(fresh.as_bytes()).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::hard_link(&tmp, &path));
    let _ = std::fs::remove_file(&tmp);
    match made {
        Ok(()) => Ok(fresh.into_bytes()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(),
        Err(e) => Err(format!("{shown}: {e}")),
    }
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

    const TEST_SCHEMA: Schema = Schema {
        tables: &["CREATE TABLE IF NOT EXISTS t (x);"],
        upgrades: &[],
        indexes: &[],
        sync_each_commit: true,
    };

    /// Version 1 had `t (x)`; version 2 added `y`, indexed.
    const GROWN: Schema = Schema {
        tables: &["CREATE TABLE IF NOT EXISTS t (x);"],
        upgrades: &[|c| c.execute_batch("ALTER TABLE t ADD COLUMN y")],
        indexes: &["CREATE INDEX IF NOT EXISTS t_y ON t (y);"],
        sync_each_commit: false,
    };

    #[test]
    fn a_file_an_older_toolgate_wrote_is_brought_forward_and_a_newer_ones_refused() {
        let root = std::env::temp_dir().join(format!("tg-sqlite-schema-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let db = root.join("s.sqlite3");
        // Written before versions: user_version 0, no `y`, one row.
        drop(SqliteFile::open(&db, &TEST_SCHEMA).unwrap());
        {
            let c = Connection::open(&db).unwrap();
            c.pragma_update(None, "user_version", 0).unwrap();
            c.execute("INSERT INTO t (x) VALUES (7)", []).unwrap();
        }
        drop(SqliteFile::open(&db, &GROWN).unwrap());
        let c = Connection::open(&db).unwrap();
        let v: u32 = c
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 2);
        let (x, y): (i64, Option<i64>) = c
            .query_row("SELECT x, y FROM t", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!((x, y), (7, None), "the row is kept");
        // Opening again changes nothing; a fresh file is made at once.
        drop(SqliteFile::open(&db, &GROWN).unwrap());
        let fresh = root.join("fresh.sqlite3");
        drop(SqliteFile::open(&fresh, &GROWN).unwrap());
        let v: u32 = Connection::open(&fresh)
            .unwrap()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 2);
        // A newer Toolgate's file is left as it is.
        c.pragma_update(None, "user_version", 9).unwrap();
        let e = SqliteFile::open(&db, &GROWN).err().unwrap();
        assert!(
            e.ends_with(
                "it was written by a newer Toolgate (schema version 9; this one reads up to 2): \
                 run that version, or give this one another data folder"
            ),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn commits_wait_for_the_disk_only_where_the_schema_asks() {
        let root = std::env::temp_dir().join(format!("tg-sqlite-sync-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // SQLite's numbers: 1 is NORMAL, 2 is FULL.
        for (schema, want) in [(&TEST_SCHEMA, 2), (&GROWN, 1)] {
            let f = SqliteFile::open(&root.join(format!("{want}.sqlite3")), schema).unwrap();
            let got: i64 = f
                .conn
                .lock()
                .unwrap()
                .pragma_query_value(None, "synchronous", |r| r.get(0))
                .unwrap();
            assert_eq!(got, want);
        }
        let _ = std::fs::remove_dir_all(&root);
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn folders_and_files_are_the_owners_only_even_when_found_looser() {
        let root = std::env::temp_dir().join(format!("tg-sqlite-private-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let db = root.join("a/b/store.sqlite3");
        let f = SqliteFile::open(&db, &TEST_SCHEMA).unwrap();
        private_key_file(&db).unwrap();
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
        let _f = SqliteFile::open(&db, &TEST_SCHEMA).unwrap();
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
        let e = SqliteFile::open(&db, &TEST_SCHEMA).err().unwrap();
        assert!(e.contains("not a plain file"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
        // A -wal planted as a symlink beside a store of ours.
        let db = root.join("wal.sqlite3");
        std::os::unix::fs::symlink(&victim, root.join("wal.sqlite3-wal")).unwrap();
        let e = SqliteFile::open(&db, &TEST_SCHEMA).err().unwrap();
        assert!(e.contains("-wal is not a plain file"), "{e}");
        // A file of another user's (the tests run as root where they can
        // give one away; elsewhere this case cannot be set up).
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            let theirs = root.join("theirs.sqlite3");
            std::fs::write(&theirs, b"").unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            let e = SqliteFile::open(&theirs, &TEST_SCHEMA).err().unwrap();
            assert!(e.contains("belongs to another user"), "{e}");
        }
        // A folder others may write into, not sticky.
        let open = root.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, Permissions::from_mode(0o777)).unwrap();
        let e = SqliteFile::open(&open.join("s.sqlite3"), &TEST_SCHEMA)
            .err()
            .unwrap();
        assert!(e.contains("others may write into it"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
