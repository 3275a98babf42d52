//! Validating a request into the plan the worker runs.

use std::collections::BTreeMap;

use lro_core::metric::label::ExtractMode;

use crate::{ExtractError, ExtractRequest, LineWindow, structured::Structured, text::GrepPlan};

/// A validated request, ready for the worker.
pub(crate) enum Plan {
    Recipe {
        number: u8,
        params: BTreeMap<String, String>,
    },
    Query {
        code: String,
        slurp: bool,
        params: BTreeMap<String, String>,
    },
    Structured(Structured),
    Lines(LineWindow),
    Grep(GrepPlan),
}

impl Plan {
    pub(crate) fn new(req: &ExtractRequest) -> Result<(ExtractMode, Plan), ExtractError> {
        let mode = req.mode()?;
        let plan = match (mode, &req.grep) {
            (ExtractMode::Recipe, _) => {
                let number = req.recipe.unwrap_or_default();
                if !(1..=10).contains(&number) {
                    return Err(ExtractError::InvalidRequest(format!(
                        "recipe must be 1..=10, got {number}"
                    )));
                }
                Plan::Recipe {
                    number,
                    params: req.string_params()?,
                }
            }
            (ExtractMode::Query, _) => {
                let code = req.query.clone().unwrap_or_default();
                if code.trim().is_empty() {
                    return Err(ExtractError::InvalidRequest(
                        "query is empty; give a jq filter such as `.` or `select(.priority >= 4)`"
                            .into(),
                    ));
                }
                Plan::Query {
                    code,
                    slurp: req.slurp.unwrap_or(false),
                    params: req.string_params()?,
                }
            }
            (ExtractMode::Structured, _) => Plan::Structured(Structured::from_request(req)?),
            (ExtractMode::Lines, _) => Plan::Lines(req.lines.clone().unwrap_or_default()),
            (ExtractMode::Grep, Some(grep)) => Plan::Grep(GrepPlan::new(grep)?),
            // `mode()` never returns these; kept an error rather than a panic.
            (ExtractMode::Grep, None) | (ExtractMode::Invalid, _) => {
                return Err(ExtractError::InvalidRequest(format!(
                    "no extraction mode in the request ({mode})"
                )));
            }
        };
        Ok((mode, plan))
    }
}
