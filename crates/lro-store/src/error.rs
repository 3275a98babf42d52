//! Why a store operation failed, and the kind of failure it was: the kinds
//! an offload's `OffloadWriteFailed` reason and a read's tool error name.
//!
//! Errors keep their sources. No variant holds a credential: the S3 client
//! signs requests with the secret key but never puts it in a message, and
//! the store's own `Debug` and `Display` show the URL only.
//!
//! ```
//! use lro_store::{ErrorKind, Key, StoreError};
//!
//! let err = Key::new("../etc/passwd").unwrap_err();
//! assert!(matches!(err, StoreError::InvalidKey { .. }));
//! assert_eq!(err.kind(), ErrorKind::Other);
//! assert_eq!(ErrorKind::BucketMissing.as_str(), "bucket_missing");
//! ```

use std::{fmt, io, path::PathBuf};

use crate::root::RootError;

/// What went wrong, in the terms a caller acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The store could not be reached: connection refused, no route, DNS.
    Unreachable,
    /// The store refused the credentials (unknown key, wrong secret,
    /// access denied).
    CredentialsRefused,
    /// The bucket does not exist.
    BucketMissing,
    /// An operation exceeded its timeout (connect, request, or the total
    /// with retries).
    Timeout,
    /// No object under that key.
    NotFound,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// The kind as a stable snake_case label (for metrics and event reasons).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Unreachable => "unreachable",
            ErrorKind::CredentialsRefused => "credentials_refused",
            ErrorKind::BucketMissing => "bucket_missing",
            ErrorKind::Timeout => "timeout",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Other => "other",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The operation that failed, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// Writing an object.
    Put,
    /// Reading an object or a range of it.
    Get,
    /// Reading an object's size and time.
    Head,
    /// Listing objects.
    List,
    /// Deleting an object.
    Delete,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Put => "put",
            Op::Get => "get",
            Op::Head => "head",
            Op::List => "list",
            Op::Delete => "delete",
        })
    }
}

/// Why a store could not be opened or an operation on it failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store URL names a scheme no backend serves.
    #[error(
        "unknown store scheme `{scheme}` in {url:?}: use a local path, file:// or s3://BUCKET/PREFIX"
    )]
    UnknownScheme {
        /// The scheme, as written.
        scheme: String,
        /// The whole URL.
        url: String,
    },
    /// The store URL has a known scheme but is malformed.
    #[error("invalid store URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A key that is not a relative path of plain components.
    #[error("invalid store key {key:?}: {reason}")]
    InvalidKey {
        /// The key, as given.
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The local store's directory cannot be used.
    #[error("local store")]
    Root(#[from] RootError),
    /// The S3 client could not be built from the URL and environment.
    #[error("cannot configure the object store {url}")]
    Build {
        /// The store URL.
        url: String,
        /// object_store's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The URL names an S3 bucket, and this build has no S3 client (the
    /// `s3` feature of lro-store, `store` of lro-tower).
    #[error(
        "the store {url} is an S3 bucket, and this build has no S3 client (cargo feature `s3` of lro-store, `store` of lro-tower)"
    )]
    S3NotBuilt {
        /// The store URL.
        url: String,
    },
    /// A local file operation failed.
    #[error("{op} {key:?} in {dir}")]
    Local {
        /// The operation.
        op: Op,
        /// The key.
        key: String,
        /// The store's directory.
        dir: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A request to the object store failed.
    #[error("{op} {key:?} on {store}: {kind}")]
    Remote {
        /// The operation.
        op: Op,
        /// The key (or list prefix).
        key: String,
        /// The store URL.
        store: String,
        /// What kind of failure it was.
        kind: ErrorKind,
        /// object_store's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A range that starts at or past the object's end.
    #[error("range {start}.. of {key:?} starts past its end ({size} bytes)")]
    RangePastEnd {
        /// The key.
        key: String,
        /// The range's first byte.
        start: u64,
        /// The object's size.
        size: u64,
    },
    /// The byte stream being written failed; nothing was stored.
    #[error("the body of {key:?} failed while being written")]
    Body {
        /// The key.
        key: String,
        /// The producer's error.
        source: io::Error,
    },
}

impl StoreError {
    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            StoreError::Remote { kind, .. } => *kind,
            StoreError::Local { source, .. } if source.kind() == io::ErrorKind::NotFound => {
                ErrorKind::NotFound
            }
            StoreError::Local { source, .. } if source.kind() == io::ErrorKind::TimedOut => {
                ErrorKind::Timeout
            }
            _ => ErrorKind::Other,
        }
    }
}

