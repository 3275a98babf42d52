//! The environment a remote store is configured from, passed explicitly:
//! the standard AWS variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`, and every other
//! `AWS_*` key object_store's `AmazonS3Builder::from_env` reads).
//!
//! [`Env::process`] takes them from the process, as `from_env` does; tests
//! and embedders pass their own, so two stores in one process can use
//! different credentials without changing the process environment.
//! `Debug` shows the names only, never a value.
//!
//! ```
//! use lro_store::Env;
//!
//! let env = Env::new()
//!     .var("AWS_ACCESS_KEY_ID", "AKID")
//!     .var("AWS_SECRET_ACCESS_KEY", "s3cr3t");
//! assert_eq!(env.get("AWS_ACCESS_KEY_ID"), Some("AKID"));
//! assert!(!format!("{env:?}").contains("s3cr3t"));
//! ```

use std::{collections::BTreeMap, fmt};

/// A set of environment variables.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// An empty environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// The `AWS_*` variables of this process (those that are valid UTF-8).
    pub fn process() -> Self {
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| k.starts_with("AWS_"))
            .collect()
    }

    /// Sets `name` to `value`. Defaults to unset.
    #[must_use]
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Every variable, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Env {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self {
            vars: iter
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names only: values include secret keys and session tokens.
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_a_value() {
        let env: Env = [("AWS_SECRET_ACCESS_KEY", "hunter2")].into_iter().collect();
        let shown = format!("{env:?}");
        assert!(shown.contains("AWS_SECRET_ACCESS_KEY"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn process_keeps_only_aws_variables() {
        assert!(Env::process().iter().all(|(k, _)| k.starts_with("AWS_")));
    }
}
