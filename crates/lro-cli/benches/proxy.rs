//! `lro proxy` against a direct connection to the same stdio upstream,
//! measured side by side in one run. Prints a table; no criterion.
//!
//! Run with `cargo bench -p lro-cli --bench proxy`.
//!
//! The upstream is this benchmark's own executable, started again with
//! `LRO_BENCH_UPSTREAM=1`: a minimal rmcp stdio server with a trivial tool,
//! a tool that works 5 ms, and a tool that returns N bytes of JSON records.
//! The client is an rmcp client over the child's pipes. "direct" spawns the
//! upstream; "proxy" spawns the release `lro proxy -- <upstream>`.

use std::{
    path::Path,
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

use rmcp::{
    ErrorData as McpError, RoleClient, RoleServer, ServerHandler, ServiceExt as _,
    model::*,
    service::{RequestContext, RunningService},
    transport::async_rw::AsyncRwTransport,
};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

const UPSTREAM_ENV: &str = "LRO_BENCH_UPSTREAM";
/// Big enough for the 100 MB result.
const MAX_LINE: usize = 512 << 20;

#[derive(Clone)]
struct Upstream;

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let schema = Arc::new(json!({"type": "object"}).as_object().unwrap().clone());
        Ok(ListToolsResult::with_all_items(
            ["noop", "work", "blob"]
                .into_iter()
                .map(|name| Tool::new(name, name, schema.clone()))
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let text = match request.name.as_ref() {
            "noop" => "ok".to_owned(),
            "work" => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                "worked".to_owned()
            }
            "blob" => {
                let bytes = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("bytes"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0) as usize;
                blob(bytes)
            }
            other => return Err(McpError::invalid_params(other.to_owned(), None)),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// A JSON array of ~200-byte records, `bytes` long in all.
fn blob(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 256);
    out.push('[');
    let mut i = 0u64;
    while out.len() < bytes {
        if i > 0 {
            out.push(',');
        }
        let kind = ["alpha", "beta", "gamma"][(i % 3) as usize];
        out.push_str(&format!(
            r#"{{"id":"rec-{i:08}","kind":"{kind}","rank":{},"body":"{}"}}"#,
            i % 97,
            "x".repeat(150)
        ));
        i += 1;
    }
    out.push(']');
    out
}

async fn serve_upstream() {
    let running = Upstream
        .serve(
            AsyncRwTransport::new(tokio::io::stdin(), tokio::io::stdout())
                .with_max_line_length(MAX_LINE),
        )
        .await
        .expect("upstream initializes");
    let _ = running.waiting().await;
}

struct Session {
    client: RunningService<RoleClient, ()>,
    child: Child,
}

impl Session {
    async fn start(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(program);
        command
            .args(args)
            .env(UPSTREAM_ENV, "1")
            .env("RUST_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("spawn");
        let transport =
            AsyncRwTransport::new(child.stdout.take().unwrap(), child.stdin.take().unwrap())
                .with_max_line_length(MAX_LINE);
        let client = ().serve(transport).await.expect("client initializes");
        Self { client, child }
    }

    async fn call(&self, name: &'static str, args: Value) -> CallToolResult {
        let mut params = CallToolRequestParams::new(name);
        params.arguments = args.as_object().cloned();
        self.client.call_tool(params).await.expect("call")
    }

    fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    async fn stop(mut self) {
        let _ = self.client.cancel().await;
        let _ = self.child.wait().await;
    }
}

/// Panics unless `result` is an offload descriptor.
fn assert_offloaded(result: &CallToolResult) {
    let text = &result.content[0].as_text().unwrap().text;
    assert!(
        text.contains("\"offloaded\":true"),
        "not offloaded: {text:.200}"
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn latencies(session: &Session, tool: &'static str, n: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        session.call(tool, json!({})).await;
        out.push(started.elapsed());
    }
    out.sort();
    out
}

/// Sorted latencies of `tool` on both sessions, measured in interleaved
/// rounds so that drift on a shared machine hits both alike.
async fn interleaved(
    direct: &Session,
    proxy: &Session,
    tool: &'static str,
    rounds: usize,
    per_round: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        d.extend(latencies(direct, tool, per_round).await);
        p.extend(latencies(proxy, tool, per_round).await);
    }
    d.sort();
    p.sort();
    (d, p)
}

/// Calls per second with `concurrency` calls in flight, over `rounds`.
async fn throughput(session: &Session, concurrency: usize, rounds: usize) -> f64 {
    let started = Instant::now();
    for _ in 0..rounds {
        let calls = (0..concurrency).map(|_| session.call("work", json!({})));
        futures::future::join_all(calls).await;
    }
    (concurrency * rounds) as f64 / started.elapsed().as_secs_f64()
}

/// `VmHWM` and `VmRSS` of a process, in bytes.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// CPU time a process has spent on all its threads, and the times it gave up
/// the CPU to wait, from `/proc/{pid}/task/*/schedstat` and `status`.
fn cpu(pid: u32) -> (Duration, u64) {
    let mut on_cpu = 0u64;
    let mut waits = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("a running process") {
        let task = task.unwrap().path();
        let sched = std::fs::read_to_string(task.join("schedstat")).unwrap_or_default();
        on_cpu += sched
            .split_whitespace()
            .next()
            .and_then(|ns| ns.parse::<u64>().ok())
            .unwrap_or(0);
        let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
        waits += status
            .lines()
            .find(|l| l.starts_with("voluntary_ctxt_switches:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    (Duration::from_nanos(on_cpu), waits)
}

/// The value of the unlabelled series `name` on a Prometheus endpoint.
fn scrape_sum(addr: &str, name: &str) -> f64 {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).expect("metrics endpoint");
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut body = String::new();
    stream.read_to_string(&mut body).unwrap();
    body.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

#[tokio::main]
async fn main() {
    if std::env::var_os(UPSTREAM_ENV).is_some() {
        serve_upstream().await;
        return;
    }
    // `cargo bench` passes `--bench`; nothing else to parse.
    let me = std::env::current_exe().unwrap();
    let lro = Path::new(env!("CARGO_BIN_EXE_lro"));
    let me_str = me.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap().to_owned();
    let lro_env = [("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", out.as_str())];
    let proxy_args = ["proxy", "--", me_str];

    let direct = Session::start(&me, &[], &[]).await;
    let proxy = Session::start(lro, &proxy_args, &lro_env).await;

    // Warm both paths.
    latencies(&direct, "noop", 200).await;
    latencies(&proxy, "noop", 200).await;

    println!("lro proxy vs direct, same stdio upstream (one run, side by side)\n");
    println!("| measurement | direct | proxy | proxy − direct / ratio |");
    println!("|---|---|---|---|");
    let (cpu_before, waits_before) = cpu(proxy.pid());
    let (d_noop, p_noop) = interleaved(&direct, &proxy, "noop", 10, 300).await;
    let (cpu_after, waits_after) = cpu(proxy.pid());
    for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (d, x) = (percentile(&d_noop, p), percentile(&p_noop, p));
        println!(
            "| trivial tool, {label} (3,000 calls) | {} | {} | +{} |",
            us(d),
            us(x),
            us(x.saturating_sub(d))
        );
    }
    // What the proxy itself spends per call (parse, layer, serialize and the
    // four pipe syscalls), apart from the time it waits to be woken.
    let calls = p_noop.len() as u32;
    println!(
        "| of which the proxy's own CPU time per trivial call (all threads) | | {} | {:.1} waits per call |",
        us((cpu_after - cpu_before) / calls),
        (waits_after - waits_before) as f64 / f64::from(calls)
    );
    let (d_work, p_work) = interleaved(&direct, &proxy, "work", 5, 60).await;
    let (d, x) = (percentile(&d_work, 0.5), percentile(&p_work, 0.5));
    println!(
        "| 5 ms tool, p50 (300 calls) | {} | {} | {:.3}× |",
        us(d),
        us(x),
        x.as_secs_f64() / d.as_secs_f64()
    );
    let (mut d_tp, mut p_tp) = (0.0, 0.0);
    for _ in 0..3 {
        d_tp += throughput(&direct, 100, 10).await;
        p_tp += throughput(&proxy, 100, 10).await;
    }
    println!(
        "| 100 concurrent calls to the 5 ms tool, calls/s | {:.0} | {:.0} | {:.3}× |",
        d_tp / 3.0,
        p_tp / 3.0,
        p_tp / d_tp
    );

    // 10 MB: inline direct, offloaded through the proxy (which exports its
    // write time), and through a proxy with offloading off.
    let ten = json!({"bytes": 10_000_000});
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics_addr = format!("127.0.0.1:{port}");
    let metered_args = ["proxy", "--metrics", metrics_addr.as_str(), "--", me_str];
    let metered = Session::start(lro, &metered_args, &lro_env).await;
    let bypass_env = [
        ("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", out.as_str()),
        ("ATLATL_PROMPT__OFFLOAD__ENABLED", "false"),
    ];
    let bypass = Session::start(lro, &proxy_args, &bypass_env).await;
    let (mut d_big, mut p_big, mut b_big) = (Vec::new(), Vec::new(), Vec::new());
    let rounds = 5;
    for _ in 0..rounds {
        let t = Instant::now();
        direct.call("blob", ten.clone()).await;
        d_big.push(t.elapsed());
        let t = Instant::now();
        let r = metered.call("blob", ten.clone()).await;
        p_big.push(t.elapsed());
        assert_offloaded(&r);
        let t = Instant::now();
        bypass.call("blob", ten.clone()).await;
        b_big.push(t.elapsed());
    }
    for v in [&mut d_big, &mut p_big, &mut b_big] {
        v.sort();
    }
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    let (d, p, b) = (d_big[rounds / 2], p_big[rounds / 2], b_big[rounds / 2]);
    let write_s =
        scrape_sum(&metrics_addr, "lro_offload_write_duration_seconds_sum") / rounds as f64;
    println!(
        "| 10 MB result, end to end (median of {rounds}) | {} inline | {} offloaded | {:.2}× |",
        ms(d),
        ms(p),
        p.as_secs_f64() / d.as_secs_f64()
    );
    println!(
        "| of which the offload file write (mean, from the proxy's metrics) | | {:.1} ms | {:.0}% of the offloaded call |",
        write_s * 1e3,
        100.0 * write_s / p.as_secs_f64()
    );
    println!(
        "| 10 MB result through a proxy with offloading off | | {} inline | {:.2}× |",
        ms(b),
        b.as_secs_f64() / d.as_secs_f64()
    );
    bypass.stop().await;
    metered.stop().await;

    // Peak memory of the proxy process for one 100 MB result.
    let hundred = Session::start(lro, &proxy_args, &lro_env).await;
    hundred.call("noop", json!({})).await;
    let (_, before) = memory(hundred.pid());
    // The result's text travels as a JSON string: quotes are escaped.
    let line_bytes = serde_json::to_string(&blob(100_000_000)).unwrap().len() as u64;
    let t = Instant::now();
    let r = hundred.call("blob", json!({"bytes": 100_000_000})).await;
    let took = t.elapsed();
    assert_offloaded(&r);
    let (peak, _) = memory(hundred.pid());
    println!(
        "| 100 MB result: proxy peak RSS (VmHWM), end to end {} | | {:.0} MB (before: {:.0} MB) | {:.2}× the JSON-RPC line ({:.0} MB) |",
        ms(took),
        peak as f64 / 1e6,
        before as f64 / 1e6,
        peak.saturating_sub(before) as f64 / line_bytes as f64,
        line_bytes as f64 / 1e6
    );
    hundred.stop().await;
    direct.stop().await;
    proxy.stop().await;
}
