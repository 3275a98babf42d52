//! Where offload files live and how much one extraction may cost.
//!
//! ```
//! use std::time::Duration;
//! use lro_extract::ExtractConfig;
//!
//! let cfg = ExtractConfig::new("/tmp/lro").timeout(Duration::from_secs(2));
//! assert_eq!(cfg.timeout, Duration::from_secs(2));
//! assert_eq!(cfg.max_output_bytes, 256 * 1024);
//! assert_eq!(cfg.max_output_values, 10_000);
//! ```

use std::{path::PathBuf, time::Duration};

use lro_core::config::{
    DEFAULT_EXTRACT_MAX_CONCURRENT, DEFAULT_EXTRACT_MAX_PER_PRINCIPAL,
    DEFAULT_EXTRACT_MEMORY_BUDGET_MIB, DEFAULT_EXTRACT_QUEUE_TIMEOUT_SECONDS,
    DEFAULT_EXTRACT_TIMEOUT_SECONDS, ExtractionLimits,
};

// The limits an operator sets (`[prompt.offload.extraction]`) take their
// defaults from lro-core, so the two cannot drift apart.

/// Default [`ExtractConfig::timeout`]: 5 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(DEFAULT_EXTRACT_TIMEOUT_SECONDS);
/// Default [`ExtractConfig::max_output_bytes`]: 256 KiB, about 64k tokens.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// Default [`ExtractConfig::max_output_values`].
pub const DEFAULT_MAX_OUTPUT_VALUES: usize = 10_000;
/// Default [`ExtractConfig::memory_budget`]: 512 MiB.
pub const DEFAULT_MEMORY_BUDGET: usize = DEFAULT_EXTRACT_MEMORY_BUDGET_MIB as usize * MIB;
/// Default [`ExtractConfig::max_concurrent`]: 4.
pub const DEFAULT_MAX_CONCURRENT: usize = DEFAULT_EXTRACT_MAX_CONCURRENT as usize;
/// Default [`ExtractConfig::max_per_principal`]: 2.
pub const DEFAULT_MAX_PER_PRINCIPAL: usize = DEFAULT_EXTRACT_MAX_PER_PRINCIPAL as usize;
/// Default [`ExtractConfig::queue_timeout`]: 30 s.
pub const DEFAULT_QUEUE_TIMEOUT: Duration =
    Duration::from_secs(DEFAULT_EXTRACT_QUEUE_TIMEOUT_SECONDS);

const MIB: usize = 1024 * 1024;

/// Configuration of an [`crate::Extractor`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtractConfig {
    /// The offload output directory: only offload files directly inside it
    /// can be read, and relative `file_path`s are resolved against it.
    pub root_dir: PathBuf,
    /// Wall-clock limit of one extraction, reading the file included.
    pub timeout: Duration,
    /// Most bytes of rendered output; more is cut with a notice.
    pub max_output_bytes: usize,
    /// Most results (values, lines); more are cut with a notice.
    pub max_output_values: usize,
    /// Most estimated tokens of output (measured with the extractor's
    /// estimator), or none; more are cut with a notice.
    pub max_output_tokens: Option<usize>,
    /// Whether simple filter shapes run on the raw record line and only the
    /// fields a filter reads are parsed. They give the same bytes as the
    /// plain jaq path, only faster; off, every record goes through jaq.
    pub fast_paths: bool,
    /// Whether a file is checked against its header's `bytes` (the
    /// records' size the writer puts there) before it is read, from the
    /// size the file system gives: one cut short or grown is refused as
    /// damaged. Off for a working copy its maker checked itself (a line
    /// window's partial copy of a stored result).
    pub check_size: bool,
    /// Whether [`crate::ExtractOutput::values`] is filled. Off, only its
    /// `text` (what the `lro_extract` tool shows) is built: cheaper, and
    /// much cheaper to send back from a worker process.
    pub keep_values: bool,
    /// Most memory one extraction may use beyond its worker's start-up
    /// size; over it the query is stopped with a tool error. Enforced by
    /// the worker pool ([`crate::WorkerPool`]); the in-process isolation
    /// `()` cannot bound memory.
    pub memory_budget: usize,
    /// Most extractions running at once, over every caller.
    pub max_concurrent: usize,
    /// Most extractions running at once for one principal; the rest wait
    /// their turn, so one caller cannot take every slot.
    pub max_per_principal: usize,
    /// How long an extraction waits for a slot before it gets a "busy, try
    /// again" error.
    pub queue_timeout: Duration,
}

impl Default for ExtractConfig {
    fn default() -> Self {
        Self {
            root_dir: std::env::temp_dir(),
            timeout: DEFAULT_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_output_values: DEFAULT_MAX_OUTPUT_VALUES,
            max_output_tokens: None,
            fast_paths: true,
            check_size: true,
            keep_values: true,
            memory_budget: DEFAULT_MEMORY_BUDGET,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            max_per_principal: DEFAULT_MAX_PER_PRINCIPAL,
            queue_timeout: DEFAULT_QUEUE_TIMEOUT,
        }
    }
}

