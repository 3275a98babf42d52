//! The book of bound sessions: who owns each, what is in progress in it,
//! how many each principal holds, and which to close for room at the caps
//! ([`SessionCaps`]).

use std::{
    collections::{HashMap, HashSet, VecDeque},
    time::{Duration, Instant},
};

use lro_core::principal::Principal;

use crate::refusal::Refusal;

/// Bindings kept at most; far above any face's session cap.
pub const MAX_BOUND: usize = 65_536;

/// Sessions expired at once by one newcomer, so none waits on thousands of
/// `DELETE`s.
const EXPIRE_AT_ONCE: usize = 64;

/// How many sessions may be open, and when an idle one counts as ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionCaps {
    /// Sessions open at once, all principals together.
    pub total: usize,
    /// Sessions one principal may hold open.
    pub per_principal: usize,
    /// A session with nothing in progress for this long is one the face
    /// ends anyway (rmcp's keep-alive); at a cap it is closed for anyone.
    pub idle_timeout: Option<Duration>,
}

impl Default for SessionCaps {
    fn default() -> Self {
        Self::new()
    }
}

impl SessionCaps {
    /// No cap below [`MAX_BOUND`], no idle timeout.
    #[must_use]
    pub fn new() -> Self {
        Self {
            total: MAX_BOUND,
            per_principal: MAX_BOUND,
            idle_timeout: None,
        }
    }

    /// Sets [`SessionCaps::total`] (1 to [`MAX_BOUND`]). Defaults to
    /// [`MAX_BOUND`].
    #[must_use]
    pub fn total(mut self, n: usize) -> Self {
        self.total = n.clamp(1, MAX_BOUND);
        self
    }

    /// Sets [`SessionCaps::per_principal`] (at least 1). Defaults to
    /// [`MAX_BOUND`].
    #[must_use]
    pub fn per_principal(mut self, n: usize) -> Self {
        self.per_principal = n.max(1);
        self
    }

    /// Sets [`SessionCaps::idle_timeout`]. Defaults to none.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }
}

/// One bound session.
pub(super) struct Bound {
    owner: Option<Principal>,
    /// The digest of the token that opened it.
    token: Option<[u8; 32]>,
    /// Requests in progress other than `GET` streams.
    calls: usize,
    /// `GET` streams open.
    streams: usize,
    /// When a request last began or ended.
    last: Instant,
}

#[derive(Default)]
pub(super) struct Book {
    pub(super) sessions: HashMap<String, Bound>,
    order: VecDeque<String>,
    /// Sessions bound, and being opened, per principal.
    held: HashMap<Option<Principal>, usize>,
    opening: HashMap<Option<Principal>, usize>,
    /// Ids whose binding was dropped for room: refused, never served
    /// unbound. Bounded like the bindings.
    evicted: HashSet<String>,
    evicted_order: VecDeque<String>,
}

/// A session to close: its id and owner.
pub(super) type Closing = (String, Option<Principal>);

impl Book {
    /// Whether `caller` may use `session`.
    pub(super) fn admits(&self, session: &str, caller: Option<&Principal>) -> bool {
        match self.sessions.get(session) {
            Some(bound) => bound.owner.as_ref() == caller,
            None => !self.evicted.contains(session),
        }
    }

    pub(super) fn bind(
        &mut self,
        session: String,
        owner: Option<Principal>,
        token: Option<[u8; 32]>,
        now: Instant,
    ) {
        if self.sessions.contains_key(&session) {
            return;
        }
        *self.held.entry(owner.clone()).or_default() += 1;
        let bound = Bound {
            owner,
            token,
            calls: 0,
            streams: 0,
            last: now,
        };
        self.sessions.insert(session.clone(), bound);
        self.order.push_back(session);
        while self.order.len() > MAX_BOUND {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if self.forget(&old).is_some() {
                self.evict(old);
            }
        }
    }

    /// Refuses `session` from now on, to everyone.
    fn evict(&mut self, session: String) {
        self.evicted.insert(session.clone());
        self.evicted_order.push_back(session);
        while self.evicted_order.len() > MAX_BOUND {
            if let Some(old) = self.evicted_order.pop_front() {
                self.evicted.remove(&old);
            }
        }
    }

    /// Unbinds `session` to close it: refused from now on, even should its
    /// `DELETE` fail, so it is never served unbound.
    fn close(&mut self, session: String) -> Option<Closing> {
        let bound = self.unbind(&session)?;
        self.evict(session.clone());
        Some((session, bound.owner))
    }

    /// Closes every session a token in `revoked` opened.
    pub(super) fn close_revoked(&mut self, revoked: &[[u8; 32]]) -> Vec<Closing> {
        let ids: Vec<String> = self
            .sessions
            .iter()
            .filter(|(_, b)| b.token.is_some_and(|t| revoked.contains(&t)))
            .map(|(id, _)| id.clone())
            .collect();
        ids.into_iter().filter_map(|id| self.close(id)).collect()
    }

    /// Drops `session`'s binding, not its place in `order`.
    fn forget(&mut self, session: &str) -> Option<Bound> {
        let bound = self.sessions.remove(session)?;
        if let Some(n) = self.held.get_mut(&bound.owner) {
            *n -= 1;
            if *n == 0 {
                self.held.remove(&bound.owner);
            }
        }
        Some(bound)
    }

