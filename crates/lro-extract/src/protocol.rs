//! The messages between the pool and a worker process: the handshake, one
//! job, and its answer (an output or an error, rebuilt on the parent's side
//! with the same text).

use std::{io, path::PathBuf, time::Duration};

use lro_core::{Estimator, error::chain, metric::label::ExtractMode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ExtractConfig, ExtractError, ExtractOutput, ExtractRequest};

/// Version of this protocol; a worker of another build refuses the
/// handshake.
pub(crate) const VERSION: u32 = 2;
/// What a worker's handshake answer starts with.
pub(crate) const MAGIC: &str = "lro-extract-worker";

/// One line from the pool to a worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Message {
    /// The first line: how to bound the worker.
    Hello(Spec),
    /// Every later line: a job.
    Job(Box<Job>),
}

/// The bounds a worker is started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Spec {
    /// The protocol version the pool speaks.
    pub(crate) version: u32,
    /// [`ExtractConfig::memory_budget`].
    pub(crate) memory_budget: usize,
    /// The stack reserved for each job's thread (it counts in the address
    /// space).
    pub(crate) stack: usize,
}

/// The worker's handshake answer.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Hello {
    /// Always [`MAGIC`].
    pub(crate) magic: String,
    /// The worker's protocol version.
    pub(crate) version: u32,
    /// The address-space limit set, in bytes, or why none could be.
    pub(crate) limit: Result<u64, String>,
}

/// One job: what [`crate::Extractor::run_as`] checked, and the limits.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Job {
    pub(crate) request: ExtractRequest,
    /// The canonical path of the file the parent resolved and authorized.
    pub(crate) file: PathBuf,
    pub(crate) timeout_ms: u64,
    pub(crate) max_output_bytes: usize,
    pub(crate) max_output_values: usize,
    pub(crate) max_output_tokens: Option<usize>,
    pub(crate) fast_paths: bool,
    pub(crate) check_size: bool,
    pub(crate) keep_values: bool,
    pub(crate) estimator: Estimator,
    pub(crate) exact_band: f64,
}

impl Job {
    /// The configuration the worker runs the job with: the file's own
    /// directory as root (the parent authorized the file in it).
    pub(crate) fn config(&self) -> ExtractConfig {
        let root = self.file.parent().map(PathBuf::from).unwrap_or_default();
        let cfg = ExtractConfig::new(root)
            .timeout(Duration::from_millis(self.timeout_ms))
            .max_output_bytes(self.max_output_bytes)
            .max_output_values(self.max_output_values)
            .fast_paths(self.fast_paths)
            .check_size(self.check_size)
            .keep_values(self.keep_values);
        match self.max_output_tokens {
            Some(t) => cfg.max_output_tokens(t),
            None => cfg,
        }
    }
}

/// A job's answer.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Answer {
    pub(crate) result: Result<Output, Error>,
}

impl Answer {
    /// Writes the answer: its JSON on one line, then the output's text as
    /// it is, up to the end of the answer.
    pub(crate) fn write(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer(&mut *out, self)?;
        out.write_all(b"\n")?;
        match &self.result {
            Ok(output) => out.write_all(output.text.as_bytes()),
            Err(_) => Ok(()),
        }
    }

    /// Reads what [`Answer::write`] wrote.
    pub(crate) fn read(bytes: Vec<u8>) -> Result<Answer, String> {
        let split = bytes
            .iter()
            .position(|&b| b == b'\n')
            .ok_or("an answer without its line end")?;
        let mut answer: Answer =
            serde_json::from_slice(&bytes[..split]).map_err(|e| format!("bad answer: {e}"))?;
        if let Ok(output) = &mut answer.result {
            let mut text = bytes;
            text.drain(..=split);
            output.text = String::from_utf8(text).map_err(|e| format!("text not UTF-8: {e}"))?;
        }
        Ok(answer)
    }
}

