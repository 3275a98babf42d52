//! The `offload_cleanup` custodial task: [`run_once`] on a cron schedule.
//!
//! The task runs on `tokio-cron-scheduler`; each run goes to a blocking
//! thread (`spawn_blocking`), because scanning and unlinking are blocking
//! file-system calls that must not stall the async workers serving MCP
//! requests. Runs never overlap: a run requested while another is in progress
//! waits for it.
//!
//! Schedules are cron expressions **with seconds** (six or seven fields),
//! evaluated in UTC; the default is hourly, `0 0 * * * *`.
//!
//! ```
//! use lro_core::event::{LroEvent, MemorySink};
//! use lro_scheduler::{CleanupPolicy, OffloadCleanup};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), lro_scheduler::SchedulerError> {
//! let dir = tempfile::tempdir().unwrap();
//! let sink = MemorySink::new();
//! let handle = OffloadCleanup::new(dir.path(), CleanupPolicy::new())
//!     .schedule("0 0 * * * *")
//!     .sink(sink.clone())
//!     .run_at_start(false)
//!     .start()
//!     .await?;
//! let report = handle.run_now().await?;
//! assert_eq!(report.files_remaining, 0);
//! assert!(matches!(sink.events().last(), Some(LroEvent::CleanupCompleted(_))));
//! handle.shutdown().await?;
//! # Ok(())
//! # }
//! ```

use std::{path::PathBuf, sync::Arc, time::SystemTime};

use lro_core::{
    config::{DEFAULT_CLEANUP_SCHEDULE, OffloadConfig},
    event::{CleanupCompleted, EventSink},
};
use tokio_cron_scheduler::{Job, JobScheduler, JobSchedulerError};

use crate::cleanup::{CleanupPolicy, run_once};

/// The name the spec gives the task; used in logs.
pub const TASK_NAME: &str = "offload_cleanup";

/// Why the cleanup task could not start, run or stop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchedulerError {
    /// The schedule is not a cron expression with seconds.
    #[error(
        "invalid cleanup schedule {expression:?}: expected a cron expression with seconds \
         (6 or 7 fields, UTC), e.g. \"0 0 * * * *\" for hourly"
    )]
    InvalidSchedule {
        /// The expression as given.
        expression: String,
    },
    /// `tokio-cron-scheduler` failed while creating, starting or stopping
    /// the scheduler.
    #[error("cleanup scheduler failed to {action}")]
    Scheduler {
        /// What was being done: `create`, `add the job`, `start` or `shut down`.
        action: &'static str,
        /// The scheduler's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A cleanup run panicked or was cancelled before finishing.
    #[error("cleanup run did not finish")]
    RunFailed(#[source] tokio::task::JoinError),
}

fn scheduler_error(action: &'static str) -> impl FnOnce(JobSchedulerError) -> SchedulerError {
    move |err| SchedulerError::Scheduler {
        action,
        source: Box::new(err),
    }
}

/// Builder for the `offload_cleanup` task.
pub struct OffloadCleanup {
    dir: PathBuf,
    #[cfg(feature = "store")]
    store: Option<Arc<dyn lro_store::Store>>,
    policy: CleanupPolicy,
    schedule: String,
    sink: Arc<dyn EventSink>,
    run_at_start: bool,
}

impl std::fmt::Debug for OffloadCleanup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffloadCleanup")
            .field("dir", &self.dir)
            .field("policy", &self.policy)
            .field("schedule", &self.schedule)
            .field("run_at_start", &self.run_at_start)
            .finish_non_exhaustive()
    }
}

impl OffloadCleanup {
    /// A task that cleans `dir` according to `policy`.
    pub fn new(dir: impl Into<PathBuf>, policy: CleanupPolicy) -> Self {
        Self {
            dir: dir.into(),
            #[cfg(feature = "store")]
            store: None,
            policy,
            schedule: DEFAULT_CLEANUP_SCHEDULE.to_owned(),
            sink: Arc::new(()),
            run_at_start: true,
        }
    }

    /// Directory, policy and schedule from the `[prompt.offload]` section.
    pub fn from_config(cfg: &OffloadConfig) -> Self {
        Self::new(
            lro_store::resolved_output_dir(cfg),
            CleanupPolicy::from_config(cfg),
        )
        .schedule(cfg.cleanup_schedule.clone())
    }

