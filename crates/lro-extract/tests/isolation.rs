//! The worker pool with real worker processes: the same answers as
//! in-process, a query over its memory budget stopped with a clear error
//! while the caller goes on, and a program without the worker hook refused
//! loudly instead of run unbounded.

mod support;

use std::time::{Duration, Instant};

use lro_core::descriptor::Detail;
use lro_extract::{ExtractConfig, ExtractError, ExtractRequest, Extractor, LineWindow, WorkerPool};
use support::*;

const DOUBLING: &str = r#"reduce range(40) as $i ("x"; . + .) | length"#;

fn pool() -> WorkerPool {
    WorkerPool::new().program(env!("CARGO_BIN_EXE_lro-extract-worker"))
}

fn setup(
    cfg: impl Fn(ExtractConfig) -> ExtractConfig,
) -> (tempfile::TempDir, String, ExtractConfig) {
    let dir = tempfile::tempdir().unwrap();
    let file = offload_memories(dir.path(), "list", 60, 7, Detail::Light);
    let path = file.path.to_string_lossy().into_owned();
    let cfg = cfg(ExtractConfig::new(dir.path()));
    (dir, path, cfg)
}

#[test]
fn the_pool_answers_exactly_as_in_process() {
    let (_dir, path, cfg) = setup(|c| c.max_output_bytes(2000));
    let local = Extractor::new(cfg.clone());
    let pooled = Extractor::new(cfg).isolation(pool());
    let requests = [
        ExtractRequest::new(&path).recipe(1),
        ExtractRequest::new(&path).recipe(6),
        ExtractRequest::new(&path).recipe(8).limit(3),
        ExtractRequest::new(&path).query(".").slurp(true),
        ExtractRequest::new(&path).grep(lro_extract::Grep::new("Note")),
        ExtractRequest::new(&path).query("select(.id != null) | {id, title}"),
        ExtractRequest::new(&path).lines(LineWindow::default()),
        ExtractRequest::new(&path).query("error(\"boom\")"),
        ExtractRequest::new(&path).query("[ ."),
        ExtractRequest::new("atlatl-list-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl").recipe(1),
    ];
    let text_only = Extractor::new(pooled.config().clone().keep_values(false)).isolation(pool());
    for req in &requests {
        let (a, b) = (local.run(req), pooled.run(req));
        if let (Ok(a), Ok(c)) = (&a, text_only.run(req)) {
            assert!(c.values.is_empty(), "{req:?}");
            assert_eq!(
                (&a.text, a.results(), a.count),
                (&c.text, c.results(), c.count)
            );
        }
        match (a, b) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{req:?}");
                assert_eq!(a.results(), b.results());
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{req:?}"),
            (a, b) => panic!("{req:?}: in-process {a:?}, pooled {b:?}"),
        }
    }
}

