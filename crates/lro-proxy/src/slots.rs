//! [`Slots`]: the one count of a command upstream's children, for both
//! wires at once. A 2025-11-25 session's own child and a principal's
//! sessionless (2026-07-28) child each hold one of
//! [`ProxyConfig::max_sessions`](crate::ProxyConfig::max_sessions).
//!
//! The rule, when a new child needs a slot:
//!
//! - each principal holds at most half the slots (at least one); the
//!   anonymous principal, the one caller of a face without tokens (and of
//!   stdio), may hold them all;
//! - at its share, a newcomer may take the slot of one of its own
//!   principal's idle sessions or children (idle longest first);
//! - when every slot is taken, it may also take another principal's idle
//!   sessionless child, whose next call starts a new one;
//! - it never takes another principal's 2025-11-25 session, idle or not:
//!   that ends at its idle timeout or on `DELETE`;
//! - otherwise it waits a moment for a slot to free, then is refused
//!   ([`ProxyError::TooManySessions`], [`ProxyError::PrincipalShare`]).
//!
//! "Idle" is no call in progress; the reapers in [`crate::reclaim`] and
//! [`crate::pool`] end what stays idle for its timeout.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use lro_core::principal::Principal;
use rmcp::{RoleServer, service::RequestContext};
use tokio::sync::Notify;

use crate::ProxyError;

/// How long a new child waits for a slot, when none is free or can be
/// reclaimed now: a session just closed gives its slot back once its child
/// is ended.
const SLOT_WAIT: Duration = Duration::from_secs(1);

/// How often a waiting claim looks again for a seat that fell idle.
const RECHECK: Duration = Duration::from_millis(100);

/// What holds a slot, as the accounting sees it.
pub(crate) trait Seat: Send + Sync + 'static {
    /// When it was last used, while nothing is in progress on it; `None`
    /// while a call is (it is never reclaimed then).
    fn idle_since(&self) -> Option<Instant>;

    /// Whether it serves sessionless requests: another principal may
    /// reclaim it when every slot is taken.
    fn sessionless(&self) -> bool;

    /// Ends it, if it is still idle; whether it ends (its slot comes back
    /// once its child is ended).
    fn reclaim(&self) -> BoxFuture<'static, bool>;
}

/// A seat that is never reclaimed: a session of the stdio face.
pub(crate) struct Pinned;

impl Seat for Pinned {
    fn idle_since(&self) -> Option<Instant> {
        None
    }

    fn sessionless(&self) -> bool {
        false
    }

    fn reclaim(&self) -> BoxFuture<'static, bool> {
        Box::pin(std::future::ready(false))
    }
}

/// Who asks for a slot, and what will hold it.
#[derive(Clone)]
pub(crate) struct Claim {
    pub(crate) principal: Principal,
    pub(crate) seat: Arc<dyn Seat>,
}

/// Who is calling: the principal the HTTP face's authentication put in the
/// request's extensions; anonymous on stdio and without authentication.
pub(crate) fn principal(cx: &RequestContext<RoleServer>) -> Principal {
    cx.extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
        .cloned()
        .unwrap_or_else(Principal::anonymous)
}

/// The slots of one proxy.
pub(crate) struct Slots {
    max: usize,
    /// How long a claim waits for a slot ([`SLOT_WAIT`]).
    wait: Duration,
    book: Mutex<Book>,
    /// Told whenever a slot is given back.
    freed: Notify,
}

impl std::fmt::Debug for Slots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slots")
            .field("max", &self.max)
            .field("held", &self.book().held.len())
            .finish()
    }
}

#[derive(Default)]
struct Book {
    next: u64,
    held: HashMap<u64, Held>,
}

struct Held {
    principal: Principal,
    seat: Arc<dyn Seat>,
    /// Chosen to make room: out of every count but the children running,
    /// and not chosen twice.
    leaving: bool,
}

/// What a newcomer does next.
enum Decision {
    Admit(u64),
    /// Wait for `victim` to go; `mine` is already counted.
    Reclaim {
        mine: u64,
        victim: u64,
        seat: Arc<dyn Seat>,
    },
    Wait(ProxyError),
}

/// One slot, given back when dropped.
pub(crate) struct Slot {
    slots: Arc<Slots>,
    key: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.release(self.key);
    }
}

