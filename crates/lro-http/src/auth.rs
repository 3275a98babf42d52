//! Bearer tokens: who a token names, and the check of `Authorization:
//! Bearer …` that puts the caller's [`Principal`] into the request.
//!
//! Tokens come as `TOKEN=PRINCIPAL` entries (the principal is what follows
//! the last `=`, so base64 padding stays in the token) from flags, a file
//! (one a line, `#` comments) or an environment variable (entries separated
//! by newlines or commas), so that they stay out of `ps`. Only the SHA-256
//! of each token is kept, and a presented token is compared with every one
//! of them in constant time.
//!
//! ```
//! use lro_http::auth::Tokens;
//!
//! let mut tokens = Tokens::new();
//! tokens.add_entry("s3cret-a=alice", "--bearer")?;
//! tokens.add_text("# team\ns3cret-b=bob\n", "tokens.txt")?;
//! tokens.add_list("s3cret-c=carol,s3cret-d=dave", "LRO_BEARER_TOKENS")?;
//! assert_eq!(tokens.len(), 4);
//! assert_eq!(tokens.authenticate("s3cret-b").unwrap().name(), "bob");
//! assert!(tokens.authenticate("s3cret").is_none());
//! // Tokens never show: Debug names how many there are.
//! assert!(!format!("{tokens:?}").contains("s3cret"));
//! # Ok::<(), lro_http::auth::TokenError>(())
//! ```

use std::{
    collections::HashSet,
    fmt,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::SystemTime,
};

use axum::body::Body;
use http::{Request, header};
use lro_core::principal::Principal;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::{check::Check, refusal::Refusal};

/// The environment variable every HTTP face reads tokens from:
/// `TOKEN=PRINCIPAL` entries separated by newlines or commas.
pub const TOKENS_ENV: &str = "LRO_BEARER_TOKENS";

/// Why a token entry was refused. The text says where the entry came from
/// and never holds the token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The entry is not `TOKEN=PRINCIPAL` with both sides set, or the token
    /// has a character a header cannot carry (a space, a control).
    #[error(
        "{origin}: expected TOKEN=PRINCIPAL, with a token of visible ASCII characters and no spaces"
    )]
    Malformed {
        /// Where the entry came from (`--bearer`, `FILE line N`, …).
        origin: String,
    },
    /// The principal is the name unauthenticated callers get.
    #[error("{origin}: the principal `anonymous` is reserved for unauthenticated callers")]
    Reserved {
        /// Where the entry came from.
        origin: String,
    },
    /// The same token names two principals.
    #[error("{origin}: this token is already given to another principal")]
    Conflict {
        /// Where the second entry came from.
        origin: String,
    },
    /// The token file could not be read.
    #[error("cannot read the token file {path}")]
    File {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// The configured tokens and the principals they name. Empty means no
/// authentication: every request passes, with no principal (anonymous).
///
/// A token file is read again when it changes (its size, time or inode, seen
/// on the next request): a token removed from it is refused from then on,
/// one added is taken. A file that then does not read keeps its previous
/// tokens, with a warning. Clones share the tokens, and so every reload.
#[derive(Clone, Default)]
pub struct Tokens {
    state: Arc<RwLock<State>>,
}

type Entry = ([u8; 32], Principal);

#[derive(Default)]
struct State {
    /// From flags, variables and text.
    fixed: Vec<Entry>,
    /// From token files, each with what it held when last read.
    files: Vec<TokenFile>,
    /// Digests of tokens a reload took away, until the sessions layer
    /// takes them to end the sessions they opened.
    revoked: Vec<[u8; 32]>,
}

/// The digest of the token a request was authenticated with, in its
/// extensions: the sessions layer remembers which token opened a session,
/// to end it when that token is revoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Presented(pub(crate) [u8; 32]);

struct TokenFile {
    path: PathBuf,
    stamp: Option<Stamp>,
    entries: Vec<Entry>,
}

/// What tells a file changed: its size, modification time and inode (a
/// file replaced by a rename has another).
type Stamp = (u64, Option<SystemTime>, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok(), meta.ino()))
}

