//! How results are printed, which the job sets and the emitter follows: a
//! leaf, so that neither imports the other for it.

/// How to print results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Render {
    /// Print strings raw (`jq -r`).
    pub(crate) raw: bool,
}
