//! Offload files as data: naming, the JSONL encoding with its header, and
//! the header's parser. Writing and reading files is lro-store's
//! (`lro_store::file`): this module touches no file system.
//!
//! A file is `{output_dir}/atlatl-{operation}-{ulid}.jsonl`: a header line
//! ([`OffloadHeader`]) and one JSON record per line, written under the
//! hidden temp name `.atlatl-{operation}-{ulid}.jsonl.tmp` and renamed into
//! place. Names come from the server (operation + ULID), never from client
//! input.
//!
//! ```
//! use lro_core::file::{OffloadFileName, encode_body, parse_header};
//! use lro_core::descriptor::{Detail, OffloadHeader};
//!
//! let name = OffloadFileName::new("recall");
//! let header = OffloadHeader::new("recall", None, 2, 10, Detail::Light);
//! let mut out = Vec::new();
//! let records = [r#"{"id":"a"}"#, r#"{"id":"b"}"#];
//! let bytes = encode_body(&mut out, &header, &records, &|| false).unwrap();
//! assert_eq!(bytes, out.len() as u64);
//! let first = std::str::from_utf8(&out).unwrap().lines().next().unwrap();
//! assert_eq!(parse_header(name.to_string().as_ref(), first).unwrap().count, 2);
//! assert!(OffloadFileName::parse(&name.to_string()).is_some());
//! ```

use std::{
    fmt,
    io::{self, Write},
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use ulid::Ulid;

use crate::{descriptor::OffloadHeader, metric::label::WriteFailureReason, object::ObjectError};

/// File name prefix of every offload file.
pub const FILE_PREFIX: &str = "atlatl-";
/// File name suffix of every offload file.
pub const FILE_SUFFIX: &str = ".jsonl";
/// Suffix of the temp file an interrupted write may leave behind.
pub const TEMP_SUFFIX: &str = ".tmp";
/// Longest operation name: a tool's name is cut to it, and a file name
/// holding a longer one is not an offload file's.
pub const MAX_OPERATION_LEN: usize = 48;
/// Longest operation a new file's name holds: a longer one is cut to it
/// (the header keeps it whole). Every recipe of a spec descriptor repeats
/// the file's path, so each character past it would cost 3 tokens
/// (docs/descriptor-sizing.md).
pub const NAME_OPERATION_LEN: usize = 16;

/// The name of one offload file: `atlatl-{operation}-{ulid}.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OffloadFileName {
    operation: String,
    ulid: Ulid,
}

impl OffloadFileName {
    /// A fresh name for `operation` (sanitized, and cut to
    /// [`NAME_OPERATION_LEN`]) with a new ULID.
    pub fn new(operation: &str) -> Self {
        Self::with_ulid(operation, Ulid::new())
    }

    /// A name with the given ULID.
    pub fn with_ulid(operation: &str, ulid: Ulid) -> Self {
        let operation = sanitize_operation(operation);
        // Sanitized names are ASCII; the cut leaves no `_` at the end.
        let cut = operation[..operation.len().min(NAME_OPERATION_LEN)].trim_end_matches('_');
        Self {
            operation: cut.to_owned(),
            ulid,
        }
    }

    /// Parses a final file name (not a path). `None` for anything that is not
    /// exactly `atlatl-{[a-z0-9_]+}-{ULID}.jsonl`.
    pub fn parse(file_name: &str) -> Option<Self> {
        let stem = file_name
            .strip_prefix(FILE_PREFIX)?
            .strip_suffix(FILE_SUFFIX)?;
        let (operation, ulid) = stem.rsplit_once('-')?;
        if operation.is_empty()
            || operation.len() > MAX_OPERATION_LEN
            || !operation
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return None;
        }
        if ulid.len() != 26 {
            return None;
        }
        let ulid = Ulid::from_string(ulid).ok()?;
        Some(Self {
            operation: operation.to_owned(),
            ulid,
        })
    }

    /// Parses the name of a temp file left by an interrupted write.
    pub fn parse_temp(file_name: &str) -> Option<Self> {
        Self::parse(file_name.strip_prefix('.')?.strip_suffix(TEMP_SUFFIX)?)
    }

    /// The operation part.
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// The ULID part.
    pub fn ulid(&self) -> Ulid {
        self.ulid
    }

    /// When the file was created, from the ULID's millisecond timestamp.
    pub fn created_at(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(self.ulid.timestamp_ms())
    }

    /// The temp file name used while writing.
    pub fn temp_name(&self) -> String {
        format!(".{self}{TEMP_SUFFIX}")
    }
}

