//! What the audit saw: the evidence the checks judge.
//!
//! `audit.rs` gathers it, launch by launch; every check in `check/` is a
//! pure function of it. Neither side reaches into the
//! other: both depend on this module only.

use std::{path::PathBuf, time::Duration};

use serde_json::{Map, Value};

use crate::{Wire, events::Samples, probe::Call, result, target::Outcome};

/// Fewest records a result needs to show the threshold is on the aggregate.
pub(crate) const MIN_RECORDS: usize = 10;
/// An offloaded result and what was found at its `file_path`.
#[derive(Debug)]
pub(crate) struct Offload {
    /// Index of the call in [`Evidence::calls`].
    pub(crate) call: usize,
    pub(crate) result: Value,
    pub(crate) descriptor: Map<String, Value>,
    /// The file's lines and mode, or why it could not be read.
    pub(crate) file: Result<FileSeen, String>,
    /// Each recipe run on the file, once Level 2 is judged.
    pub(crate) runs: Option<Vec<RecipeRun>>,
}

/// One recipe run on its file.
#[derive(Debug)]
pub(crate) struct RecipeRun {
    /// 0-based position in `jq_recipes`.
    pub(crate) index: usize,
    pub(crate) command: String,
    /// The jq that ran it, or why it did not run or failed.
    pub(crate) outcome: Result<&'static str, String>,
}

/// An offload file as read right after the call.
#[derive(Debug)]
pub(crate) struct FileSeen {
    pub(crate) path: PathBuf,
    pub(crate) lines: Vec<String>,
    pub(crate) mode: u32,
}

impl FileSeen {
    /// The header, when line 1 is a JSON object with `type: "lro_header"`.
    pub(crate) fn header(&self) -> Option<Map<String, Value>> {
        let first = self.lines.first()?;
        match serde_json::from_str(first) {
            Ok(Value::Object(m)) if m.get("type") == Some(&Value::from("lro_header")) => Some(m),
            _ => None,
        }
    }

    /// The lines after the header (every line when there is none).
    pub(crate) fn records(&self) -> &[String] {
        if self.header().is_some() {
            &self.lines[1..]
        } else {
            &self.lines
        }
    }
}

impl Offload {
    /// The detail level the file says it holds, else the descriptor.
    pub(crate) fn detail(&self) -> Option<String> {
        let from_header = self
            .file
            .as_ref()
            .ok()
            .and_then(FileSeen::header)
            .and_then(|h| h.get("detail").and_then(Value::as_str).map(str::to_owned));
        from_header.or_else(|| {
            self.descriptor
                .get("summary")
                .and_then(|s| s.get("detail"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
    }
}

/// What the cleanup launch saw.
#[derive(Debug)]
pub(crate) struct CleanupSeen {
    pub(crate) ttl: u64,
    /// How long after its expiry the first file was gone, or why the check
    /// could not see it go.
    pub(crate) expired: Result<Duration, String>,
    /// A fresh file deleted before its TTL, with its age then.
    pub(crate) fresh_deleted: Option<Duration>,
    pub(crate) stderr: String,
    pub(crate) metrics: Option<(Samples, Samples)>,
}

/// What the write-failure launch saw.
#[derive(Debug)]
pub(crate) struct WriteFailureSeen {
    pub(crate) threshold: u64,
    pub(crate) outcome: Outcome,
    pub(crate) stderr: String,
    pub(crate) metrics: Option<(Samples, Samples)>,
}

/// Everything the checks judge.
#[derive(Debug, Default)]
pub(crate) struct Evidence {
    pub(crate) launched: bool,
    /// The wire of the first session.
    pub(crate) wire: Option<Wire>,
    pub(crate) tools: Vec<String>,
    pub(crate) calls: Vec<Call>,
    pub(crate) left_out: Vec<String>,
    /// Each call's answer with no threshold in reach (URL: as served).
    pub(crate) measured: Vec<Outcome>,
    /// The call that shows the aggregate rule: the smallest result of at
    /// least [`MIN_RECORDS`] records, of those not in `varying`.
    pub(crate) boundary: Option<usize>,
    /// The calls that answered otherwise in a second launch with no
    /// threshold in reach: their answers vary by themselves (the time, the
    /// environment), so no inline answer of theirs shows what the layer did.
    pub(crate) varying: Vec<usize>,
    pub(crate) t_lo: Option<u64>,
    /// Each call's answer at `t_lo`.
    pub(crate) at_lo: Vec<Outcome>,
    pub(crate) output_dir: Option<PathBuf>,
    pub(crate) offloads: Vec<Offload>,
    /// The server's estimate of the boundary call's result.
    pub(crate) estimate: Option<u64>,
    /// The boundary call at `estimate - 1`.
    pub(crate) below: Option<Outcome>,
    /// The boundary call at a threshold it does not exceed, and that threshold.
    pub(crate) at: Option<(u64, Outcome)>,
    pub(crate) cleanup: Option<CleanupSeen>,
    pub(crate) write_failure: Option<WriteFailureSeen>,
    /// The boundary call at `t_lo`, declared a proxy.
    pub(crate) flagged: Option<Outcome>,
}

impl Evidence {
    /// The measured result of call `i`, when it succeeded.
    pub(crate) fn measured_ok(&self, i: usize) -> Option<&Value> {
        match self.measured.get(i) {
            Some(Outcome::Result(v)) if !result::is_error(v) => Some(v),
            _ => None,
        }
    }
}
