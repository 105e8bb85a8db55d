//! A request body's deadline: all of it within `total`, no gap longer
//! than `idle`.

use super::*;

/// A request body that must arrive within `total`, with no gap longer than
/// `idle`; past either it ends in [`BodyTimeout`]. The clocks start when
/// the body is first waited for: a body already read costs nothing.
pub(super) struct Deadline {
    inner: Incoming,
    idle: Duration,
    total: Duration,
    clocks: Option<Clocks>,
}

struct Clocks {
    idle: Pin<Box<Sleep>>,
    total: Pin<Box<Sleep>>,
}

impl Deadline {
    pub(super) fn new(inner: Incoming, idle: Duration, total: Duration) -> Self {
        Self {
            inner,
            idle,
            total,
            clocks: None,
        }
    }
}

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            if let Some(c) = &mut this.clocks {
                c.idle.as_mut().reset(Instant::now() + this.idle);
            }
            return Poll::Ready(frame.map(|r| r.map_err(Into::into)));
        }
        let (idle, total) = (this.idle, this.total);
        let clocks = this.clocks.get_or_insert_with(|| Clocks {
            idle: Box::pin(tokio::time::sleep(idle)),
            total: Box::pin(tokio::time::sleep(total)),
        });
        let late = if clocks.total.as_mut().poll(cx).is_ready() {
            BodyTimeout {
                after: total,
                stalled: false,
            }
        } else if clocks.idle.as_mut().poll(cx).is_ready() {
            BodyTimeout {
                after: idle,
                stalled: true,
            }
        } else {
            return Poll::Pending;
        };
        Poll::Ready(Some(Err(Box::new(late))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
