//! The local session store: one SQLite file under the data folder, so
//! sessions outlive a restart. The lease is one conditional `UPDATE`.

use std::path::Path;

use rusqlite::{OptionalExtension, params};

use super::store::{Claim, Lease, Record, SessionStore, StoreFuture, sql};
use crate::files::Files;

/// Expired sessions answer `expired` for a day, then are forgotten.
const FORGET_AFTER_MS: i64 = 86_400_000;

/// The local [`SessionStore`].
pub struct SqliteSessions {
    db: crate::sqlite_file::SqliteFile,
}

impl SqliteSessions {
    /// Opens (creating) the database file and its folder.
    pub fn open(path: &Path) -> Result<Self, String> {
        Ok(Self {
            db: crate::sqlite_file::SqliteFile::open(path, sql::SCHEMA)?,
        })
    }
}

fn files_json(files: &Files) -> String {
    serde_json::to_string(&crate::files::to_wire(files)).unwrap_or_else(|_| "{}".into())
}

fn files_from(text: &str) -> Files {
    serde_json::from_str(text)
        .ok()
        .and_then(|w| crate::files::from_wire(w, u64::MAX).ok())
        .unwrap_or_default()
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
                return Ok(Claim::Held(Record {
                    state,
                    files: files_from(&files),
                }));
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
        Box::pin(self.db.with(move |c| {
            c.execute(sql::SAVE, params![id, token, state, files, expires_at])
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
}
