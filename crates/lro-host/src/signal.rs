//! When a host stops: ctrl-c or SIGTERM (what container runtimes send).

use std::{
    fmt,
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

/// The future a host's serve step stops on. [`Shutdown::signal`] (the
/// default) resolves on ctrl-c or SIGTERM.
pub struct Shutdown(Pin<Box<dyn Future<Output = ()> + Send>>);

impl Shutdown {
    /// Resolves on ctrl-c or SIGTERM; see [`shutdown_signal`].
    pub fn signal() -> Self {
        Self::new(shutdown_signal())
    }

    /// Resolves when `future` does (a test's trigger, an admin endpoint).
    pub fn new(future: impl Future<Output = ()> + Send + 'static) -> Self {
        Self(Box::pin(future))
    }
}

impl Future for Shutdown {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Shutdown")
    }
}

/// Resolves on ctrl-c, or SIGTERM on Unix. The handlers are installed on
/// the first poll. A handler that cannot be installed is logged and never
/// fires, so a missing handler never stops the server.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::warn!(err = %lro_core::error::chain(&err), "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sig) => {
                sig.recv().await;
            }
            Err(err) => {
                tracing::warn!(err = %lro_core::error::chain(&err), "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_shutdown_resolves_with_its_future() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let shutdown = Shutdown::new(async move {
            let _ = rx.await;
        });
        tx.send(()).unwrap();
        shutdown.await;
    }
}