/// [`ExtractOutput`] on the wire.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Output {
    mode: String,
    values: Vec<Value>,
    raw: bool,
    count: usize,
    truncated: bool,
    notice: Option<String>,
    next: Option<ExtractRequest>,
    /// Sent after the JSON as it is (see [`Answer::write`]): the text is
    /// JSON lines, which as a JSON string would be escaped and unescaped
    /// quote by quote.
    #[serde(skip)]
    text: String,
    failed: usize,
    last_failed: bool,
    unread: usize,
    results_len: usize,
}

impl From<ExtractOutput> for Output {
    fn from(o: ExtractOutput) -> Self {
        Self {
            mode: o.mode.as_str().to_owned(),
            values: o.values,
            raw: o.raw,
            count: o.count,
            truncated: o.truncated,
            notice: o.notice,
            next: o.next,
            text: o.text,
            failed: o.failed,
            last_failed: o.last_failed,
            unread: o.unread,
            results_len: o.results_len,
        }
    }
}

impl Output {
    pub(crate) fn into_output(self) -> Result<ExtractOutput, ExtractError> {
        let mode = ExtractMode::ALL
            .iter()
            .copied()
            .find(|m| m.as_str() == self.mode)
            .ok_or_else(|| {
                ExtractError::Isolation(format!(
                    "the worker answered an unknown mode {:?}",
                    self.mode
                ))
            })?;
        Ok(ExtractOutput {
            mode,
            values: self.values,
            raw: self.raw,
            count: self.count,
            truncated: self.truncated,
            notice: self.notice,
            next: self.next,
            text: self.text,
            failed: self.failed,
            last_failed: self.last_failed,
            unread: self.unread,
            results_len: self.results_len,
        })
    }
}

/// [`ExtractError`] on the wire: every variant with its fields; an OS error
/// keeps its text.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Error {
    OutsideRoot {
        path: String,
        root: PathBuf,
    },
    NotOffloadFile {
        path: String,
    },
    SymlinkEscape {
        path: String,
        target: PathBuf,
    },
    NotFound {
        path: String,
    },
    BadRoot {
        root: PathBuf,
        source: String,
    },
    BadHeader(String),
    Damaged {
        path: String,
        what: String,
    },
    Io {
        path: PathBuf,
        source: String,
    },
    InvalidRequest(String),
    Compile(String),
    Runtime {
        line: Option<usize>,
        message: String,
    },
    Timeout {
        limit_ms: u64,
    },
    OutputLimit {
        limit: usize,
    },
    MemoryLimit {
        budget: usize,
        how: String,
    },
    Busy {
        reason: String,
        waited_ms: u64,
    },
    Isolation(String),
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl From<ExtractError> for Error {
    fn from(e: ExtractError) -> Self {
        use ExtractError as E;
        match e {
            E::OutsideRoot { path, root } => Self::OutsideRoot { path, root },
            E::NotOffloadFile { path } => Self::NotOffloadFile { path },
            E::SymlinkEscape { path, target } => Self::SymlinkEscape { path, target },
            E::NotFound { path } => Self::NotFound { path },
            E::BadRoot { root, source } => Self::BadRoot {
                root,
                source: chain(&source).to_string(),
            },
            E::BadHeader(m) => Self::BadHeader(m),
            E::Damaged { path, what } => Self::Damaged { path, what },
            E::Io { path, source } => Self::Io {
                path,
                source: chain(&source).to_string(),
            },
            E::InvalidRequest(m) => Self::InvalidRequest(m),
            E::Compile(m) => Self::Compile(m),
            E::Runtime { line, message } => Self::Runtime { line, message },
            E::Timeout { limit } => Self::Timeout {
                limit_ms: millis(limit),
            },
            E::OutputLimit { limit } => Self::OutputLimit { limit },
            E::MemoryLimit { budget, how } => Self::MemoryLimit { budget, how },
            E::Busy { reason, waited } => Self::Busy {
                reason,
                waited_ms: millis(waited),
            },
            E::Isolation(m) => Self::Isolation(m),
        }
    }
}