impl State {
    fn all(&self) -> impl Iterator<Item = &Entry> {
        self.fixed
            .iter()
            .chain(self.files.iter().flat_map(|f| f.entries.iter()))
    }

    /// Adds one entry to `list` (the fixed ones, or a file's being read),
    /// refusing a token that names another principal anywhere.
    fn add(
        &self,
        list: &mut Vec<Entry>,
        token: &str,
        principal: &str,
        origin: &str,
    ) -> Result<(), TokenError> {
        let origin = origin.to_owned();
        let principal = principal.trim();
        if token.is_empty() || principal.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(TokenError::Malformed { origin });
        }
        let principal = Principal::new(principal);
        if principal.is_anonymous() {
            return Err(TokenError::Reserved { origin });
        }
        let hash = digest(token);
        let known = self
            .all()
            .chain(list.iter())
            .find(|(h, _)| *h == hash)
            .map(|(_, p)| p.clone());
        match known {
            Some(known) if known == principal => Ok(()),
            Some(_) => Err(TokenError::Conflict { origin }),
            None => {
                list.push((hash, principal));
                Ok(())
            }
        }
    }

    /// The entries of a token file's text, checked against every other
    /// entry but those of file `skip` (the one being read again).
    fn parse(
        &self,
        text: &str,
        source: &str,
        skip: Option<usize>,
    ) -> Result<Vec<Entry>, TokenError> {
        let others = State {
            fixed: self.fixed.clone(),
            files: (self.files.iter().enumerate())
                .filter(|(i, _)| Some(*i) != skip)
                .map(|(_, f)| TokenFile {
                    path: f.path.clone(),
                    stamp: f.stamp,
                    entries: f.entries.clone(),
                })
                .collect(),
            revoked: Vec::new(),
        };
        let mut list = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let origin = format!("{source} line {}", n + 1);
            let (token, principal) = split_entry(line, &origin)?;
            others.add(&mut list, token, principal, &origin)?;
        }
        Ok(list)
    }
}

fn split_entry<'a>(entry: &'a str, origin: &str) -> Result<(&'a str, &'a str), TokenError> {
    let (token, principal) =
        entry
            .trim()
            .rsplit_once('=')
            .ok_or_else(|| TokenError::Malformed {
                origin: origin.to_owned(),
            })?;
    Ok((token.trim(), principal))
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tokens({} configured)", self.len())
    }
}

impl Tokens {
    /// No tokens: no authentication.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// How many tokens are configured.
    #[must_use]
    pub fn len(&self) -> usize {
        self.read().all().count()
    }

