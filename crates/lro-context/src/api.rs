//! The three operations on JSON arguments, exactly as every front takes
//! them (the HTTP service's bodies, the MCP tools' arguments), so the fronts
//! share one reading of every field.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::{ContextError, ContextOffloader, FileContents, OffloadRequest, grep, read_file};

#[derive(Deserialize)]
struct GrepArgs {
    pattern: Option<String>,
    path: Option<String>,
    glob: Option<String>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
struct ReadArgs {
    absolute_path: Option<String>,
    offset: Option<usize>,
    limit: Option<usize>,
}

impl ContextOffloader {
    /// `/context_offload`: the request checked, the history processed, ReMe's
    /// response (`{success, answer, messages, metadata}`), with the files'
    /// contents as the request's `include_file_contents` says, else as
    /// `contents` says.
    ///
    /// # Errors
    ///
    /// [`ContextError`] naming the bad field; nothing is written then.
    pub fn offload_json(&self, args: Value, contents: FileContents) -> Result<Value, ContextError> {
        self.offload_request(OffloadRequest::from_value(args)?, contents)
    }

    /// [`offload_json`](Self::offload_json) on a request already read, as
    /// `lro context offload` builds it from stdin and its flags.
    ///
    /// # Errors
    ///
    /// [`ContextError`] naming the bad field; nothing is written then.
    pub fn offload_request(
        &self,
        request: OffloadRequest,
        contents: FileContents,
    ) -> Result<Value, ContextError> {
        let contents = request.file_contents(contents);
        let (messages, params) = request.check()?;
        Ok(self.offload(messages, &params)?.to_response(contents))
    }

    /// `/grep`: `pattern` (required), `path` (a directory in the roots,
    /// default the first root), `glob`, `limit`.
    ///
    /// # Errors
    ///
    /// [`ContextError`] naming the bad field or a path outside the roots.
    pub fn grep_json(&self, args: Value) -> Result<String, ContextError> {
        let a: GrepArgs = crate::error::parse(args)?;
        let pattern = a
            .pattern
            .ok_or_else(|| ContextError::field("pattern", "is required"))?;
        let shown = a.path.unwrap_or_else(|| ".".to_owned());
        let dir = self.store_roots().resolve("path", &PathBuf::from(&shown))?;
        grep(&pattern, &dir, &shown, a.glob.as_deref(), a.limit)
    }

    /// `/read_file`: `absolute_path` (required, in the roots), `offset`
    /// (0-based line), `limit` (lines).
    ///
    /// # Errors
    ///
    /// [`ContextError`] naming the bad field, a path outside the roots, or a
    /// file that does not exist (or expired).
    pub fn read_file_json(&self, args: Value) -> Result<String, ContextError> {
        let a: ReadArgs = crate::error::parse(args)?;
        let path = a
            .absolute_path
            .ok_or_else(|| ContextError::field("absolute_path", "is required"))?;
        let file = self
            .store_roots()
            .resolve("absolute_path", &PathBuf::from(path))?;
        read_file(&file, a.offset, a.limit)
    }
}
