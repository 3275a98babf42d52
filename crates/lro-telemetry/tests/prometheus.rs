//! Installs telemetry with a real Prometheus listener and scrapes it over
//! TCP, the way Prometheus does. One global install per test binary, so this
//! file holds a single test.

mod support;

use std::{
    collections::BTreeSet,
    io::{Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    process::{Command, Stdio},
    time::Duration,
};

use lro_core::{
    event::{
        CleanupCompleted, ExpiryReason, LroEvent, OffloadFileExpired, ToolOutcome, ToolResult, emit,
    },
    metric,
};
use lro_telemetry::{Telemetry, TelemetryError};

/// A port nobody listens on right now. The listener is dropped before the
/// exporter binds the port; the window is tiny and only tests use it.
fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// `GET path` over a plain TCP connection; returns (status line, headers, body).
fn http_get(addr: SocketAddr, path: &str) -> (String, String, String) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP response");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (
        status.to_owned(),
        headers.to_ascii_lowercase(),
        body.to_owned(),
    )
}

fn emit_some_events() {
    let offloaded = support::sample_offloaded();
    let path = offloaded.path.clone();
    emit(&(), LroEvent::Offloaded(offloaded));
    emit(
        &(),
        LroEvent::ToolResult(ToolResult::new(
            "recall_memories",
            ToolOutcome::Offloaded,
            5_000,
        )),
    );
    emit(
        &(),
        LroEvent::OffloadFileExpired(OffloadFileExpired::new(
            path,
            ExpiryReason::Ttl,
            Duration::from_secs(4000),
            Duration::from_secs(3600),
            100,
        )),
    );
    let mut cleanup = CleanupCompleted::default();
    cleanup.scanned = 3;
    cleanup.deleted = 1;
    cleanup.bytes_freed = 100;
    cleanup.files_remaining = 2;
    cleanup.bytes_remaining = 300;
    cleanup.duration = Duration::from_millis(2);
    emit(&(), LroEvent::CleanupCompleted(cleanup));
}

fn has_line(text: &str, line: &str) -> bool {
    text.lines().any(|l| l == line)
}

#[test]
fn scrape_serves_lro_metrics_as_prometheus_text() {
    let addr = free_port();
    let telemetry = Telemetry::builder()
        .service_name("memory-server")
        .metrics_addr(Some(addr))
        .conformance_level(3)
        .install()
        .unwrap();
    assert_eq!(telemetry.metrics_addr(), Some(addr));
    assert!(!telemetry.otlp_enabled(), "no endpoint, no exporter");

    // A second install fails cleanly: first on the taken port, then on the
    // recorder already installed.
    match Telemetry::builder().metrics_addr(Some(addr)).install() {
        Err(TelemetryError::MetricsListener { addr: a, .. }) => assert_eq!(a, addr),
        other => panic!("expected MetricsListener, got {other:?}"),
    }
    assert!(matches!(
        Telemetry::builder().install(),
        Err(TelemetryError::MetricsRecorderInstalled)
    ));

    // Before any traffic: the alerting counters already exist at zero.
    let (status, headers, body) = http_get(addr, "/metrics");
    assert!(status.contains(" 200 "), "{status}");
    assert!(headers.contains("content-type: text/plain"), "{headers}");
    for line in [
        r#"lro_offload_write_failures_total{reason="storage_full"} 0"#,
        r#"lro_offload_write_failures_total{reason="permission_denied"} 0"#,
        r#"lro_cleanup_runs_total{outcome="error"} 0"#,
        r#"lro_offload_files_expired_total{reason="quota"} 0"#,
        r#"lro_build_info{version="0.1.0",conformance_level="3"} 1"#,
    ] {
        assert!(has_line(&body, line), "missing {line:?} in\n{body}");
    }

    emit_some_events();
    let (_, _, body) = http_get(addr, "/metrics");
    for line in [
        "# TYPE lro_offload_write_duration_seconds histogram",
        "# HELP lro_offload_write_duration_seconds Time to write one offload file.",
        r#"lro_offload_write_duration_seconds_bucket{tool="recall_memories",le="0.0025"} 0"#,
        r#"lro_offload_write_duration_seconds_bucket{tool="recall_memories",le="0.005"} 1"#,
        r#"lro_offload_write_duration_seconds_bucket{tool="recall_memories",le="+Inf"} 1"#,
        r#"lro_offload_write_duration_seconds_count{tool="recall_memories"} 1"#,
        "# TYPE lro_result_estimated_tokens histogram",
        r#"lro_result_estimated_tokens_bucket{tool="recall_memories",le="3200"} 0"#,
        r#"lro_result_estimated_tokens_bucket{tool="recall_memories",le="6400"} 1"#,
        r#"lro_tool_results_total{tool="recall_memories",outcome="offloaded"} 1"#,
        r#"lro_offloaded_bytes_total{tool="recall_memories"} 48000"#,
        r#"lro_estimated_tokens_saved_total{tool="recall_memories"} 4400"#,
        r#"lro_offload_files_expired_total{reason="ttl"} 1"#,
        r#"lro_cleanup_runs_total{outcome="success"} 1"#,
        "# TYPE lro_cleanup_duration_seconds histogram",
        r#"lro_cleanup_duration_seconds_bucket{le="0.0025"} 1"#,
        "lro_offload_files 2",
        "lro_offload_disk_bytes 300",
        "lro_cleanup_bytes_freed_total 100",
    ] {
        assert!(has_line(&body, line), "missing {line:?} in\n{body}");
    }
    assert!(
        !body.contains("quantile="),
        "histograms, not summaries:\n{body}"
    );
    for doubled in ["_seconds_seconds", "_bytes_bytes", "_total_total"] {
        assert!(!body.contains(doubled), "{doubled} in\n{body}");
    }

    // Every family printed is one `lro_core::metric` defines, spelled as-is.
    let defined: BTreeSet<&str> = metric::ALL.iter().map(|m| m.name).collect();
    let printed: BTreeSet<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(printed.len() >= 12, "{printed:?}");
    let unknown: Vec<_> = printed.difference(&defined).collect();
    assert!(
        unknown.is_empty(),
        "families not in lro_core::metric: {unknown:?}"
    );

    // The handle renders what the listener serves.
    assert!(
        telemetry
            .render_metrics()
            .contains("lro_offload_disk_bytes 300")
    );

    promtool_accepts(&body);
    telemetry.shutdown().unwrap();
}

/// `promtool check metrics` lints names, units, help and types the way
/// Prometheus' maintainers recommend. `.ci/run` installs it (Debian package
/// `prometheus`); without it this test fails rather than passing unchecked.
fn promtool_accepts(exposition: &str) {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            panic!("promtool not found: run ./.ci/run, or apt-get install -y prometheus")
        }
        Err(err) => panic!("cannot run promtool: {err}"),
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{}{}\n--- exposition ---\n{exposition}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
