//! The audit's sequence: which configurations the target is launched in,
//! what is called in each, and what is kept as evidence for the checks.
//!
//! Cheap evidence comes first and each level is judged before the next is
//! gathered, so a target that fails Level 1 costs a few launches:
//!
//! 1. **measure**: threshold far above any result; every call's inline
//!    size and records.
//! 2. **offload**: threshold at half the smallest many-record result; the
//!    offloads, their files and descriptors (Levels 1 and 2).
//! 3. **boundary**: threshold at the server's own estimate E of that
//!    result, and at E − 1; when the answer at E changed, every call again
//!    with no threshold in reach, to tell a tool whose answer varies from
//!    launch to launch from a broken inline path.
//! 4. **cleanup**: a short TTL; an expired file must go, a fresh one stay.
//! 5. **write failure**: the output directory under a regular file.
//! 6. **proxy flag**: the offload launch again, declared a proxy.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use serde_json::{Map, Value};

use crate::{
    AuditConfig, AuditError, Report, Upstream,
    check::Judged,
    events::{self, Samples},
    evidence::{
        CleanupSeen, Evidence, FileSeen, MIN_RECORDS, Offload, RecipeRun, WriteFailureSeen,
    },
    probe::{self, Call},
    recipe, result,
    target::{Launch, Opening, Outcome, Session},
};

/// A threshold no result reaches: everything is inline.
const NO_THRESHOLD: u64 = 1_000_000_000;
/// The TTL of launches that must keep their files.
const LONG_TTL: u64 = 3600;
/// How often files are looked at while waiting for cleanup.
const POLL: Duration = Duration::from_millis(100);

/// Audits `target`.
///
/// # Errors
///
/// [`AuditError::Unreachable`] when the target cannot be launched or
/// reached at all; every later failure is a check's evidence instead.
pub async fn audit(target: &Upstream, cfg: &AuditConfig) -> Result<Report, AuditError> {
    let scratch = tempfile::Builder::new()
        .prefix("lro-audit-")
        .tempdir()
        .map_err(AuditError::Scratch)?;
    let mut run = Run {
        target,
        cfg,
        scratch: scratch.path(),
        ev: Evidence {
            launched: target.is_launched(),
            ..Evidence::default()
        },
    };
    run.measure().await?;
    let mut judged = Judged::default();
    if run.ev.launched {
        run.offload().await;
        run.boundary().await;
    } else {
        run.ev.offloads = offloads_of(&run.ev.measured).await;
    }
    judged.level1(&run.ev);
    let go_on = |judged: &Judged, level| cfg.keep_going || judged.passed(level);
    if go_on(&judged, 1) {
        run_recipes(&mut run.ev.offloads).await;
        if run.ev.launched {
            run.cleanup().await;
        }
        judged.level2(&run.ev);
    } else {
        judged.not_run(2, 1);
    }
    if go_on(&judged, 1) && go_on(&judged, 2) {
        if run.ev.launched {
            run.write_failure().await;
        }
        judged.level3(&run.ev);
    } else {
        judged.not_run(3, if judged.passed(1) { 2 } else { 1 });
    }
    run.flag().await;
    judged.reported(&run.ev);
    let report = Report::new(target.to_string(), judged.into_checks());
    Ok(match run.ev.wire.take() {
        Some(wire) => report.wire(wire),
        None => report,
    })
}

struct Run<'a> {
    target: &'a Upstream,
    cfg: &'a AuditConfig,
    scratch: &'a Path,
    ev: Evidence,
}