impl ExtractConfig {
    /// A configuration reading from `root_dir`, other settings default.
    pub fn new(root_dir: impl Into<PathBuf>) -> Self {
        Self {
            root_dir: root_dir.into(),
            ..Self::default()
        }
    }

    /// Sets the offload directory. Defaults to the system temp directory,
    /// like `prompt.offload.output_dir = ""`.
    #[must_use]
    pub fn root_dir(mut self, root_dir: impl Into<PathBuf>) -> Self {
        self.root_dir = root_dir.into();
        self
    }

    /// Sets the wall-clock limit of one extraction. Defaults to 5 s.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the most bytes of rendered output. Defaults to 256 KiB.
    #[must_use]
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Sets the most results returned. Defaults to 10 000.
    #[must_use]
    pub fn max_output_values(mut self, values: usize) -> Self {
        self.max_output_values = values;
        self
    }

    /// Sets the most estimated tokens of output. Defaults to none (only the
    /// byte and value limits apply).
    #[must_use]
    pub fn max_output_tokens(mut self, tokens: usize) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }

    /// Turns the raw-line fast paths and projection on or off. Defaults to
    /// on.
    #[must_use]
    pub fn fast_paths(mut self, on: bool) -> Self {
        self.fast_paths = on;
        self
    }

    /// Sets whether a file is checked against its header's size before it
    /// is read ([`ExtractConfig::check_size`]). Defaults to on.
    #[must_use]
    pub fn check_size(mut self, on: bool) -> Self {
        self.check_size = on;
        self
    }

    /// Sets whether results are kept as JSON values besides the text.
    /// Defaults to on; `LroLayer` turns it off (the tool shows the text).
    #[must_use]
    pub fn keep_values(mut self, on: bool) -> Self {
        self.keep_values = on;
        self
    }

    /// Sets the memory one extraction may use (see
    /// [`ExtractConfig::memory_budget`]). Defaults to 512 MiB.
    #[must_use]
    pub fn memory_budget(mut self, bytes: usize) -> Self {
        self.memory_budget = bytes;
        self
    }

    /// Sets the most extractions running at once, over every caller (at
    /// least 1). Defaults to 4.
    #[must_use]
    pub fn max_concurrent(mut self, n: usize) -> Self {
        self.max_concurrent = n.max(1);
        self
    }

    /// Sets the most extractions running at once for one principal (at
    /// least 1). Defaults to 2.
    #[must_use]
    pub fn max_per_principal(mut self, n: usize) -> Self {
        self.max_per_principal = n.max(1);
        self
    }

    /// Sets how long an extraction waits for a slot. Defaults to 30 s.
    #[must_use]
    pub fn queue_timeout(mut self, wait: Duration) -> Self {
        self.queue_timeout = wait;
        self
    }

    /// Sets the limits an operator configures (`[prompt.offload.extraction]`):
    /// memory budget, concurrency in total and per principal, the wait for
    /// a slot and the timeout. Defaults to [`ExtractionLimits::default`],
    /// whose numbers are this configuration's defaults.
    #[must_use]
    pub fn limits(self, limits: &ExtractionLimits) -> Self {
        let mib = usize::try_from(limits.memory_budget_mib).unwrap_or(usize::MAX);
        self.memory_budget(mib.saturating_mul(MIB))
            .max_concurrent(limits.max_concurrent as usize)
            .max_per_principal(limits.max_per_principal as usize)
            .queue_timeout(Duration::from_secs(limits.queue_timeout_seconds))
            .timeout(Duration::from_secs(limits.timeout_seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_setters() {
        let cfg = ExtractConfig::default();
        assert_eq!(cfg.timeout, DEFAULT_TIMEOUT);
        assert_eq!(cfg.root_dir, std::env::temp_dir());
        let cfg = cfg.root_dir("/x").max_output_bytes(10).max_output_values(2);
        assert_eq!(cfg.root_dir, PathBuf::from("/x"));
        assert_eq!((cfg.max_output_bytes, cfg.max_output_values), (10, 2));
        assert_eq!(cfg.memory_budget, 512 * 1024 * 1024);
        let cfg = cfg.max_concurrent(0).max_per_principal(0);
        assert_eq!((cfg.max_concurrent, cfg.max_per_principal), (1, 1));
    }

    #[test]
    fn the_operators_limits_default_to_these_defaults_and_set_each_limit() {
        let cfg = ExtractConfig::new("/x");
        assert_eq!(cfg.clone().limits(&ExtractionLimits::default()), cfg);
        let cfg = cfg.limits(
            &ExtractionLimits::new()
                .memory_budget_mib(64)
                .max_concurrent(8)
                .max_per_principal(3)
                .queue_timeout_seconds(0)
                .timeout_seconds(20),
        );
        assert_eq!(cfg.memory_budget, 64 * 1024 * 1024);
        assert_eq!((cfg.max_concurrent, cfg.max_per_principal), (8, 3));
        assert_eq!(cfg.queue_timeout, Duration::ZERO);
        assert_eq!(cfg.timeout, Duration::from_secs(20));
        // What it does not set stays.
        assert_eq!(cfg.root_dir, PathBuf::from("/x"));
        assert_eq!(cfg.max_output_bytes, DEFAULT_MAX_OUTPUT_BYTES);
    }
}
