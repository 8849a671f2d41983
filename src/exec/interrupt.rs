//! Ctrl-C and SIGTERM, each of which may arrive more than once.

/// The signals a run listens to; from creation on they no longer kill the process.
pub struct Interrupt {
    #[cfg(unix)]
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Interrupt {
    /// Starts listening.
    pub fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Interrupt {
                signals: signal(SignalKind::interrupt())
                    .and_then(|i| Ok((i, signal(SignalKind::terminate())?)))
                    .ok(),
            }
        }
        #[cfg(not(unix))]
        Interrupt {}
    }

    /// Returns when the next signal arrives.
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        match &mut self.signals {
            Some((int, term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            None => std::future::pending().await,
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Default for Interrupt {
    fn default() -> Self {
        Self::new()
    }
}