impl fmt::Display for OffloadFileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{FILE_PREFIX}{}-{}{FILE_SUFFIX}",
            self.operation, self.ulid
        )
    }
}

/// Lowercases, maps every other character to `_`, collapses runs, trims, and
/// caps the length. An empty result becomes `tool`.
pub fn sanitize_operation(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len().min(MAX_OPERATION_LEN));
    for c in raw.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
        if out.len() >= MAX_OPERATION_LEN {
            break;
        }
    }
    let trimmed = out.trim_matches('_');
    if trimmed.is_empty() {
        "tool".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// A result that was written.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WrittenFile {
    /// Absolute path of the final file (an object store's key, relative to
    /// its prefix).
    pub path: PathBuf,
    /// Bytes written, header included.
    pub bytes: u64,
}

impl WrittenFile {
    /// `bytes` written at `path`.
    pub fn new(path: PathBuf, bytes: u64) -> Self {
        Self { path, bytes }
    }
}

/// Why an offload failed. Nothing is left behind in every case.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// Encoding the content failed: the writer refused it.
    #[error("cannot write offload file {path}")]
    Write {
        /// The file, when there is one.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A record was not single-line JSON.
    #[error("record {index} is not a single line of JSON")]
    BadRecord {
        /// Zero-based record index.
        index: usize,
    },
    /// The request was cancelled while writing.
    #[error("offload write cancelled")]
    Cancelled,
    /// The sink (the directory or an object store) failed the write: see
    /// [`crate::object`].
    #[error(transparent)]
    Store(#[from] ObjectError),
}

impl WriteError {
    /// Why the write failed, as a bounded metric label.
    pub fn reason(&self) -> WriteFailureReason {
        match self {
            WriteError::Write { source, .. } => io_reason(source),
            WriteError::BadRecord { .. } => WriteFailureReason::BadRecord,
            WriteError::Store(err) => err.reason,
            // A cancelled write is not reported as a failure; should one be
            // counted anyway, it is an I/O interruption.
            WriteError::Cancelled => WriteFailureReason::Io,
        }
    }
}

/// The metric label of a failed file operation's OS error.
pub fn io_reason(err: &io::Error) -> WriteFailureReason {
    match err.kind() {
        io::ErrorKind::NotFound => WriteFailureReason::NotFound,
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
            WriteFailureReason::PermissionDenied
        }
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
            WriteFailureReason::StorageFull
        }
        io::ErrorKind::NotADirectory | io::ErrorKind::AlreadyExists => {
            WriteFailureReason::NotADirectory
        }
        _ => WriteFailureReason::Io,
    }
}

/// The bytes [`encode_body`] writes for `header` and `records` (but for
/// the header's `bytes`): what a quota is checked against before writing.
pub fn encoded_len<R: AsRef<str>>(header: &OffloadHeader, records: &[R]) -> u64 {
    let header = serde_json::to_string(header).map_or(0, |h| h.len() as u64);
    records
        .iter()
        .fold(header + 1, |n, r| n + r.as_ref().len() as u64 + 1)
}

enum BodyError {
    Io(io::Error),
    BadRecord(usize),
    Cancelled,
}

impl From<io::Error> for BodyError {
    fn from(e: io::Error) -> Self {
        BodyError::Io(e)
    }
}

/// Encodes `header` and `records` (each a single line of JSON) as the
/// file's JSONL into `out`: the header, with the records' size as its
/// `bytes`, then one record per line. `cancelled` is polled between
/// records. Returns the bytes written.
///
/// # Errors
///
/// [`WriteError::BadRecord`], [`WriteError::Cancelled`], or
/// [`WriteError::Write`] (with an empty path) when `out` fails.
pub fn encode_body<W: Write, R: AsRef<str>>(
    out: &mut W,
    header: &OffloadHeader,
    records: &[R],
    cancelled: &dyn Fn() -> bool,
) -> Result<u64, WriteError> {
    write_lines(out, header, records, cancelled).map_err(|e| match e {
        BodyError::Io(source) => WriteError::Write {
            path: PathBuf::new(),
            source,
        },
        BodyError::BadRecord(index) => WriteError::BadRecord { index },
        BodyError::Cancelled => WriteError::Cancelled,
    })
}

