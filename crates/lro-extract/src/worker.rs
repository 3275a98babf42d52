//! The worker process: the other end of [`crate::WorkerPool`].
//!
//! The pool starts its program (by default the current executable) with
//! [`WORKER_ENV`] set. A host program calls [`run_if_worker`] first thing
//! in `main`: in a worker it serves jobs and exits, never returning; in the
//! host itself it returns at once.
//!
//! ```no_run
//! // The first line of `main`:
//! lro_extract::worker::run_if_worker();
//! // … the server as usual
//! ```
//!
//! A worker first limits its own address space (`setrlimit(RLIMIT_AS)`) to
//! what it uses at start-up plus the memory budget and the job thread's
//! stack, and says so in its handshake answer; then it runs one job per
//! line of standard input, answering each on standard output (see the
//! framing in `frame.rs`), and exits when standard input ends, which it
//! does when the host exits, however it exits. A query that allocates past
//! the limit aborts the worker, not the host.

use std::{
    io::{self, BufRead, Write},
    sync::{
        Arc, Condvar, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use lro_core::OffloadConfig;

use crate::{
    Extractor,
    frame::{self, HELLO},
    guard,
    jq::Guard,
    protocol::{self, Answer, Message, Spec},
};

/// The environment variable that makes a process a worker; its value is
/// ignored.
pub const WORKER_ENV: &str = "LRO_EXTRACT_WORKER";

/// Serves extraction jobs and exits when this process is a worker (when
/// [`WORKER_ENV`] is set); returns at once otherwise. Call it first thing
/// in `main`, before any other start-up work, in every program that uses a
/// [`crate::WorkerPool`] with its default program (`LroLayer` does).
pub fn run_if_worker() {
    if std::env::var_os(WORKER_ENV).is_some() {
        let code = serve(io::BufReader::new(io::stdin()), io::stdout());
        std::process::exit(code);
    }
}

/// Serves one worker's life on `input` and `output`; the exit status.
///
/// After the handshake, jobs run one at a time on one long-lived thread
/// with the worker stack, and this thread keeps their time: starting a
/// thread per job would reserve, fault in and unmap a stack of up to
/// several GiB every call.
fn serve<R: BufRead + Send, W: Write + Send>(mut input: R, output: W) -> i32 {
    let mut output = io::BufWriter::with_capacity(frame::MAX_CHUNK + 5, output);
    let mut line = String::new();
    let Ok(Message::Hello(spec)) = read_message(&mut input, &mut line) else {
        return 2;
    };
    let limit = if spec.version == protocol::VERSION {
        limit_memory(spec)
    } else {
        Err(format!(
            "the worker speaks protocol {}, the pool {}",
            protocol::VERSION,
            spec.version
        ))
    };
    let refused = limit.is_err();
    let hello = protocol::Hello {
        magic: protocol::MAGIC.into(),
        version: protocol::VERSION,
        limit,
    };
    let hello = serde_json::to_vec(&hello).unwrap_or_default();
    if frame::write_frame(&mut output, HELLO, &hello)
        .and_then(|()| output.flush())
        .is_err()
        || refused
    {
        // Never run a job without the bound.
        return 2;
    }
    let timer = Timer::default();
    thread::scope(|scope| {
        let jobs = thread::Builder::new()
            .name("lro-extract".into())
            .stack_size(spec.stack)
            .spawn_scoped(scope, || {
                let code = serve_jobs(&mut input, &mut output, &timer);
                timer.close();
                code
            });
        match jobs {
            Ok(jobs) => {
                timer.run();
                jobs.join().unwrap_or(1)
            }
            Err(_) => 1,
        }
    })
}

/// Answers jobs until the input ends; the exit status.
fn serve_jobs(input: &mut impl BufRead, output: &mut impl Write, timer: &Timer) -> i32 {
    let mut line = String::new();
    loop {
        let job = match read_message(input, &mut line) {
            Ok(Message::Job(job)) => job,
            Ok(Message::Hello(_)) | Err(Read::Bad) => return 2,
            Err(Read::Eof) => return 0,
        };
        let answer = run(&job, timer);
        let mut out = frame::Answer::new(&mut *output);
        if answer
            .write(&mut out)
            .and_then(|()| out.finish().map(drop))
            .is_err()
        {
            return 1;
        }
    }
}

/// Cancels the running job at its deadline.
#[derive(Default)]
struct Timer {
    state: Mutex<Clock>,
    wake: Condvar,
}

#[derive(Default)]
enum Clock {
    #[default]
    Idle,
    Armed(Instant, Arc<AtomicBool>),
    Closed,
}

impl Timer {
    fn lock(&self) -> MutexGuard<'_, Clock> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Arms the timer for a job of `timeout`; the job's cancel flag.
    fn arm(&self, timeout: Duration) -> Arc<AtomicBool> {
        let cancel = Arc::new(AtomicBool::new(false));
        *self.lock() = Clock::Armed(Instant::now() + timeout, cancel.clone());
        self.wake.notify_one();
        cancel
    }

    /// The job ended. No wake-up: the timer finds nothing at the old
    /// deadline, or sooner if another job is armed.
    fn disarm(&self) {
        *self.lock() = Clock::Idle;
    }

    /// No more jobs: [`Timer::run`] returns.
    fn close(&self) {
        *self.lock() = Clock::Closed;
        self.wake.notify_one();
    }

    /// Sets each armed job's cancel flag at its deadline, until closed.
    fn run(&self) {
        let mut clock = self.lock();
        loop {
            let wait = match &*clock {
                Clock::Closed => return,
                Clock::Idle => None,
                Clock::Armed(deadline, cancel) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        cancel.store(true, Ordering::SeqCst);
                        *clock = Clock::Idle;
                        continue;
                    }
                    Some(left)
                }
            };
            clock = match wait {
                None => self
                    .wake
                    .wait(clock)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(left) => {
                    let waited = self.wake.wait_timeout(clock, left);
                    waited.unwrap_or_else(PoisonError::into_inner).0
                }
            };
        }
    }
}

