//! `make dev` stopped the way a person stops it (issue 44, item 7): Ctrl-C in a terminal
//! signals the whole foreground process group, not the script alone. The stack must still
//! save its list checkpoints (kept in the S3 emulator's memory) to its folder before the
//! emulator stops, so that the next `make dev` starts its first lists from them, as the
//! README promises. Runs the real `scripts/dev.sh` in a folder and on ports of its own.

use catalog::imports::checkpoints::SYNCED;
use catalog_e2e::ddb::{die_with_parent, free_port};
use catalog_e2e::imports::s3_client;
use catalog_e2e::repo_root;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

/// The bucket `scripts/dev.sh` keeps list checkpoints in.
const BUCKET: &str = "catalog-checkpoints-local";

fn listening(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

#[tokio::test]
async fn ctrl_c_keeps_the_list_checkpoints() {
    let dir = repo_root().join(format!("target/dev-stop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (ddb, api, sqs) = (free_port(), free_port(), free_port());
    let log = dir.join("dev.log");
    let mut dev = die_with_parent(
        std::process::Command::new("bash")
            .arg(repo_root().join("scripts/dev.sh"))
            .env("CATALOG_DEV_DIR", &dir)
            .env("CATALOG_DDB_PORT", ddb.to_string())
            .env("CATALOG_API_PORT", api.to_string())
            .env("CATALOG_SQS_PORT", sqs.to_string())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(dir.join("dev.err")).unwrap())
            // its own process group, as a terminal's foreground job is
            .process_group(0),
    )
    .spawn()
    .expect("bash runs scripts/dev.sh");
    let group = dev.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.lines().any(|l| l == "[dev] ready") {
            break;
        }
        if let Some(status) = dev.try_wait().unwrap() {
            panic!(
                "scripts/dev.sh ended ({status}) before it was ready:\n{text}\n{}",
                std::fs::read_to_string(dir.join("dev.err")).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "not ready within 10 minutes");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // a checkpoint as a list function writes one: the snapshot, its position in metadata
    let s3 = s3_client(&format!("http://127.0.0.1:{sqs}"));
    s3.put_object()
        .bucket(BUCKET)
        .key("checkpoints/org001/product/1")
        .body(b"a snapshot".to_vec().into())
        .metadata(SYNCED, "1764201600000")
        .send()
        .await
        .expect("the stack's S3 takes the checkpoint");

    // Ctrl-C: SIGINT to every process of the foreground group at once
    let sent = unsafe { libc::kill(-group, libc::SIGINT) };
    assert_eq!(sent, 0, "SIGINT to the group");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = dev.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "scripts/dev.sh did not stop");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let errors = std::fs::read_to_string(dir.join("dev.err")).unwrap_or_default();
    let kept = dir.join("dynamodb/checkpoints/org001/product");
    assert_eq!(
        (
            std::fs::read(kept.join("1")).ok(),
            std::fs::read_to_string(kept.join("1.synced")).ok()
        ),
        (
            Some(b"a snapshot".to_vec()),
            Some("1764201600000\n0".to_string())
        ),
        "the checkpoint was not saved ({status}):\n{text}\n{errors}"
    );
    assert!(text.contains("[dev] stopped"), "{text}");
    // and everything it started is gone
    let deadline = Instant::now() + Duration::from_secs(30);
    while [ddb, api, sqs].into_iter().any(listening) {
        assert!(
            Instant::now() < deadline,
            "a process of the stack still listens"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
