//! The worker thread of one call: started with a stack sized for the
//! timeout, waited for at most the timeout, cancelled and given a short
//! grace to end, its unwinds turned into errors.

use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
        mpsc,
    },
    thread,
    time::{Duration, Instant},
};

use crate::{
    ExtractError, ExtractOutput,
    jq::{self, Guard, Stop},
};

/// How long a timed-out call waits for its worker to confirm it stopped.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// Runs `job` on a worker thread, waiting at most `timeout`; `active`
/// counts the worker while it lives.
pub(crate) fn bounded<F>(
    timeout: Duration,
    active: &Arc<AtomicUsize>,
    job: F,
) -> Result<ExtractOutput, ExtractError>
where
    F: FnOnce(&Guard) -> Result<ExtractOutput, ExtractError> + Send + 'static,
{
    let cancel = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::sync_channel(1);
    let live = Live::new(active.clone());
    let worker_cancel = cancel.clone();
    let worker = move || {
        // Dropped before `tx` (a captured variable), so a caller that
        // sees the channel close knows the count went down.
        let _live = live;
        let guard = Guard::new(worker_cancel);
        let result = guarded(&guard, job);
        let _ = tx.send(result);
    };
    let handle =
        spawn_worker(jq::worker_stack(timeout), worker).map_err(|e| ExtractError::Runtime {
            line: None,
            message: format!("cannot start an extraction worker: {e}"),
        })?;
    let result = match rx.recv_timeout(timeout) {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(ExtractError::Runtime {
            line: None,
            message: "the extraction worker ended without a result".into(),
        }),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            cancel.store(true, Ordering::SeqCst);
            Err(ExtractError::Timeout { limit: timeout })
        }
    };
    // Wait for the worker to end (it stops at its next step once
    // cancelled), so no thread outlives the call in the normal case.
    let deadline = Instant::now() + STOP_GRACE;
    let ended = loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(late) => drop(late),
            Err(mpsc::RecvTimeoutError::Disconnected) => break true,
            Err(mpsc::RecvTimeoutError::Timeout) => break false,
        }
    };
    if ended {
        // Its job is done, so this returns at once; joining frees its
        // stack now, which a worker process under an address-space limit
        // needs before it starts the next job's thread.
        let _ = handle.join();
    }
    with_limit(result, timeout)
}

/// Runs `job` on this thread under `guard`, its unwinds (cancelled, too
/// deep, a panic) turned into errors.
pub(crate) fn guarded<F>(guard: &Guard, job: F) -> Result<ExtractOutput, ExtractError>
where
    F: FnOnce(&Guard) -> Result<ExtractOutput, ExtractError>,
{
    catch_unwind(AssertUnwindSafe(|| job(guard))).unwrap_or_else(|payload| Err(unwound(payload)))
}

/// `result` with a timeout naming `limit`: the cancelled evaluation that
/// unwound did not know it.
pub(crate) fn with_limit(
    result: Result<ExtractOutput, ExtractError>,
    limit: Duration,
) -> Result<ExtractOutput, ExtractError> {
    match result {
        Err(ExtractError::Timeout { .. }) => Err(ExtractError::Timeout { limit }),
        other => other,
    }
}

/// Spawns `f` on a thread with `stack` bytes of stack, retrying with the
/// smallest stack where the system refuses a large reservation.
fn spawn_worker(
    stack: usize,
    f: impl FnOnce() + Send + 'static,
) -> std::io::Result<thread::JoinHandle<()>> {
    let f = std::sync::Mutex::new(Some(f));
    let f = Arc::new(f);
    let mut last_err = None;
    for size in [stack, jq::WORKER_STACK] {
        let f = f.clone();
        let spawned = thread::Builder::new()
            .name("lro-extract".into())
            .stack_size(size)
            .spawn(move || {
                let job = f.lock().ok().and_then(|mut slot| slot.take());
                if let Some(job) = job {
                    job();
                }
            });
        match spawned {
            Ok(handle) => return Ok(handle),
            Err(e) => last_err = Some(e),
        }
    }
    Err(last_err.expect("at least one attempt"))
}

/// Counts a live worker.
struct Live(Arc<AtomicUsize>);

impl Live {
    fn new(count: Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn unwound(payload: Box<dyn std::any::Any + Send>) -> ExtractError {
    match payload.downcast_ref::<Stop>() {
        Some(Stop::Cancelled) => ExtractError::Timeout {
            limit: Duration::ZERO,
        },
        Some(Stop::TooDeep) => ExtractError::Runtime {
            line: None,
            message: "query recursion too deep (stack limit reached)".into(),
        },
        None => ExtractError::Runtime {
            line: None,
            message: "internal error: the query engine panicked".into(),
        },
    }
}
