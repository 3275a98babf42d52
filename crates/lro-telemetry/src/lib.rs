//! One call that gives an LRO binary its telemetry.
//!
//! Libraries (`lro-core`, `lro-tower`, `lro-scheduler`) only use the
//! `metrics` and `tracing` facades; a binary calls
//! [`Telemetry::builder`]`()…install()` once at start-up, which installs:
//!
//! - **Prometheus**: the `metrics-exporter-prometheus` recorder, with an HTTP
//!   listener serving the text exposition format when
//!   [`metrics_addr`](TelemetryBuilder::metrics_addr) is set. Every LRO
//!   metric is described (help text) and the alerting counters are
//!   registered at zero, so `increase()` sees the first failure. Durations
//!   and token sizes are real histograms with `_bucket` series
//!   (`lro_core::metric::DURATION_BUCKETS`, `TOKEN_BUCKETS`), never summaries.
//!   Names are printed exactly as `lro_core::metric` spells them: they already
//!   carry their unit and `_total`, so the exporter adds no suffix.
//!   `lro_build_info{version, conformance_level}` is set to 1.
//! - **Logs**: a `tracing-subscriber` formatter on **stderr** (stdout carries
//!   the MCP stdio transport), filtered by `RUST_LOG` (default `info`). The
//!   same filter decides which spans are exported, so keep MCP spans (`info`)
//!   enabled when traces matter.
//! - **Traces**, only when an OTLP endpoint is configured (in code or with the
//!   standard `OTEL_EXPORTER_OTLP_ENDPOINT` /
//!   `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): an OTLP/HTTP exporter
//!   (`http/protobuf`, or `http/json` per `OTEL_EXPORTER_OTLP_PROTOCOL`)
//!   bridged from `tracing` spans by `tracing-opentelemetry`, with
//!   `service.name` set. Point it at a collector's port 4318.
//!
//! Keep the returned [`TelemetryGuard`] alive for the life of the process:
//! dropping it flushes and shuts down the trace exporter.
//!
//! ```
//! use lro_telemetry::Telemetry;
//!
//! let telemetry = Telemetry::builder()
//!     .service_name("memory-server")
//!     .metrics_addr(None) // e.g. Some("127.0.0.1:9464".parse().unwrap())
//!     .conformance_level(3)
//!     .install()
//!     .expect("telemetry installs once per process");
//! tracing::info!("logs go to stderr");
//! let text = telemetry.render_metrics();
//! assert!(text.contains(r#"lro_offload_write_failures_total{reason="storage_full"} 0"#));
//! assert!(text.contains(r#"conformance_level="3""#));
//! telemetry.shutdown().unwrap();
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod otlp;
mod prometheus;

use std::{io::IsTerminal, net::SocketAddr};

pub use metrics_exporter_prometheus::PrometheusHandle;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::{
    EnvFilter, Layer, filter::filter_fn, layer::SubscriberExt, util::SubscriberInitExt,
};

