//! Crashed and hung worker functions (issue 60, item 3): Lambda fails an invocation whose
//! process died or that outran the function's timeout, replaces the process, and the event
//! source mappings try again, so a crash delays deliveries and loses none. Checked on the
//! tests' Runtime API emulator and on `make dev` (the real `scripts/dev.sh`, whose `cargo
//! lambda watch` never started a killed change-feed or webhook-delivery process again), with
//! the real function binaries; and the timeouts the local stack holds them to against
//! infra/template.yaml.

use catalog_e2e::ddb::{die_with_parent, free_port};
use catalog_e2e::local::{timeout_of, STREAM_PARALLELIZATION, WORKER_TIMEOUTS};
use catalog_e2e::runtime::DELIVERY_CONCURRENCY;
use catalog_e2e::webhooks::{webhooks, Receiver};
use catalog_e2e::{repo_root, Org};
use serde_json::json;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Long enough for the stream and queue polls, a coalescing window and a busy machine.
const DELIVERY: Duration = Duration::from_secs(120);

/// The parent of process `pid`.
fn parent(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The processes of binary `name` that `root` started, directly (`direct`) or through
/// others.
fn processes_of(name: &str, root: i32, direct: bool) -> Vec<i32> {
    let ours = |pid: i32| {
        let mut at = parent(pid);
        while let Some(p) = at.filter(|p| *p > 1) {
            if p == root {
                return true;
            }
            at = if direct { None } else { parent(p) };
        }
        false
    };
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| {
                let file = exe.file_name().unwrap_or_default().to_string_lossy();
                // a binary rebuilt since its process started
                file.trim_end_matches(" (deleted)") == name
            })
        })
        .filter(|pid| ours(*pid))
        .collect()
}

/// Sends `signal` to every process of binary `name` that `root` started; how many.
fn signal(name: &str, root: i32, direct: bool, signal: i32) -> usize {
    let pids = processes_of(name, root, direct);
    for pid in &pids {
        // SAFETY: a plain kill(2) of a process this test started.
        unsafe { libc::kill(*pid, signal) };
    }
    pids.len()
}

/// The identifiers of the distinct deliveries `receiver` got, sorted.
fn delivered(receiver: &Receiver) -> Vec<String> {
    let mut ids: Vec<String> = receiver
        .distinct()
        .iter()
        .map(|r| {
            assert_eq!(r.json["event"], json!("product.created"), "{}", r.json);
            r.json["identifier"].as_str().unwrap().to_string()
        })
        .collect();
    ids.sort();
    ids
}

fn expected(rounds: &[&str], per_round: usize) -> Vec<String> {
    let mut ids: Vec<String> = rounds
        .iter()
        .flat_map(|r| (1..=per_round).map(move |i| format!("{r}-{i}")))
        .collect();
    ids.sort();
    ids
}

/// The worker timeouts the local event source mappings and the emulator hold the functions
/// to are the template's (`Timeout:` of each function; the others have the Globals' 10 s).
#[test]
fn worker_timeouts_are_the_templates() {
    let template = std::fs::read_to_string(repo_root().join("infra/template.yaml")).unwrap();
    let timeout_after = |from: usize| -> u64 {
        let lines: Vec<&str> = template[from..].lines().collect();
        // within the resource: until the next line indented as a resource name
        let end = lines[1..]
            .iter()
            .position(|l| l.starts_with("  ") && !l.starts_with("   ") && l.ends_with(':'))
            .map_or(lines.len(), |i| i + 1);
        lines[..end]
            .iter()
            .find_map(|l| l.trim().strip_prefix("Timeout: "))
            .unwrap_or_else(|| panic!("no Timeout after {}", lines[0]))
            .parse()
            .unwrap()
    };
    let globals = template.find("\nGlobals:").expect("Globals");
    let resources = template.find("\nResources:").expect("Resources");
    let global = template[globals..resources]
        .lines()
        .find_map(|l| l.trim().strip_prefix("Timeout: "))
        .expect("a global Timeout");
    assert_eq!(timeout_of("products").as_secs().to_string(), global);
    // the stream mapping's concurrent batches per shard, as the local poller runs them
    let mapping = template
        .find("\n  ChangeFeedStream:")
        .expect("the stream mapping");
    let factor = template[mapping..]
        .lines()
        .find_map(|l| l.trim().strip_prefix("ParallelizationFactor: "))
        .expect("a ParallelizationFactor");
    assert_eq!(factor, STREAM_PARALLELIZATION.to_string());
    for (name, seconds) in WORKER_TIMEOUTS {
        let at = template
            .find(&format!("FunctionName: !Sub catalog-${{Stage}}-{name}\n"))
            .unwrap_or_else(|| panic!("no function {name} in the template"));
        assert_eq!(timeout_after(at), seconds, "{name}");
        assert_eq!(timeout_of(name), Duration::from_secs(seconds), "{name}");
    }
}