fn write_lines<W: Write, R: AsRef<str>>(
    out: &mut W,
    header: &OffloadHeader,
    records: &[R],
    cancelled: &dyn Fn() -> bool,
) -> Result<u64, BodyError> {
    // The records' size goes into the header, so a reader can tell a body
    // cut short or grown (`crate::integrity`).
    let body: u64 = records.iter().map(|r| r.as_ref().len() as u64 + 1).sum();
    let header = OffloadHeader {
        bytes: Some(body),
        ..header.clone()
    };
    let header = serde_json::to_string(&header).map_err(io::Error::other)?;
    out.write_all(header.as_bytes())?;
    out.write_all(b"\n")?;
    let mut bytes = header.len() as u64 + 1;
    for (index, record) in records.iter().enumerate() {
        // Checking every record would cost more than it saves; 256 bounds the
        // work done after a cancellation to a few milliseconds.
        if index % 256 == 255 && cancelled() {
            return Err(BodyError::Cancelled);
        }
        let record = record.as_ref();
        if record.is_empty() || record.contains('\n') {
            return Err(BodyError::BadRecord(index));
        }
        out.write_all(record.as_bytes())?;
        out.write_all(b"\n")?;
        bytes += record.len() as u64 + 1;
    }
    Ok(bytes)
}

/// Why an offload file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The first line is missing or does not read as an `lro_header`.
    #[error("{path} has no valid LRO header line")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The JSON parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The first line is JSON of another type than `lro_header`.
    #[error("{path} has no valid LRO header line: {reason}")]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Parses a header line.
pub fn parse_header(path: &Path, line: &str) -> Result<OffloadHeader, ReadError> {
    let header: OffloadHeader =
        serde_json::from_str(line.trim_end()).map_err(|source| ReadError::Unreadable {
            path: path.to_owned(),
            source,
        })?;
    if header.header_type != crate::descriptor::HEADER_TYPE {
        return Err(ReadError::BadHeader {
            path: path.to_owned(),
            reason: format!("type is {:?}", header.header_type),
        });
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_round_trips_and_rejects_lookalikes() {
        let name = OffloadFileName::new("Recall Memories!");
        assert_eq!(name.operation(), "recall_memories");
        let parsed = OffloadFileName::parse(&name.to_string()).unwrap();
        assert_eq!(parsed, name);
        assert_eq!(
            OffloadFileName::parse_temp(&name.temp_name()).unwrap(),
            name
        );
        for bad in [
            "atlatl-recall.jsonl",
            "atlatl--01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl",
            "atlatl-Recall-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl",
            "atlatl-recall-01ARZ3NDEKTSV4RRFFQ69G5FAV.json",
            "atlatl-../x-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl",
            "atlatl-recall-notaulid.jsonl",
            "other-recall-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl",
        ] {
            assert!(OffloadFileName::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_long_operation_is_cut_in_the_name() {
        let name = OffloadFileName::new("list_every_issue_with_all_custom_fields_in_repos");
        assert_eq!(name.operation(), "list_every_issue");
        assert_eq!(OffloadFileName::parse(&name.to_string()).unwrap(), name);
        // No `_` is left at the cut.
        assert_eq!(
            OffloadFileName::new("create_relations_now").operation(),
            "create_relations"
        );
        assert_eq!(
            OffloadFileName::new("abcdefghijklmno_pq").operation(),
            "abcdefghijklmno"
        );
        // Names written before the cut still parse.
        let old = format!("atlatl-{}-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl", "a".repeat(48));
        assert!(OffloadFileName::parse(&old).is_some());
    }

    #[test]
    fn created_at_comes_from_the_ulid() {
        let ulid = Ulid::from_parts(1_700_000_000_000, 7);
        let name = OffloadFileName::with_ulid("x", ulid);
        assert_eq!(
            name.created_at(),
            SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000)
        );
    }
}
