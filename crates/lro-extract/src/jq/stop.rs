//! Stopping an evaluation: the cancel flag and stack budget checked on
//! every term jaq looks up, and the worker stack sized from the timeout.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use jaq_core::{DataT, data::HasLut};
use jaq_json::Val;

/// only the pages a query touches are ever backed by memory.
pub(crate) const WORKER_STACK: usize = 256 * 1024 * 1024;
/// Largest stack of a worker thread (see [`worker_stack`]).
pub(crate) const MAX_WORKER_STACK: usize = 8 * 1024 * 1024 * 1024;

/// The worker stack for a given timeout.
///
/// jaq drops values recursively, and a query can build a value nested as
/// deep as its time allows (`reduce range(1e9) as $i (null; [.])` nests
/// about 1.5 million levels a second here, each needing ~64 bytes of stack
/// to drop). Dropping it when the query ends or is cancelled must not
/// overflow the stack, which would abort the whole process. So the stack
/// grows with the timeout: 200 MiB per second (about twice what that
/// query needs), between [`WORKER_STACK`] and [`MAX_WORKER_STACK`].
pub(crate) fn worker_stack(timeout: std::time::Duration) -> usize {
    let per_second = 200.0 * 1024.0 * 1024.0;
    let want = timeout.as_secs_f64() * per_second;
    (want as usize).clamp(WORKER_STACK, MAX_WORKER_STACK)
}
/// Stack a query may use before it is stopped as too deeply recursive; the
/// rest is headroom for natives and for dropping values.
pub(crate) const STACK_BUDGET: usize = 128 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The cancel flag was set (timeout).
    Cancelled,
    /// The stack budget was exceeded.
    TooDeep,
}

/// The cancel flag and stack budget of one evaluation.
#[derive(Debug)]
pub(crate) struct Guard {
    cancel: Arc<AtomicBool>,
    stack_base: usize,
}

fn stack_address() -> usize {
    let marker = 0u8;
    // The address of a local is the current stack position; black_box keeps
    // the local from being optimized away.
    std::hint::black_box(&marker) as *const u8 as usize
}

impl Guard {
    /// A guard for the current thread, stopping when `cancel` is set.
    pub(crate) fn new(cancel: Arc<AtomicBool>) -> Self {
        Self {
            cancel,
            stack_base: stack_address(),
        }
    }

    /// A guard that is never cancelled (for tests).
    #[cfg(test)]
    pub(crate) fn unbounded() -> Self {
        Self::new(Arc::new(AtomicBool::new(false)))
    }

    /// Whether cancellation was requested.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Unwinds the evaluation when cancelled or too deep. Called by jaq for
    /// every term it evaluates.
    #[inline]
    pub(super) fn check(&self) {
        if self.cancel.load(Ordering::Relaxed) {
            std::panic::resume_unwind(Box::new(Stop::Cancelled));
        }
        if self.stack_base.abs_diff(stack_address()) > STACK_BUDGET {
            std::panic::resume_unwind(Box::new(Stop::TooDeep));
        }
    }
}

/// The jaq data kind of our evaluations: JSON values, plus a guard reached
/// on every term lookup.
pub(crate) struct JqData;

impl DataT for JqData {
    type V<'a> = Val;
    type Data<'a> = GuardedData<'a>;
}

/// The run-time data: the program's look-up table and the guard.
#[derive(Clone)]
pub(crate) struct GuardedData<'a> {
    pub(super) lut: &'a jaq_core::Lut<JqData>,
    pub(super) guard: &'a Guard,
}

impl<'a> HasLut<'a, JqData> for GuardedData<'a> {
    fn lut(&self) -> &'a jaq_core::Lut<JqData> {
        self.guard.check();
        self.lut
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_stack_grows_with_the_timeout() {
        use std::time::Duration;
        assert_eq!(worker_stack(Duration::from_millis(300)), WORKER_STACK);
        assert_eq!(worker_stack(Duration::from_secs(5)), 1000 * 1024 * 1024);
        assert_eq!(worker_stack(Duration::from_secs(3600)), MAX_WORKER_STACK);
    }

    #[test]
    fn cancelled_guard_unwinds_with_stop() {
        let cancel = Arc::new(AtomicBool::new(true));
        let guard = Guard::new(cancel);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| guard.check()));
        let payload = r.unwrap_err();
        assert_eq!(payload.downcast_ref::<Stop>(), Some(&Stop::Cancelled));
    }
}
