//! The local session store: one SQLite file under the data folder, so
//! sessions outlive a restart. The lease is one conditional `UPDATE`.

use std::path::Path;

use rusqlite::{OptionalExtension, params};

use super::store::{Claim, FORGET_AFTER_MS, Lease, Record, SessionStore, StoreFuture, Usage, sql};
use crate::files::Files;

/// The local [`SessionStore`].
pub struct SqliteSessions {
    db: crate::sqlite_file::SqliteFile,
}

impl SqliteSessions {
    /// Opens (creating) the database file and its folder.
    pub fn open(path: &Path) -> Result<Self, String> {
        let db = crate::sqlite_file::SqliteFile::open(path, &SCHEMA)?;
        Ok(Self { db })
    }
}

/// The store's shape by version (`sqlite_file::Schema`): 2 added the
/// `bytes` column the quotas count with, and its indexes.
pub const SCHEMA: crate::sqlite_file::Schema = crate::sqlite_file::Schema {
    tables: &[sql::SCHEMA],
    upgrades: &[add_bytes],
    indexes: &[sql::USAGE_INDEXES],
    // A machine crash may take back a session's last calls (a process
    // crash loses nothing): every session call commits twice (its lease,
    // its state), and a disk flush each was most of what a session cost.
    sync_each_commit: false,
};

/// A file written before sessions counted their bytes gains the column
/// (some such files have it: it came before versions did).
fn add_bytes(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let has: bool = conn.query_row(
        "SELECT count(*) FROM pragma_table_info('sessions') WHERE name = 'bytes'",
        [],
        |r| r.get(0),
    )?;
    if !has {
        conn.execute_batch(sql::ADD_BYTES)?;
    }
    Ok(())
}

fn files_json(files: &Files) -> String {
    serde_json::to_string(&crate::files::to_wire(files)).unwrap_or_else(|_| "{}".into())
}

/// The stored files, decoded only ([`crate::files::decode_wire`]); a
/// column that does not decode is the store's error, never "no files".
fn files_from(text: &str) -> Result<Files, String> {
    serde_json::from_str(text)
        .map_err(|e| e.to_string())
        .and_then(crate::files::decode_wire)
        .map_err(|e| format!("a stored session's files are unreadable: {e}"))
}

/// A failure of ours inside a SQLite call, in rusqlite's error type.
fn unreadable(e: String) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(e.into())
}

