//! Object keys: relative paths under the store's prefix, of plain
//! components only, so a key means the same object on every backend and
//! can never leave the store's directory or prefix.
//!
//! A component is non-empty, not `.` or `..`, does not start with a dot
//! (names starting with a dot are the local backend's temp files), and has
//! no `\` or control character.
//!
//! ```
//! use lro_store::Key;
//!
//! let key = Key::new("p-1a2b/01K.jsonl").unwrap();
//! assert_eq!(key.as_str(), "p-1a2b/01K.jsonl");
//! assert_eq!(key.components().count(), 2);
//! assert!(Key::new("/abs").is_err());
//! assert!(Key::new("a/../b").is_err());
//! assert!(Key::new("a/.tmp").is_err());
//! ```

use std::fmt;

use crate::StoreError;

/// A validated object key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(String);

impl Key {
    /// Checks `key` and wraps it.
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidKey`] for an empty key, an absolute one, or one
    /// with an empty, `.`, `..` or dot-prefixed component, a `\` or a
    /// control character.
    pub fn new(key: impl Into<String>) -> Result<Self, StoreError> {
        let key = key.into();
        match problem(&key) {
            Some(reason) => Err(StoreError::InvalidKey { key, reason }),
            None => Ok(Self(key)),
        }
    }

    /// The key as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its `/`-separated components.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// Whether this key is `prefix` itself or lies under it (whole
    /// components: `a/b` is under `a`, `ab` is not).
    pub fn is_under(&self, prefix: &Key) -> bool {
        self.0 == prefix.0
            || (self.0.starts_with(&prefix.0) && self.0.as_bytes()[prefix.0.len()] == b'/')
    }
}

fn problem(key: &str) -> Option<&'static str> {
    if key.is_empty() {
        return Some("empty");
    }
    if key.starts_with('/') {
        return Some("absolute: keys are relative to the store's prefix");
    }
    if key.chars().any(|c| c == '\\' || c.is_control()) {
        return Some("a backslash or control character");
    }
    for part in key.split('/') {
        if part.is_empty() {
            return Some("an empty component");
        }
        if part == "." || part == ".." {
            return Some("a `.` or `..` component");
        }
        if part.starts_with('.') {
            return Some("a component starting with a dot (reserved for temp files)");
        }
    }
    None
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Key {
    type Err = StoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Key::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_relative_paths_are_keys() {
        for ok in ["a", "a/b", "p-0f/01KABC.jsonl", "x y/z"] {
            assert!(Key::new(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn anything_that_could_escape_or_collide_is_refused() {
        for bad in [
            "", "/a", "a/", "a//b", ".", "..", "a/../b", "./a", ".tmp-1", "a/.x", "a\\b", "a\nb",
        ] {
            let err = Key::new(bad).unwrap_err();
            assert!(
                err.to_string().contains("invalid store key"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn under_means_whole_components() {
        let k = Key::new("ab/c").unwrap();
        assert!(k.is_under(&Key::new("ab").unwrap()));
        assert!(!k.is_under(&Key::new("a").unwrap()));
        assert!(k.is_under(&k));
    }
}
