//! The limits of the `lro_extract` tool, under
//! `[prompt.offload.extraction]`.
//!
//! These are the operator's share of `lro_extract::ExtractConfig`: the
//! numbers here are its defaults too (lro-extract depends on this crate,
//! not the other way round), and `LroLayer` builds its extractor from them.
//!
//! ```
//! use lro_core::config::OffloadConfig;
//!
//! let cfg = OffloadConfig::from_parts(
//!     "[prompt.offload.extraction]\nmax_per_principal = 1",
//!     [("ATLATL_PROMPT__OFFLOAD__EXTRACTION__MEMORY_BUDGET_MIB", "256")],
//! )
//! .unwrap();
//! assert_eq!(cfg.extraction.max_per_principal, 1);
//! assert_eq!(cfg.extraction.memory_budget_mib, 256);
//! assert_eq!(cfg.extraction.max_concurrent, 4);
//! ```

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Default `memory_budget_mib`: 512 MiB.
pub const DEFAULT_EXTRACT_MEMORY_BUDGET_MIB: u64 = 512;
/// The smallest `memory_budget_mib` a configuration may set.
pub const MIN_EXTRACT_MEMORY_BUDGET_MIB: u64 = 64;
/// Default `max_concurrent`.
pub const DEFAULT_EXTRACT_MAX_CONCURRENT: u32 = 4;
/// Default `max_per_principal`.
pub const DEFAULT_EXTRACT_MAX_PER_PRINCIPAL: u32 = 2;
/// Default `queue_timeout_seconds`.
pub const DEFAULT_EXTRACT_QUEUE_TIMEOUT_SECONDS: u64 = 30;
/// Default `timeout_seconds`.
pub const DEFAULT_EXTRACT_TIMEOUT_SECONDS: u64 = 5;
/// The largest `timeout_seconds` and `queue_timeout_seconds`: a day.
/// Deadlines are computed as now plus the timeout, which overflows (and
/// panics) for values near `u64::MAX`.
pub const MAX_EXTRACT_TIMEOUT_SECONDS: u64 = 24 * 60 * 60;

/// The `[prompt.offload.extraction]` table: how much one `lro_extract`
/// query may cost, and how many run at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ExtractionLimits {
    /// Most memory one query may use in its worker process, in MiB, beyond
    /// what the worker maps at start-up; over it the query is stopped with
    /// a tool error. At least 64. Only a worker pool (the layer's default
    /// isolation) enforces it. Defaults to 512.
    pub memory_budget_mib: u64,
    /// Most extractions running at once, over every caller; at least 1.
    /// Defaults to 4.
    pub max_concurrent: u32,
    /// Most extractions running at once for one principal; at least 1.
    /// Above `max_concurrent` it is allowed and means `max_concurrent`.
    /// Defaults to 2.
    pub max_per_principal: u32,
    /// Seconds a call waits for a slot before it gets a "busy, try again"
    /// tool error; 0 answers busy at once when no slot is free. At most a
    /// day. Defaults to 30.
    pub queue_timeout_seconds: u64,
    /// Wall-clock seconds one query may run, reading the file included;
    /// 1 to a day. Defaults to 5.
    pub timeout_seconds: u64,
}

impl Default for ExtractionLimits {
    fn default() -> Self {
        Self {
            memory_budget_mib: DEFAULT_EXTRACT_MEMORY_BUDGET_MIB,
            max_concurrent: DEFAULT_EXTRACT_MAX_CONCURRENT,
            max_per_principal: DEFAULT_EXTRACT_MAX_PER_PRINCIPAL,
            queue_timeout_seconds: DEFAULT_EXTRACT_QUEUE_TIMEOUT_SECONDS,
            timeout_seconds: DEFAULT_EXTRACT_TIMEOUT_SECONDS,
        }
    }
}

impl ExtractionLimits {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the memory budget of one query, in MiB. Defaults to 512.
    #[must_use]
    pub fn memory_budget_mib(self, mib: u64) -> Self {
        Self {
            memory_budget_mib: mib,
            ..self
        }
    }

    /// Sets the most extractions running at once. Defaults to 4.
    #[must_use]
    pub fn max_concurrent(self, n: u32) -> Self {
        Self {
            max_concurrent: n,
            ..self
        }
    }