#[test]
fn a_query_over_its_budget_is_stopped_and_the_next_one_runs() {
    let budget = 64 * 1024 * 1024;
    let (_dir, path, cfg) = setup(|c| c.memory_budget(budget).timeout(Duration::from_secs(20)));
    let pool = pool();
    let ex = Extractor::new(cfg).isolation(pool.clone());
    let normal = ExtractRequest::new(&path).query(".id");
    assert_eq!(ex.run(&normal).unwrap().count, 60);
    assert_eq!(pool.idle_workers(), 1);

    let started = Instant::now();
    let err = ex
        .run(&ExtractRequest::new(&path).query(DOUBLING))
        .unwrap_err();
    assert!(matches!(err, ExtractError::MemoryLimit { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("needed more than 64 MiB"), "{text}");
    assert!(text.contains("narrow it"), "{text}");
    // Stopped by the limit, long before the 20 s timeout.
    assert!(started.elapsed() < Duration::from_secs(15));

    // The dead worker was not kept; a new one answers.
    assert_eq!(pool.idle_workers(), 0);
    assert_eq!(ex.run(&normal).unwrap().count, 60);
    assert_eq!(pool.idle_workers(), 1);
}

#[test]
fn a_program_without_the_worker_hook_is_refused_loudly() {
    let (_dir, path, cfg) = setup(|c| c);
    // `cat` echoes the handshake line back: text, not a frame.
    let ex = Extractor::new(cfg.clone()).isolation(WorkerPool::new().program("cat"));
    let err = ex.run(&ExtractRequest::new(&path).recipe(1)).unwrap_err();
    assert!(matches!(err, ExtractError::Isolation(_)), "{err}");
    let text = err.to_string();
    assert!(text.contains("run_if_worker()"), "{text}");
    assert!(text.contains("not run"), "{text}");
    // `true` exits at once; a missing program cannot start.
    for program in ["true", "/definitely/not/a/program"] {
        let ex = Extractor::new(cfg.clone()).isolation(WorkerPool::new().program(program));
        let err = ex.run(&ExtractRequest::new(&path).recipe(1)).unwrap_err();
        assert!(
            matches!(err, ExtractError::Isolation(_)),
            "{program}: {err}"
        );
    }
}

#[test]
fn a_timed_out_query_gets_the_timeout_error_through_the_pool() {
    let (_dir, path, cfg) = setup(|c| c.timeout(Duration::from_millis(300)));
    let workers = pool();
    let ex = Extractor::new(cfg).isolation(workers.clone());
    let err = ex
        .run(&ExtractRequest::new(&path).query("last(range(infinite))"))
        .unwrap_err();
    assert!(matches!(err, ExtractError::Timeout { .. }), "{err}");
    // The worker stopped the query itself and answered, so it was kept
    // (one the pool had to kill would be gone).
    assert_eq!(workers.idle_workers(), 1);
    assert_eq!(
        ex.run(&ExtractRequest::new(&path).recipe(6)).unwrap().count,
        1
    );
}

#[test]
fn one_principal_waits_for_its_own_slot_while_another_runs() {
    use std::sync::{Arc, Mutex, mpsc};

    use lro_core::principal::Principal;
    use lro_extract::Job;

    let (_dir, path, cfg) = setup(|c| {
        c.timeout(Duration::from_secs(3))
            .max_per_principal(1)
            .queue_timeout(Duration::from_millis(300))
    });
    // A closure isolation around the pool that says when a job starts.
    let (started_tx, started) = mpsc::channel::<String>();
    let started_tx = Mutex::new(started_tx);
    let pool = pool();
    let ex = Arc::new(Extractor::new(cfg).isolation(move |job: Job<'_>| {
        let query = job.request.query.clone().unwrap_or_default();
        started_tx.lock().unwrap().send(query).unwrap();
        lro_extract::Isolation::run(&pool, job)
    }));
    let alice = Principal::new("alice");
    let slow = {
        let (ex, alice, path) = (ex.clone(), alice.clone(), path.clone());
        std::thread::spawn(move || {
            ex.run_as(
                &alice,
                &ExtractRequest::new(&path).query("last(range(infinite))"),
            )
        })
    };
    assert_eq!(
        started.recv_timeout(Duration::from_secs(20)).unwrap(),
        "last(range(infinite))"
    );
    // Alice's second call waits for her one slot, then is told to retry.
    let err = ex
        .run_as(&alice, &ExtractRequest::new(&path).query(".id"))
        .unwrap_err();
    assert!(matches!(err, ExtractError::Busy { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("busy") && text.contains("at most 1 at once"),
        "{text}"
    );
    assert!(text.contains("try again"), "{text}");
    // Bob is not held up by Alice.
    let bob = ex
        .run_as(
            &Principal::new("bob"),
            &ExtractRequest::new(&path).query(".id"),
        )
        .unwrap();
    assert_eq!(bob.count, 60);
    let slow = slow.join().unwrap().unwrap_err();
    assert!(matches!(slow, ExtractError::Timeout { .. }), "{slow}");
}
