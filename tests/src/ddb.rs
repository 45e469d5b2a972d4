//! DynamoDB Local for tests: AWS's own jar (installed by `scripts/tools.sh` under
//! `.tools/dynamodb-local`), started in memory on a free port, killed with the test process.

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A port the OS says is free right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A nonblocking listener on a loopback port the OS picked, already bound (so no other
/// process can take the port between picking and binding), with its port; for
/// `tokio::net::TcpListener::from_std` on whichever runtime serves it.
pub fn loopback_listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("address").port();
    (listener, port)
}

/// Children of the harness, kept (never waited on) until the test process exits and
/// PDEATHSIG ends them.
static CHILDREN: std::sync::Mutex<Vec<std::process::Child>> = std::sync::Mutex::new(Vec::new());

/// Keeps a spawned child for the life of the test process.
pub fn keep(child: std::process::Child) {
    CHILDREN
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(child);
}

/// Makes a spawned child receive SIGKILL when the spawning thread's process goes away.
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// Starts DynamoDB Local and returns its endpoint once it accepts connections. The child is
/// spawned from a thread that lives as long as the process, so PDEATHSIG fires only when
/// the test process exits.
pub fn start() -> String {
    let dir = std::env::var("CATALOG_DDB_LOCAL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| crate::repo_root().join(".tools/dynamodb-local"));
    let jar = dir.join("DynamoDBLocal.jar");
    assert!(
        jar.exists(),
        "DynamoDB Local is not installed at {}: run scripts/tools.sh (make test does)",
        jar.display()
    );
    let port = free_port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let child = die_with_parent(
            Command::new("java")
                .arg(format!(
                    "-Djava.library.path={}",
                    dir.join("DynamoDBLocal_lib").display()
                ))
                .arg("-jar")
                .arg(&jar)
                .args([
                    "-inMemory",
                    "-sharedDb",
                    "-disableTelemetry",
                    "-port",
                    &port.to_string(),
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::inherit()),
        )
        .spawn();
        let _ = tx.send(child.map(keep).map_err(|e| e.to_string()));
        loop {
            std::thread::park();
        }
    });
    rx.recv().expect("spawner thread").expect("java starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "DynamoDB Local did not listen on {port} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    format!("http://127.0.0.1:{port}")
}

/// A DynamoDB client for the local endpoint, with the request counter attached.
pub fn client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("local", "local", None, None, "e2e"))
        .interceptor(catalog::store::metrics::RequestCounter)
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}
