//! [`WorkerPool`]: the default [`Isolation`] of `LroLayer`, long-lived
//! worker processes each bounded in memory.
//!
//! Rust cannot recover from a failed allocation in its own process, and a
//! jq filter can ask for any amount (`reduce range(40) as $i ("x"; . + .)`
//! doubles a string to 1 TiB). So a query runs in a worker process whose
//! address space is limited; past the limit the worker aborts, the pool
//! reaps and replaces it, and the call gets
//! [`ExtractError::MemoryLimit`]. Workers start lazily, each runs one job
//! at a time and is reused (a process per call would cost more than the
//! query), one past its time limit is killed and replaced, and all of them
//! exit when the host does (their standard input ends).
//!
//! ```no_run
//! use lro_extract::{ExtractConfig, Extractor, WorkerPool};
//!
//! // First thing in `main`: in a worker, this serves jobs and exits.
//! lro_extract::worker::run_if_worker();
//! let cfg = ExtractConfig::new("/tmp/lro").memory_budget(256 * 1024 * 1024);
//! let extractor = Extractor::new(cfg).isolation(WorkerPool::new());
//! # let _ = extractor;
//! ```

use std::{
    fmt,
    io::{self, BufReader, Read, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio},
    sync::{Arc, Mutex, PoisonError},
    thread,
    time::{Duration, Instant},
};

use lro_core::{Estimator, error::chain};

use crate::{
    ExtractError, ExtractOutput, Isolation, Job,
    frame::{self, Frame, FrameError},
    jq,
    protocol::{self, Message, Spec},
    worker::WORKER_ENV,
};

/// The argument a worker is started with (see [`Worker::start`]).
const WORKER_FLAG: &str = "--lro-extract-worker";

/// glibc's allocator settings for a worker (other C libraries ignore
/// them). One arena: a worker runs one job at a time, and every extra arena
/// would reserve 64 MiB of the limited address space. No trimming below
/// 64 MiB, and no `mmap` below 32 MiB: otherwise every job gives its heap
/// back at the end and faults it in again (zeroed) at the next, which made
/// a call on a 500-record file 0.7 ms slower than in-process.
const GLIBC_TUNABLES: &str = "glibc.malloc.arena_max=1:\
     glibc.malloc.trim_threshold=67108864:\
     glibc.malloc.mmap_threshold=33554432";

/// Default [`WorkerPool::handshake_timeout`].
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long past the timeout a worker may take to answer before it is
/// killed (it stops its own query at the timeout, within about 0.5 s).
const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long a dead worker's exit status is waited for.
const REAP_WAIT: Duration = Duration::from_secs(2);

/// A pool of extraction worker processes (see the module docs).
///
/// Clones share their workers.
#[derive(Clone)]
pub struct WorkerPool {
    program: Option<PathBuf>,
    handshake_timeout: Duration,
    estimator: Estimator,
    exact_band: f64,
    idle: Arc<Mutex<Vec<Worker>>>,
}

impl fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerPool")
            .field("program", &self.program)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("estimator", &self.estimator)
            .finish_non_exhaustive()
    }
}

impl Default for WorkerPool {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerPool {
    /// A pool running the current executable as its workers; that
    /// program must call [`crate::worker::run_if_worker`] first thing in
    /// `main`. No worker starts before the first job.
    pub fn new() -> Self {
        Self {
            program: None,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            estimator: Estimator::Chars,
            exact_band: lro_core::tokens::DEFAULT_EXACT_BAND,
            idle: Arc::default(),
        }
    }

    /// Sets the worker program: any executable that calls
    /// [`crate::worker::run_if_worker`] first thing (such as `lro`).
    /// Defaults to the current executable.
    #[must_use]
    pub fn program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = Some(program.into());
        self
    }

    /// Sets how long a new worker has to answer the handshake. Defaults to
    /// 10 s.
    #[must_use]
    pub fn handshake_timeout(mut self, wait: Duration) -> Self {
        self.handshake_timeout = wait;
        self
    }

    /// Sets the named estimator workers measure output tokens with (a
    /// process cannot receive an estimator object), and its exact band.
    /// Defaults to characters (`Estimator::Chars`); `LroLayer` passes its
    /// configured one.
    #[must_use]
    pub fn estimator(mut self, estimator: Estimator, exact_band: f64) -> Self {
        self.estimator = estimator;
        self.exact_band = exact_band;
        self
    }

