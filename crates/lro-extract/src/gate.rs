//! Admission of extractions: at most `max_concurrent` at once, at most
//! `max_per_principal` of them for one principal, the rest waiting for at
//! most `queue_timeout`, in the [`FairQueue`](crate::fair::FairQueue) whose
//! rule is in `fair.rs`: a free slot goes to the waiting principal that
//! runs the fewest, so flooding principals cannot keep a newcomer waiting
//! longer than one extraction's time limit.

use std::{
    sync::{Condvar, Mutex, MutexGuard, PoisonError},
    time::Instant,
};

use lro_core::principal::Principal;

use crate::{ExtractConfig, ExtractError, fair::FairQueue};

/// The admission state one extractor and its clones share.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<FairQueue>,
    turn: Condvar,
}

/// A running extraction's slot, given back when dropped.
#[derive(Debug)]
pub(crate) struct Permit<'a> {
    gate: &'a Gate,
    principal: Principal,
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, FairQueue> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a slot for `principal`, at most `cfg.queue_timeout`.
    pub(crate) fn enter(
        &self,
        principal: &Principal,
        cfg: &ExtractConfig,
    ) -> Result<Permit<'_>, ExtractError> {
        let (total, per) = (cfg.max_concurrent.max(1), cfg.max_per_principal.max(1));
        let started = Instant::now();
        let deadline = started + cfg.queue_timeout;
        let mut state = self.lock();
        let ticket = state.wait(principal);
        loop {
            if state.admit(ticket, total, per) {
                return Ok(Permit {
                    gate: self,
                    principal: principal.clone(),
                });
            }
            let now = Instant::now();
            if now >= deadline {
                state.leave(ticket);
                let own = state.running_of(principal);
                let reason = if own >= per {
                    format!("this caller already runs {own} extractions (at most {per} at once)")
                } else {
                    format!(
                        "{} extractions already run (at most {total} at once)",
                        state.running()
                    )
                };
                drop(state);
                // Who is first may have changed.
                self.turn.notify_all();
                return Err(ExtractError::Busy {
                    reason,
                    waited: started.elapsed(),
                });
            }
            state = self
                .turn
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Extractions running now.
    #[cfg(test)]
    pub(crate) fn running(&self) -> usize {
        self.lock().running()
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.gate.lock().release(&self.principal);
        self.gate.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::{
        sync::{Arc, mpsc},
        thread,
        time::Duration,
    };

    use super::*;

    fn cfg(total: usize, per: usize, wait_ms: u64) -> ExtractConfig {
        ExtractConfig::default()
            .max_concurrent(total)
            .max_per_principal(per)
            .queue_timeout(Duration::from_millis(wait_ms))
    }

    #[test]
    fn per_principal_limit_then_busy_with_the_reason() {
        let gate = Gate::default();
        let a = Principal::new("a");
        let c = cfg(4, 2, 50);
        let _one = gate.enter(&a, &c).unwrap();
        let _two = gate.enter(&a, &c).unwrap();
        let e = gate.enter(&a, &c).unwrap_err().to_string();
        assert!(e.contains("busy") && e.contains("at most 2 at once"), "{e}");
        // Another principal still gets in.
        let _b = gate.enter(&Principal::new("b"), &c).unwrap();
        assert_eq!(gate.running(), 3);
    }

    #[test]
    fn a_slot_given_back_lets_the_next_in() {
        let gate = Arc::new(Gate::default());
        let c = cfg(1, 1, 10_000);
        let held = gate.enter(&Principal::anonymous(), &c).unwrap();
        let (tx, rx) = mpsc::channel();
        let waiter = {
            let gate = gate.clone();
            let c = c.clone();
            thread::spawn(move || {
                let p = gate.enter(&Principal::anonymous(), &c).map(|_| ());
                tx.send(p.is_ok()).unwrap();
            })
        };
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        drop(held);
        assert!(rx.recv_timeout(Duration::from_secs(10)).unwrap());
        waiter.join().unwrap();
        assert_eq!(gate.running(), 0);
    }
}