/// Through the tests' emulator: idle change-feed and webhook-delivery processes killed,
/// then a change-feed that hangs (stopped): every write is delivered once.
#[tokio::test]
async fn the_emulator_replaces_killed_and_hung_workers_and_loses_no_delivery() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": receiver.url(), "topics": ["product.*"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let me = std::process::id() as i32;
    let write = |round: &'static str| {
        let org = &org;
        async move {
            for i in 1..=3 {
                let r = org
                    .patch(&format!("/v1/products/{round}-{i}"), json!({"name": round}))
                    .await;
                assert_eq!(r.status, 201, "{:?}", r.body);
            }
        }
    };
    write("calm").await;
    receiver.wait_for_distinct(3, DELIVERY).await;

    assert_eq!(
        signal("change-feed", me, true, libc::SIGKILL),
        STREAM_PARALLELIZATION
    );
    assert_eq!(
        signal("webhook-delivery", me, true, libc::SIGKILL),
        DELIVERY_CONCURRENCY
    );
    write("killed").await;
    receiver.wait_for_distinct(6, DELIVERY).await;

    // processes that no longer answer: an invocation one of them took fails at the feed's
    // 60 s timeout, that process is replaced and the batch tried again (a retry may land
    // on another stopped process first: one timeout per process at most)
    assert_eq!(
        signal("change-feed", me, true, libc::SIGSTOP),
        STREAM_PARALLELIZATION
    );
    write("hung").await;
    receiver
        .wait_for_distinct(
            9,
            DELIVERY + timeout_of("change-feed") * STREAM_PARALLELIZATION as u32,
        )
        .await;
    assert_eq!(
        delivered(&receiver),
        expected(&["calm", "killed", "hung"], 3)
    );
}

/// A `make dev` stack of its own (folder and ports), stopped as Ctrl-C stops it when dropped.
struct Dev {
    child: std::process::Child,
    dir: PathBuf,
}

impl Dev {
    fn start() -> Self {
        let dir = repo_root().join(format!("target/dev-crashes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let child = die_with_parent(
            std::process::Command::new("bash")
                .arg(repo_root().join("scripts/dev.sh"))
                .env("CATALOG_DEV_DIR", &dir)
                .env("CATALOG_DDB_PORT", free_port().to_string())
                .env("CATALOG_API_PORT", free_port().to_string())
                .env("CATALOG_SQS_PORT", free_port().to_string())
                .stdout(std::fs::File::create(dir.join("dev.log")).unwrap())
                .stderr(std::fs::File::create(dir.join("dev.err")).unwrap())
                // its own process group, as a terminal's foreground job is
                .process_group(0),
        )
        .spawn()
        .expect("bash runs scripts/dev.sh");
        Self { child, dir }
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    async fn ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(600);
        while !self.log("dev.log").lines().any(|l| l == "[dev] ready") {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "scripts/dev.sh ended ({status}) before it was ready:\n{}\n{}",
                    self.log("dev.log"),
                    self.log("dev.err")
                );
            }
            assert!(Instant::now() < deadline, "not ready within 10 minutes");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The last lines of one of the stack's logs.
    fn tail(&self, name: &str) -> String {
        let text = self.log(name);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// A setting of the stack's `env` file (`CATALOG_BASE_URL`, `CATALOG_API_KEY`).
    fn env(&self, name: &str) -> String {
        let text = self.log("env");
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} is not in the stack's env file:\n{text}"))
            .to_string()
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        // Ctrl-C: SIGINT to the whole group; dev.sh stops what it started
        // SAFETY: a plain kill(2) of the group this test started.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGINT) };
        let deadline = Instant::now() + Duration::from_secs(120);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `make dev` (the real `scripts/dev.sh`): its idle change-feed processes killed, then its
/// webhook-delivery processes; the writes after each kill are delivered, none lost. Before,
/// `cargo lambda watch` ran them and started none again: nothing was delivered after a kill.
#[tokio::test]
async fn make_dev_delivers_every_write_after_its_workers_are_killed() {
    let mut dev = Dev::start();
    dev.ready().await;
    let (base, key) = (dev.env("CATALOG_BASE_URL"), dev.env("CATALOG_API_KEY"));
    let http = reqwest::Client::builder()
        // a function cargo lambda watch starts on this call may wait for cargo's lock
        .timeout(Duration::from_secs(300))
        .build()
        .unwrap();
    let receiver = Receiver::start(0).await;
    let r = http
        .post(format!("{base}/webhooks"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(json!({"url": receiver.url(), "topics": ["product.*"]}).to_string())
        .send()
        .await
        .expect("make dev answers");
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
    let root = dev.child.id() as i32;
    let rounds = [
        ("first", None),
        ("feed", Some("change-feed")),
        ("delivery", Some("webhook-delivery")),
    ];
    for (n, (round, victim)) in rounds.iter().enumerate() {
        if let Some(victim) = victim {
            let killed = signal(victim, root, false, libc::SIGKILL);
            assert!(killed >= 1, "no {victim} process of the stack to kill");
        }
        for i in 1..=5 {
            let r = http
                .patch(format!("{base}/products/{round}-{i}"))
                .bearer_auth(&key)
                .header("content-type", "application/json")
                .body(json!({"name": round}).to_string())
                .send()
                .await
                .expect("make dev answers");
            assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
        }
        let within = Instant::now() + DELIVERY;
        while receiver.distinct().len() < 5 * (n + 1) {
            assert!(
                Instant::now() < within,
                "{} of {} writes delivered within {DELIVERY:?} after the {round} round; poller.log:\n{}",
                receiver.distinct().len(),
                5 * (n + 1),
                dev.tail("poller.log")
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    assert_eq!(
        delivered(&receiver),
        expected(&["first", "feed", "delivery"], 5)
    );
}