/// The kind of an object_store error, from its variant, the HTTP error
/// kind in its source chain and the S3 error code in the response body.
#[cfg(feature = "s3")]
pub(crate) fn classify(err: &object_store::Error) -> ErrorKind {
    use object_store::client::{HttpError, HttpErrorKind};
    let mut text = String::new();
    let mut http = None;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        text.push_str(&e.to_string());
        text.push('\n');
        if http.is_none()
            && let Some(h) = e.downcast_ref::<HttpError>()
        {
            http = Some(h.kind());
        }
        source = e.source();
    }
    // The S3 error codes are exact words in the response body.
    if text.contains("NoSuchBucket") {
        return ErrorKind::BucketMissing;
    }
    if [
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AccessDenied",
    ]
    .iter()
    .any(|code| text.contains(code))
    {
        return ErrorKind::CredentialsRefused;
    }
    match err {
        object_store::Error::NotFound { .. } => return ErrorKind::NotFound,
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => return ErrorKind::CredentialsRefused,
        _ => {}
    }
    match http {
        Some(HttpErrorKind::Timeout) => ErrorKind::Timeout,
        Some(HttpErrorKind::Connect) if text.contains("timed out") => ErrorKind::Timeout,
        Some(HttpErrorKind::Connect) => ErrorKind::Unreachable,
        _ => ErrorKind::Other,
    }
}

#[cfg(all(test, feature = "s3"))]
mod tests {
    use super::*;

    fn generic(msg: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: msg.to_owned().into(),
        }
    }

    #[test]
    fn s3_codes_in_the_body_decide_first() {
        assert_eq!(
            classify(&generic("404 <Code>NoSuchBucket</Code>")),
            ErrorKind::BucketMissing
        );
        assert_eq!(
            classify(&generic("403 <Code>SignatureDoesNotMatch</Code>")),
            ErrorKind::CredentialsRefused
        );
        assert_eq!(classify(&generic("something")), ErrorKind::Other);
    }

    #[test]
    fn variants_give_their_kind() {
        let nf = object_store::Error::NotFound {
            path: "a".into(),
            source: "404".into(),
        };
        assert_eq!(classify(&nf), ErrorKind::NotFound);
        let denied = object_store::Error::PermissionDenied {
            path: "a".into(),
            source: "403".into(),
        };
        assert_eq!(classify(&denied), ErrorKind::CredentialsRefused);
    }

    #[test]
    fn http_error_kinds_are_found_in_the_chain() {
        use object_store::client::{HttpError, HttpErrorKind};
        let wrap = |kind, msg: &str| object_store::Error::Generic {
            store: "S3",
            source: Box::new(HttpError::new(kind, io::Error::other(msg.to_owned()))),
        };
        assert_eq!(
            classify(&wrap(HttpErrorKind::Connect, "connection refused")),
            ErrorKind::Unreachable
        );
        assert_eq!(
            classify(&wrap(HttpErrorKind::Timeout, "deadline")),
            ErrorKind::Timeout
        );
    }

    #[test]
    fn local_not_found_is_not_found() {
        let e = StoreError::Local {
            op: Op::Get,
            key: "k".into(),
            dir: PathBuf::from("d"),
            source: io::ErrorKind::NotFound.into(),
        };
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().starts_with("get \"k\" in d"), "{e}");
    }
}
