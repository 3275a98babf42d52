//! The three operations on JSON arguments, exactly as every front takes
//! them (the HTTP service's bodies, the MCP tools' arguments), so the fronts
//! share one reading of every field.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use lro_core::principal::Principal;

use crate::{
    ContextError, ContextOffloader, FileContents, OffloadRequest,
    store::{grep_placed, read_placed},
};

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
    pub fn offload_json(
        &self,
        principal: &Principal,
        args: Value,
        contents: FileContents,
    ) -> Result<Value, ContextError> {
        self.offload_request(principal, OffloadRequest::from_value(args)?, contents)
    }

    /// [`offload_json`](Self::offload_json) on a request already read, as
    /// `lro context offload` builds it from stdin and its flags.
    ///
    /// # Errors
    ///
    /// [`ContextError`] naming the bad field; nothing is written then.
    pub fn offload_request(
        &self,
        principal: &Principal,
        request: OffloadRequest,
        contents: FileContents,
    ) -> Result<Value, ContextError> {
        let contents = request.file_contents(contents);
        let (messages, params) = request.check()?;
        Ok(self
            .offload(principal, messages, &params)?
            .to_response(contents))
    }

    /// `/grep`: `pattern` (required), `path` (a directory in the roots,
    /// default the caller's folder in the first root), `glob`, `limit`.
    /// Only `principal`'s own files are searched.
    ///
    /// # Errors
    ///
    /// [`ContextError`] naming the bad field or a path outside the roots.
    pub fn grep_json(&self, principal: &Principal, args: Value) -> Result<String, ContextError> {
        let a: GrepArgs = crate::error::parse(args)?;
        let pattern = a
            .pattern
            .ok_or_else(|| ContextError::field("pattern", "is required"))?;
        let shown = a.path.unwrap_or_else(|| ".".to_owned());
        let place = self
            .store_roots()
            .place(principal, "path", &PathBuf::from(&shown))?;
        grep_placed(&pattern, place, &shown, a.glob.as_deref(), a.limit)
    }

    /// `/read_file`: `absolute_path` (required, in the roots), `offset`
    /// (0-based line), `limit` (lines).
    ///
    /// # Errors
    ///
    /// [`ContextError`] naming the bad field, a path outside the roots, or a
    /// file that does not exist (or expired); another principal's file is
    /// answered exactly as one that does not exist.
    pub fn read_file_json(
        &self,
        principal: &Principal,
        args: Value,
    ) -> Result<String, ContextError> {
        let a: ReadArgs = crate::error::parse(args)?;
        let path = a
            .absolute_path
            .ok_or_else(|| ContextError::field("absolute_path", "is required"))?;
        let place = self
            .store_roots()
            .place(principal, "absolute_path", &PathBuf::from(path))?;
        read_placed(place, a.offset, a.limit)
    }
}