impl SessionStore for SqliteSessions {
    fn create<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        lease: &'a Lease,
        expires_at: i64,
    ) -> StoreFuture<'a, ()> {
        let (id, owner, lease) = (id.to_owned(), owner.to_owned(), lease.clone());
        let now = crate::clock::unix_ms();
        Box::pin(self.db.with(move |c| {
            c.execute(sql::PURGE, params![now - FORGET_AFTER_MS])?;
            c.execute(
                sql::CREATE,
                params![id, owner, lease.token, lease.until, now, expires_at],
            )
            .map(drop)
        }))
    }

    fn claim<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        lease: &'a Lease,
        now: i64,
    ) -> StoreFuture<'a, Claim> {
        let (id, owner, lease) = (id.to_owned(), owner.to_owned(), lease.clone());
        Box::pin(self.db.with(move |c| {
            if c.execute(
                sql::CLAIM,
                params![id, owner, lease.token, lease.until, now],
            )? == 1
            {
                let (state, files): (Vec<u8>, String) =
                    c.query_row(sql::HELD, params![id, lease.token], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })?;
                let files = match files_from(&files) {
                    Ok(f) => f,
                    Err(e) => {
                        // Not left held until the lease runs out: the next
                        // call gets the same error at once, not "busy".
                        c.execute(sql::RELEASE, params![id, lease.token])?;
                        return Err(unreadable(e));
                    }
                };
                return Ok(Claim::Held(Record { state, files }));
            }
            let row: Option<(String, i64)> = c
                .query_row(sql::PEEK, params![id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            Ok(Claim::refused(
                row.as_ref().map(|(o, e)| (o.as_str(), *e)),
                &owner,
                now,
            ))
        }))
    }

    fn save<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        state: &'a [u8],
        files: &'a Files,
        expires_at: i64,
    ) -> StoreFuture<'a, bool> {
        let (id, token) = (id.to_owned(), token.to_owned());
        let (state, files) = (state.to_vec(), files_json(files));
        let bytes = (state.len() + files.len()) as i64;
        Box::pin(self.db.with(move |c| {
            c.execute(
                sql::SAVE,
                params![id, token, state, files, expires_at, bytes],
            )
            .map(|n| n == 1)
        }))
    }

    fn release<'a>(&'a self, id: &'a str, token: &'a str) -> StoreFuture<'a, ()> {
        let (id, token) = (id.to_owned(), token.to_owned());
        Box::pin(
            self.db
                .with(move |c| c.execute(sql::RELEASE, params![id, token]).map(drop)),
        )
    }

    fn extend<'a>(&'a self, id: &'a str, token: &'a str, until: i64) -> StoreFuture<'a, bool> {
        let (id, token) = (id.to_owned(), token.to_owned());
        Box::pin(self.db.with(move |c| {
            c.execute(sql::EXTEND, params![id, token, until])
                .map(|n| n == 1)
        }))
    }

    fn usage<'a>(&'a self, owner: &'a str, now: i64) -> StoreFuture<'a, Option<Usage>> {
        let owner = owner.to_owned();
        Box::pin(self.db.with(move |c| {
            let (sessions, bytes): (i64, i64) =
                c.query_row(sql::USAGE, params![owner, now], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
            let total: i64 = c.query_row(sql::TOTAL, params![now], |r| r.get(0))?;
            Ok(Some(Usage {
                sessions: sessions as u64,
                bytes: bytes as u64,
                total_bytes: total as u64,
            }))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(token: &str, until: i64) -> Lease {
        Lease {
            token: token.into(),
            until,
        }
    }

    #[tokio::test]
    async fn a_session_is_its_owners_and_one_calls_at_a_time() {
        let dir = std::env::temp_dir().join(format!("tg-sessions-unit-{}", std::process::id()));
        let s = SqliteSessions::open(&dir.join("s.sqlite3")).unwrap();
        let now = crate::clock::unix_ms();
        s.create("id1", "alice", &lease("t1", now + 60_000), now + 3_600_000)
            .await
            .unwrap();
        // Held by the creating call: another call waits.
        let busy = s
            .claim("id1", "alice", &lease("t2", now + 60_000), now)
            .await;
        assert!(matches!(busy, Ok(Claim::Busy)), "{busy:?}");
        // Another caller is told there is no such session, held or not.
        let other = s.claim("id1", "bob", &lease("t3", now + 60_000), now).await;
        assert!(matches!(other, Ok(Claim::NotFound)), "{other:?}");
        let files = Files::from([("a.txt".to_string(), b"a".to_vec())]);
        assert!(!s.save("id1", "wrong", b"x", &files, now + 1).await.unwrap());
        assert!(
            s.save("id1", "t1", b"state", &files, now + 3_600_000)
                .await
                .unwrap()
        );
        match s
            .claim("id1", "alice", &lease("t4", now + 60_000), now)
            .await
        {
            Ok(Claim::Held(r)) => assert_eq!(
                r,
                Record {
                    state: b"state".to_vec(),
                    files
                }
            ),
            other => panic!("{other:?}"),
        }
        // A hold past its end is free again (its server crashed).
        let later = now + 61_000;
        let again = s
            .claim("id1", "alice", &lease("t5", later + 60_000), later)
            .await;
        assert!(matches!(again, Ok(Claim::Held(_))), "{again:?}");
        let gone = s
            .claim("id1", "alice", &lease("t6", 0), now + 4_000_000)
            .await;
        assert!(matches!(gone, Ok(Claim::Expired)), "{gone:?}");
        let bob_gone = s
            .claim("id1", "bob", &lease("t7", 0), now + 4_000_000)
            .await;
        assert!(matches!(bob_gone, Ok(Claim::NotFound)), "{bob_gone:?}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn holds_move_usage_counts_and_damaged_files_are_an_error() {
        let dir = std::env::temp_dir().join(format!("tg-sessions-unit2-{}", std::process::id()));
        let path = dir.join("s.sqlite3");
        let s = SqliteSessions::open(&path).unwrap();
        let now = crate::clock::unix_ms();
        let day = now + 86_400_000;
        s.create("id1", "alice", &lease("t1", now + 1_000), day)
            .await
            .unwrap();
        // A renewed hold is still held past its first end.
        assert!(s.extend("id1", "t1", now + 60_000).await.unwrap());
        assert!(!s.extend("id1", "other", now + 60_000).await.unwrap());
        let busy = s.claim("id1", "alice", &lease("t2", 0), now + 2_000).await;
        assert!(matches!(busy, Ok(Claim::Busy)), "{busy:?}");
        let files = Files::from([("a".to_string(), b"abc".to_vec())]);
        assert!(s.save("id1", "t1", b"state", &files, day).await.unwrap());
        s.create("id2", "alice", &lease("t3", now), day)
            .await
            .unwrap();
        s.create("id3", "bob", &lease("t4", now), day)
            .await
            .unwrap();
        let u = s.usage("alice", now).await.unwrap().unwrap();
        let size = super::super::stored_size(b"state", &files);
        assert_eq!((u.sessions, u.bytes, u.total_bytes), (2, size, size));
        // Stored files that do not decode: an error, released at once.
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute(
                "UPDATE sessions SET files = '{\"a\": \"!!\"}' WHERE id = 'id1'",
                [],
            )
            .unwrap();
        for token in ["t5", "t6"] {
            let e = s
                .claim("id1", "alice", &lease(token, day), now)
                .await
                .unwrap_err();
            assert!(e.contains("files are unreadable"), "{e}");
        }
        // A file from before `bytes` gains the column on open.
        drop(s);
        let old = dir.join("old.sqlite3");
        let c = rusqlite::Connection::open(&old).unwrap();
        c.execute_batch(&sql::SCHEMA.replace(",\n    bytes INTEGER NOT NULL DEFAULT 0", ""))
            .unwrap();
        drop(c);
        let s = SqliteSessions::open(&old).unwrap();
        assert_eq!(s.usage("x", now).await.unwrap().unwrap().sessions, 0);
        let _ = std::fs::remove_dir_all(dir);
    }
}