impl Run<'_> {
    /// Opens a session in `launch` (ignored for a URL target).
    async fn open(&self, launch: Option<&Launch>, proxy: bool) -> Result<Session, AuditError> {
        let how = Opening {
            proxy,
            wire: self.cfg.wire,
            timeout: self.cfg.timeout,
        };
        Session::open(self.target, launch, how).await
    }

    fn launch(&self, name: &str, threshold: u64, ttl_seconds: u64) -> Launch {
        let output_dir = self.scratch.join(name);
        // A directory the auditor cannot create is a broken scratch space,
        // not the target's fault: the launch then reports it.
        let _ = std::fs::create_dir_all(&output_dir);
        Launch {
            enabled: true,
            threshold,
            ttl_seconds,
            output_dir,
        }
    }

    async fn measure(&mut self) -> Result<(), AuditError> {
        let launch = self.launch("measure", NO_THRESHOLD, LONG_TTL);
        let session = self.open(Some(&launch), false).await?;
        self.ev.wire = Some(session.wire().clone());
        self.ev.tools = session.tools().iter().map(|t| t.name.to_string()).collect();
        let (calls, left_out) = probe::plan(&self.cfg.probes, session.tools());
        self.ev.left_out = left_out;
        for call in &calls {
            self.ev.measured.push(session.call(call).await);
        }
        session.close().await;
        self.ev.calls = calls;
        self.ev.boundary = self.boundary_call();
        Ok(())
    }

    /// The boundary call: the smallest inline result of many records, of
    /// the calls not known to answer differently at each launch.
    fn boundary_call(&self) -> Option<usize> {
        (0..self.ev.calls.len())
            .filter(|i| !self.ev.varying.contains(i))
            .filter(|&i| {
                self.ev.measured_ok(i).is_some_and(|v| {
                    !result::is_offload(v) && result::records(v).len() >= MIN_RECORDS
                })
            })
            .min_by_key(|&i| self.ev.measured_ok(i).map_or(u64::MAX, result::tokens))
    }

    /// Calls everything at half the boundary call's size.
    async fn offload(&mut self) {
        let smallest = match self.ev.boundary {
            Some(b) => self.ev.measured_ok(b).map(result::tokens),
            None => (0..self.ev.calls.len())
                .filter_map(|i| self.ev.measured_ok(i).map(result::tokens))
                .min(),
        };
        let Some(size) = smallest else { return };
        let t_lo = (size / 2).max(1);
        self.ev.t_lo = Some(t_lo);
        let launch = self.launch("offload", t_lo, LONG_TTL);
        self.ev.output_dir = Some(launch.output_dir.clone());
        let Ok(session) = self.open(Some(&launch), false).await else {
            return;
        };
        for call in &self.ev.calls {
            self.ev.at_lo.push(session.call(call).await);
        }
        // Files are read while the server that wrote them still runs.
        self.ev.offloads = offloads_of(&self.ev.at_lo).await;
        session.close().await;
    }

    /// The boundary call at E − 1 and at E, E being the server's estimate.
    ///
    /// An inline answer at E that differs from the measured one is either
    /// the inline path changing it or a tool whose answer changes by itself
    /// (the time, the environment each launch gets). A second launch with
    /// no threshold in reach tells them apart; a call that answers
    /// differently there too is not judged on, and the next call takes its
    /// place.
    async fn boundary(&mut self) {
        let Some(b) = self.ev.boundary else { return };
        self.around_estimate(b).await;
        let changed = matches!(
            (&self.ev.at, self.ev.measured_ok(b)),
            (Some((_, Outcome::Result(r))), Some(m))
                if !result::is_offload(r) && !result::is_error(r) && !result::same_answer(r, m)
        );
        if !changed {
            return;
        }
        let again = self.measure_again().await;
        self.ev.varying = (0..self.ev.calls.len())
            .filter(|&i| {
                matches!(
                    (again.get(i), self.ev.measured_ok(i)),
                    (Some(Outcome::Result(r)), Some(m)) if !result::same_answer(r, m)
                )
            })
            .collect();
        if !self.ev.varying.contains(&b) {
            return;
        }
        // With no other call to judge on, the cleanup, write-failure and
        // flag launches still use this one: they look at offloads, which a
        // varying answer does not disturb.
        if let Some(next) = self.boundary_call() {
            self.ev.boundary = Some(next);
            self.around_estimate(next).await;
        }
    }

    /// Every call again with no threshold in reach, in a launch of its own.
    async fn measure_again(&self) -> Vec<Outcome> {
        let launch = self.launch("measure-again", NO_THRESHOLD, LONG_TTL);
        let Ok(session) = self.open(Some(&launch), false).await else {
            return Vec::new();
        };
        let mut again = Vec::with_capacity(self.ev.calls.len());
        for call in &self.ev.calls {
            again.push(session.call(call).await);
        }
        session.close().await;
        again
    }

    /// Call `b` at E − 1 and at E.
    async fn around_estimate(&mut self, b: usize) {
        let estimate = self.ev.offloads.iter().find(|o| o.call == b).and_then(|o| {
            let header = o.file.as_ref().ok().and_then(FileSeen::header);
            let of = |m: &Map<String, Value>| m.get("estimated_tokens").and_then(Value::as_u64);
            header.as_ref().and_then(of).or_else(|| {
                o.descriptor
                    .get("summary")
                    .and_then(Value::as_object)
                    .and_then(of)
            })
        });
        self.ev.estimate = estimate;
        let call = self.ev.calls[b].clone();
        self.ev.below = None;
        if let Some(e) = estimate.filter(|&e| e > 0) {
            self.ev.below = Some(self.call_once("below", e - 1, &call).await);
        }
        // Without an estimate, a threshold twice the measured size.
        let at = estimate.unwrap_or_else(|| {
            self.ev
                .measured_ok(b)
                .map_or(NO_THRESHOLD, |v| result::tokens(v) * 2)
        });
        self.ev.at = Some((at, self.call_once("at", at, &call).await));
    }

    /// One launch, one call.
    async fn call_once(&self, name: &str, threshold: u64, call: &Call) -> Outcome {
        let launch = self.launch(name, threshold, LONG_TTL);
        match self.open(Some(&launch), false).await {
            Ok(session) => {
                let out = session.call(call).await;
                session.close().await;
                out
            }
            Err(e) => Outcome::Error(lro_core::error::chain(&e).to_string()),
        }
    }

    async fn scrape(&self) -> Option<Samples> {
        match &self.cfg.metrics_url {
            Some(url) => events::scrape(url).await,
            None => None,
        }
    }

    /// An expired file must go within the wait; a fresh one must stay.
    async fn cleanup(&mut self) {
        let (Some(b), Some(t_lo)) = (self.ev.boundary, self.ev.t_lo) else {
            return;
        };
        let ttl = self.cfg.cleanup_ttl_seconds;
        let launch = self.launch("cleanup", t_lo, ttl);
        let call = self.ev.calls[b].clone();
        let seen = match self.open(Some(&launch), false).await {
            Err(e) => CleanupSeen {
                ttl,
                expired: Err(lro_core::error::chain(&e).to_string()),
                fresh_deleted: None,
                stderr: String::new(),
                metrics: None,
            },
            Ok(session) => {
                let before = self.scrape().await;
                let seen = watch_cleanup(&session, &call, ttl, self.cfg.cleanup_wait).await;
                // Give the event a moment to reach stderr after the delete.
                let deadline = Instant::now() + Duration::from_secs(2);
                while seen.is_ok()
                    && events::in_stderr(&session.stderr(), events::Event::FileExpired).is_none()
                    && Instant::now() < deadline
                {
                    tokio::time::sleep(POLL).await;
                }
                let after = self.scrape().await;
                let stderr = session.stderr();
                session.close().await;
                let (expired, fresh_deleted) = match seen {
                    Ok(pair) => (Ok(pair.0), pair.1),
                    Err(e) => (Err(e), None),
                };
                CleanupSeen {
                    ttl,
                    expired,
                    fresh_deleted,
                    stderr,
                    metrics: before.zip(after),
                }
            }
        };
        self.ev.cleanup = Some(seen);
    }

    /// The boundary call with the output directory under a regular file.
    async fn write_failure(&mut self) {
        let (Some(b), Some(t_lo)) = (self.ev.boundary, self.ev.t_lo) else {
            return;
        };
        // CI runs as root, so permissions cannot make a directory
        // unwritable; a path under a regular file can never be a directory.
        let blocker = self.scratch.join("not-a-directory");
        if let Err(e) = std::fs::write(&blocker, b"") {
            self.ev.write_failure = Some(WriteFailureSeen {
                threshold: t_lo,
                outcome: Outcome::Error(format!("cannot prepare the scratch file: {e}")),
                stderr: String::new(),
                metrics: None,
            });
            return;
        }
        let launch = Launch {
            enabled: true,
            threshold: t_lo,
            ttl_seconds: LONG_TTL,
            output_dir: blocker.join("out"),
        };
        let call = self.ev.calls[b].clone();
        let seen = match self.open(Some(&launch), false).await {
            Err(e) => WriteFailureSeen {
                threshold: t_lo,
                outcome: Outcome::Error(format!(
                    "the server did not start: {}",
                    lro_core::error::chain(&e)
                )),
                stderr: String::new(),
                metrics: None,
            },
            Ok(session) => {
                let before = self.scrape().await;
                let outcome = session.call(&call).await;
                // The event may be logged just after the answer is sent.
                let deadline = Instant::now() + Duration::from_secs(2);
                while events::in_stderr(&session.stderr(), events::Event::WriteFailed).is_none()
                    && Instant::now() < deadline
                {
                    tokio::time::sleep(POLL).await;
                }
                let after = self.scrape().await;
                let stderr = session.stderr();
                session.close().await;
                WriteFailureSeen {
                    threshold: t_lo,
                    outcome,
                    stderr,
                    metrics: before.zip(after),
                }
            }
        };
        self.ev.write_failure = Some(seen);
    }

    /// The boundary call (or, for a URL target, the first offloaded call)
    /// again, declared a proxy: it must come back inline.
    async fn flag(&mut self) {
        let Some(first) = self.ev.offloads.first().map(|o| o.call) else {
            return;
        };
        let b = self.ev.boundary.unwrap_or(first);
        if !self.ev.offloads.iter().any(|o| o.call == b) {
            return;
        }
        let call = self.ev.calls[b].clone();
        let launch = self.ev.t_lo.map(|t| self.launch("flagged", t, LONG_TTL));
        self.ev.flagged = Some(match self.open(launch.as_ref(), true).await {
            Ok(session) => {
                let out = session.call(&call).await;
                session.close().await;
                out
            }
            Err(e) => Outcome::Error(lro_core::error::chain(&e).to_string()),
        });
    }
}

