//! The host: telemetry, cleanup, layer, serve, shutdown, in that order.

use std::{future::Future, net::SocketAddr, path::PathBuf};

use lro_core::OffloadConfig;
use lro_scheduler::OffloadCleanup;
use lro_telemetry::{Telemetry, TelemetryBuilder, TelemetryGuard};
use lro_tower::LroLayer;

use crate::{HostError, Shutdown};

/// Builds a [`Host`]; [`Host::builder`] makes one.
#[derive(Debug)]
#[must_use]
pub struct HostBuilder {
    telemetry: TelemetryBuilder,
    name: String,
    shutdown: Option<Shutdown>,
}

impl HostBuilder {
    /// The name the host's lines on stderr start with. Defaults to the
    /// service name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The default log filter, used when `RUST_LOG` is unset. Defaults to
    /// `info`.
    pub fn log_filter(mut self, directives: impl Into<String>) -> Self {
        self.telemetry = self.telemetry.log_filter(directives);
        self
    }

    /// Serve Prometheus metrics at `http://ADDR/metrics`. Defaults to
    /// `None`: the recorder is installed, but nothing listens.
    pub fn metrics_addr(mut self, addr: Option<SocketAddr>) -> Self {
        self.telemetry = self.telemetry.metrics_addr(addr);
        self
    }

    /// What the serve step stops on. Defaults to [`Shutdown::signal`]
    /// (ctrl-c or SIGTERM).
    pub fn shutdown(mut self, shutdown: impl Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown = Some(Shutdown::new(shutdown));
        self
    }

    /// Installs telemetry (once per process) and, when a metrics address is
    /// set, prints `NAME metrics on http://ADDR/metrics` on stderr.
    ///
    /// # Errors
    ///
    /// [`HostError::Telemetry`].
    pub fn install(self) -> Result<Host, HostError> {
        let telemetry = self.telemetry.install().map_err(HostError::Telemetry)?;
        if let Some(addr) = telemetry.metrics_addr() {
            // Printed directly, so RUST_LOG cannot hide it.
            eprintln!("{} metrics on http://{addr}/metrics", self.name);
        }
        Ok(Host {
            telemetry,
            shutdown: self.shutdown.unwrap_or_else(Shutdown::signal),
        })
    }
}

/// What the layer offloads with: the `[prompt.offload]` configuration and
/// the roots of the context tools.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Offload {
    cfg: OffloadConfig,
    context_store_roots: Vec<PathBuf>,
}

impl Offload {
    /// Offloading and cleanup as `cfg` says.
    pub fn new(cfg: OffloadConfig) -> Self {
        Self {
            cfg,
            context_store_roots: Vec::new(),
        }
    }

    /// Adds the context-offload tools (`context_offload`, `context_grep`,
    /// `context_read_file`), confined to these roots, each created when
    /// missing. Defaults to none: no context tools.
    #[must_use]
    pub fn context_store_roots(mut self, roots: impl IntoIterator<Item = PathBuf>) -> Self {
        self.context_store_roots = roots.into_iter().collect();
        self
    }
}

/// An LRO server's host, with its telemetry installed. Made by
/// [`HostBuilder::install`]; dropping it without [`Host::run`] drops the
/// telemetry guard, which flushes spans.
#[derive(Debug)]
pub struct Host {
    telemetry: TelemetryGuard,
    shutdown: Shutdown,
}

impl Host {
    /// A host whose traces carry `service.name` = `service_name`, and which
    /// reports conformance level 3 in `lro_build_info`.
    pub fn builder(service_name: impl Into<String>) -> HostBuilder {
        let name = service_name.into();
        HostBuilder {
            telemetry: Telemetry::builder()
                .service_name(name.clone())
                .conformance_level(3),
            name,
            shutdown: None,
        }
    }