impl Slots {
    /// `max` slots (at least 1).
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            wait: SLOT_WAIT,
            book: Mutex::default(),
            freed: Notify::new(),
        })
    }

    /// The most slots `principal` may hold.
    fn share(&self, principal: &Principal) -> usize {
        if principal.is_anonymous() {
            self.max
        } else {
            (self.max / 2).max(1)
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn release(&self, key: u64) {
        self.book().held.remove(&key);
        self.freed.notify_waiters();
    }

    /// A slot for `claim`, by the rule in the module docs.
    pub(crate) async fn acquire(self: &Arc<Self>, claim: Claim) -> Result<Slot, ProxyError> {
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            // Registered before looking, so that a slot given back in
            // between is not missed.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            match self.decide(&claim) {
                Decision::Admit(key) => return Ok(self.slot(key)),
                Decision::Reclaim { mine, victim, seat } => {
                    let mine = self.slot(mine);
                    if seat.reclaim().await {
                        if self.gone(victim, deadline).await {
                            return Ok(mine);
                        }
                        return Err(self.full());
                    }
                    // It became busy: it stays, and this claim looks again.
                    if let Some(held) = self.book().held.get_mut(&victim) {
                        held.leaving = false;
                    }
                    drop(mine);
                }
                Decision::Wait(refusal) => {
                    let now = tokio::time::Instant::now();
                    if now >= deadline {
                        return Err(refusal);
                    }
                    // A seat whose call ends sends no news: look again
                    // now and then, as well as when a slot is given back.
                    let _ = tokio::time::timeout_at(deadline.min(now + RECHECK), freed).await;
                }
            }
        }
    }

    fn slot(self: &Arc<Self>, key: u64) -> Slot {
        Slot {
            slots: self.clone(),
            key,
        }
    }

    fn full(&self) -> ProxyError {
        ProxyError::TooManySessions { max: self.max }
    }

    /// Waits until `victim` has given its slot back; whether it did by
    /// `deadline`.
    async fn gone(&self, victim: u64, deadline: tokio::time::Instant) -> bool {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if !self.book().held.contains_key(&victim) {
                return true;
            }
            if tokio::time::timeout_at(deadline, freed).await.is_err() {
                return false;
            }
        }
    }

    fn decide(&self, claim: &Claim) -> Decision {
        let share = self.share(&claim.principal);
        let mut book = self.book();
        let counted = || book.held.values().filter(|held| !held.leaving);
        let total = counted().count();
        let own = counted()
            .filter(|held| held.principal == claim.principal)
            .count();
        if own < share && total < self.max {
            return Decision::Admit(book.insert(claim));
        }
        let at_share = own >= share;
        let idle = |key: &u64, held: &Held| held.seat.idle_since().map(|since| (since, *key));
        let own_idle = book
            .held
            .iter()
            .filter(|(_, held)| !held.leaving && held.principal == claim.principal)
            .filter_map(|(key, held)| idle(key, held))
            .min();
        // Another's idle sessionless child frees a slot, but not a share.
        let victim = own_idle.or_else(|| {
            (!at_share)
                .then(|| {
                    book.held
                        .iter()
                        .filter(|(_, held)| !held.leaving && held.seat.sessionless())
                        .filter_map(|(key, held)| idle(key, held))
                        .min()
                })
                .flatten()
        });
        match victim {
            Some((_, victim)) => {
                let held = book.held.get_mut(&victim).expect("chosen from the book");
                held.leaving = true;
                let seat = held.seat.clone();
                Decision::Reclaim {
                    mine: book.insert(claim),
                    victim,
                    seat,
                }
            }
            // A principal whose share is every slot is refused as "full".
            None if at_share && share < self.max => Decision::Wait(ProxyError::PrincipalShare {
                share,
                max: self.max,
            }),
            None => Decision::Wait(self.full()),
        }
    }
}

impl Book {
    fn insert(&mut self, claim: &Claim) -> u64 {
        let key = self.next;
        self.next += 1;
        self.held.insert(
            key,
            Held {
                principal: claim.principal.clone(),
                seat: claim.seat.clone(),
                leaving: false,
            },
        );
        key
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    /// A seat idle since it was made (or busy), that a reclaim ends by
    /// dropping the slot it is handed.
    struct Fake {
        idle: Mutex<Option<Instant>>,
        sessionless: bool,
        slot: Mutex<Option<Slot>>,
        reclaimed: AtomicBool,
    }

    impl Seat for Fake {
        fn idle_since(&self) -> Option<Instant> {
            *self.idle.lock().unwrap()
        }

        fn sessionless(&self) -> bool {
            self.sessionless
        }

        fn reclaim(&self) -> BoxFuture<'static, bool> {
            self.reclaimed.store(true, Ordering::Relaxed);
            let slot = self.slot.lock().unwrap().take();
            drop(slot);
            Box::pin(std::future::ready(true))
        }
    }

