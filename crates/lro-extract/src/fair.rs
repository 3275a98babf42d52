//! The fair queue behind every slot of an extraction: [`FairQueue`] decides
//! who runs next; the waiting is the caller's (a condition variable in the
//! extractor's gate, an async notification for the store's download slots
//! in lro-tower), so both share one rule.
//!
//! The rule: at most `total` run at once, at most `per` of them for one
//! principal; a free slot goes to the waiting principal that runs the
//! fewest now (ties: the one waiting longest), and within a principal to
//! its oldest waiter. So a principal at its limit never holds up the
//! others, and principals flooding the queue cannot refill every slot from
//! their own queues: a newcomer running nothing takes the next slot that
//! frees.
//!
//! ```
//! use lro_core::principal::Principal;
//! use lro_extract::fair::FairQueue;
//!
//! let (a, b) = (Principal::new("a"), Principal::new("b"));
//! let mut q = FairQueue::default();
//! let first = q.wait(&a);
//! assert!(q.admit(first, 2, 2));
//! let (again, other) = (q.wait(&a), q.wait(&b));
//! // `b` runs nothing, `a` one: the free slot is `b`'s, though `a` asked first.
//! assert!(!q.admit(again, 2, 2) && q.admit(other, 2, 2));
//! assert!(!q.admit(again, 2, 2), "no free slot");
//! q.release(&a);
//! assert!(q.admit(again, 2, 2));
//! ```

use std::collections::{HashMap, VecDeque};

use lro_core::principal::Principal;

/// Who runs and who waits; see the module docs. Keep it under the lock the
/// waiters wait on.
#[derive(Debug, Default)]
pub struct FairQueue {
    running: usize,
    per: HashMap<Principal, usize>,
    queue: VecDeque<(u64, Principal)>,
    next: u64,
}

impl FairQueue {
    /// Queues a waiter of `principal`; its ticket.
    pub fn wait(&mut self, principal: &Principal) -> u64 {
        let ticket = self.next;
        self.next += 1;
        self.queue.push_back((ticket, principal.clone()));
        ticket
    }

    /// Runs `ticket` when a slot is free and it is the next waiter, and
    /// says whether it did. `total` and `per` are the limits (at least 1).
    pub fn admit(&mut self, ticket: u64, total: usize, per: usize) -> bool {
        if self.running >= total.max(1) || self.next_waiter(per.max(1)) != Some(ticket) {
            return false;
        }
        let Some(at) = self.queue.iter().position(|(t, _)| *t == ticket) else {
            return false;
        };
        let (_, principal) = self.queue.remove(at).expect("found");
        self.running += 1;
        *self.per.entry(principal).or_default() += 1;
        true
    }

    /// Takes `ticket` out of the queue: it gave up waiting.
    pub fn leave(&mut self, ticket: u64) {
        self.queue.retain(|(t, _)| *t != ticket);
    }

    /// One of `principal`'s runs ended.
    pub fn release(&mut self, principal: &Principal) {
        self.running = self.running.saturating_sub(1);
        if let Some(n) = self.per.get_mut(principal) {
            *n -= 1;
            if *n == 0 {
                self.per.remove(principal);
            }
        }
    }

    /// Runs in progress.
    pub fn running(&self) -> usize {
        self.running
    }

    /// Waiters in the queue.
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }

    /// Runs of `principal` in progress.
    pub fn running_of(&self, principal: &Principal) -> usize {
        self.per.get(principal).copied().unwrap_or(0)
    }

    /// The oldest waiter of the principal under `per` that runs the fewest,
    /// the principal waiting longest first among equals. The queue is in
    /// ticket order, so a principal's first waiter is its oldest.
    fn next_waiter(&self, per: usize) -> Option<u64> {
        let mut best: Option<(usize, u64)> = None;
        for (ticket, principal) in &self.queue {
            let running = self.running_of(principal);
            if running < per && best.is_none_or(|(fewest, _)| running < fewest) {
                best = Some((running, *ticket));
            }
        }
        best.map(|(_, ticket)| ticket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_slot_goes_to_the_waiter_running_the_fewest() {
        let (a, b, c) = (
            Principal::new("a"),
            Principal::new("b"),
            Principal::new("c"),
        );
        let mut q = FairQueue::default();
        for p in [&a, &a, &b, &b] {
            let t = q.wait(p);
            assert!(q.admit(t, 4, 2));
        }
        // `a` and `b` each have a waiter older than the newcomer's.
        let (a2, b2, c1) = (q.wait(&a), q.wait(&b), q.wait(&c));
        assert!(!q.admit(c1, 4, 2), "every slot is taken");
        q.release(&a);
        assert!(!q.admit(a2, 4, 2) && q.admit(c1, 4, 2));
        // Among equals (one each) the one waiting longest: `a` before `b`.
        q.release(&b);
        assert!(!q.admit(b2, 4, 2) && q.admit(a2, 4, 2));
        assert_eq!((q.running(), q.running_of(&a)), (4, 2));
    }

    #[test]
    fn a_principal_at_its_limit_does_not_block_the_queue() {
        let (a, b) = (Principal::new("a"), Principal::new("b"));
        let mut q = FairQueue::default();
        let t = q.wait(&a);
        assert!(q.admit(t, 2, 1));
        let (blocked, next) = (q.wait(&a), q.wait(&b));
        assert!(!q.admit(blocked, 2, 1) && q.admit(next, 2, 1));
        q.leave(blocked);
        assert_eq!(q.next_waiter(1), None);
    }
}
