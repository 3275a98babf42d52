//! Why a host could not start or serve.

/// Why a host could not start, or serve. Each variant keeps its cause as its source,
/// so `anyhow`'s `{:#}` prints the whole chain.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// Telemetry could not be installed (a metrics address in use, a second
    /// install in one process, a bad OTLP setting).
    #[error("cannot install telemetry")]
    Telemetry(#[source] lro_telemetry::TelemetryError),
    /// The `offload_cleanup` task could not be started (an invalid
    /// `cleanup_schedule`).
    #[error("cannot start the offload_cleanup task")]
    Cleanup(#[source] lro_scheduler::SchedulerError),
    /// The object store `[prompt.offload]`'s `store` names cannot be
    /// opened (a malformed URL, an S3 configuration the client refuses).
    #[error("cannot open the offload store")]
    Store(#[source] Box<lro_store::StoreError>),
    /// The key principal folders are named with could not be read or
    /// made (`principal_key_file`, the store's, or the output directory's).
    #[error("cannot read or make the principal key")]
    PrincipalKey(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A context store root could not be created or resolved. The message
    /// names the flag both hosts take them from.
    #[error("cannot use --context-store-root")]
    ContextStoreRoots(#[source] lro_context::ContextError),
    /// The stdio session never started (stdin closed before the first
    /// request), or its task failed ([`serve_stdio`](crate::serve_stdio)).
    #[error("cannot serve MCP over stdio")]
    Stdio(#[source] Box<dyn std::error::Error + Send + Sync>),
}