    /// Workers started and idle now.
    pub fn idle_workers(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Worker>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn program_path(&self) -> Result<PathBuf, ExtractError> {
        match &self.program {
            Some(p) => Ok(p.clone()),
            None => std::env::current_exe().map_err(|e| {
                ExtractError::Isolation(format!("cannot find the current executable: {e}"))
            }),
        }
    }

    /// An idle worker started for `spec`, or a new one.
    fn take(&self, spec: Spec) -> Result<Worker, ExtractError> {
        let mut stale = Vec::new();
        let found = {
            let mut idle = self.lock();
            let mut found = None;
            while let Some(mut w) = idle.pop() {
                if w.spec == spec && w.is_alive() {
                    found = Some(w);
                    break;
                }
                stale.push(w);
            }
            found
        };
        // Ended outside the lock: killing and reaping takes a moment.
        drop(stale);
        match found {
            Some(w) => Ok(w),
            None => Worker::start(&self.program_path()?, spec, self.handshake_timeout),
        }
    }

    fn give_back(&self, worker: Worker, keep: usize) {
        let mut idle = self.lock();
        if idle.len() < keep {
            idle.push(worker);
        }
    }
}

impl Isolation for WorkerPool {
    fn run(&self, job: Job<'_>) -> Result<ExtractOutput, ExtractError> {
        let cfg = job.extractor.config();
        let spec = Spec {
            version: protocol::VERSION,
            memory_budget: cfg.memory_budget,
            stack: jq::worker_stack(cfg.timeout),
        };
        let mut worker = self.take(spec)?;
        let wire_job = protocol::Job {
            request: job.request.clone(),
            file: job.file.path.clone(),
            timeout_ms: u64::try_from(cfg.timeout.as_millis()).unwrap_or(u64::MAX),
            max_output_bytes: cfg.max_output_bytes,
            max_output_values: cfg.max_output_values,
            max_output_tokens: cfg.max_output_tokens,
            fast_paths: cfg.fast_paths,
            check_size: cfg.check_size,
            keep_values: cfg.keep_values,
            estimator: self.estimator,
            exact_band: self.exact_band,
        };
        // The output is bounded by `max_output_bytes`; its JSON (values and
        // text, escaped) stays well within eight times that.
        let cap = cfg
            .max_output_bytes
            .saturating_mul(8)
            .saturating_add(1 << 20);
        match worker.ask(wire_job, cap, cfg.timeout + KILL_GRACE) {
            Ok(answer) => {
                self.give_back(worker, cfg.max_concurrent.max(1));
                answer
                    .result
                    .map_err(ExtractError::from)
                    .and_then(protocol::Output::into_output)
            }
            Err(Failure::TimedOut) => Err(ExtractError::Timeout { limit: cfg.timeout }),
            Err(Failure::Died(detail)) => Err(died(worker.reap(), cfg.memory_budget, &detail)),
            Err(Failure::Protocol(detail)) => Err(ExtractError::Isolation(format!(
                "the worker broke the protocol ({detail}); it was stopped"
            ))),
        }
    }
}

/// The error of a job whose worker died.
fn died(status: Option<ExitStatus>, budget: usize, detail: &str) -> ExtractError {
    use std::os::unix::process::ExitStatusExt;

    use rustix::process::Signal;

    let signal = status
        .and_then(|s| s.signal())
        .and_then(Signal::from_named_raw)
        .and_then(|s| Some((s, signal_name(s)?)));
    match (signal, status) {
        // A failed allocation aborts; the kernel's OOM killer kills; a
        // failed stack or heap mapping can fault.
        (Some((Signal::ABORT | Signal::KILL | Signal::SEGV | Signal::BUS, sig)), _) => {
            ExtractError::MemoryLimit {
                budget,
                how: format!("its worker process ended with {sig}"),
            }
        }
        (Some((_, sig)), _) => ExtractError::Isolation(format!(
            "the worker process ended with {sig} during the query ({detail})"
        )),
        (None, Some(s)) => ExtractError::Isolation(format!(
            "the worker process exited during the query ({s}; {detail})"
        )),
        (None, None) => ExtractError::Isolation(format!(
            "the worker process stopped answering during the query ({detail})"
        )),
    }
}

/// The C name of `sig` (`SIGABRT`), as errors give it; rustix names none.
fn signal_name(sig: rustix::process::Signal) -> Option<&'static str> {
    use rustix::process::Signal;