    async fn hold(slots: &Arc<Slots>, who: &str, idle: bool, sessionless: bool) -> Arc<Fake> {
        let seat = Arc::new(Fake {
            idle: Mutex::new(idle.then(Instant::now)),
            sessionless,
            slot: Mutex::default(),
            reclaimed: AtomicBool::new(false),
        });
        let claim = Claim {
            principal: Principal::new(who),
            seat: seat.clone(),
        };
        let slot = slots.acquire(claim).await.expect("a slot");
        *seat.slot.lock().unwrap() = Some(slot);
        seat
    }

    /// Slots whose claims wait a moment only.
    fn slots(max: usize) -> Arc<Slots> {
        let mut slots = Slots::new(max);
        Arc::get_mut(&mut slots).expect("just made").wait = Duration::from_millis(100);
        slots
    }

    fn claim(who: &str) -> Claim {
        Claim {
            principal: Principal::new(who),
            seat: Arc::new(Pinned),
        }
    }

    #[tokio::test]
    async fn a_principal_at_its_share_takes_its_own_idle_seat_never_anothers_session() {
        let slots = slots(4);
        let alice = hold(&slots, "alice", true, false).await;
        let bob1 = hold(&slots, "bob", true, false).await;
        let _bob2 = hold(&slots, "bob", false, false).await;
        // Bob is at his share (2 of 4): his idle session goes, alice's stays.
        let _bob3 = slots.acquire(claim("bob")).await.unwrap();
        assert!(bob1.reclaimed.load(Ordering::Relaxed));
        assert!(!alice.reclaimed.load(Ordering::Relaxed));
        // Now both of bob's are busy: refused, as his share, after the wait.
        let err = slots.acquire(claim("bob")).await.err().unwrap();
        assert!(
            matches!(err, ProxyError::PrincipalShare { share: 2, .. }),
            "{err}"
        );
        assert!(!alice.reclaimed.load(Ordering::Relaxed));
    }

    #[tokio::test]
    async fn a_full_proxy_gives_anothers_idle_sessionless_child_never_a_session() {
        let slots = slots(4);
        let _a = hold(&slots, "alice", true, false).await;
        let carol = hold(&slots, "carol", true, true).await;
        let _b = hold(&slots, "bob", false, false).await;
        let _d = hold(&slots, "dave", true, false).await;
        let _erin = slots.acquire(claim("erin")).await.unwrap();
        assert!(
            carol.reclaimed.load(Ordering::Relaxed),
            "the idle sessionless child made room"
        );
        let err = slots.acquire(claim("frank")).await.err().unwrap();
        assert!(
            matches!(err, ProxyError::TooManySessions { max: 4 }),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_claim_at_its_share_takes_its_own_seat_once_the_call_on_it_ends() {
        let slots = slots(2);
        let bob = hold(&slots, "bob", false, false).await;
        // Polled first, the claim waits; then bob's call ends.
        let (next, ()) = tokio::join!(slots.acquire(claim("bob")), async {
            *bob.idle.lock().unwrap() = Some(Instant::now());
        });
        assert!(next.is_ok(), "refused though its own seat fell idle");
        assert!(bob.reclaimed.load(Ordering::Relaxed));
    }

    #[tokio::test]
    async fn the_anonymous_principal_may_hold_every_slot_and_one_given_back_is_taken() {
        let slots = slots(2);
        let anonymous = || Claim {
            principal: Principal::anonymous(),
            seat: Arc::new(Pinned),
        };
        let _a = slots.acquire(anonymous()).await.unwrap();
        let b = slots.acquire(anonymous()).await.unwrap();
        // The third waits (polled first), and takes the slot given back.
        let (third, ()) = tokio::join!(slots.acquire(anonymous()), async { drop(b) });
        assert!(third.is_ok(), "a slot given back within the wait is taken");
        let err = slots.acquire(anonymous()).await.err().unwrap();
        assert!(
            matches!(err, ProxyError::TooManySessions { max: 2 }),
            "{err}"
        );
    }
}
