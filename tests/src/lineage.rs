//! Lambda's recursive loop detection, as the local event source mappings play it.
//!
//! On AWS, an invocation's X-Ray trace header reaches the function (`Lambda-Runtime-Trace-Id`,
//! which the runtime puts in `_X_AMZN_TRACE_ID`); the AWS SDK sends it with every call
//! (`X-Amzn-Trace-Id`), SQS keeps it on a message it receives that way (`AWSTraceHeader`),
//! and the SQS event source mapping hands it on to the invocation of that message, with the
//! count of the function's invocations in the chain one higher. Past 16, Lambda stops the
//! chain unless the function's `RecursiveLoop` is `Allow`.
//!
//! Locally: [`invocation_trace`] is what the emulator hands the function and what the queue
//! poller counts; `sqs_trace.rs` keeps the header on messages as SQS does (moto does not);
//! [`setting`] reads the function's `RecursiveLoop` from infra/template.yaml. The header's
//! `Lineage` field here is `<function key>:<count>` entries joined by `|`: AWS's own
//! encoding is not documented, only its effect, which this reproduces.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Invocations of one function in one chain that Lambda lets through by default.
pub const MAX_HOPS: u32 = 16;

/// A function's `RecursiveLoop` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecursiveLoop {
    Allow,
    Terminate,
}

/// The setting of `function` (`import-worker`, `import-worker@variant`) in
/// infra/template.yaml: `Terminate`, Lambda's default, unless its resource says `Allow`.
pub fn setting(function: &str) -> RecursiveLoop {
    static TEMPLATE: OnceLock<String> = OnceLock::new();
    let template = TEMPLATE.get_or_init(|| {
        std::fs::read_to_string(crate::repo_root().join("infra/template.yaml"))
            .expect("infra/template.yaml")
    });
    let base = function.split('@').next().unwrap_or(function);
    let marker = format!("FunctionName: !Sub catalog-${{Stage}}-{base}\n");
    let Some(start) = template.find(&marker) else {
        return RecursiveLoop::Terminate;
    };
    // The rest of the resource: up to the next line indented as a resource name.
    let allowed = template[start..]
        .lines()
        .skip(1)
        .take_while(|l| !(l.starts_with("  ") && !l.starts_with("   ") && l.len() > 2))
        .any(|l| l.trim() == "RecursiveLoop: Allow");
    if allowed {
        RecursiveLoop::Allow
    } else {
        RecursiveLoop::Terminate
    }
}

/// A short stable key of a function in the `Lineage` field.
fn key(function: &str) -> String {
    let base = function.split('@').next().unwrap_or(function);
    let hash = base.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("{hash:08x}")
}

/// A field (`Root`, `Lineage`, ...) of a trace header.
fn field<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header
        .split(';')
        .find_map(|f| f.trim().strip_prefix(name)?.strip_prefix('='))
}

/// The count of `function`'s invocations a trace header carries.
pub fn hops(header: &str, function: &str) -> u32 {
    let key = key(function);
    field(header, "Lineage")
        .into_iter()
        .flat_map(|l| l.split('|'))
        .filter_map(|entry| entry.split_once(':'))
        .filter(|(k, _)| *k == key)
        .filter_map(|(_, n)| n.parse().ok())
        .max()
        .unwrap_or(0)
}

/// The trace header Lambda hands the invocation of `function` with this SQS event, and the
/// invocation's place in its chain (1 for a message no function of the chain sent). `None`
/// for other events.
pub fn invocation_trace(function: &str, event: &Value) -> Option<(String, u32)> {
    let records = event["Records"].as_array()?;
    if records.is_empty() || records.iter().any(|r| r["eventSource"] != "aws:sqs") {
        return None;
    }
    let headers: Vec<&str> = records
        .iter()
        .filter_map(|r| r["attributes"]["AWSTraceHeader"].as_str())
        .collect();
    let count = headers.iter().map(|h| hops(h, function)).max().unwrap_or(0) + 1;
    let root = headers
        .iter()
        .find_map(|h| field(h, "Root"))
        .map(str::to_string)
        .unwrap_or_else(new_root);
    // The other functions' counts go on unchanged.
    let key = key(function);
    let mut lineage: Vec<String> = headers
        .first()
        .and_then(|h| field(h, "Lineage"))
        .into_iter()
        .flat_map(|l| l.split('|'))
        .filter(|e| !e.is_empty() && !e.starts_with(&format!("{key}:")))
        .map(str::to_string)
        .collect();
    lineage.push(format!("{key}:{count}"));
    let header = format!(
        "Root={root};Parent={:016x};Sampled=0;Lineage={}",
        next_id(),
        lineage.join("|")
    );
    Some((header, count))
}

