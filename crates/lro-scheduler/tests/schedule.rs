//! The scheduled task. tokio-cron-scheduler compares cron ticks with the
//! wall clock (`chrono::Utc::now`), so paused tokio time cannot drive it;
//! these tests wait on the events the task emits instead, with a timeout.

mod support;

use std::time::{Duration, SystemTime};

use lro_core::event::{CleanupCompleted, LroEvent, MemorySink};
use lro_scheduler::{CleanupPolicy, OffloadCleanup, SchedulerError};
use support::*;
use tokio::sync::mpsc;

const HOUR: Duration = Duration::from_secs(3600);
/// Generous: the scheduler ticks every 500 ms, but CI machines are slow.
const PATIENCE: Duration = Duration::from_secs(20);

/// A sink that forwards every event to a channel the test can await.
fn channel_sink() -> (
    impl Fn(&LroEvent) + Send + Sync + 'static,
    mpsc::UnboundedReceiver<LroEvent>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    (move |e: &LroEvent| drop(tx.send(e.clone())), rx)
}

async fn next_completed(rx: &mut mpsc::UnboundedReceiver<LroEvent>) -> CleanupCompleted {
    tokio::time::timeout(PATIENCE, async {
        loop {
            match rx.recv().await.expect("sink dropped") {
                LroEvent::CleanupCompleted(done) => return done,
                _ => continue,
            }
        }
    })
    .await
    .expect("no CleanupCompleted within the timeout")
}

/// Expired against the real clock, which is what scheduled runs use.
fn expired_file(dir: &std::path::Path, seq: u128) -> std::path::PathBuf {
    let path = dir.join(name_created("list", SystemTime::now() - 2 * HOUR, seq).to_string());
    std::fs::write(&path, b"{}\n").unwrap();
    path
}

/// The next completed run deletes one file, the expired one at `path`.
async fn deletes_the_expired_file(
    rx: &mut mpsc::UnboundedReceiver<LroEvent>,
    path: &std::path::Path,
) {
    let done = next_completed(rx).await;
    assert_eq!(done.deleted, 1);
    assert!(!path.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cron_schedule_runs_the_cleanup() {
    let dir = tempfile::tempdir().unwrap();
    let path = expired_file(dir.path(), 1);
    let (sink, mut rx) = channel_sink();
    // No run at start: a completion can only come from the cron tick.
    let handle = OffloadCleanup::new(dir.path(), CleanupPolicy::new().ttl(HOUR))
        .schedule("* * * * * *")
        .sink(sink)
        .run_at_start(false)
        .start()
        .await
        .unwrap();

    deletes_the_expired_file(&mut rx, &path).await;

    // It keeps running on schedule.
    let again = next_completed(&mut rx).await;
    assert_eq!((again.scanned, again.deleted), (0, 0));
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn run_at_start_cleans_without_waiting_for_the_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let path = expired_file(dir.path(), 1);
    let (sink, mut rx) = channel_sink();
    // Yearly: the start run is the only one this test can see.
    let handle = OffloadCleanup::new(dir.path(), CleanupPolicy::new())
        .schedule("0 0 0 1 1 *")
        .sink(sink)
        .start()
        .await
        .unwrap();
    deletes_the_expired_file(&mut rx, &path).await;
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn run_now_cleans_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let sink = MemorySink::new();
    let handle = OffloadCleanup::new(dir.path(), CleanupPolicy::new())
        .schedule("0 0 0 1 1 *")
        .sink(sink.clone())
        .run_at_start(false)
        .start()
        .await
        .unwrap();
    assert!(sink.events().is_empty(), "nothing ran yet");

    let first = expired_file(dir.path(), 1);
    let second = expired_file(dir.path(), 2);
    let done = handle.run_now().await.unwrap();
    assert_eq!(done.deleted, 2);
    assert!(!first.exists() && !second.exists());

    let events = sink.events();
    assert_eq!(expired(&events).len(), 2);
    assert_eq!(completed(&events), [done]);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn concurrent_on_demand_runs_do_not_double_count() {
    let dir = tempfile::tempdir().unwrap();
    for seq in 0..20 {
        expired_file(dir.path(), seq);
    }
    let handle = OffloadCleanup::new(dir.path(), CleanupPolicy::new())
        .schedule("0 0 0 1 1 *")
        .run_at_start(false)
        .start()
        .await
        .unwrap();
    let (a, b) = tokio::join!(handle.run_now(), handle.run_now());
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.deleted + b.deleted, 20);
    assert_eq!(
        a.scanned + b.scanned,
        20,
        "runs are serialized, not interleaved"
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn invalid_schedule_names_the_expression() {
    let err = OffloadCleanup::new("/tmp", CleanupPolicy::new())
        .schedule("every hour")
        .start()
        .await
        .unwrap_err();
    assert!(matches!(err, SchedulerError::InvalidSchedule { .. }));
    assert!(err.to_string().contains("\"every hour\""), "{err}");
}
