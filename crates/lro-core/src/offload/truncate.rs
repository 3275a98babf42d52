//! The fallback when a write fails: the records that fit the threshold,
//! inline, after a warning that says so.

use crate::{file::WriteError, records::RecordSet, tokens::TokenEstimator};

/// How many records from the front fit in `budget` tokens. Each record is
/// estimated on its own, which rounds up per record and so errs on the side
/// of staying under the budget.
pub fn records_within_budget(
    records: &RecordSet<'_>,
    budget: usize,
    estimator: &dyn TokenEstimator,
) -> usize {
    let mut used = 0;
    for (i, record) in records.records.iter().enumerate() {
        // One extra token per record for the separator between records.
        used += estimator.estimate(record) + 1;
        if used > budget {
            return i;
        }
    }
    records.len()
}

/// The warning prepended to a truncated result.
pub fn truncation_warning(error: &WriteError, kept: usize, total: usize) -> String {
    format!(
        "WARNING: large result offloading failed ({}); results are truncated: \
         showing {kept} of {total} records, {} left out. Narrow the query (filters, limit) \
         to see the rest.",
        crate::error::chain(error),
        total - kept
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_cuts_at_record_boundaries() {
        let text = serde_json::to_string(&vec!["x".repeat(38); 10]).unwrap();
        let records = RecordSet::from_text(&text);
        // Each record is 40 chars = 10 tokens + 1 separator.
        assert_eq!(records_within_budget(&records, 33, &()), 3);
        assert_eq!(records_within_budget(&records, 1000, &()), 10);
        assert_eq!(records_within_budget(&records, 5, &()), 0);
    }
}