    /// Starts the `offload_cleanup` task, builds the layer, and runs
    /// `serve` with it and the shutdown future; then stops the cleanup task
    /// and shuts telemetry down. `serve` wraps its handler in the layer and
    /// returns when the shutdown future resolves (or its session ends); its
    /// result is returned.
    ///
    /// # Errors
    ///
    /// [`HostError::Store`], [`HostError::Cleanup`] or
    /// [`HostError::ContextStoreRoots`] before
    /// serving, converted to `E`; otherwise what `serve` returns.
    pub async fn run<T, E, S, Fut>(self, offload: Offload, serve: S) -> Result<T, E>
    where
        E: From<HostError>,
        S: FnOnce(LroLayer, Shutdown) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        // One store for the layer and the cleaner, when results are shared.
        let store =
            lro_store::from_config(&offload.cfg).map_err(|e| HostError::Store(Box::new(e)))?;
        let mut cleanup = OffloadCleanup::from_config(&offload.cfg);
        if let Some(store) = &store {
            cleanup = cleanup.store(store.clone());
        }
        // Kept alive while serving: dropping the handle stops the schedule.
        let cleanup = cleanup.start().await.map_err(HostError::Cleanup)?;
        let key = folder_key(&offload.cfg, store.as_deref()).await?;
        let mut layer = LroLayer::new(offload.cfg).principal_key(key);
        if let Some(store) = store {
            layer = layer.store(store);
        }
        if !offload.context_store_roots.is_empty() {
            let roots = lro_context::Roots::new(&offload.context_store_roots)
                .map_err(HostError::ContextStoreRoots)?;
            layer = layer.context_tools(lro_context::ContextOffloader::from_env().roots(roots));
        }
        let served = serve(layer, self.shutdown).await;
        if let Err(err) = cleanup.shutdown().await {
            tracing::warn!(err = %lro_core::error::chain(&err), "offload_cleanup did not stop cleanly");
        }
        shutdown_telemetry(self.telemetry).await;
        served
    }

    /// Runs `serve` with the shutdown future only: no layer, no cleanup
    /// task (a bare server, for comparisons). Then shuts telemetry down.
    ///
    /// # Errors
    ///
    /// What `serve` returns.
    pub async fn run_bare<T, E, S, Fut>(self, serve: S) -> Result<T, E>
    where
        S: FnOnce(Shutdown) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let served = serve(self.shutdown).await;
        shutdown_telemetry(self.telemetry).await;
        served
    }
}

/// Flushes spans off the async workers: it blocks on the exporter.
async fn shutdown_telemetry(telemetry: TelemetryGuard) {
    let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
}

/// The key principal folders are named with: `cfg`'s `principal_key_file`,
/// else `store`'s own (made by the first replica; when the store fails at
/// start, this replica's own until it restarts), else the one kept in the
/// output directory (made on the first authenticated call). [`Host::run`]
/// gives it to the layer; a face without the layer (`lro context serve`) calls it itself.
///
/// # Errors
///
/// [`HostError::PrincipalKey`] when it cannot be read or made.
pub async fn folder_key(
    cfg: &lro_core::OffloadConfig,
    store: Option<&dyn lro_store::Store>,
) -> Result<lro_core::principal::FolderKey, HostError> {
    use lro_core::principal::FolderKey;
    let key_error = |e: Box<dyn std::error::Error + Send + Sync>| HostError::PrincipalKey(e);
    match (&cfg.principal_key_file, store) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path).map_err(|e| key_error(e.into()))?;
            FolderKey::new(&text).ok_or_else(|| key_error("the principal key file is empty".into()))
        }
        (None, Some(store)) => match lro_store::folder_key::shared(store).await {
            Ok(key) => Ok(key),
            // A store that fails now must not keep the server from starting:
            // offloads fall back to truncation until it answers, as ever.
            // Folders are then this replica's own until it restarts.
            Err(err) => {
                let kind = match &err {
                    lro_store::folder_key::FolderKeyError::Store(e) => e.kind().as_str(),
                    _ => "other",
                };
                tracing::warn!(
                    kind,
                    "the offload store gave no principal key; until restarted, this replica names \
                     folders with its own (set principal_key_file to share one)"
                );
                Ok(lro_store::folder_key::kept_in(
                    lro_store::resolved_output_dir(cfg),
                ))
            }
        },
        // Made on the first authenticated call: a stdio server leaves none.
        (None, None) => Ok(lro_store::folder_key::kept_in(
            lro_store::resolved_output_dir(cfg),
        )),
    }
}
