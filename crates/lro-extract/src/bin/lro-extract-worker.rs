//! A bare extraction worker program for `WorkerPool::program`: it serves
//! jobs when started by a pool, and says what it is otherwise.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    lro_extract::worker::run_if_worker();
    eprintln!(
        "lro-extract-worker: an extraction worker; lro_extract::WorkerPool starts it with {} set",
        lro_extract::worker::WORKER_ENV
    );
    std::process::ExitCode::from(2)
}
