//! [`LroScope`]: how a tool tells the layer about the full result set.
//!
//! The layer puts an `LroScope` into every `tools/call` request's extensions.
//! A tool that trims its output (token budgeting, pagination) hands the
//! untrimmed result set to the scope; the layer then evaluates the threshold
//! against that set, as the spec requires for `inject_context` (pre-budget)
//! and for pagination precedence (no cursor on an offloaded result). Without
//! the layer the scope is simply absent and the tool behaves as before.
//!
//! ```
//! use lro_tower::LroScope;
//! use lro_core::Detail;
//!
//! let scope = LroScope::new();
//! scope.set_full_result("[{\"id\":1},{\"id\":2}]".to_owned());
//! scope.set_detail(Detail::Medium);
//! scope.set_query("caching");
//! let hints = scope.take();
//! assert_eq!(hints.detail, Some(Detail::Medium));
//! assert!(hints.full_result.is_some());
//! ```

use std::sync::{Arc, Mutex};

use lro_core::Detail;
use rmcp::model::Extensions;

/// What a tool told the layer. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ScopeHints {
    /// The untrimmed result set as JSON text (an array, or an object with
    /// one array field). When set, the threshold is evaluated against it and
    /// it is what gets offloaded.
    pub full_result: Option<String>,
    /// Detail level the records are serialized at.
    pub detail: Option<Detail>,
    /// The query, for the file header.
    pub query: Option<String>,
    /// Operation name, overriding the configured mapping.
    pub operation: Option<String>,
    /// Score range of the result set.
    pub score_range: Option<(f64, f64)>,
}

/// A per-call handle shared between the layer and the tool. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct LroScope {
    hints: Arc<Mutex<ScopeHints>>,
}

impl LroScope {
    /// An empty scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// The scope of the current call, when the layer is in front of the tool.
    pub fn from_extensions(extensions: &Extensions) -> Option<Self> {
        extensions.get::<LroScope>().cloned()
    }

    fn update(&self, f: impl FnOnce(&mut ScopeHints)) {
        f(&mut self.hints.lock().expect("scope lock poisoned"));
    }

    /// Hands over the untrimmed result set (JSON text).
    pub fn set_full_result(&self, json: String) {
        self.update(|h| h.full_result = Some(json));
    }

    /// Declares the detail level of the records.
    pub fn set_detail(&self, detail: Detail) {
        self.update(|h| h.detail = Some(detail));
    }

    /// Declares the query.
    pub fn set_query(&self, query: impl Into<String>) {
        let query = query.into();
        self.update(|h| h.query = Some(query));
    }

    /// Declares the operation name.
    pub fn set_operation(&self, operation: impl Into<String>) {
        let operation = operation.into();
        self.update(|h| h.operation = Some(operation));
    }

    /// Declares the score range.
    pub fn set_score_range(&self, min: f64, max: f64) {
        self.update(|h| h.score_range = Some((min, max)));
    }

    /// Takes the hints, leaving the scope empty.
    pub fn take(&self) -> ScopeHints {
        std::mem::take(&mut *self.hints.lock().expect("scope lock poisoned"))
    }
}
