//! `lro inspect`: what an offload file holds, checked.
//!
//! ```
//! use lro_core::{offload::{Offloader, OffloadInput}, records::RecordSet};
//! use lro_store::DirSink;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let text = serde_json::to_string(&(0..20).map(|i| serde_json::json!({"n": i, "msg": "hi"})).collect::<Vec<_>>()).unwrap();
//! let records = RecordSet::from_text(&text);
//! let out = Offloader::new(DirSink::new(dir.path()))
//!     .offload(OffloadInput::new("logs", "logs", &records, 500), &|| false)
//!     .unwrap();
//! let report = lro_cli::inspect::inspect(&out.result.path).unwrap();
//! assert_eq!((report.records, report.count_matches), (20, true));
//! assert_eq!(report.recipes.len(), 10);
//! assert!(report.to_text().contains("records: 20 (header says 20: ok)"));
//! ```

use std::{
    io::{BufRead, BufReader},
    path::Path,
};

use lro_core::{
    descriptor::OffloadHeader,
    recipes::{RecipeSet, SAMPLE_SIZE},
    schema::infer_line_schema,
};
use serde::Serialize;

use crate::error::CliError;
use serde_json::Value;

/// One recipe as shown by `inspect`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct RecipeLine {
    /// 1 to 10.
    pub number: u8,
    /// What it does.
    pub description: String,
    /// The shell command with default parameters.
    pub command: String,
    /// The equivalent `lro extract` command.
    pub lro: String,
}

/// What `inspect` found.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// The canonical path.
    pub path: String,
    /// The header line.
    pub header: OffloadHeader,
    /// Record lines actually in the file.
    pub records: usize,
    /// Whether `records` equals the header's `count`.
    pub count_matches: bool,
    /// Record lines that are not valid JSON (1-based file line numbers,
    /// at most 10).
    pub bad_lines: Vec<usize>,
    /// Schema inferred from the first records.
    pub line_schema: Value,
    /// The descriptor's recipes.
    pub recipes: Vec<RecipeLine>,
}

/// Inspects the offload file at `path` (which must pass the same guards as
/// extraction, with its own directory as the root).
pub fn inspect(path: &Path) -> Result<Report, CliError> {
    let root = path
        .parent()
        .ok_or_else(|| CliError::Usage(format!("{} has no parent directory", path.display())))?;
    let resolved = lro_extract::resolve(root, &path.to_string_lossy())?;
    let header = lro_store::file::read_header(&resolved.path)?;
    let file = resolved.open()?;
    let io_error = |source| CliError::Io {
        path: path.to_owned(),
        source,
    };
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    let mut sample = Vec::new();
    let mut records = 0;
    let mut bad_lines = Vec::new();
    let mut line_no = 0;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(io_error)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line_no == 1 || line.trim_ascii().is_empty() {
            continue;
        }
        records += 1;
        let needs_parse = sample.len() < SAMPLE_SIZE;
        if needs_parse || bad_lines.len() < 10 {
            // What serde refuses, jq may read (a lone low surrogate escape).
            let read = serde_json::from_slice::<Value>(line.trim_ascii())
                .or_else(|_| lro_extract::read_record(line.trim_ascii()));
            match read {
                Ok(v) if needs_parse => sample.push(v),
                Ok(_) => {}
                Err(_) => bad_lines.push(line_no),
            }
        }
    }
    let detail = header.detail;
    let path_text = resolved.path.to_string_lossy().into_owned();
    let recipes = RecipeSet::derive(&sample, detail)
        .recipes
        .iter()
        .map(|r| RecipeLine {
            number: r.number,
            description: r.description.clone(),
            command: r.command(&path_text),
            lro: format!(
                "lro extract {} --recipe {}",
                lro_core::recipes::shell_quote(&path_text),
                r.number
            ),
        })
        .collect();
    Ok(Report {
        count_matches: records == header.count,
        path: path_text,
        records,
        bad_lines,
        line_schema: infer_line_schema(&sample),
        recipes,
        header,
    })
}

impl Report {
    /// The human-readable form.
    pub fn to_text(&self) -> String {
        let h = &self.header;
        let mut s = format!("file: {}\n", self.path);
        s += &format!(
            "operation: {}  detail: {}  written: {}  estimated tokens: {}\n",
            h.operation, h.detail, h.timestamp, h.estimated_tokens
        );
        if let Some(q) = &h.query {
            s += &format!("query: {q}\n");
        }
        s += &format!(
            "records: {} (header says {}: {})\n",
            self.records,
            h.count,
            if self.count_matches { "ok" } else { "MISMATCH" }
        );
        if !self.bad_lines.is_empty() {
            s += &format!("invalid JSON on lines: {:?}\n", self.bad_lines);
        }
        s += "line schema:\n";
        if let Some(props) = self.line_schema["properties"].as_object() {
            let required: Vec<&str> = self.line_schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            for (k, v) in props {
                let ty = match &v["type"] {
                    Value::String(t) => t.clone(),
                    other => other.to_string(),
                };
                let opt = if required.contains(&k.as_str()) {
                    ""
                } else {
                    "?"
                };
                s += &format!("  {k}{opt}: {ty}\n");
            }
        } else {
            s += &format!("  {}\n", self.line_schema);
        }
        s += "recipes:\n";
        for r in &self.recipes {
            s += &format!(
                "  {:>2}. {}\n      {}\n      {}\n",
                r.number, r.description, r.command, r.lro
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn count_mismatch_and_bad_lines_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let name = "atlatl-list-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl";
        let header = serde_json::to_string(&OffloadHeader::new(
            "list",
            None,
            3,
            10,
            lro_core::Detail::Full,
        ))
        .unwrap();
        fs::write(
            dir.path().join(name),
            format!("{header}\n{{\"a\":1}}\nnot json\n{{\"s\":\"x\\udc00y\"}}\n[]\n"),
        )
        .unwrap();
        let r = inspect(&dir.path().join(name)).unwrap();
        assert_eq!(r.records, 4);
        assert!(!r.count_matches);
        // A lone low surrogate escape is JSON that jq reads.
        assert_eq!(r.bad_lines, [3]);
        assert!(r.to_text().contains("MISMATCH"));
    }

    #[test]
    fn other_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let e = inspect(&dir.path().join("notes.txt")).unwrap_err();
        assert!(e.to_string().contains("not an offload file"), "{e}");
    }
}
