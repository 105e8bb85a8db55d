//! Where clarifications live: one trait, an implementation per runtime.
//! `settle` is the one write that races (two answers, an answer and the
//! expiry): it must succeed for exactly one caller, atomically.

use std::future::Future;
use std::pin::Pin;

use super::{Clarification, Status};

pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// How a pending clarification ends.
#[derive(Clone, Debug)]
pub struct Settlement {
    pub status: Status,
    pub answer: Option<String>,
    pub choice: Option<usize>,
    /// Unix milliseconds; an answer or cancel only wins before the expiry.
    pub at: i64,
}

pub trait ClarifyStore: Send + Sync {
    fn insert<'a>(&'a self, c: &'a Clarification) -> StoreFuture<'a, ()>;
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Clarification>>;
    /// Moves a clarification from `pending` to `s.status`, only if it is
    /// still pending and (unless `s` is the expiry) not yet expired.
    /// Returns whether this call made the change.
    fn settle<'a>(&'a self, id: &'a str, s: &'a Settlement) -> StoreFuture<'a, bool>;
    /// Pending clarifications with a task token whose expiry has passed.
    fn expired_pending(&self, now: i64) -> StoreFuture<'_, Vec<Clarification>>;
}