    /// Cleans the object store `store`, shared by several replicas, in place
    /// of the directory (see [`crate::store`]; cargo feature `store`). Defaults to none: the
    /// directory.
    #[cfg(feature = "store")]
    #[must_use]
    pub fn store(mut self, store: Arc<dyn lro_store::Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Sets the cron schedule (with seconds, UTC). Defaults to hourly,
    /// `0 0 * * * *`.
    #[must_use]
    pub fn schedule(mut self, cron: impl Into<String>) -> Self {
        self.schedule = cron.into();
        self
    }

    /// Sets the sink that receives every event, after tracing and metrics.
    /// Defaults to none.
    #[must_use]
    pub fn sink(mut self, sink: impl EventSink) -> Self {
        self.sink = Arc::new(sink);
        self
    }

    /// Whether [`start`](Self::start) also runs one pass right away, so files
    /// left by a previous process do not wait up to an hour and the gauges are
    /// set from the start. Defaults to `true`.
    #[must_use]
    pub fn run_at_start(mut self, run: bool) -> Self {
        self.run_at_start = run;
        self
    }

    /// Validates the schedule and starts the task on the current tokio
    /// runtime. The first run at start (if enabled) is spawned, not awaited.
    pub async fn start(self) -> Result<CleanupHandle, SchedulerError> {
        let runner = Arc::new(Runner {
            dir: self.dir,
            #[cfg(feature = "store")]
            store: self.store,
            policy: self.policy,
            sink: self.sink,
            gate: tokio::sync::Mutex::new(()),
        });
        let job = {
            let runner = runner.clone();
            Job::new_async(self.schedule.as_str(), move |_id, _scheduler| {
                let runner = runner.clone();
                Box::pin(async move {
                    // A failed scheduled run is logged; the next tick retries.
                    if let Err(err) = runner.run().await {
                        tracing::error!(task = TASK_NAME, error = %lro_core::error::chain(&err), "cleanup run failed");
                    }
                })
            })
        }
        .map_err(|err| match err {
            JobSchedulerError::ParseSchedule => SchedulerError::InvalidSchedule {
                expression: self.schedule.clone(),
            },
            other => scheduler_error("add the job")(other),
        })?;
        let scheduler = JobScheduler::new()
            .await
            .map_err(scheduler_error("create"))?;
        scheduler
            .add(job)
            .await
            .map_err(scheduler_error("add the job"))?;
        scheduler.start().await.map_err(scheduler_error("start"))?;
        // Paths stay out of INFO logs; the directory is at DEBUG.
        tracing::debug!(task = TASK_NAME, dir = %runner.dir.display(), "offload cleanup directory");
        tracing::info!(
            task = TASK_NAME,
            schedule = %self.schedule,
            ttl_s = runner.policy.ttl.as_secs(),
            max_total_bytes = runner.policy.max_total_bytes,
            "offload cleanup scheduled"
        );
        if self.run_at_start {
            let runner = runner.clone();
            tokio::spawn(async move {
                if let Err(err) = runner.run().await {
                    tracing::error!(task = TASK_NAME, error = %lro_core::error::chain(&err), "cleanup run failed");
                }
            });
        }
        Ok(CleanupHandle {
            scheduler: Some(scheduler),
            runner,
        })
    }
}

struct Runner {
    dir: PathBuf,
    #[cfg(feature = "store")]
    store: Option<Arc<dyn lro_store::Store>>,
    policy: CleanupPolicy,
    sink: Arc<dyn EventSink>,
    // Serializes runs: a cron tick and an on-demand run racing over the same
    // files would both succeed, but their reports would be confusing.
    gate: tokio::sync::Mutex<()>,
}

impl Runner {
    async fn run(self: &Arc<Self>) -> Result<CleanupCompleted, SchedulerError> {
        let _turn = self.gate.lock().await;
        #[cfg(feature = "store")]
        if let Some(store) = &self.store {
            return Ok(crate::store::run_store_once(
                &**store,
                &self.policy,
                SystemTime::now(),
                &*self.sink,
            )
            .await);
        }
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            run_once(&this.dir, &this.policy, SystemTime::now(), &*this.sink)
        })
        .await
        .map_err(SchedulerError::RunFailed)
    }
}

/// A running cleanup task. Dropping it stops the schedule (in the
/// background); call [`shutdown`](Self::shutdown) to stop it and wait.
#[must_use = "dropping the handle stops the cleanup task"]
pub struct CleanupHandle {
    // `None` once shut down, so `Drop` does not stop it twice.
    scheduler: Option<JobScheduler>,
    runner: Arc<Runner>,
}

impl std::fmt::Debug for CleanupHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CleanupHandle")
            .field("dir", &self.runner.dir)
            .field("running", &self.scheduler.is_some())
            .finish()
    }
}

impl CleanupHandle {
    /// Runs one pass now (after any pass in progress) and returns its report.
    /// The events go to the task's sink as usual.
    pub async fn run_now(&self) -> Result<CleanupCompleted, SchedulerError> {
        self.runner.run().await
    }

    /// Stops the schedule. A run in progress finishes on its blocking thread.
    pub async fn shutdown(mut self) -> Result<(), SchedulerError> {
        if let Some(mut scheduler) = self.scheduler.take() {
            scheduler
                .shutdown()
                .await
                .map_err(scheduler_error("shut down"))?;
        }
        Ok(())
    }
}

impl Drop for CleanupHandle {
    fn drop(&mut self) {
        let Some(mut scheduler) = self.scheduler.take() else {
            return;
        };
        // Shutting down is async; outside a runtime there is nothing left to
        // stop, because the scheduler's tasks died with their runtime.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = scheduler.shutdown().await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn five_field_cron_is_rejected_with_the_expression() {
        let err = OffloadCleanup::new("/nonexistent", CleanupPolicy::new())
            .schedule("0 * * * *")
            .start()
            .await
            .unwrap_err();
        assert!(
            matches!(&err, SchedulerError::InvalidSchedule { expression } if expression == "0 * * * *")
        );
        assert!(err.to_string().contains("\"0 * * * *\""), "{err}");
    }

    #[test]
    fn from_config_takes_the_schedule_and_dir() {
        let cfg = OffloadConfig::new()
            .output_dir("/var/lro")
            .cleanup_schedule("*/5 * * * * *");
        let task = OffloadCleanup::from_config(&cfg);
        assert_eq!(task.dir, PathBuf::from("/var/lro"));
        assert_eq!(task.schedule, "*/5 * * * * *");
        assert!(task.run_at_start);
    }
}