fn next_id() -> u64 {
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed) ^ (u64::from(std::process::id()) << 32)
}

fn new_root() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("1-{secs:08x}-{:024x}", u128::from(next_id()))
}

/// What the local event source mappings saw per function: the longest chain, and the
/// invocations they dropped as Lambda would (`RecursiveInvocationsDropped`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub longest_chain: u32,
    pub dropped: u32,
}

fn seen_map() -> &'static Mutex<HashMap<String, Seen>> {
    static SEEN: OnceLock<Mutex<HashMap<String, Seen>>> = OnceLock::new();
    SEEN.get_or_init(Default::default)
}

/// What the mappings saw of `function` so far.
pub fn seen(function: &str) -> Seen {
    seen_map()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(function)
        .copied()
        .unwrap_or_default()
}

/// Whether the event source mapping may invoke `function` with `event`, as Lambda decides:
/// not when the chain is longer than [`MAX_HOPS`] and the function's setting is `Terminate`.
/// Records what it saw.
pub fn admit(function: &str, event: &Value) -> bool {
    let Some((_, count)) = invocation_trace(function, event) else {
        return true;
    };
    let drop = count > MAX_HOPS && setting(function) == RecursiveLoop::Terminate;
    let mut map = seen_map().lock().unwrap_or_else(|p| p.into_inner());
    let entry = map.entry(function.to_string()).or_default();
    entry.longest_chain = entry.longest_chain.max(count);
    if drop {
        entry.dropped += 1;
        eprintln!("[local] {function}: recursive loop after {MAX_HOPS} invocations, dropped (RecursiveLoop: Terminate)");
    }
    !drop
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(headers: &[Option<&str>]) -> Value {
        let records: Vec<Value> = headers
            .iter()
            .map(|h| {
                let attributes = match h {
                    Some(h) => json!({"AWSTraceHeader": h}),
                    None => json!({}),
                };
                json!({"eventSource": "aws:sqs", "attributes": attributes, "body": "{}"})
            })
            .collect();
        json!({ "Records": records })
    }

    #[test]
    fn a_chain_counts_each_function_apart() {
        let (first, n) = invocation_trace("import-worker", &event(&[None])).unwrap();
        assert_eq!(n, 1);
        let (second, n) = invocation_trace("import-worker", &event(&[Some(&first)])).unwrap();
        assert_eq!(n, 2);
        assert_eq!(field(&first, "Root"), field(&second, "Root"));
        let (other, n) = invocation_trace("webhook-delivery", &event(&[Some(&second)])).unwrap();
        assert_eq!(n, 1);
        assert_eq!(hops(&other, "import-worker"), 2);
        let (_, n) = invocation_trace("import-worker", &event(&[None, Some(&second)])).unwrap();
        assert_eq!(n, 3, "a batch continues its longest chain");
        assert!(invocation_trace(
            "change-feed",
            &json!({"Records": [{"eventSource": "aws:dynamodb"}]})
        )
        .is_none());
    }

    #[test]
    fn the_template_allows_the_two_designed_loops_only() {
        assert_eq!(setting("import-worker"), RecursiveLoop::Allow);
        assert_eq!(setting("webhook-delivery@x"), RecursiveLoop::Allow);
        assert_eq!(setting("change-feed"), RecursiveLoop::Terminate);
        assert_eq!(setting("products"), RecursiveLoop::Terminate);
        assert_eq!(setting("no-such-function"), RecursiveLoop::Terminate);
    }
}