    /// Whether no token is configured (no authentication). A face with a
    /// token file is authenticated even while the file holds none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        let state = self.read();
        state.fixed.is_empty() && state.files.is_empty()
    }

    /// Adds `token` for `principal`.
    ///
    /// # Errors
    ///
    /// [`TokenError`] when the token is empty or not header-safe, the
    /// principal is empty or `anonymous`, or the token names another
    /// principal already; `origin` says where the entry came from.
    pub fn add(&mut self, token: &str, principal: &str, origin: &str) -> Result<(), TokenError> {
        let mut state = self.write();
        let mut fixed = std::mem::take(&mut state.fixed);
        let added = state.add(&mut fixed, token, principal, origin);
        state.fixed = fixed;
        added
    }

    /// Adds one `TOKEN=PRINCIPAL` entry (the principal follows the last
    /// `=`).
    ///
    /// # Errors
    ///
    /// As [`Tokens::add`], and when the entry has no `=`.
    pub fn add_entry(&mut self, entry: &str, origin: &str) -> Result<(), TokenError> {
        let (token, principal) = split_entry(entry, origin)?;
        self.add(token, principal, origin)
    }

    /// Adds the entries of a token file's text: one a line; blank lines and
    /// lines starting with `#` are skipped.
    ///
    /// # Errors
    ///
    /// As [`Tokens::add_entry`], naming `source` and the line.
    pub fn add_text(&mut self, text: &str, source: &str) -> Result<(), TokenError> {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            self.add_entry(line, &format!("{source} line {}", n + 1))?;
        }
        Ok(())
    }

    /// Adds the entries of an environment variable's value: separated by
    /// newlines or commas; blanks skipped.
    ///
    /// # Errors
    ///
    /// As [`Tokens::add_entry`], naming `source` and the entry's position.
    pub fn add_list(&mut self, text: &str, source: &str) -> Result<(), TokenError> {
        let entries = text.split([',', '\n']).map(str::trim);
        for (n, entry) in entries.filter(|e| !e.is_empty()).enumerate() {
            self.add_entry(entry, &format!("{source} entry {}", n + 1))?;
        }
        Ok(())
    }

    /// Adds the entries of the token file at `path`, and reads it again
    /// whenever it changes.
    ///
    /// # Errors
    ///
    /// [`TokenError::File`] when it cannot be read, else as
    /// [`Tokens::add_text`].
    pub fn add_file(&mut self, path: &Path) -> Result<(), TokenError> {
        let shown = path.display().to_string();
        let stamp = stamp(path);
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::File {
            path: shown.clone(),
            source,
        })?;
        let mut state = self.write();
        let entries = state.parse(&text, &shown, None)?;
        state.files.push(TokenFile {
            path: path.to_owned(),
            stamp,
            entries,
        });
        Ok(())
    }

    /// Reads again every token file that changed since it was last read.
    fn refresh(&self) {
        let changed: Vec<(usize, Option<Stamp>)> = {
            let state = self.read();
            state
                .files
                .iter()
                .enumerate()
                .filter_map(|(i, f)| {
                    let now = stamp(&f.path);
                    (now != f.stamp).then_some((i, now))
                })
                .collect()
        };
        if changed.is_empty() {
            return;
        }
        let mut state = self.write();
        let before: HashSet<[u8; 32]> = state.all().map(|(digest, _)| *digest).collect();
        for (i, now) in changed {
            let path = state.files[i].path.clone();
            let read = std::fs::read_to_string(&path)
                .map_err(|source| TokenError::File {
                    path: path.display().to_string(),
                    source,
                })
                .and_then(|text| state.parse(&text, &path.display().to_string(), Some(i)));
            state.files[i].stamp = now;
            match read {
                Ok(entries) => {
                    state.files[i].entries = entries;
                    tracing::info!(tokens = state.all().count(), "bearer token file reloaded");
                }
                // The text names the file and the line, never a token.
                Err(err) => tracing::warn!(
                    err = %lro_core::error::chain(&err),
                    "a bearer token file changed and does not read; its previous tokens stay"
                ),
            }
        }
        let after: HashSet<[u8; 32]> = state.all().map(|(digest, _)| *digest).collect();
        let revoked: Vec<[u8; 32]> = before.difference(&after).copied().collect();
        if !revoked.is_empty() {
            tracing::info!(
                revoked = revoked.len(),
                "bearer tokens revoked; their sessions end"
            );
            state.revoked.extend(revoked);
            // Bounded: a layer that never takes them keeps the latest.
            let excess = state.revoked.len().saturating_sub(MAX_REVOKED);
            state.revoked.drain(..excess);
        }
    }

    /// The digests of the tokens revoked since the last call, for the
    /// sessions layer to end the sessions they opened.
    pub(crate) fn take_revoked(&self) -> Vec<[u8; 32]> {
        if self.read().revoked.is_empty() {
            return Vec::new();
        }
        std::mem::take(&mut self.write().revoked)
    }

    /// The principal `presented` names, if any. Every configured token is
    /// compared, in constant time, whatever matches: the time taken says
    /// nothing about how close a guess was.
    #[must_use]
    pub fn authenticate(&self, presented: &str) -> Option<Principal> {
        let hash = digest(presented);
        let state = self.read();
        let mut found = None;
        for (known, principal) in state.all() {
            if bool::from(known.ct_eq(&hash)) {
                found = Some(principal);
            }
        }
        found.cloned()
    }
}

