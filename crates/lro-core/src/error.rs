//! How an error becomes text, everywhere: the error and each of its causes
//! once, `outer: cause: cause`.
//!
//! The workspace's errors keep their cause out of their own `Display` and
//! return it from `source()`, as axum-core's do (`lro-tidy` holds them to
//! it), so [`chain`] is the one place that joins the levels: the CLI's
//! stderr, JSON-RPC error messages, tool-result texts and WARN logs all
//! print through it.
//!
//! ```
//! use std::io;
//!
//! #[derive(Debug, thiserror::Error)]
//! #[error("cannot read the token file")]
//! struct TokenFile(#[source] io::Error);
//!
//! let err = TokenFile(io::Error::other("permission denied"));
//! assert_eq!(lro_core::error::chain(&err).to_string(), "cannot read the token file: permission denied");
//! ```

use std::{error::Error, fmt};

/// `err` and its causes as one line, `outer: cause: cause`; see the
/// [module docs](self).
///
/// A cause whose text is already in the line is not repeated: many
/// libraries' errors print their own source too (object_store's, rmcp's),
/// and the line should read the same through them.
pub fn chain<'a>(err: &'a (dyn Error + 'static)) -> Chain<'a> {
    Chain(err)
}

/// The line [`chain`] prints.
#[derive(Debug, Clone, Copy)]
#[must_use = "a Chain only prints when formatted"]
pub struct Chain<'a>(&'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut line = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(err) = cause {
            let text = err.to_string();
            if !text.is_empty() && !line.contains(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            cause = err.source();
        }
        f.write_str(&line)
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    struct Level(&'static str, #[source] Option<Box<dyn Error + Send + Sync>>);

    fn level(text: &'static str, cause: Option<Level>) -> Level {
        Level(text, cause.map(|c| Box::new(c) as _))
    }

    #[test]
    fn every_level_once_in_order() {
        let err = level(
            "cannot start the proxy",
            Some(level(
                "cannot listen on 127.0.0.1:1",
                Some(level("denied", None)),
            )),
        );
        assert_eq!(
            chain(&err).to_string(),
            "cannot start the proxy: cannot listen on 127.0.0.1:1: denied"
        );
        let alone = io::Error::other("disk full");
        assert_eq!(chain(&alone).to_string(), "disk full");
    }

    #[test]
    fn a_cause_the_line_already_shows_is_not_repeated() {
        // A foreign error that prints its source in its own text.
        let err = level(
            "cannot store the result",
            Some(level("S3 error: timed out", Some(level("timed out", None)))),
        );
        assert_eq!(
            chain(&err).to_string(),
            "cannot store the result: S3 error: timed out"
        );
    }
}
