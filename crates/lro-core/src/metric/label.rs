//! The closed sets of label values: each is an enum with `ALL` and `as_str`,
//! and the only place its values are spelled.
//!
//! Code records labels through these enums, the metric catalogue lists them
//! (see [`super::catalogue`]), and the deploy tests and dashboard generator
//! read them from the catalogue, so a value is never typed twice.
//!
//! ```
//! use lro_core::metric::label::ToolOutcome;
//!
//! assert_eq!(ToolOutcome::Offloaded.as_str(), "offloaded");
//! assert_eq!(ToolOutcome::ALL.len(), 4);
//! assert_eq!(ToolOutcome::SET.variants[0], ("Inline", "inline"));
//! ```

use std::fmt;

/// A closed set of label values, as listed in the metric catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LabelSet {
    /// The Rust enum's name, e.g. `ToolOutcome`.
    pub name: &'static str,
    /// `(variant, value)` pairs in declaration order.
    pub variants: &'static [(&'static str, &'static str)],
}

impl LabelSet {
    /// The label values, in declaration order.
    pub fn values(&self) -> impl Iterator<Item = &'static str> {
        self.variants.iter().map(|(_, value)| *value)
    }
}

/// Declares a label-value enum with `ALL`, `SET`, `as_str` and `Display`.
macro_rules! label_values {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $value:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The set as the metric catalogue lists it.
            pub const SET: LabelSet = LabelSet {
                name: stringify!($name),
                variants: &[$((stringify!($variant), $value),)+],
            };

            /// The label value.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $value,)+
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

label_values! {
    /// What the layer did with one tool result (`outcome` of
    /// `lro_tool_results_total`).
    pub enum ToolOutcome {
        /// At or under the threshold: returned unchanged.
        Inline => "inline",
        /// Written to a JSONL file and replaced by a descriptor.
        Offloaded => "offloaded",
        /// The write failed; the result was cut to the threshold with a warning.
        Truncated => "truncated",
        /// Passed through untouched: a proxy client, or offloading is off.
        Bypassed => "bypassed",
    }
}

label_values! {
    /// Why an offload write failed (`reason` of
    /// `lro_offload_write_failures_total`).
    pub enum WriteFailureReason {
        /// A directory on the path does not exist.
        NotFound => "not_found",
        /// Permission denied, or a read-only file system.
        PermissionDenied => "permission_denied",
        /// The disk or a quota is full.
        StorageFull => "storage_full",
        /// A path component is not a directory.
        NotADirectory => "not_a_directory",
        /// A record was not a single line of JSON.
        BadRecord => "bad_record",
        /// The write would pass the per-principal or the total offload quota.
        Quota => "quota",
        /// The offload directory belongs to another user: refused.
        NotOwned => "not_owned",
        /// Any other I/O error.
        Io => "io",
        /// The object store could not be reached (connection refused, DNS).
        StoreUnreachable => "store_unreachable",
        /// The object store refused the credentials.
        StoreCredentials => "store_credentials",
        /// The object store's bucket does not exist.
        StoreBucketMissing => "store_bucket_missing",
        /// A store operation passed its timeout.
        StoreTimeout => "store_timeout",
        /// Any other object store failure.
        StoreOther => "store_other",
    }
}

label_values! {
    /// One operation on the offload store (`op` of the `lro_store_*`
    /// metrics).
    pub enum StoreOp {
        /// Writing an object (one request, or a whole multipart upload).
        Put => "put",
        /// Reading an object or a range of it.
        Get => "get",
        /// Reading an object's size and time.
        Head => "head",
        /// Listing objects.
        List => "list_objects",
        /// Deleting an object.
        Delete => "delete",
        /// Creating an object only where none is (an expiry claim).
        Claim => "claim",
    }
}

label_values! {
    /// How a store operation failed (`kind` of `lro_store_errors_total`).
    pub enum StoreErrorKind {
        /// The store could not be reached.
        Unreachable => "unreachable",
        /// The store refused the credentials.
        CredentialsRefused => "credentials_refused",
        /// The bucket does not exist.
        BucketMissing => "bucket_missing",
        /// The operation passed its timeout.
        Timeout => "timeout",
        /// No object under the key.
        NotFound => "not_found",
        /// Anything else.
        Other => "other",
    }
}

label_values! {
    /// Why cleanup deleted a file (`reason` of `lro_offload_files_expired_total`).
    pub enum ExpiryReason {
        /// `created_at + ttl` has passed.
        Ttl => "ttl",
        /// The directory was over its byte quota; oldest files went first.
        Quota => "quota",
    }
}

label_values! {
    /// How a cleanup run ended (`outcome` of `lro_cleanup_runs_total`).
    pub enum CleanupOutcome {
        /// No error.
        Success => "success",
        /// The run went on past at least one error.
        Error => "error",
    }
}

label_values! {
    /// The mode of an extraction request (`mode` of the `lro_extract_*`
    /// metrics).
    pub enum ExtractMode {
        /// Recipe N of the descriptor.
        Recipe => "recipe",
        /// A jq filter.
        Query => "query",
        /// `where`/`fields`/`sort_by`/`count`/`group_by`.
        Structured => "structured",
        /// A window of record lines.
        Lines => "lines",
        /// A regex search over record lines.
        Grep => "grep",
        /// The request named no mode, or more than one.
        Invalid => "invalid",
    }
}

label_values! {
    /// How an extraction request ended (`outcome` of
    /// `lro_extract_requests_total`).
    pub enum ExtractOutcome {
        /// Complete output.
        Ok => "ok",
        /// Output cut at a limit, with a notice.
        Truncated => "truncated",
        /// Bad input, a guard refusal, or a failed query.
        Error => "error",
        /// Stopped at the time limit.
        Timeout => "timeout",
    }
}

label_values! {
    /// How an upstream session of `lro proxy` ended (`reason` of
    /// `lro_upstream_exits_total`).
    pub enum UpstreamExit {
        /// The proxy ended it: the client went away or the proxy shut down.
        Shutdown => "shutdown",
        /// A child process exited on its own with status 0.
        Exited => "exited",
        /// A child process failed: a non-zero status or a signal.
        Failed => "failed",
        /// The connection to an HTTP upstream was lost.
        Disconnected => "disconnected",
    }
}

label_values! {
    /// The MCP method of a request `lro proxy` forwarded (`method` of the
    /// `lro_upstream_*` metrics). Rare methods share `other`.
    pub enum UpstreamMethod {
        /// `initialize`.
        Initialize => "initialize",
        /// `tools/call`.
        ToolsCall => "tools/call",
        /// `tools/list`.
        ToolsList => "tools/list",
        /// `resources/list`, `resources/templates/list` and `resources/read`.
        Resources => "resources",
        /// `prompts/list` and `prompts/get`.
        Prompts => "prompts",
        /// Server-to-client requests: sampling, elicitation, roots.
        ClientRequest => "client_request",
        /// Everything else: ping, completion, logging, tasks, custom methods.
        Other => "other",
    }
}

label_values! {
    /// The JSON-RPC error code an upstream answered with (`code` of
    /// `lro_upstream_errors_total`), or how the call failed without one.
    pub enum UpstreamErrorCode {
        /// -32700.
        ParseError => "-32700",
        /// -32600.
        InvalidRequest => "-32600",
        /// -32601.
        MethodNotFound => "-32601",
        /// -32602.
        InvalidParams => "-32602",
        /// -32603.
        InternalError => "-32603",
        /// -32002, MCP's resource not found.
        ResourceNotFound => "-32002",
        /// Any other code.
        Other => "other",
        /// No answer: the upstream went away while the call was pending.
        Transport => "transport",
        /// The client cancelled the call.
        Cancelled => "cancelled",
        /// No answer within the proxy's request timeout.
        Timeout => "timeout",
    }
}

impl UpstreamErrorCode {
    /// The label value for a JSON-RPC error code.
    pub fn from_code(code: i32) -> Self {
        match code {
            -32700 => Self::ParseError,
            -32600 => Self::InvalidRequest,
            -32601 => Self::MethodNotFound,
            -32602 => Self::InvalidParams,
            -32603 => Self::InternalError,
            -32002 => Self::ResourceNotFound,
            _ => Self::Other,
        }
    }
}

label_values! {
    /// Which summariser wrote a compression snapshot (`kind` of the
    /// `lro_context_summariser_*` metrics).
    pub enum SummariserKind {
        /// The deterministic extractive summary.
        Extractive => "extractive",
        /// An OpenAI-compatible LLM.
        Llm => "llm",
        /// A summariser an embedding application plugged in.
        Plugin => "plugin",
    }
}

label_values! {
    /// How a summariser call ended (`outcome` of
    /// `lro_context_summariser_calls_total`).
    pub enum SummariserOutcome {
        /// It returned a summary.
        Ok => "ok",
        /// It failed or timed out; the extractive summary was used.
        Fallback => "fallback",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_match_as_str() {
        for o in ToolOutcome::ALL {
            assert!(ToolOutcome::SET.values().any(|v| v == o.as_str()));
        }
        assert_eq!(ExtractMode::SET.variants.len(), ExtractMode::ALL.len());
        assert_eq!(ExpiryReason::Quota.to_string(), "quota");
        assert_eq!(UpstreamErrorCode::from_code(-32601).as_str(), "-32601");
        assert_eq!(UpstreamErrorCode::from_code(-1), UpstreamErrorCode::Other);
    }
}