/// The most revoked digests kept for the sessions layer at once.
const MAX_REVOKED: usize = 4096;

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The bearer check: with tokens configured, a request without a valid
/// `Authorization: Bearer` token is refused ([`Refusal::Unauthorized`]), and
/// a valid one puts its [`Principal`] into the request's extensions. With
/// none configured every request passes with no principal (anonymous).
impl Check for Tokens {
    fn check(&self, request: &mut Request<Body>) -> Result<(), Refusal> {
        if self.is_empty() {
            return Ok(());
        }
        self.refresh();
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            });
        match presented.and_then(|t| Some((self.authenticate(t)?, digest(t)))) {
            Some((principal, token)) => {
                tracing::debug!(principal = %principal.digest(), "authenticated");
                request.extensions_mut().insert(principal);
                request.extensions_mut().insert(Presented(token));
                Ok(())
            }
            None => {
                tracing::debug!(sent = presented.is_some(), "refused: no valid bearer token");
                Err(Refusal::Unauthorized)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(auth: Option<&str>) -> Request<Body> {
        let mut r = Request::new(Body::empty());
        if let Some(a) = auth {
            r.headers_mut()
                .insert(header::AUTHORIZATION, a.parse().unwrap());
        }
        r
    }

    #[test]
    fn entries_parse_and_refuse_with_their_origin() {
        let mut t = Tokens::new();
        t.add_entry("abc==alice", "--bearer").unwrap();
        assert_eq!(t.authenticate("abc=").unwrap().name(), "alice");
        for bad in ["noequals", "=alice", "tok=", "to k=alice"] {
            let err = t.add_entry(bad, "--bearer").unwrap_err();
            assert!(err.to_string().starts_with("--bearer: "), "{err}");
            assert!(!err.to_string().contains("alice") || bad.contains("alice"));
        }
        let err = t.add_text("\n# c\nx=anonymous\n", "f.txt").unwrap_err();
        assert!(err.to_string().starts_with("f.txt line 3: "), "{err}");
        let err = t.add_list("a=b, abc==bob", "ENV").unwrap_err();
        assert!(matches!(err, TokenError::Conflict { .. }), "{err}");
        assert!(err.to_string().starts_with("ENV entry 2: "), "{err}");
        assert!(!err.to_string().contains("abc"), "never the token: {err}");
        t.add_entry("abc==alice", "again").unwrap();
    }

    #[test]
    fn a_changed_token_file_is_read_again_and_a_bad_one_keeps_its_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens");
        std::fs::write(&file, "old-tok=alice\nbob-tok=bob\n").unwrap();
        let mut t = Tokens::new();
        t.add_entry("fixed-tok=carol", "--bearer").unwrap();
        t.add_file(&file).unwrap();
        let guard = t.clone();
        let check = |token: &str| guard.check(&mut request(Some(&format!("Bearer {token}"))));
        assert!(check("old-tok").is_ok() && check("bob-tok").is_ok());
        // Alice's token is revoked and replaced, by a rename as editors do.
        let next = dir.path().join("tokens.new");
        std::fs::write(&next, "new-tok=alice\nbob-tok=bob\n").unwrap();
        std::fs::rename(&next, &file).unwrap();
        assert_eq!(check("old-tok"), Err(Refusal::Unauthorized));
        assert!(check("new-tok").is_ok() && check("bob-tok").is_ok());
        assert!(check("fixed-tok").is_ok(), "flags stay");
        // A file that does not read keeps what it held.
        std::fs::write(&file, "no equals sign, and longer than before\n").unwrap();
        assert!(check("new-tok").is_ok());
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn the_check_inserts_the_principal_or_refuses() {
        let mut t = Tokens::new();
        let mut open = request(None);
        assert!(t.check(&mut open).is_ok(), "no tokens: no check");
        assert!(open.extensions().get::<Principal>().is_none());
        t.add_entry("tok=alice", "x").unwrap();
        let mut good = request(Some("Bearer tok"));
        t.check(&mut good).unwrap();
        assert_eq!(
            good.extensions().get::<Principal>().unwrap().name(),
            "alice"
        );
        let mut lower = request(Some("bearer tok"));
        assert!(t.check(&mut lower).is_ok());
        for bad in [
            None,
            Some("Bearer tok2"),
            Some("Basic tok"),
            Some("tok"),
            Some("Bearer "),
        ] {
            assert_eq!(
                t.check(&mut request(bad)),
                Err(Refusal::Unauthorized),
                "{bad:?}"
            );
        }
    }
}
