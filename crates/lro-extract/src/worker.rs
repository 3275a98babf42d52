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

use std::io::{self, BufRead, Write};

use lro_core::OffloadConfig;

use crate::{
    Extractor,
    frame::{self, HELLO},
    guard,
    wire::{self, Answer, Message, Spec},
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
        let code = serve(io::stdin().lock(), io::stdout().lock());
        std::process::exit(code);
    }
}

/// Serves one worker's life on `input` and `output`; the exit status.
fn serve(mut input: impl BufRead, output: impl Write) -> i32 {
    let mut output = io::BufWriter::with_capacity(frame::MAX_CHUNK + 5, output);
    let mut line = String::new();
    let Ok(Message::Hello(spec)) = read_message(&mut input, &mut line) else {
        return 2;
    };
    let limit = if spec.version == wire::VERSION {
        limit_memory(spec)
    } else {
        Err(format!(
            "the worker speaks protocol {}, the pool {}",
            wire::VERSION,
            spec.version
        ))
    };
    let refused = limit.is_err();
    let hello = wire::Hello {
        magic: wire::MAGIC.into(),
        version: wire::VERSION,
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
    loop {
        let job = match read_message(&mut input, &mut line) {
            Ok(Message::Job(job)) => job,
            Ok(Message::Hello(_)) | Err(Read::Bad) => return 2,
            Err(Read::Eof) => return 0,
        };
        let answer = run(&job);
        let retire = answer.retire;
        let mut out = frame::Answer::new(&mut output);
        let sent = answer.write(&mut out).and_then(|()| out.finish().map(drop));
        if sent.is_err() {
            return 1;
        }
        if retire {
            return 0;
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

/// Runs one job in this (bounded) process.
fn run(job: &wire::Job) -> Answer {
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
    // The parent resolved and authorized the file; checking it again here,
    // inside its own directory, costs a few stats and keeps the worker from
    // reading anything that is not an offload file.
    let result = guard::resolve(&cfg.root_dir, name)
        .and_then(|file| extractor.run_resolved(&job.request, file));
    Answer {
        retire: extractor.active_workers() > 0,
        result: result.map(Into::into).map_err(Into::into),
    }
}

/// Limits this process's address space to what it maps now plus the job
/// stack and the budget; the limit set, in bytes.
fn limit_memory(spec: Spec) -> Result<u64, String> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};

    // Room for what a job needs besides its data: the code paths it pages
    // in, its thread's bookkeeping, the allocator's own structures.
    const SLACK: u64 = 64 * 1024 * 1024;
    let baseline = mapped_bytes().map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    // A limit the host itself runs under (`prlimit --as`, `ulimit -v`) is
    // inherited and cannot be raised: keep the lower of the two.
    let (_, hard) =
        getrlimit(Resource::RLIMIT_AS).map_err(|e| format!("getrlimit(RLIMIT_AS) failed: {e}"))?;
    let limit = baseline
        .saturating_add(spec.stack as u64)
        .saturating_add(spec.memory_budget as u64)
        .saturating_add(SLACK)
        .min(hard);
    setrlimit(Resource::RLIMIT_AS, limit, limit)
        .map_err(|e| format!("setrlimit(RLIMIT_AS) failed: {e}"))?;
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
            version: wire::VERSION + 1,
            memory_budget: 1,
            stack: 1,
        });
        let input = format!("{}\n", serde_json::to_string(&hello).unwrap());
        let mut out = Vec::new();
        assert_eq!(serve(input.as_bytes(), &mut out), 2);
        let frame::Frame::Hello(json) = frame::read_frame(&mut &out[..], 1 << 20).unwrap() else {
            panic!("no hello")
        };
        let hello: wire::Hello = serde_json::from_slice(&json).unwrap();
        assert!(hello.limit.unwrap_err().contains("protocol"));
    }
}
