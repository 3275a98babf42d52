//! Helpers shared by the integration tests: files with chosen ages, and
//! metric lookups in a `DebuggingRecorder` snapshot.

#![allow(dead_code, unreachable_pub)] // each test binary uses a different subset

use std::{
    fs,
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use lro_core::{
    event::{CleanupCompleted, LroEvent, OffloadFileExpired},
    file::OffloadFileName,
};
use metrics_util::debugging::{DebugValue, Snapshotter};
use ulid::Ulid;

/// A fixed "now" for tests: 2024-01-01T00:00:00Z. Ages are relative to it,
/// so no test depends on the wall clock or sleeps.
pub fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_704_067_200)
}

/// A name for `operation` whose ULID says it was created `age` before [`now`].
/// `seq` fills the random part, so files of the same age get distinct names.
pub fn name_aged(operation: &str, age: Duration, seq: u128) -> OffloadFileName {
    name_created(operation, now() - age, seq)
}

/// A name whose ULID says it was created at `created`.
pub fn name_created(operation: &str, created: SystemTime, seq: u128) -> OffloadFileName {
    let ms = created
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    OffloadFileName::with_ulid(operation, Ulid::from_parts(ms, seq))
}

/// Writes an offload file of `bytes` bytes created `age` before [`now`].
pub fn offload_file(dir: &Path, age: Duration, bytes: usize, seq: u128) -> PathBuf {
    let path = dir.join(name_aged("list", age, seq).to_string());
    fs::write(&path, vec![b'x'; bytes]).unwrap();
    path
}

/// Writes a temp file created `age` before [`now`], with its mtime set to the
/// same moment (a real abandoned write stops touching its file).
pub fn temp_file(dir: &Path, age: Duration, seq: u128) -> PathBuf {
    let path = dir.join(name_aged("list", age, seq).temp_name());
    fs::write(&path, b"{\"partial\":").unwrap();
    let file = fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(now() - age).unwrap();
    path
}

/// Writes a file with an arbitrary name.
pub fn other_file(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, b"keep me").unwrap();
    path
}

/// The expiry events, in order.
pub fn expired(events: &[LroEvent]) -> Vec<OffloadFileExpired> {
    events
        .iter()
        .filter_map(|e| match e {
            LroEvent::OffloadFileExpired(x) => Some(x.clone()),
            _ => None,
        })
        .collect()
}

/// The completion events, in order.
pub fn completed(events: &[LroEvent]) -> Vec<CleanupCompleted> {
    events
        .iter()
        .filter_map(|e| match e {
            LroEvent::CleanupCompleted(x) => Some(x.clone()),
            _ => None,
        })
        .collect()
}

/// One `DebuggingRecorder` snapshot. Taking it drains the recorder
/// (counters restart at zero), so take one per phase of a test.
pub struct Metrics(Vec<Sample>);

/// Name, sorted labels, value.
type Sample = (String, Vec<(String, String)>, DebugValue);

impl Metrics {
    /// Takes (and drains) a snapshot.
    pub fn take(snapshotter: &Snapshotter) -> Self {
        Self(
            snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, value)| {
                    let key = key.key();
                    let mut labels: Vec<(String, String)> = key
                        .labels()
                        .map(|l| (l.key().to_owned(), l.value().to_owned()))
                        .collect();
                    labels.sort();
                    (key.name().to_owned(), labels, value)
                })
                .collect(),
        )
    }

    /// The value of `name` with exactly `labels`, if recorded.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        let mut want: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        want.sort();
        self.0
            .iter()
            .find(|(n, l, _)| n == name && *l == want)
            .map(|(_, _, v)| v)
    }

    /// A counter's value (since the previous snapshot); panics when absent.
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match self.get(name, labels) {
            Some(DebugValue::Counter(v)) => *v,
            other => panic!("{name}{labels:?} is not a recorded counter: {other:?}"),
        }
    }

    /// A gauge's value; panics when absent.
    pub fn gauge(&self, name: &str) -> f64 {
        match self.get(name, &[]) {
            Some(DebugValue::Gauge(v)) => v.into_inner(),
            other => panic!("{name} is not a recorded gauge: {other:?}"),
        }
    }
}
