//! Why an audit could not run at all.

/// An audit that could not produce a report. Every problem of the target
/// after it was first reached is a failed check instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The target could not be launched, reached or initialized.
    #[error("cannot reach {target}: {reason}")]
    Unreachable {
        /// The target, as shown to people (credentials hidden).
        target: String,
        /// What went wrong.
        reason: String,
    },
    /// The auditor's own scratch directory could not be made.
    #[error("cannot create a scratch directory")]
    Scratch(#[source] std::io::Error),
}
