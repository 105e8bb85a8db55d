//! Records other than sessions in the sessions' store: code mode's
//! journals (a script waiting for a person). The same table, owner,
//! expiry, quotas and leases as a session; an id of their own shape
//! ([`RECORD_PREFIX`]), so that neither passes for the other.

use std::time::Duration;

use super::{Held, Lease, Sessions, hold_for, store_error};
use crate::error::{ErrorCode, ToolError};
use crate::files::Files;
use crate::sessions::Claim;

/// What a record's id starts with; a session's is 40 hex digits alone.
pub const RECORD_PREFIX: &str = "resume_";

/// A new record id: the prefix and 160 random bits.
pub fn new_record_id() -> Result<String, ToolError> {
    Ok(format!("{RECORD_PREFIX}{}", crate::clarify::new_id()?))
}

/// Whether `id` is one a record could have.
pub fn valid_record_id(id: &str) -> bool {
    id.strip_prefix(RECORD_PREFIX)
        .is_some_and(crate::clarify::valid_id)
}

impl Sessions {
    /// Keeps `bytes` as the new record `id` of `owner`, until `ttl` from
    /// now. Counted as a session by the quotas.
    pub async fn put_record(
        &self,
        id: &str,
        owner: &str,
        bytes: &[u8],
        ttl: Duration,
    ) -> Result<(), ToolError> {
        self.fits_row(bytes)?;
        let token = crate::clarify::new_id()?;
        let now = crate::clock::unix_ms();
        self.admit_new(owner, now).await?;
        let lease = Lease {
            token: token.clone(),
            until: now + hold_for(Duration::ZERO).as_millis() as i64,
        };
        let until = now + ttl.as_millis() as i64;
        self.store
            .create(id, owner, &lease, until)
            .await
            .map_err(store_error)?;
        self.put_back(id, &token, bytes, until).await
    }

    /// Takes record `id` of `owner` for a call of at most `timeout`;
    /// refused at once while another call holds it. `what` names it in
    /// the refusals.
    pub async fn take_record(
        &self,
        id: &str,
        owner: &str,
        timeout: Duration,
        what: &str,
    ) -> Result<Held, ToolError> {
        let shown = crate::files::shown(id);
        if !valid_record_id(id) {
            return Err(ToolError::new(
                ErrorCode::NotFound,
                format!("No {what} {shown}"),
            ));
        }
        let token = crate::clarify::new_id()?;
        let now = crate::clock::unix_ms();
        let lease = Lease {
            token: token.clone(),
            until: now + hold_for(timeout).as_millis() as i64,
        };
        match self
            .store
            .claim(id, owner, &lease, now)
            .await
            .map_err(store_error)?
        {
            Claim::Held(record) => Ok(Held {
                id: id.to_owned(),
                record,
                token,
            }),
            Claim::NotFound => Err(ToolError::new(
                ErrorCode::NotFound,
                format!("No {what} {shown}"),
            )),
            Claim::Expired => Err(ToolError::new(
                ErrorCode::Expired,
                format!("{what} {shown} has been used or has expired"),
            )),
            Claim::Busy => Err(ToolError::new(
                ErrorCode::Conflict,
                format!("{what} {shown} is in use by another call"),
            )),
        }
    }

    /// Runs `work` while holding `held`, its hold renewed as a session
    /// call's is.
    pub async fn holding_record<T>(
        &self,
        held: &Held,
        timeout: Duration,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        self.holding(held, timeout, work).await
    }

    /// Gives a taken record back with `bytes`, until `ttl` from now (on
    /// an error, [`Sessions::abandon`] gives it back unchanged).
    pub async fn keep_record(
        &self,
        held: &Held,
        bytes: &[u8],
        ttl: Duration,
    ) -> Result<(), ToolError> {
        self.fits_row(bytes)?;
        let until = crate::clock::unix_ms() + ttl.as_millis() as i64;
        self.put_back(&held.id, &held.token, bytes, until).await
    }

    /// Ends a taken record: it reads as used (expired), then is forgotten.
    pub async fn spend_record(&self, held: &Held) -> Result<(), ToolError> {
        let now = crate::clock::unix_ms();
        self.put_back(&held.id, &held.token, &[], now).await
    }

    async fn put_back(
        &self,
        id: &str,
        token: &str,
        bytes: &[u8],
        until: i64,
    ) -> Result<(), ToolError> {
        let kept = self
            .store
            .save(id, token, bytes, &Files::new(), until)
            .await
            .map_err(store_error)?;
        if kept {
            Ok(())
        } else {
            Err(ToolError::internal(format!(
                "{} was taken over while this call ran (it outlived its hold)",
                crate::files::shown(id)
            )))
        }
    }

    /// A record past what the store's row holds is refused before it is
    /// written.
    fn fits_row(&self, bytes: &[u8]) -> Result<(), ToolError> {
        match self.row_limit {
            Some(limit) if bytes.len() > limit => Err(ToolError::new(
                ErrorCode::TooLarge,
                format!(
                    "{} bytes to keep, over the {limit} a record holds here",
                    bytes.len()
                ),
            )),
            _ => Ok(()),
        }
    }
}