    Some(match sig {
        Signal::HUP => "SIGHUP",
        Signal::INT => "SIGINT",
        Signal::QUIT => "SIGQUIT",
        Signal::ILL => "SIGILL",
        Signal::TRAP => "SIGTRAP",
        Signal::ABORT => "SIGABRT",
        Signal::BUS => "SIGBUS",
        Signal::FPE => "SIGFPE",
        Signal::KILL => "SIGKILL",
        Signal::USR1 => "SIGUSR1",
        Signal::SEGV => "SIGSEGV",
        Signal::USR2 => "SIGUSR2",
        Signal::PIPE => "SIGPIPE",
        Signal::ALARM => "SIGALRM",
        Signal::TERM => "SIGTERM",
        Signal::CHILD => "SIGCHLD",
        Signal::CONT => "SIGCONT",
        Signal::STOP => "SIGSTOP",
        Signal::TSTP => "SIGTSTP",
        Signal::TTIN => "SIGTTIN",
        Signal::TTOU => "SIGTTOU",
        Signal::URG => "SIGURG",
        Signal::XCPU => "SIGXCPU",
        Signal::XFSZ => "SIGXFSZ",
        Signal::VTALARM => "SIGVTALRM",
        Signal::PROF => "SIGPROF",
        Signal::WINCH => "SIGWINCH",
        Signal::IO => "SIGIO",
        Signal::POWER => "SIGPWR",
        Signal::SYS => "SIGSYS",
        _ => return None,
    })
}

/// Why a job got no answer.
enum Failure {
    /// No answer within the time limit; the worker was killed.
    TimedOut,
    /// The worker's output ended.
    Died(String),
    /// The worker wrote something that is no answer.
    Protocol(String),
}

/// One worker process. Its output is read on the calling thread, each
/// read waiting at most until the job's deadline: a reader thread would
/// add a wake-up to every call.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<Deadline>,
    spec: Spec,
}

/// A worker's output whose reads fail with [`io::ErrorKind::TimedOut`]
/// past a deadline.
struct Deadline {
    pipe: ChildStdout,
    deadline: Option<Instant>,
}

impl Deadline {
    fn new(pipe: ChildStdout) -> Self {
        Self {
            pipe,
            deadline: None,
        }
    }

    /// Whether a read would not block within `wait` (data, or the end).
    fn readable(&self, wait: Duration) -> bool {
        use rustix::{
            event::{PollFd, PollFlags, Timespec, poll},
            io::Errno,
        };

        let mut fds = [PollFd::new(&self.pipe, PollFlags::IN)];
        // Rounded up, so a wait short of a millisecond does not spin.
        let ms = u16::try_from(wait.as_nanos().div_ceil(1_000_000)).unwrap_or(u16::MAX);
        let timeout = Timespec {
            tv_sec: (ms / 1000).into(),
            tv_nsec: (u32::from(ms % 1000) * 1_000_000).into(),
        };
        loop {
            match poll(&mut fds, Some(&timeout)) {
                Ok(n) => return n > 0,
                Err(Errno::INTR) => {}
                // A broken descriptor reads at once (with its error).
                Err(_) => return true,
            }
        }
    }
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(deadline) = self.deadline {
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if self.readable(left) {
                    break;
                }
                if left.is_zero() {
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
        }
        self.pipe.read(buf)
    }
}

/// Whether a read failed at its deadline.
fn timed_out(e: &FrameError) -> bool {
    matches!(e, FrameError::Io(e) if e.kind() == io::ErrorKind::TimedOut)
}

