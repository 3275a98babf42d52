//! The optional OTLP trace exporter.

use opentelemetry::{KeyValue, trace::TracerProvider as _};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::{Resource, trace::SdkTracerProvider};

use crate::TelemetryError;

/// `OTEL_EXPORTER_OTLP_ENDPOINT`: base URL; `/v1/traces` is appended.
pub(crate) const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: full URL, used as is.
pub(crate) const TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
const PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
const TRACES_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
const SDK_DISABLED: &str = "OTEL_SDK_DISABLED";
const SERVICE_NAME_VAR: &str = "OTEL_SERVICE_NAME";

/// Where and how to export traces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OtlpSettings {
    /// Full traces URL when configured in code; `None` lets the exporter
    /// resolve the standard environment variables itself.
    pub(crate) traces_url: Option<String>,
    pub(crate) protocol: Protocol,
}

/// Decides whether to export traces. `explicit` is the base endpoint given
/// in code; `env` reads an environment variable (empty counts as unset).
/// Without an endpoint in code or in the environment there is no exporter:
/// an MCP server on a laptop must not try to reach `localhost:4318`.
pub(crate) fn settings(
    explicit: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<OtlpSettings>, TelemetryError> {
    let traces_url = match explicit {
        Some(base) => Some(format!("{}/v1/traces", base.trim_end_matches('/'))),
        None => {
            let disabled = env(SDK_DISABLED).is_some_and(|v| v.eq_ignore_ascii_case("true"));
            if disabled || (env(ENDPOINT).is_none() && env(TRACES_ENDPOINT).is_none()) {
                return Ok(None);
            }
            None
        }
    };
    let protocol = match env(TRACES_PROTOCOL).or_else(|| env(PROTOCOL)) {
        None => Protocol::HttpBinary,
        Some(p) if p.eq_ignore_ascii_case("http/protobuf") => Protocol::HttpBinary,
        Some(p) if p.eq_ignore_ascii_case("http/json") => Protocol::HttpJson,
        Some(p) => return Err(TelemetryError::UnsupportedOtlpProtocol { protocol: p }),
    };
    Ok(Some(OtlpSettings {
        traces_url,
        protocol,
    }))
}

/// Builds the tracer provider with a batch exporter. `OTEL_SERVICE_NAME`,
/// when set, wins over `service_name` (the operator's word is final).
pub(crate) fn provider(
    settings: &OtlpSettings,
    service_name: &str,
    service_version: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<SdkTracerProvider, TelemetryError> {
    let mut exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(settings.protocol);
    if let Some(url) = &settings.traces_url {
        exporter = exporter.with_endpoint(url.clone());
    }
    let exporter = exporter.build().map_err(TelemetryError::Otlp)?;
    let mut resource = Resource::builder()
        .with_attribute(KeyValue::new("service.version", service_version.to_owned()));
    if env(SERVICE_NAME_VAR).is_none() {
        resource = resource.with_service_name(service_name.to_owned());
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

/// The tracer the `tracing` bridge writes to.
pub(crate) fn tracer(provider: &SdkTracerProvider) -> opentelemetry_sdk::trace::Tracer {
    provider.tracer("lro")
}

/// Targets whose spans and events must not be exported: the exporter's own
/// HTTP stack. Exporting them would export the export, forever.
pub(crate) fn is_exporter_internal(target: &str) -> bool {
    const INTERNAL: &[&str] = &[
        "opentelemetry",
        "reqwest",
        "hyper",
        "hyper_util",
        "h2",
        "tower",
    ];
    INTERNAL.iter().any(|p| match target.strip_prefix(p) {
        // `opentelemetry_sdk`, `opentelemetry-otlp` (its internal logs use
        // the package name) and `hyper::proto` all count; `hyperion` does not.
        Some(rest) => rest.is_empty() || rest.starts_with([':', '_', '-']),
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| (*v).to_owned())
                .filter(|v| !v.is_empty())
        }
    }

    #[test]
    fn no_endpoint_no_exporter() {
        assert_eq!(settings(None, &env_of(&[])).unwrap(), None);
        assert_eq!(settings(None, &env_of(&[(ENDPOINT, "")])).unwrap(), None);
    }

    #[test]
    fn env_endpoint_enables_http_protobuf_by_default() {
        let s = settings(None, &env_of(&[(ENDPOINT, "http://c:4318")]))
            .unwrap()
            .unwrap();
        assert_eq!(s.protocol, Protocol::HttpBinary);
        assert_eq!(s.traces_url, None, "the exporter resolves env itself");
        assert!(
            settings(
                None,
                &env_of(&[(TRACES_ENDPOINT, "http://c:4318/v1/traces")])
            )
            .unwrap()
            .is_some()
        );
    }

    #[test]
    fn sdk_disabled_wins_over_env_endpoint() {
        let env = env_of(&[(ENDPOINT, "http://c:4318"), (SDK_DISABLED, "true")]);
        assert_eq!(settings(None, &env).unwrap(), None);
    }

    #[test]
    fn explicit_endpoint_gets_the_traces_path() {
        let s = settings(Some("http://127.0.0.1:9/"), &env_of(&[]))
            .unwrap()
            .unwrap();
        assert_eq!(
            s.traces_url.as_deref(),
            Some("http://127.0.0.1:9/v1/traces")
        );
    }

    #[test]
    fn protocol_is_respected_and_grpc_is_refused_by_name() {
        let env = env_of(&[(ENDPOINT, "http://c:4318"), (PROTOCOL, "http/json")]);
        assert_eq!(
            settings(None, &env).unwrap().unwrap().protocol,
            Protocol::HttpJson
        );
        let env = env_of(&[
            (ENDPOINT, "http://c:4318"),
            (PROTOCOL, "http/json"),
            (TRACES_PROTOCOL, "http/protobuf"),
        ]);
        assert_eq!(
            settings(None, &env).unwrap().unwrap().protocol,
            Protocol::HttpBinary,
            "the per-signal variable wins"
        );
        let env = env_of(&[(ENDPOINT, "http://c:4317"), (PROTOCOL, "grpc")]);
        let err = settings(None, &env).unwrap_err();
        assert!(err.to_string().contains("\"grpc\""), "{err}");
    }

    #[test]
    fn exporter_internals_are_recognised() {
        assert!(is_exporter_internal("opentelemetry_sdk"));
        assert!(is_exporter_internal("opentelemetry-otlp"));
        assert!(is_exporter_internal("hyper_util::client"));
        assert!(is_exporter_internal("reqwest::connect"));
        assert!(!is_exporter_internal("lro_tower"));
        assert!(!is_exporter_internal("hyperion"));
    }
}
