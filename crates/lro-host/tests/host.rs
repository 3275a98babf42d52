//! A host runs its steps in order and returns what its serve step returns.
//! Telemetry installs once per process, so this file holds one host.

use lro_core::OffloadConfig;
use lro_host::{Host, HostError, Offload};

#[tokio::test]
async fn a_host_starts_cleanup_builds_the_layer_serves_and_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = OffloadConfig::default();
    cfg.output_dir = tmp.path().join("offload");
    let store = tmp.path().join("context-store");
    let host = Host::builder("host-test")
        .shutdown(std::future::ready(()))
        .install()
        .unwrap();
    let served: Result<&str, HostError> = host
        .run(
            Offload::new(cfg).context_store_roots([store.clone()]),
            |_layer, shutdown| async move {
                // The roots are made before serving starts.
                assert!(store.is_dir());
                shutdown.await;
                Ok("served")
            },
        )
        .await;
    assert_eq!(served.unwrap(), "served");
}
