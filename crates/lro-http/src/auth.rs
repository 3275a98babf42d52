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

use std::{fmt, path::Path};

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
    #[error("cannot read the token file {path}: {source}")]
    File {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// The configured tokens and the principals they name. Empty means no
/// authentication: every request passes, with no principal (anonymous).
#[derive(Clone, Default)]
pub struct Tokens {
    entries: Vec<([u8; 32], Principal)>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tokens({} configured)", self.entries.len())
    }
}

impl Tokens {
    /// No tokens: no authentication.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// How many tokens are configured.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no token is configured (no authentication).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds `token` for `principal`.
    ///
    /// # Errors
    ///
    /// [`TokenError`] when the token is empty or not header-safe, the
    /// principal is empty or `anonymous`, or the token names another
    /// principal already; `origin` says where the entry came from.
    pub fn add(&mut self, token: &str, principal: &str, origin: &str) -> Result<(), TokenError> {
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
        match self.entries.iter().find(|(h, _)| *h == hash) {
            Some((_, known)) if *known == principal => Ok(()),
            Some(_) => Err(TokenError::Conflict { origin }),
            None => {
                self.entries.push((hash, principal));
                Ok(())
            }
        }
    }

    /// Adds one `TOKEN=PRINCIPAL` entry (the principal follows the last
    /// `=`).
    ///
    /// # Errors
    ///
    /// As [`Tokens::add`], and when the entry has no `=`.
    pub fn add_entry(&mut self, entry: &str, origin: &str) -> Result<(), TokenError> {
        let (token, principal) =
            entry
                .trim()
                .rsplit_once('=')
                .ok_or_else(|| TokenError::Malformed {
                    origin: origin.to_owned(),
                })?;
        self.add(token.trim(), principal, origin)
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

    /// Adds the entries of the token file at `path`.
    ///
    /// # Errors
    ///
    /// [`TokenError::File`] when it cannot be read, else as
    /// [`Tokens::add_text`].
    pub fn add_file(&mut self, path: &Path) -> Result<(), TokenError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::File {
            path: shown.clone(),
            source,
        })?;
        self.add_text(&text, &shown)
    }

    /// The principal `presented` names, if any. Every configured token is
    /// compared, in constant time, whatever matches: the time taken says
    /// nothing about how close a guess was.
    #[must_use]
    pub fn authenticate(&self, presented: &str) -> Option<Principal> {
        let hash = digest(presented);
        let mut found = None;
        for (known, principal) in &self.entries {
            if bool::from(known.ct_eq(&hash)) {
                found = Some(principal);
            }
        }
        found.cloned()
    }
}

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
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            });
        match presented.and_then(|t| self.authenticate(t)) {
            Some(principal) => {
                tracing::debug!(principal = %principal.digest(), "authenticated");
                request.extensions_mut().insert(principal);
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