enum Read {
    Eof,
    Bad,
}

fn read_message(input: &mut impl BufRead, line: &mut String) -> Result<Message, Read> {
    line.clear();
    match input.read_line(line) {
        Ok(0) => Err(Read::Eof),
        Ok(_) => serde_json::from_str(line).map_err(|_| Read::Bad),
        Err(_) => Err(Read::Bad),
    }
}

/// Runs one job in this (bounded) process, on the job thread.
fn run(job: &protocol::Job, timer: &Timer) -> Answer {
    let estimator = OffloadConfig::default()
        .estimator(job.estimator)
        .exact_band(job.exact_band)
        .token_estimator();
    let cfg = job.config();
    let extractor = Extractor::new(cfg.clone()).estimator(estimator);
    let name = job
        .file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let guard = Guard::new(timer.arm(cfg.timeout));
    // The parent resolved and authorized the file; checking it again here,
    // inside its own directory, costs a few stats and keeps the worker from
    // reading anything that is not an offload file.
    let result = guard::resolve(&cfg.root_dir, name)
        .and_then(|file| extractor.run_here(&job.request, file, &guard));
    timer.disarm();
    Answer {
        result: result.map(Into::into).map_err(Into::into),
    }
}

/// Limits this process's address space to what it maps now plus the job
/// stack and the budget; the limit set, in bytes.
fn limit_memory(spec: Spec) -> Result<u64, String> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

    // Room for what a job needs besides its data: the code paths it pages
    // in, its thread's bookkeeping, the allocator's own structures.
    const SLACK: u64 = 64 * 1024 * 1024;
    let baseline = mapped_bytes().map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    // A limit the host itself runs under (`prlimit --as`, `ulimit -v`) is
    // inherited and cannot be raised: keep the lower of the two. `None` is
    // no limit (`RLIM_INFINITY`).
    let hard = getrlimit(Resource::As).maximum.unwrap_or(u64::MAX);
    let limit = baseline
        .saturating_add(spec.stack as u64)
        .saturating_add(spec.memory_budget as u64)
        .saturating_add(SLACK)
        .min(hard);
    let limit_both = Rlimit {
        current: Some(limit),
        maximum: Some(limit),
    };
    setrlimit(Resource::As, limit_both).map_err(|e| format!("setrlimit(RLIMIT_AS) failed: {e}"))?;
    Ok(limit)
}

/// The address space mapped now (`VmSize`), in bytes.
fn mapped_bytes() -> io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| io::Error::other("no VmSize line"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_space_is_readable() {
        assert!(mapped_bytes().unwrap() > 1024 * 1024);
    }

    #[test]
    fn a_first_line_that_is_no_handshake_ends_the_worker() {
        let mut out = Vec::new();
        assert_eq!(serve(&b"{\"job\":{}}\n"[..], &mut out), 2);
        assert!(out.is_empty());
        assert_eq!(serve(&b""[..], &mut out), 2);
    }

    #[test]
    fn a_handshake_of_another_version_is_refused_before_any_job() {
        let hello = Message::Hello(Spec {
            version: protocol::VERSION + 1,
            memory_budget: 1,
            stack: 1,
        });
        let input = format!("{}\n", serde_json::to_string(&hello).unwrap());
        let mut out = Vec::new();
        assert_eq!(serve(input.as_bytes(), &mut out), 2);
        let frame::Frame::Hello(json) = frame::read_frame(&mut &out[..], 1 << 20).unwrap() else {
            panic!("no hello")
        };
        let hello: protocol::Hello = serde_json::from_slice(&json).unwrap();
        assert!(hello.limit.unwrap_err().contains("protocol"));
    }
}