    /// Sets the most extractions running at once for one principal.
    /// Defaults to 2.
    #[must_use]
    pub fn max_per_principal(self, n: u32) -> Self {
        Self {
            max_per_principal: n,
            ..self
        }
    }

    /// Sets how many seconds a call waits for a slot. Defaults to 30.
    #[must_use]
    pub fn queue_timeout_seconds(self, secs: u64) -> Self {
        Self {
            queue_timeout_seconds: secs,
            ..self
        }
    }

    /// Sets how many seconds one query may run. Defaults to 5.
    #[must_use]
    pub fn timeout_seconds(self, secs: u64) -> Self {
        Self {
            timeout_seconds: secs,
            ..self
        }
    }

    /// Checks the ranges serde cannot express. A per-principal limit above
    /// the total is not refused: it only means the total, and refusing it
    /// would make an operator who lowers `max_concurrent` set both.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let out =
            |key: &str, reason| ConfigError::out_of_range(&format!("extraction.{key}"), reason);
        if self.memory_budget_mib < MIN_EXTRACT_MEMORY_BUDGET_MIB {
            return Err(out(
                "memory_budget_mib",
                "must be at least 64 (MiB): a query parses the records it reads within it (every \
                 one for a slurp, several times the file's size), and a smaller budget can stop \
                 ordinary queries over a result of a few MiB",
            ));
        }
        if self.max_concurrent == 0 {
            return Err(out(
                "max_concurrent",
                "must be at least 1: with 0 no extraction could ever run",
            ));
        }
        if self.max_per_principal == 0 {
            return Err(out(
                "max_per_principal",
                "must be at least 1: with 0 no caller could ever run an extraction",
            ));
        }
        if self.timeout_seconds == 0 {
            return Err(out(
                "timeout_seconds",
                "must be at least 1: with 0 every query would time out before it starts",
            ));
        }
        if self.timeout_seconds > MAX_EXTRACT_TIMEOUT_SECONDS {
            return Err(out("timeout_seconds", "must be at most 86400 (a day)"));
        }
        if self.queue_timeout_seconds > MAX_EXTRACT_TIMEOUT_SECONDS {
            return Err(out(
                "queue_timeout_seconds",
                "must be at most 86400 (a day)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::OffloadConfig;
    use crate::error::chain;

    const ALL_FIVE: &str = "[prompt.offload.extraction]
        memory_budget_mib = 128
        max_concurrent = 8
        max_per_principal = 3
        queue_timeout_seconds = 10
        timeout_seconds = 20";

    #[test]
    fn defaults_are_the_documented_numbers() {
        let cfg = OffloadConfig::from_toml_str("").unwrap();
        assert_eq!(cfg.extraction, ExtractionLimits::new());
        assert_eq!(
            ExtractionLimits::new(),
            ExtractionLimits::new()
                .memory_budget_mib(512)
                .max_concurrent(4)
                .max_per_principal(2)
                .queue_timeout_seconds(30)
                .timeout_seconds(5)
        );
    }

    #[test]
    fn the_table_sets_each_limit() {
        let cfg = OffloadConfig::from_toml_str(ALL_FIVE).unwrap();
        assert_eq!(
            cfg.extraction,
            ExtractionLimits::new()
                .memory_budget_mib(128)
                .max_concurrent(8)
                .max_per_principal(3)
                .queue_timeout_seconds(10)
                .timeout_seconds(20)
        );
    }

    #[test]
    fn env_variables_set_each_limit_over_the_file() {
        let cfg = OffloadConfig::from_parts(
            ALL_FIVE,
            [
                (
                    "ATLATL_PROMPT__OFFLOAD__EXTRACTION__MEMORY_BUDGET_MIB",
                    "1024",
                ),
                ("ATLATL_PROMPT__OFFLOAD__EXTRACTION__MAX_CONCURRENT", "16"),
                ("ATLATL_PROMPT__OFFLOAD__EXTRACTION__MAX_PER_PRINCIPAL", "5"),
                (
                    "ATLATL_PROMPT__OFFLOAD__EXTRACTION__QUEUE_TIMEOUT_SECONDS",
                    "0",
                ),
                ("ATLATL_PROMPT__OFFLOAD__EXTRACTION__TIMEOUT_SECONDS", "60"),
            ],
        )
        .unwrap();
        assert_eq!(
            cfg.extraction,
            ExtractionLimits::new()
                .memory_budget_mib(1024)
                .max_concurrent(16)
                .max_per_principal(5)
                .queue_timeout_seconds(0)
                .timeout_seconds(60)
        );
        // One variable alone leaves the other defaults be.
        let cfg = OffloadConfig::from_parts(
            "",
            [("ATLATL_PROMPT__OFFLOAD__EXTRACTION__MAX_CONCURRENT", "1")],
        )
        .unwrap();
        assert_eq!(cfg.extraction, ExtractionLimits::new().max_concurrent(1));
    }

    /// The error of loading `key = value` in the table, checked to name
    /// the key; its text.
    fn rejected(key: &str, value: &str) -> String {
        let err =
            OffloadConfig::from_toml_str(&format!("[prompt.offload.extraction]\n{key} = {value}"))
                .unwrap_err();
        let full = format!("prompt.offload.extraction.{key}");
        assert_eq!(err.key(), Some(full.as_str()), "{err}");
        let text = chain(&err).to_string();
        assert!(text.contains(&full), "{text}");
        text
    }

    #[test]
    fn a_budget_under_64_mib_is_rejected_with_the_reason() {
        let text = rejected("memory_budget_mib", "63");
        assert!(text.contains("at least 64"), "{text}");
        assert!(text.contains("a result of a few MiB"), "{text}");
        assert!(
            OffloadConfig::from_toml_str("[prompt.offload.extraction]\nmemory_budget_mib = 64")
                .is_ok()
        );
    }

    #[test]
    fn zero_concurrency_is_rejected() {
        let text = rejected("max_concurrent", "0");
        assert!(text.contains("at least 1"), "{text}");
    }

    #[test]
    fn zero_per_principal_is_rejected() {
        let text = rejected("max_per_principal", "0");
        assert!(text.contains("at least 1"), "{text}");
    }

    #[test]
    fn a_zero_or_overlong_timeout_is_rejected() {
        let text = rejected("timeout_seconds", "0");
        assert!(text.contains("at least 1"), "{text}");
        let text = rejected("timeout_seconds", "86401");
        assert!(text.contains("at most 86400"), "{text}");
    }

    #[test]
    fn an_overlong_queue_timeout_is_rejected_and_zero_is_not() {
        let text = rejected("queue_timeout_seconds", "9223372036854775807");
        assert!(text.contains("at most 86400"), "{text}");
        let cfg =
            OffloadConfig::from_toml_str("[prompt.offload.extraction]\nqueue_timeout_seconds = 0")
                .unwrap();
        assert_eq!(cfg.extraction.queue_timeout_seconds, 0);
    }

    #[test]
    fn per_principal_above_the_total_is_allowed() {
        let cfg = OffloadConfig::from_toml_str(
            "[prompt.offload.extraction]\nmax_concurrent = 1\nmax_per_principal = 2",
        )
        .unwrap();
        assert_eq!(
            (
                cfg.extraction.max_concurrent,
                cfg.extraction.max_per_principal
            ),
            (1, 2)
        );
    }

    #[test]
    fn a_bad_type_or_unknown_key_names_the_key_and_where_it_came_from() {
        let err = OffloadConfig::from_parts(
            "",
            [("ATLATL_PROMPT__OFFLOAD__EXTRACTION__MAX_CONCURRENT", "many")],
        )
        .unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.extraction.max_concurrent"));
        assert!(
            chain(&err).to_string().contains(
                "from environment variable ATLATL_PROMPT__OFFLOAD__EXTRACTION__MAX_CONCURRENT"
            ),
            "{err}"
        );
        let err = OffloadConfig::from_toml_str("[prompt.offload.extraction]\nmax_concurrent = -1")
            .unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.extraction.max_concurrent"));
        // The byte-sized key of ExtractConfig is not the operator's.
        let err = OffloadConfig::from_toml_str("[prompt.offload.extraction]\nmemory_budget = 1")
            .unwrap_err();
        assert!(
            chain(&err).to_string().contains("memory_budget_mib"),
            "{err}"
        );
    }
}
