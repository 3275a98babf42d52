//! What can go wrong, named after the field or path at fault.

use std::path::PathBuf;

/// A request that cannot be served. Every variant names what is wrong, so a
/// front can answer 400 with it; nothing is written when one is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// A request field is missing or has a bad value.
    #[error("`{field}`: {reason}")]
    Field {
        /// The field, e.g. `store_dir`, `context_manage_mode` or
        /// `messages[3].role`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A request field's value could not be read (a wrong JSON type) or
    /// compiled (a bad regular expression or glob).
    #[error("`{field}`")]
    Invalid {
        /// The field, e.g. `max_total_tokens`, `messages[2]`, `pattern` or
        /// `glob`.
        field: String,
        /// The parser's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A message is malformed.
    #[error("`messages[{index}]`: {reason}")]
    Message {
        /// Its position in `messages`.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A path resolves outside every store root.
    #[error("`{field}`: {} is outside the store roots", path.display())]
    OutsideRoots {
        /// The field that named it.
        field: &'static str,
        /// The path as given.
        path: PathBuf,
    },
    /// A file to read does not exist (any more).
    #[error("{} does not exist{}", path.display(), if *expired { " (it expired: stored files have a retention)" } else { "" })]
    NotFound {
        /// The path.
        path: PathBuf,
        /// Whether retention deleted it.
        expired: bool,
    },
    /// A path to read names a directory, a FIFO or another thing that is
    /// not a regular file.
    #[error("{} {reason}", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        reason: String,
    },
    /// The store cannot be read.
    #[error("{}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl ContextError {
    pub(crate) fn field(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Field {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn invalid(
        field: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Invalid {
            field: field.into(),
            source: Box::new(source),
        }
    }

    /// Whether the caller is at fault (a front answers 400), rather than
    /// the store (500).
    pub fn is_bad_request(&self) -> bool {
        !matches!(self, Self::Io { .. })
    }
}

/// The arguments read into `T`; a bad value is reported under its own path
/// (`max_total_tokens`, `messages[2]`), so the caller knows what to fix.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(
    args: serde_json::Value,
) -> Result<T, ContextError> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            "arguments".to_owned()
        } else {
            path
        };
        ContextError::invalid(field, e.into_inner())
    })
}