/// Calls `call` once, waits past the TTL, calls it again for a fresh file,
/// then polls until the first file is gone. `Ok` gives how long after its
/// expiry the first file went, and the age of the fresh file if it went
/// before its TTL.
async fn watch_cleanup(
    session: &Session,
    call: &Call,
    ttl: u64,
    wait: Duration,
) -> Result<(Duration, Option<Duration>), String> {
    let ttl = Duration::from_secs(ttl);
    let first = offloaded_path(session, call).await?;
    let written = Instant::now();
    // The fresh file is written before the first expires, so a cleanup
    // pass that deletes the first one sees it younger than its TTL.
    tokio::time::sleep(ttl.saturating_sub(Duration::from_millis(700))).await;
    let fresh = offloaded_path(session, call).await?;
    let fresh_written = Instant::now();
    let deadline = written + ttl + wait;
    let mut fresh_deleted = None;
    loop {
        let now = Instant::now();
        if fresh_deleted.is_none() && !fresh.exists() && now - fresh_written < ttl {
            fresh_deleted = Some(now - fresh_written);
        }
        if !first.exists() {
            let late = now.saturating_duration_since(written + ttl);
            return Ok((late, fresh_deleted));
        }
        if now >= deadline {
            return Err(format!(
                "{} still exists {:.1}s after its TTL of {}s expired",
                first.display(),
                (now - written - ttl).as_secs_f64(),
                ttl.as_secs()
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The `file_path` of an offloaded answer to `call`.
async fn offloaded_path(session: &Session, call: &Call) -> Result<PathBuf, String> {
    match session.call(call).await {
        Outcome::Result(v) => result::descriptor(&v)
            .and_then(|d| {
                d.get("file_path")
                    .and_then(Value::as_str)
                    .map(PathBuf::from)
            })
            .filter(|p| p.exists())
            .ok_or_else(|| format!("{call} was not offloaded to a readable file")),
        Outcome::Error(e) => Err(format!("{call} failed: {e}")),
    }
}

/// Runs every recipe of every readable offload file.
async fn run_recipes(offloads: &mut [Offload]) {
    for o in offloads {
        let Ok(file) = &o.file else { continue };
        let list = o.descriptor.get("jq_recipes").and_then(Value::as_array);
        let mut runs = Vec::new();
        for (index, r) in list.into_iter().flatten().enumerate() {
            let command = r
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let outcome = match recipe::parse(&command, &file.path.to_string_lossy()) {
                Ok(parsed) => recipe::run(&parsed, &file.path).await,
                Err(shape) => Err(format!("not in the spec's shape: {shape}")),
            };
            runs.push(RecipeRun {
                index,
                command,
                outcome,
            });
        }
        o.runs = Some(runs);
    }
}

/// The offloads among `outcomes`, with their files read.
async fn offloads_of(outcomes: &[Outcome]) -> Vec<Offload> {
    let mut out = Vec::new();
    for (i, outcome) in outcomes.iter().enumerate() {
        let Outcome::Result(v) = outcome else {
            continue;
        };
        let Some(descriptor) = result::descriptor(v) else {
            continue;
        };
        let path = descriptor.get("file_path").and_then(Value::as_str);
        let file = match path {
            None => Err("the descriptor has no file_path".to_owned()),
            Some(p) => read_file(Path::new(p)).await,
        };
        out.push(Offload {
            call: i,
            result: v.clone(),
            descriptor,
            file,
            runs: None,
        });
    }
    out
}

async fn read_file(path: &Path) -> Result<FileSeen, String> {
    use std::os::unix::fs::PermissionsExt as _;

    let bytes = tokio::fs::read(path)
        .await
        .map_err(|e| format!("cannot read {} from the auditor: {e}", path.display()))?;
    let mode = tokio::fs::metadata(path)
        .await
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0);
    let text = String::from_utf8_lossy(&bytes);
    Ok(FileSeen {
        path: path.to_owned(),
        lines: text.lines().map(str::to_owned).collect(),
        mode,
    })
}