    pub(super) fn unbind(&mut self, session: &str) -> Option<Bound> {
        let bound = self.forget(session)?;
        self.order.retain(|s| s != session);
        Some(bound)
    }

    /// Sessions of `who`, open or being opened.
    pub(super) fn count(&self, who: &Option<Principal>) -> usize {
        self.held.get(who).copied().unwrap_or(0) + self.opening.get(who).copied().unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.sessions.len() + self.opening.values().sum::<usize>()
    }

    fn at_a_cap(&self, caller: &Option<Principal>, caps: &SessionCaps) -> bool {
        self.count(caller) >= caps.per_principal || self.total() >= caps.total
    }

    /// Room for a new session of `caller`: the sessions to close first, or
    /// the refusal. On success the new session counts as being opened
    /// until [`Book::opened`].
    pub(super) fn make_room(
        &mut self,
        caller: &Option<Principal>,
        caps: &SessionCaps,
        now: Instant,
    ) -> Result<Vec<Closing>, Refusal> {
        let mut closing = Vec::new();
        if self.at_a_cap(caller, caps)
            && let Some(timeout) = caps.idle_timeout
        {
            let expired: Vec<String> = self
                .sessions
                .iter()
                .filter(|(_, b)| b.calls == 0 && b.streams == 0 && now - b.last >= timeout)
                .map(|(id, _)| id.clone())
                .take(EXPIRE_AT_ONCE)
                .collect();
            closing.extend(expired.into_iter().filter_map(|id| self.close(id)));
        }
        if self.at_a_cap(caller, caps) {
            let own_idle = self
                .sessions
                .iter()
                .filter(|(_, b)| &b.owner == caller && b.calls == 0)
                .min_by_key(|(_, b)| b.last)
                .map(|(id, _)| id.clone());
            let Some(id) = own_idle else {
                return Err(if self.count(caller) >= caps.per_principal {
                    Refusal::PrincipalSessions(caps.per_principal)
                } else {
                    Refusal::ServerSessions(caps.total)
                });
            };
            closing.extend(self.close(id));
        }
        *self.opening.entry(caller.clone()).or_default() += 1;
        Ok(closing)
    }

    /// A session [`Book::make_room`] made room for is open, or was not.
    pub(super) fn opened(&mut self, caller: &Option<Principal>) {
        if let Some(n) = self.opening.get_mut(caller) {
            *n -= 1;
            if *n == 0 {
                self.opening.remove(caller);
            }
        }
    }

    /// A request in `session` begins; whether it is bound.
    pub(super) fn begin(&mut self, session: &str, stream: bool, now: Instant) -> bool {
        let Some(bound) = self.sessions.get_mut(session) else {
            return false;
        };
        if stream {
            bound.streams += 1;
        } else {
            bound.calls += 1;
        }
        bound.last = now;
        true
    }

    pub(super) fn end(&mut self, session: &str, stream: bool, now: Instant) {
        if let Some(bound) = self.sessions.get_mut(session) {
            let n = if stream {
                &mut bound.streams
            } else {
                &mut bound.calls
            };
            *n = n.saturating_sub(1);
            bound.last = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revoked_token_closes_the_sessions_it_opened_only() {
        let mut book = Book::default();
        let alice = Some(Principal::new("alice"));
        let (old, new) = ([1u8; 32], [2u8; 32]);
        book.bind("a-old".into(), alice.clone(), Some(old), Instant::now());
        book.bind("a-new".into(), alice.clone(), Some(new), Instant::now());
        book.bind(
            "b".into(),
            Some(Principal::new("bob")),
            Some([3; 32]),
            Instant::now(),
        );
        let closed = book.close_revoked(&[old]);
        assert_eq!(closed, [("a-old".to_owned(), alice.clone())]);
        assert!(!book.admits("a-old", alice.as_ref()));
        assert!(book.admits("a-new", alice.as_ref()));
        assert_eq!(book.total(), 2);
    }

    #[test]
    fn at_a_cap_sessions_idle_past_the_timeout_are_closed_for_anyone() {
        let mut book = Book::default();
        let caps = SessionCaps::new()
            .total(1)
            .idle_timeout(Some(Duration::from_secs(60)));
        let long_ago = Instant::now();
        book.bind("old".into(), Some(Principal::new("bob")), None, long_ago);
        let later = long_ago + Duration::from_secs(61);
        let closing = book.make_room(&Some(Principal::new("alice")), &caps, later);
        assert_eq!(
            closing.unwrap(),
            [("old".into(), Some(Principal::new("bob")))]
        );
    }

    #[test]
    fn past_the_cap_the_oldest_session_is_refused_not_unbound() {
        let mut book = Book::default();
        let alice = Some(Principal::new("alice"));
        for i in 0..=MAX_BOUND {
            book.bind(format!("s-{i}"), alice.clone(), None, Instant::now());
        }
        assert_eq!(book.sessions.len(), MAX_BOUND);
        assert!(!book.admits("s-0", alice.as_ref()), "evicted: refused");
        assert!(book.admits("s-1", alice.as_ref()));
        assert!(book.admits("never-bound", None), "the service decides");
    }
}
