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

/// Default [`ExtractConfig::timeout`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default [`ExtractConfig::max_output_bytes`]: 256 KiB, about 64k tokens.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// Default [`ExtractConfig::max_output_values`].
pub const DEFAULT_MAX_OUTPUT_VALUES: usize = 10_000;

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
    }
}
