//! A call's cancellation: the task host holds the [`Canceller`], the call's
//! context a [`Cancel`] its tool may watch.

/// A call's cancellation, as its tool sees it: [`Cancel::cancelled`]
/// resolves once the caller cancelled the task it runs as.
#[derive(Debug, Clone)]
pub struct Cancel(tokio::sync::watch::Receiver<bool>);

/// Cancels the calls holding its [`Cancel`]s.
#[derive(Debug)]
pub struct Canceller(tokio::sync::watch::Sender<bool>);

/// A cancellation pair.
pub fn cancellation() -> (Canceller, Cancel) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    (Canceller(tx), Cancel(rx))
}

impl Canceller {
    /// Cancels.
    pub fn cancel(&self) {
        let _ = self.0.send(true);
    }
}

impl Cancel {
    /// Resolves once cancelled (never, if its canceller is gone unused).
    pub async fn cancelled(&mut self) {
        if self.0.wait_for(|c| *c).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancel_reaches_every_holder() {
        let (c, mut a) = cancellation();
        let b = a.clone();
        assert!(!b.is_cancelled());
        c.cancel();
        a.cancelled().await;
        assert!(b.is_cancelled());
    }
}
