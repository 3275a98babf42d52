//! The verdict: checks, the level they prove, and its four renderings (a
//! human table, JSON, JUnit XML and the Prometheus textfile format).
//!
//! ```
//! use lro_audit::{Check, Report, Status};
//!
//! let report = Report::new(
//!     "demo".to_owned(),
//!     vec![
//!         Check::new("threshold-aggregate", 1, Status::Pass, "offloaded"),
//!         Check::new("recipes-count", 2, Status::Fail, "9 recipes at light"),
//!     ],
//! );
//! assert_eq!(report.level(), 1);
//! assert_eq!(report.verdict(), "Level 1 — Level 2 blocked by: recipes-count");
//! ```

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Value, json};

use crate::Wire;

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The requirement holds, with evidence.
    Pass,
    /// The requirement is broken; the detail says how.
    Fail,
    /// The requirement could not be judged; the detail says why. A skipped
    /// check blocks its level like a failed one: nothing was proven.
    Skip,
    /// The requirement presumes what the target's results are not (the
    /// confidence sort presumes memories); the detail says what. It holds
    /// its level no more than a pass does: there is nothing to break.
    #[serde(rename = "not_applicable")]
    NotApplicable,
}

impl Status {
    /// The symbol of the human table: ✓, ✗, – or ○ (not applicable).
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Pass => "✓",
            Self::Fail => "✗",
            Self::Skip => "–",
            Self::NotApplicable => "○",
        }
    }

    /// Whether the check lets its level be proven: it passed, or it does
    /// not apply.
    pub fn is_met(self) -> bool {
        matches!(self, Self::Pass | Self::NotApplicable)
    }

    /// The value of `lro_audit_check`: 1 pass (or not applicable: the
    /// dashboards count what is below 1 as not passed), 0 fail, -1 skip.
    fn gauge(self) -> i8 {
        match self {
            Self::Pass | Self::NotApplicable => 1,
            Self::Fail => 0,
            Self::Skip => -1,
        }
    }
}

/// One named requirement and what the auditor found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Stable kebab-case name, e.g. `threshold-aggregate`.
    pub id: &'static str,
    /// The conformance level that requires it; 0 for checks that are
    /// reported but belong to no level.
    pub level: u8,
    /// Pass, fail or skip.
    pub status: Status,
    /// The evidence: what was observed, or why the check was skipped.
    pub detail: String,
}

impl Check {
    /// A check result.
    pub fn new(id: &'static str, level: u8, status: Status, detail: impl Into<String>) -> Self {
        Self {
            id,
            level,
            status,
            detail: detail.into(),
        }
    }
}

/// Every check of one audit and the level they prove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    target: String,
    checks: Vec<Check>,
    level: u8,
    wire: Option<Wire>,
}

/// The highest conformance level.
const MAX_LEVEL: u8 = 3;

impl Report {
    /// A report on `target` (as shown to people), with its level computed:
    /// the highest level whose checks, and those of every level below,
    /// all pass or do not apply.
    pub fn new(target: String, checks: Vec<Check>) -> Self {
        let mut level = 0;
        for l in 1..=MAX_LEVEL {
            let mut at = checks.iter().filter(|c| c.level == l).peekable();
            if at.peek().is_none() || !at.all(|c| c.status.is_met()) {
                break;
            }
            level = l;
        }
        Self {
            target,
            checks,
            level,
            wire: None,
        }
    }

    /// Sets the wire the audit spoke to the target. Defaults to none (a
    /// report built by hand); [`audit`](crate::audit) sets it.
    #[must_use]
    pub fn wire(mut self, wire: Wire) -> Self {
        self.wire = Some(wire);
        self
    }

    /// The level proven, 0 to 3.
    pub fn level(&self) -> u8 {
        self.level
    }

    /// The target audited.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Every check, in the order they ran.
    pub fn checks(&self) -> &[Check] {
        &self.checks
    }

    /// The check named `id`, if it is in the report.
    pub fn check(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }

    /// The checks that kept the next level from being proven.
    pub fn blockers(&self) -> impl Iterator<Item = &Check> {
        let next = self.level + 1;
        self.checks
            .iter()
            .filter(move |c| c.level == next && !c.status.is_met())
    }

    /// One line: `Level 2 — Level 3 blocked by: write-failure-fallback`.
    pub fn verdict(&self) -> String {
        let mut line = format!("Level {}", self.level);
        if self.level < MAX_LEVEL {
            let blockers: Vec<_> = self.blockers().map(|c| c.id).collect();
            let _ = write!(
                line,
                " — Level {} blocked by: {}",
                self.level + 1,
                blockers.join(", ")
            );
        }
        line
    }

    /// `{"level", "target", "wire", "verdict", "checks": [{"id", "level",
    /// "status", "detail"}]}`; `wire` is [`Wire`]'s object, or null.
    pub fn to_json(&self) -> Value {
        json!({
            "level": self.level,
            "target": self.target,
            "wire": self.wire,
            "verdict": self.verdict(),
            "checks": self.checks,
        })
    }

    /// The human table: checks grouped by level, ✓ / ✗ / –, the evidence of
    /// every check that did not pass, then the verdict.
    pub fn to_table(&self) -> String {
        let mut out = format!("LRO conformance audit of {}\n", self.target);
        if let Some(wire) = &self.wire {
            let _ = writeln!(out, "over {wire}");
        }
        for level in [1, 2, 3, 0] {
            let mut checks = self.checks.iter().filter(|c| c.level == level).peekable();
            if checks.peek().is_none() {
                continue;
            }
            match level {
                0 => out.push_str("\nReported (not part of a level)\n"),
                l => {
                    let _ = writeln!(out, "\nLevel {l}");
                }
            }
            for c in checks {
                let _ = write!(out, "  {} {:<24}", c.status.symbol(), c.id);
                // Passing checks of a level keep the table short; reported
                // checks always show their figure.
                if c.status != Status::Pass || level == 0 {
                    let _ = write!(out, " {}", c.detail);
                }
                out.push('\n');
            }
        }
        let _ = writeln!(out, "\n{}", self.verdict());
        out
    }