impl Worker {
    fn start(program: &Path, spec: Spec, handshake: Duration) -> Result<Worker, ExtractError> {
        let mut child = Command::new(program)
            // Only the variable makes a worker. The flag is for a host that
            // forgot `run_if_worker`: its own argument parser then exits at
            // once with a usage error, rather than the host starting a
            // second server (or a test binary running its tests again).
            .arg(WORKER_FLAG)
            .env(WORKER_ENV, "1")
            .env("GLIBC_TUNABLES", GLIBC_TUNABLES)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                ExtractError::Isolation(format!(
                    "cannot start the worker program {}: {e}",
                    program.display()
                ))
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ExtractError::Isolation("the worker has no pipes".into()));
        };
        let mut worker = Worker {
            child,
            stdin,
            out: BufReader::with_capacity(frame::MAX_CHUNK + 5, Deadline::new(stdout)),
            spec,
        };
        let no_handshake = |detail: String| {
            ExtractError::Isolation(format!(
                "the worker program {} did not answer the handshake ({detail}); a program \
                 whose LroLayer or WorkerPool runs extractions must call \
                 lro_extract::worker::run_if_worker() first thing in main (or name a program \
                 that does with WorkerPool::program); the query was not run",
                program.display()
            ))
        };
        if let Err(e) = worker.send(&Message::Hello(spec)) {
            return Err(no_handshake(format!("it did not read its input: {e}")));
        }
        let hello = match worker.read(frame::MAX_CHUNK, handshake) {
            Ok(Frame::Hello(json)) => serde_json::from_slice::<protocol::Hello>(&json)
                .map_err(|e| no_handshake(format!("bad handshake: {e}")))?,
            Ok(Frame::Answer(_)) => return Err(no_handshake("an answer before it".into())),
            Err(e) if timed_out(&e) => {
                return Err(no_handshake(format!("no answer in {handshake:?}")));
            }
            Err(e) => return Err(no_handshake(chain(&e).to_string())),
        };
        if hello.magic != protocol::MAGIC || hello.version != protocol::VERSION {
            return Err(no_handshake(format!(
                "it speaks {} version {}",
                hello.magic, hello.version
            )));
        }
        match hello.limit {
            Ok(_) => Ok(worker),
            Err(why) => Err(ExtractError::Isolation(format!(
                "the worker cannot bound its memory ({why}); the query was not run"
            ))),
        }
    }

    fn send(&mut self, message: &Message) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.stdin.write_all(&line)?;
        self.stdin.flush()
    }

    /// Reads the next frame, waiting at most `wait`.
    fn read(&mut self, cap: usize, wait: Duration) -> Result<Frame, FrameError> {
        self.out.get_mut().deadline = Some(Instant::now() + wait);
        frame::read_frame(&mut self.out, cap)
    }

    /// Whether the idle worker can take a job: it said nothing since its
    /// last answer (its output is not readable, not even at its end) and
    /// has not exited.
    fn is_alive(&mut self) -> bool {
        self.out.buffer().is_empty()
            && !self.out.get_ref().readable(Duration::ZERO)
            && matches!(self.child.try_wait(), Ok(None))
    }

    fn ask(
        &mut self,
        job: protocol::Job,
        cap: usize,
        wait: Duration,
    ) -> Result<protocol::Answer, Failure> {
        if let Err(e) = self.send(&Message::Job(Box::new(job))) {
            return Err(Failure::Died(format!("it did not read the job: {e}")));
        }
        match self.read(cap, wait) {
            Ok(Frame::Answer(bytes)) => protocol::Answer::read(bytes).map_err(Failure::Protocol),
            Ok(Frame::Hello(_)) => Err(Failure::Protocol("a second handshake".into())),
            Err(e) if timed_out(&e) => Err(Failure::TimedOut),
            Err(e @ (FrameError::Eof | FrameError::Partial { .. })) => {
                Err(Failure::Died(e.to_string()))
            }
            Err(e) => Err(Failure::Protocol(chain(&e).to_string())),
        }
    }

    /// The exit status of a worker whose output ended, waited for a moment
    /// (then it is killed).
    fn reap(mut self) -> Option<ExitStatus> {
        let deadline = Instant::now() + REAP_WAIT;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(5));
                }
                _ => return None,
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Killed rather than asked: an idle worker has nothing to lose, and
        // a busy one is being given up on.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    #[test]
    fn a_worker_death_is_told_by_the_signal_s_c_name() {
        // 6 is SIGABRT and 15 SIGTERM on every Linux architecture.
        let err = died(Some(ExitStatus::from_raw(6)), 1024, "reading");
        assert!(
            matches!(&err, ExtractError::MemoryLimit { how, .. } if how == "its worker process ended with SIGABRT"),
            "{err}"
        );
        let err = died(Some(ExitStatus::from_raw(15)), 1024, "reading");
        assert_eq!(
            err.to_string(),
            ExtractError::Isolation(
                "the worker process ended with SIGTERM during the query (reading)".into()
            )
            .to_string()
        );
        let err = died(Some(ExitStatus::from_raw(3 << 8)), 1024, "reading");
        assert!(
            matches!(&err, ExtractError::Isolation(m) if m.contains("exit status: 3")),
            "{err}"
        );
    }
}
