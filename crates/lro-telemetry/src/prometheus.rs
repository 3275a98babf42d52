//! The Prometheus recorder and its `/metrics` listener.

use std::{net::SocketAddr, sync::mpsc, thread, time::Duration};

use lro_core::metric::{self, DURATION_BUCKETS};
use metrics_exporter_prometheus::{
    BuildError, Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

use crate::TelemetryError;

/// How often histograms are compacted and idle series checked when no HTTP
/// listener does it (the exporter's own default is the same).
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The exporter configuration: real histograms (buckets, not summaries) for
/// every LRO histogram and for any other `_seconds` histogram of the host.
/// Recommended naming stays off: LRO names already carry their unit and
/// `_total`, and turning it on would print `..._seconds_seconds`.
pub(crate) fn builder() -> Result<PrometheusBuilder, BuildError> {
    let mut builder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), DURATION_BUCKETS)?;
    for def in metric::ALL {
        if let Some(buckets) = def.buckets {
            builder = builder.set_buckets_for_metric(Matcher::Full(def.name.into()), buckets)?;
        }
    }
    Ok(builder)
}

/// Builds the recorder on a dedicated thread with its own single-threaded
/// runtime, installs it globally and returns its handle.
///
/// The thread owns the listener (when `addr` is given) and the periodic
/// upkeep, so scrapes are answered even when the host's runtime is busy, and
/// it works whether `install` is called inside a runtime, outside one, or
/// from a `#[tokio::test]` whose runtime ends before the process does. The
/// runtime is created and dropped on that thread only: dropping a runtime
/// from async code panics.
pub(crate) fn install(addr: Option<SocketAddr>) -> Result<PrometheusHandle, TelemetryError> {
    let builder = builder().map_err(TelemetryError::MetricsExporter)?;
    let (built_tx, built_rx) = mpsc::channel::<Result<PrometheusRecorder, TelemetryError>>();
    let (go_tx, go_rx) = mpsc::channel::<bool>();
    thread::Builder::new()
        .name("lro-metrics".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => {
                    let _ = built_tx.send(Err(TelemetryError::MetricsThread(err)));
                    return;
                }
            };
            let built = {
                let _enter = runtime.enter();
                match addr {
                    Some(addr) => builder
                        .with_http_listener(addr)
                        .build()
                        .map(|(recorder, exporter)| {
                            let serve: std::pin::Pin<Box<dyn Future<Output = ()> + Send>> =
                                Box::pin(async move {
                                    if let Err(err) = exporter.await {
                                        tracing::error!(error = ?err, "Prometheus listener stopped");
                                    }
                                });
                            (recorder, serve)
                        })
                        .map_err(|source| match source {
                            BuildError::FailedToCreateHTTPListener(_) => {
                                TelemetryError::MetricsListener { addr, source }
                            }
                            other => TelemetryError::MetricsExporter(other),
                        }),
                    None => {
                        let recorder = builder.build_recorder();
                        let handle = recorder.handle();
                        let upkeep: std::pin::Pin<Box<dyn Future<Output = ()> + Send>> =
                            Box::pin(async move {
                                let mut tick = tokio::time::interval(UPKEEP_INTERVAL);
                                loop {
                                    tick.tick().await;
                                    handle.run_upkeep();
                                }
                            });
                        Ok((recorder, upkeep))
                    }
                }
            };
            let serve = match built {
                Ok((recorder, serve)) => {
                    if built_tx.send(Ok(recorder)).is_err() {
                        return;
                    }
                    serve
                }
                Err(err) => {
                    let _ = built_tx.send(Err(err));
                    return;
                }
            };
            // Serve only once the recorder is the global one; otherwise stop
            // and release the port.
            if go_rx.recv() == Ok(true) {
                runtime.block_on(serve);
            }
        })
        .map_err(TelemetryError::MetricsThread)?;

    let recorder = built_rx.recv().map_err(|_| {
        TelemetryError::MetricsThread(std::io::Error::other("metrics thread exited early"))
    })??;
    let handle = recorder.handle();
    if metrics::set_global_recorder(recorder).is_err() {
        let _ = go_tx.send(false);
        return Err(TelemetryError::MetricsRecorderInstalled);
    }
    let _ = go_tx.send(true);
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lro_core::metric::{Kind, TOKEN_BUCKETS};

    #[test]
    fn every_lro_histogram_gets_buckets() {
        for def in metric::ALL.iter().filter(|d| d.kind == Kind::Histogram) {
            assert!(
                def.buckets.is_some(),
                "{} would render as a summary",
                def.name
            );
            if def.unit == Some(metrics::Unit::Seconds) {
                assert_eq!(def.buckets, Some(DURATION_BUCKETS), "{}", def.name);
            }
        }
        let tokens = metric::find(metric::RESULT_ESTIMATED_TOKENS).unwrap();
        assert_eq!(tokens.buckets, Some(TOKEN_BUCKETS));
    }

    #[test]
    fn a_local_recorder_renders_buckets_without_unit_suffixes() {
        let recorder = builder().unwrap().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            metric::describe();
            metrics::histogram!(metric::CLEANUP_DURATION_SECONDS).record(0.003);
            metrics::counter!(metric::CLEANUP_BYTES_FREED_TOTAL).increment(5);
        });
        let text = handle.render();
        assert!(
            text.contains("lro_cleanup_duration_seconds_bucket{le=\"0.005\"} 1"),
            "{text}"
        );
        assert!(text.contains("lro_cleanup_bytes_freed_total 5"), "{text}");
        assert!(!text.contains("_seconds_seconds"), "{text}");
        assert!(!text.contains("_total_total"), "{text}");
        assert!(!text.contains("_bytes_total_bytes"), "{text}");
    }
}