    /// A JUnit XML report: one test case per check, failures with their
    /// evidence, skips with their reason.
    pub fn to_junit(&self) -> String {
        use quick_junit::{NonSuccessKind, Report as Junit, TestCase, TestCaseStatus, TestSuite};

        let mut suite = TestSuite::new(format!("lro-audit {}", self.target));
        if let Some(wire) = &self.wire {
            suite.add_property(("wire", wire.to_string().as_str()));
        }
        for c in &self.checks {
            let status = match c.status {
                Status::Pass | Status::NotApplicable => TestCaseStatus::success(),
                Status::Fail => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(c.detail.clone());
                    s
                }
                Status::Skip => {
                    let mut s = TestCaseStatus::skipped();
                    s.set_message(c.detail.clone());
                    s
                }
            };
            let mut case = TestCase::new(c.id, status);
            case.set_classname(format!("level{}", c.level));
            // JUnit has no "not applicable": a success that says so.
            if c.status == Status::NotApplicable {
                case.set_system_out(format!("not applicable: {}", c.detail));
            }
            suite.add_test_case(case);
        }
        let mut report = Junit::new("lro-audit");
        report.add_test_suite(suite);
        report
            .to_string()
            .expect("a JUnit report of plain strings serializes")
    }

    /// The Prometheus textfile-collector format: `lro_audit_level` and one
    /// `lro_audit_check{check,level}` per check (1 pass, 0 fail, -1 skip).
    /// Check ids are kebab-case, so no label value needs escaping. One file
    /// describes one target: the scrape's `instance` tells targets apart.
    pub fn to_textfile(&self) -> String {
        use lro_core::metric::{AUDIT_CHECK, AUDIT_LEVEL, find};

        let help = |name| find(name).map_or("", |m| m.help);
        let mut out = String::new();
        let _ = writeln!(out, "# HELP {AUDIT_LEVEL} {}", help(AUDIT_LEVEL));
        let _ = writeln!(out, "# TYPE {AUDIT_LEVEL} gauge");
        let _ = writeln!(out, "{AUDIT_LEVEL} {}", self.level);
        let _ = writeln!(out, "# HELP {AUDIT_CHECK} {}", help(AUDIT_CHECK));
        let _ = writeln!(out, "# TYPE {AUDIT_CHECK} gauge");
        for c in &self.checks {
            let _ = writeln!(
                out,
                "{AUDIT_CHECK}{{check=\"{}\",level=\"{}\"}} {}",
                c.id,
                c.level,
                c.status.gauge()
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(statuses: &[(u8, Status)]) -> Report {
        const IDS: [&str; 4] = ["a", "b", "c", "d"];
        let checks = statuses
            .iter()
            .zip(IDS)
            .map(|(&(level, status), id)| Check::new(id, level, status, "why"))
            .collect();
        Report::new("t".to_owned(), checks)
    }

    #[test]
    fn level_is_the_highest_fully_passed() {
        use Status::*;
        assert_eq!(report(&[(1, Pass), (2, Pass), (3, Pass)]).level(), 3);
        assert_eq!(report(&[(1, Pass), (2, Skip), (3, Pass)]).level(), 1);
        assert_eq!(report(&[(1, Fail), (2, Pass), (3, Pass)]).level(), 0);
        // A level without checks proves nothing.
        assert_eq!(report(&[(1, Pass), (3, Pass)]).level(), 1);
        // Reported checks never change the level.
        assert_eq!(
            report(&[(1, Pass), (2, Pass), (3, Pass), (0, Fail)]).level(),
            3
        );
    }

    #[test]
    fn verdict_names_the_blockers() {
        use Status::*;
        let r = report(&[(1, Pass), (2, Fail), (2, Skip), (3, Pass)]);
        assert_eq!(r.verdict(), "Level 1 — Level 2 blocked by: b, c");
        assert_eq!(
            report(&[(1, Pass), (2, Pass), (3, Pass)]).verdict(),
            "Level 3"
        );
    }

    #[test]
    fn a_check_that_does_not_apply_holds_its_level_and_says_so() {
        use Status::*;
        let r = report(&[(1, Pass), (2, NotApplicable), (3, Pass)]);
        assert_eq!(r.level(), 3);
        assert_eq!(r.verdict(), "Level 3");
        assert!(r.to_table().contains("○ b"), "{}", r.to_table());
        assert_eq!(r.to_json()["checks"][1]["status"], "not_applicable");
        assert!(
            r.to_textfile()
                .contains("lro_audit_check{check=\"b\",level=\"2\"} 1\n")
        );
        let xml = r.to_junit();
        assert!(
            xml.contains("not applicable: why") && !xml.contains("<skipped"),
            "{xml}"
        );
    }

    #[test]
    fn textfile_and_junit_carry_every_check() {
        let r = report(&[(1, Status::Pass), (2, Status::Skip)]);
        let text = r.to_textfile();
        assert!(text.contains("lro_audit_level 1\n"), "{text}");
        assert!(text.contains("lro_audit_check{check=\"b\",level=\"2\"} -1\n"));
        let xml = r.to_junit();
        assert!(xml.contains("<testcase name=\"a\""), "{xml}");
        assert!(xml.contains("<skipped message=\"why\""), "{xml}");
    }
}