/// The LRO version reported in `lro_build_info{version}`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Why telemetry could not be installed or shut down.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The Prometheus listener could not bind its address (in use, not
    /// local, no permission).
    #[error("cannot serve Prometheus metrics on {addr}")]
    MetricsListener {
        /// The address asked for.
        addr: SocketAddr,
        /// The exporter's error.
        source: metrics_exporter_prometheus::BuildError,
    },
    /// The metrics address has port 0. The exporter binds the address
    /// itself and cannot report the port the system picked, so nobody could
    /// learn where to scrape.
    #[error("{}", port_zero_message(*.0))]
    MetricsPortZero(SocketAddr),
    /// The Prometheus exporter rejected its configuration.
    #[error("cannot configure the Prometheus exporter")]
    MetricsExporter(#[source] metrics_exporter_prometheus::BuildError),
    /// The thread or runtime that serves metrics could not be started.
    #[error("cannot start the metrics thread")]
    MetricsThread(#[source] std::io::Error),
    /// Another global `metrics` recorder was installed first; only one per
    /// process is possible.
    #[error("a global metrics recorder is already installed")]
    MetricsRecorderInstalled,
    /// Another global `tracing` subscriber was installed first.
    #[error("a global tracing subscriber is already installed")]
    SubscriberInstalled(#[source] tracing_subscriber::util::TryInitError),
    /// The default log filter given in code is not valid `RUST_LOG` syntax.
    #[error("invalid log filter {directives:?}")]
    LogFilter {
        /// The directives as given.
        directives: String,
        /// The parser's error.
        source: tracing_subscriber::filter::ParseError,
    },
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` (or `…_TRACES_PROTOCOL`) names a
    /// protocol this build does not speak; only `http/protobuf` and
    /// `http/json` are supported.
    #[error(
        "unsupported OTLP protocol {protocol:?}: use \"http/protobuf\" (collector port 4318) or \"http/json\""
    )]
    UnsupportedOtlpProtocol {
        /// The value found.
        protocol: String,
    },
    /// The OTLP exporter could not be built (e.g. an invalid endpoint URL).
    #[error("cannot build the OTLP trace exporter")]
    Otlp(#[source] opentelemetry_otlp::ExporterBuildError),
    /// Flushing or shutting down the trace exporter failed.
    #[error("cannot flush or shut down the trace exporter")]
    Flush(#[source] opentelemetry_sdk::error::OTelSdkError),
}

fn port_zero_message(addr: SocketAddr) -> String {
    format!(
        "cannot serve Prometheus metrics on {addr}: name a port; port 0 would pick one that cannot be reported"
    )
}

/// Reads a metrics listen address, `HOST:PORT`, refusing port 0 (see
/// [`TelemetryError::MetricsPortZero`]). Made for a command line's
/// `--metrics ADDR` (clap's `value_parser`), so the mistake is a usage error.
///
/// ```
/// assert!(lro_telemetry::parse_metrics_addr("127.0.0.1:9464").is_ok());
/// assert!(lro_telemetry::parse_metrics_addr("127.0.0.1:0").is_err());
/// assert!(lro_telemetry::parse_metrics_addr("localhost").is_err());
/// ```
///
/// # Errors
///
/// A sentence saying what is wrong with `s`.
pub fn parse_metrics_addr(s: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = s
        .parse()
        .map_err(|err| format!("{err}: expected HOST:PORT, e.g. 127.0.0.1:9464"))?;
    if addr.port() == 0 {
        return Err(port_zero_message(addr));
    }
    Ok(addr)
}

/// Entry point: [`Telemetry::builder`].
#[derive(Debug)]
pub struct Telemetry;

impl Telemetry {
    /// A builder with the defaults.
    pub fn builder() -> TelemetryBuilder {
        TelemetryBuilder::default()
    }
}

/// Configures and installs telemetry; see the [crate docs](crate).
#[derive(Debug, Clone)]
#[must_use = "nothing is installed until `install()` is called"]
pub struct TelemetryBuilder {
    service_name: String,
    service_version: String,
    metrics_addr: Option<SocketAddr>,
    conformance_level: u8,
    log_filter: String,
    otlp_endpoint: Option<String>,
}

impl Default for TelemetryBuilder {
    fn default() -> Self {
        Self {
            service_name: "lro".into(),
            service_version: VERSION.into(),
            metrics_addr: None,
            conformance_level: 3,
            log_filter: "info".into(),
            otlp_endpoint: None,
        }
    }
}

impl TelemetryBuilder {
    /// Sets `service.name` on exported traces (`OTEL_SERVICE_NAME`, when
    /// set, still wins). Defaults to `lro`.
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// Sets `service.version` on exported traces. Defaults to the LRO
    /// version ([`VERSION`]).
    pub fn service_version(mut self, version: impl Into<String>) -> Self {
        self.service_version = version.into();
        self
    }

    /// Sets the address the Prometheus listener binds; every path answers
    /// with the metrics, so Prometheus scrapes `http://{addr}/metrics`. Its
    /// port must not be 0 ([`TelemetryError::MetricsPortZero`]).
    /// Defaults to `None`: no listener, but the recorder is still installed
    /// and [`TelemetryGuard::render_metrics`] works (e.g. to serve metrics
    /// from the host's own HTTP router).
    pub fn metrics_addr(mut self, addr: Option<SocketAddr>) -> Self {
        self.metrics_addr = addr;
        self
    }

    /// Sets the `conformance_level` label of `lro_build_info`. Defaults to 3.
    pub fn conformance_level(mut self, level: u8) -> Self {
        self.conformance_level = level;
        self
    }

    /// Sets the log filter used when `RUST_LOG` is unset or empty, in
    /// `RUST_LOG` syntax. Defaults to `info`.
    pub fn log_filter(mut self, directives: impl Into<String>) -> Self {
        self.log_filter = directives.into();
        self
    }

    /// Sets the OTLP/HTTP base endpoint (e.g. `http://127.0.0.1:4318`;
    /// `/v1/traces` is appended), overriding the environment. Defaults to
    /// `None`: traces are exported only when `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set.
    pub fn otlp_endpoint(mut self, endpoint: Option<String>) -> Self {
        self.otlp_endpoint = endpoint;
        self
    }

    /// Installs the metrics recorder, the tracing subscriber and (when
    /// configured) the OTLP exporter, process-wide. Fails when another
    /// recorder or subscriber is already installed.
    pub fn install(self) -> Result<TelemetryGuard, TelemetryError> {
        let env = |key: &str| std::env::var(key).ok().filter(|v| !v.trim().is_empty());
        // Everything that can be rejected is checked before anything global
        // is touched.
        if let Some(addr) = self.metrics_addr.filter(|a| a.port() == 0) {
            return Err(TelemetryError::MetricsPortZero(addr));
        }
        let filter = self.env_filter(env("RUST_LOG"))?;
        let otlp = otlp::settings(self.otlp_endpoint.as_deref(), &env)?;
        let provider = otlp
            .as_ref()
            .map(|s| otlp::provider(s, &self.service_name, &self.service_version, &env))
            .transpose()?;

        let metrics = prometheus::install(self.metrics_addr)?;
        lro_core::metric::describe();
        lro_core::metric::register_zeroed();
        metrics::gauge!(
            lro_core::metric::BUILD_INFO,
            "version" => VERSION,
            "conformance_level" => self.conformance_level.to_string()
        )
        .set(1.0);

        let fmt = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal());
        let otel = provider.as_ref().map(|p| {
            tracing_opentelemetry::layer()
                .with_tracer(otlp::tracer(p))
                .with_filter(filter_fn(|meta| !otlp::is_exporter_internal(meta.target())))
        });
        let subscriber = tracing_subscriber::registry()
            .with(filter)
            .with(fmt)
            .with(otel);
        // Global provider and W3C propagator for code that uses the
        // OpenTelemetry API directly (e.g. to propagate `traceparent`). Set
        // before the subscriber so the SDK's own "provider set" notice does
        // not land in every server's log.
        if let Some(p) = &provider {
            opentelemetry::global::set_tracer_provider(p.clone());
            opentelemetry::global::set_text_map_propagator(
                opentelemetry_sdk::propagation::TraceContextPropagator::new(),
            );
        }
        // `try_init` also routes `log` records of dependencies into tracing.
        if let Err(err) = subscriber.try_init() {
            if let Some(p) = &provider {
                let _ = p.shutdown();
            }
            return Err(TelemetryError::SubscriberInstalled(err));
        }
        tracing::info!(
            service = %self.service_name,
            metrics_addr = ?self.metrics_addr,
            otlp = provider.is_some(),
            "telemetry installed"
        );
        Ok(TelemetryGuard {
            metrics,
            metrics_addr: self.metrics_addr,
            provider,
        })
    }

    fn env_filter(&self, from_env: Option<String>) -> Result<EnvFilter, TelemetryError> {
        match from_env {
            // An operator's typo in RUST_LOG must not stop the server: bad
            // directives are dropped (and reported on stderr by the parser).
            Some(directives) => Ok(EnvFilter::builder().parse_lossy(directives)),
            None => EnvFilter::builder()
                .parse(&self.log_filter)
                .map_err(|source| TelemetryError::LogFilter {
                    directives: self.log_filter.clone(),
                    source,
                }),
        }
    }
}

/// Keeps telemetry running. Dropping it flushes and shuts down the trace
/// exporter; the metrics recorder stays installed for the life of the
/// process (the `metrics` facade cannot uninstall it).
#[derive(Debug)]
#[must_use = "dropping the guard shuts the trace exporter down"]
pub struct TelemetryGuard {
    metrics: PrometheusHandle,
    metrics_addr: Option<SocketAddr>,
    provider: Option<SdkTracerProvider>,
}

impl TelemetryGuard {
    /// The current metrics in the Prometheus text format, exactly as the
    /// listener serves them.
    pub fn render_metrics(&self) -> String {
        self.metrics.render()
    }

    /// The address the Prometheus listener was asked to bind, if any.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Whether traces are exported over OTLP.
    pub fn otlp_enabled(&self) -> bool {
        self.provider.is_some()
    }

    /// Exports every finished span now and waits for the collector's answer.
    /// Blocks the calling thread; from async code use `spawn_blocking`.
    pub fn force_flush(&self) -> Result<(), TelemetryError> {
        match &self.provider {
            Some(p) => p.force_flush().map_err(TelemetryError::Flush),
            None => Ok(()),
        }
    }

    /// Flushes and shuts down the trace exporter, reporting any failure
    /// (dropping the guard does the same but can only log it).
    pub fn shutdown(mut self) -> Result<(), TelemetryError> {
        match self.provider.take() {
            Some(p) => p.shutdown().map_err(TelemetryError::Flush),
            None => Ok(()),
        }
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(p) = self.provider.take()
            && let Err(err) = p.shutdown()
        {
            eprintln!(
                "lro-telemetry: trace exporter shutdown failed: {}",
                lro_core::error::chain(&err)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_defaults() {
        let b = Telemetry::builder();
        assert_eq!(b.service_name, "lro");
        assert_eq!(b.conformance_level, 3);
        assert_eq!(b.log_filter, "info");
        assert_eq!(b.metrics_addr, None);
        assert_eq!(b.otlp_endpoint, None);
    }

    #[test]
    fn port_zero_is_refused_before_anything_is_installed() {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let err = Telemetry::builder()
            .metrics_addr(Some(addr))
            .install()
            .unwrap_err();
        assert!(matches!(err, TelemetryError::MetricsPortZero(a) if a == addr));
        assert_eq!(
            Some(err.to_string()),
            parse_metrics_addr("127.0.0.1:0").err()
        );
        assert!(err.to_string().contains("name a port"), "{err}");
    }

    #[test]
    fn bad_default_filter_is_an_error_but_bad_rust_log_is_not() {
        let b = Telemetry::builder().log_filter("info,[[[");
        assert!(matches!(
            b.env_filter(None),
            Err(TelemetryError::LogFilter { .. })
        ));
        let filter = b.env_filter(Some("warn,lro=debug,[[[".into())).unwrap();
        assert!(filter.to_string().contains("lro=debug"), "{filter}");
    }
}
