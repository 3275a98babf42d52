//! How long a remote store may take and how large objects are streamed up.
//!
//! object_store retries a failed request for up to three minutes by
//! default; here every bound is small and stated. One operation (one HTTP
//! request and its retries) ends within [`StoreConfig::worst_case`]:
//! retries start only while `retry_timeout` has not passed since the first
//! attempt, each waits at most `max_backoff`, and the last attempt is cut at
//! `request_timeout`. With the defaults that is 15 s + 2 s + 30 s = 47 s.
//!
//! ```
//! use std::time::Duration;
//! use lro_store::StoreConfig;
//!
//! let config = StoreConfig::new()
//!     .request_timeout(Duration::from_secs(5))
//!     .retry_timeout(Duration::from_secs(3))
//!     .max_backoff(Duration::from_millis(500));
//! assert_eq!(config.worst_case(), Duration::from_millis(8_500));
//! ```

use std::time::Duration;

/// The remote store's timeouts, retries and upload parts (the local store
/// has none of these to bound).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StoreConfig {
    /// Time to open a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Time for one HTTP request, from connecting to the end of its body.
    pub request_timeout: Duration,
    /// Retries of one request after its first attempt.
    pub max_retries: usize,
    /// No retry starts once this much time has passed since the first attempt.
    pub retry_timeout: Duration,
    /// The first backoff between attempts.
    pub initial_backoff: Duration,
    /// The longest backoff between attempts.
    pub max_backoff: Duration,
    /// Size of each part of a multipart upload, and the most a put buffers
    /// before deciding between one request and a multipart upload.
    pub part_size: usize,
    /// Parts of one upload in flight at once.
    pub max_concurrent_parts: usize,
}

/// S3's smallest part (all but the last).
pub const MIN_PART_SIZE: usize = 5 * 1024 * 1024;

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            max_retries: 3,
            retry_timeout: Duration::from_secs(15),
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            part_size: 8 * 1024 * 1024,
            max_concurrent_parts: 2,
        }
    }
}

impl StoreConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bounds whose [`StoreConfig::worst_case`] is `total`: half of it for
    /// one request, the backoff at most 2 s or an eighth, the rest for
    /// starting retries; connecting at most 5 s or a quarter.
    pub fn within(total: Duration) -> Self {
        let request = total / 2;
        let backoff = (total / 8).min(Duration::from_secs(2));
        Self {
            connect_timeout: (total / 4).min(Duration::from_secs(5)),
            request_timeout: request,
            retry_timeout: total.saturating_sub(request + backoff),
            max_backoff: backoff,
            initial_backoff: (backoff / 4).min(Duration::from_millis(100)),
            ..Self::default()
        }
    }

    /// Sets the connect timeout. Defaults to 5 s.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the timeout of one HTTP request, body included. Defaults to 30 s.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the retries after a request's first attempt (0: none).
    /// Defaults to 3.
    #[must_use]
    pub fn max_retries(mut self, retries: usize) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets the time after the first attempt past which no retry starts.
    /// Defaults to 15 s.
    #[must_use]
    pub fn retry_timeout(mut self, timeout: Duration) -> Self {
        self.retry_timeout = timeout;
        self
    }

    /// Sets the first backoff between attempts (it doubles each time).
    /// Defaults to 100 ms.
    #[must_use]
    pub fn initial_backoff(mut self, backoff: Duration) -> Self {
        self.initial_backoff = backoff;
        self
    }

    /// Sets the longest backoff between attempts. Defaults to 2 s.
    #[must_use]
    pub fn max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff;
        self
    }

    /// Sets the multipart part size, raised to S3's minimum of 5 MiB.
    /// Defaults to 8 MiB.
    #[must_use]
    pub fn part_size(mut self, bytes: usize) -> Self {
        self.part_size = bytes.max(MIN_PART_SIZE);
        self
    }

    /// Sets how many parts of one upload are in flight at once (at least 1).
    /// Defaults to 2.
    #[must_use]
    pub fn max_concurrent_parts(mut self, parts: usize) -> Self {
        self.max_concurrent_parts = parts.max(1);
        self
    }

    /// The longest one remote operation can take before it fails:
    /// `retry_timeout + max_backoff + request_timeout`.
    pub fn worst_case(&self) -> Duration {
        self.retry_timeout + self.max_backoff + self.request_timeout
    }

    /// The most bytes of one object a put holds at once: the part being
    /// filled and the parts in flight.
    pub fn max_buffered(&self) -> usize {
        self.part_size * (self.max_concurrent_parts + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_documented_ones() {
        let c = StoreConfig::new();
        assert_eq!(c.worst_case(), Duration::from_secs(47));
        assert_eq!(c.max_buffered(), 24 * 1024 * 1024);
    }

    #[test]
    fn parts_respect_s3_minimums() {
        let c = StoreConfig::new().part_size(1).max_concurrent_parts(0);
        assert_eq!(c.part_size, MIN_PART_SIZE);
        assert_eq!(c.max_concurrent_parts, 1);
    }
}
