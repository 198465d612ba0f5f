//! The HTTP connection layer of `vigie serve`: header-read and idle timeouts, a cap on connections, a body-read timeout, graceful shutdown.
//!
//! `axum::serve` sets no timeout on reading a request: 50 half-sent requests
//! stayed open for minutes and 20,000 of them starved every other client
//! (slowloris). Here every connection is served by hyper with a timer:
//!
//! * a request's headers must arrive within [`HttpLimits::header_timeout`]
//!   of the connection's start, or of the end of the previous response on a
//!   kept-alive connection (which also bounds idle connections);
//! * a request body may pause at most [`HttpLimits::body_idle_timeout`]
//!   between two chunks;
//! * at most [`HttpLimits::max_connections`] connections are open. When all
//!   slots are taken, a new connection takes the slot of the oldest connection
//!   that has not yet sent a complete request (an attacker's half-sent
//!   requests make room for real clients instead of locking them out); when
//!   every open connection has sent a request, the new one is closed at once.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use futures::Stream;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{oneshot, watch};
use tower_service::Service;

/// Limits of the HTTP connection layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Time allowed for a request's headers, counted from the connection's start or the previous response.
    pub header_timeout: Duration,
    /// Longest pause allowed between two chunks of a request body.
    pub body_idle_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: Duration::from_secs(10),
            body_idle_timeout: Duration::from_secs(10),
            max_connections: 1024,
        }
    }
}

/// The open connections: how many, and which have not completed a request yet (oldest first).
struct Slots {
    max: usize,
    inner: Mutex<SlotsInner>,
    open: AtomicUsize,
}

#[derive(Default)]
struct SlotsInner {
    next_id: u64,
    /// Connections without a complete request yet, by arrival: closing one evicts it.
    waiting: BTreeMap<u64, oneshot::Sender<()>>,
}

/// One connection's slot, released when dropped.
struct Slot {
    id: u64,
    slots: Arc<Slots>,
    evicted: Option<oneshot::Receiver<()>>,
}

impl Slots {
    fn new(max: usize) -> Arc<Slots> {
        Arc::new(Slots {
            max: max.max(1),
            inner: Mutex::new(SlotsInner::default()),
            open: AtomicUsize::new(0),
        })
    }

    /// A slot for a new connection, evicting the oldest waiting connection when all are taken;
    /// `None` when every open connection has sent a request.
    fn admit(self: &Arc<Slots>) -> Option<Slot> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if self.open.load(Ordering::SeqCst) >= self.max {
            let oldest = inner.waiting.keys().next().copied()?;
            if let Some(evict) = inner.waiting.remove(&oldest) {
                let _ = evict.send(());
            }
            // The evicted connection's slot is released when its task ends; the new one takes it now.
        }
        self.open.fetch_add(1, Ordering::SeqCst);
        let id = inner.next_id;
        inner.next_id += 1;
        let (tx, rx) = oneshot::channel();
        inner.waiting.insert(id, tx);
        Some(Slot {
            id,
            slots: Arc::clone(self),
            evicted: Some(rx),
        })
    }

    fn started(&self, id: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.waiting.remove(&id);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.started(self.id);
        self.slots.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves `app` on a bound listener until `shutdown` completes, then lets the requests under
/// way finish (for at most 10 s).
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = app.layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            let req = req.map(|b| {
                Body::from_stream(IdleBody {
                    inner: b.into_data_stream(),
                    idle: limits.body_idle_timeout,
                    timer: None,
                })
            });
            next.run(req)
        },
    ));
    let slots = Slots::new(limits.max_connections);
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let builder = Arc::new(builder);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            a = listener.accept() => a,
        };
        let (stream, remote) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: wait a little instead of spinning.
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(mut slot) = slots.admit() else {
            tracing::debug!(%remote, "connection refused: every slot serves a request");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let builder = Arc::clone(&builder);
        let mut stop = stop_rx.clone();
        let slots_for_conn = Arc::clone(&slots);
        tokio::spawn(async move {
            let id = slot.id;
            let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
                slots_for_conn.started(id);
                req.extensions_mut().insert(ConnectInfo(remote));
                let mut app = app.clone();
                async move { app.call(req.map(Body::new)).await }
            });
            let conn = builder
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            let mut conn = std::pin::pin!(conn);
            let evicted = slot.evicted.take();
            let evicted = async move {
                match evicted {
                    Some(rx) => {
                        if rx.await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = evicted => {
                    tracing::debug!(%remote, "connection without a request closed to make room");
                }
                _ = async { let _ = stop.wait_for(|s| *s).await; } => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(10), conn).await;
                }
            }
            drop(slot);
        });
    }
    let _ = stop_tx.send(true);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while slots.open.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// A request body that fails when no chunk arrives for `idle`.
struct IdleBody<S> {
    inner: S,
    idle: Duration,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> Stream for IdleBody<S>
where
    S: Stream<Item = Result<Bytes, axum::Error>> + Unpin,
{
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(item) => {
                this.timer = None;
                Poll::Ready(item.map(|r| r.map_err(std::io::Error::other)))
            }
            Poll::Pending => {
                let idle = this.idle;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("the request body paused for more than {idle:?}"),
                    )))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_house_evicts_the_oldest_connection_without_a_request() {
        let slots = Slots::new(2);
        let mut a = slots.admit().expect("first");
        let b = slots.admit().expect("second");
        slots.started(b.id);
        // Full: the third takes the slot of `a`, which never sent a request.
        let c = slots.admit().expect("third evicts a");
        let mut evicted = a.evicted.take().expect("receiver");
        assert!(evicted.try_recv().is_ok(), "a was told to close");
        drop(a);
        slots.started(c.id);
        // Full again, and both open connections have sent a request: the next is refused.
        assert!(slots.admit().is_none());
        drop(b);
        assert!(slots.admit().is_some());
    }
}