impl From<Error> for ExtractError {
    fn from(e: Error) -> Self {
        use ExtractError as E;
        match e {
            Error::OutsideRoot { path, root } => E::OutsideRoot { path, root },
            Error::NotOffloadFile { path } => E::NotOffloadFile { path },
            Error::SymlinkEscape { path, target } => E::SymlinkEscape { path, target },
            Error::NotFound { path } => E::NotFound { path },
            Error::BadRoot { root, source } => E::BadRoot {
                root,
                source: io::Error::other(source),
            },
            Error::BadHeader(m) => E::BadHeader(m),
            Error::Damaged { path, what } => E::Damaged { path, what },
            Error::Io { path, source } => E::Io {
                path,
                source: io::Error::other(source),
            },
            Error::InvalidRequest(m) => E::InvalidRequest(m),
            Error::Compile(m) => E::Compile(m),
            Error::Runtime { line, message } => E::Runtime { line, message },
            Error::Timeout { limit_ms } => E::Timeout {
                limit: Duration::from_millis(limit_ms),
            },
            Error::OutputLimit { limit } => E::OutputLimit { limit },
            Error::MemoryLimit { budget, how } => E::MemoryLimit { budget, how },
            Error::Busy { reason, waited_ms } => E::Busy {
                reason,
                waited: Duration::from_millis(waited_ms),
            },
            Error::Isolation(m) => E::Isolation(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(e: ExtractError) {
        let text = chain(&e).to_string();
        let outcome = e.outcome();
        let json = serde_json::to_string(&Error::from(e)).unwrap();
        let back = ExtractError::from(serde_json::from_str::<Error>(&json).unwrap());
        assert_eq!((chain(&back).to_string(), back.outcome()), (text, outcome));
    }

    #[test]
    fn errors_keep_their_text_across_the_pipe() {
        round_trip(ExtractError::Timeout {
            limit: Duration::from_millis(1500),
        });
        round_trip(ExtractError::Io {
            path: "/x".into(),
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        });
        round_trip(ExtractError::Runtime {
            line: Some(3),
            message: "cannot index".into(),
        });
        round_trip(ExtractError::MemoryLimit {
            budget: 1 << 20,
            how: "x".into(),
        });
    }

    #[test]
    fn an_answer_carries_its_text_verbatim() {
        let out = ExtractOutput {
            mode: ExtractMode::Query,
            values: Vec::new(),
            raw: false,
            count: 1,
            truncated: true,
            notice: Some("more".into()),
            next: None,
            text: "{\"a\":\"\\n\"}\n# more\n".into(),
            failed: 2,
            last_failed: true,
            unread: 1,
            results_len: 11,
        };
        let answer = Answer {
            result: Ok(out.clone().into()),
        };
        let mut bytes = Vec::new();
        answer.write(&mut bytes).unwrap();
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 3);
        let back = Answer::read(bytes)
            .unwrap()
            .result
            .unwrap()
            .into_output()
            .unwrap();
        assert_eq!(back, out);
        assert_eq!(back.results(), out.results());
        assert!(Answer::read(b"{}".to_vec()).is_err());
    }

    #[test]
    fn messages_are_single_lines() {
        let job = Message::Job(Box::new(Job {
            request: ExtractRequest::new("a\nb").query(".x | \"\\n\""),
            file: "/r/f".into(),
            timeout_ms: 5,
            max_output_bytes: 1,
            max_output_values: 1,
            max_output_tokens: None,
            fast_paths: true,
            check_size: true,
            keep_values: false,
            estimator: Estimator::Chars,
            exact_band: 0.5,
        }));
        let line = serde_json::to_string(&job).unwrap();
        assert!(!line.contains('\n'), "{line}");
        let Message::Job(back) = serde_json::from_str(&line).unwrap() else {
            panic!("not a job")
        };
        assert_eq!(
            back.request,
            ExtractRequest::new("a\nb").query(".x | \"\\n\"")
        );
        assert_eq!(back.config().root_dir, PathBuf::from("/r"));
    }
}
