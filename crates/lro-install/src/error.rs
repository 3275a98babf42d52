//! Why `lro install` could not edit a file.

use std::{io, path::PathBuf};

/// An error about one configuration file, or the records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file is not valid JSON or TOML, or its servers are not a map.
    /// The text says where.
    #[error("does not parse: {0}")]
    Parse(String),
    /// The file has no write permission; it was left untouched.
    #[error("is read-only")]
    ReadOnly,
    /// The file could not be read or written.
    #[error("cannot {0}")]
    Io(&'static str, #[source] io::Error),
    /// The records of wrapped entries could not be read or written.
    #[error("the records in {} cannot be used", .0.display())]
    Records(PathBuf, #[source] io::Error),
}
