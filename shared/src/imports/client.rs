//! `catalog-admin import`: a client of the imports API that uploads an NDJSON file and shows
//! the import's progress from `GET /imports/{id}` until it finishes.

use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

/// One line of progress for an import as `GET /imports/{id}` renders it, with a bar of
/// `width` cells: `[#####.....]  50%  5000/10000 lines  created 4990  updated 0  failed 10`.
pub fn progress_line(job: &Value, width: usize) -> String {
    let n = |k: &str| job[k].as_u64().unwrap_or(0);
    let processed = n("processed");
    let (bar, share) = match job["total"].as_u64() {
        Some(total) if total > 0 => {
            let done = (processed.min(total) as usize * width) / total as usize;
            (
                format!("{}{}", "#".repeat(done), ".".repeat(width - done)),
                format!("{:3}%", processed.min(total) * 100 / total),
            )
        }
        Some(_) => ("#".repeat(width), "100%".into()),
        None => (".".repeat(width), "  –%".into()),
    };
    let total = job["total"]
        .as_u64()
        .map_or_else(|| "?".to_string(), |t| t.to_string());
    format!(
        "[{bar}] {share}  {processed}/{total} lines  created {}  updated {}  failed {}  ({})",
        n("created"),
        n("updated"),
        n("failed"),
        job["status"].as_str().unwrap_or("?")
    )
}

fn finished(job: &Value) -> bool {
    matches!(
        job["status"].as_str(),
        Some("succeeded" | "completed_with_errors" | "failed")
    )
}

async fn json_of(r: reqwest::Response, what: &str) -> Result<Value, String> {
    let status = r.status();
    let text = r.text().await.map_err(|e| format!("{what}: {e}"))?;
    let body: Value = serde_json::from_str(&text).map_err(|e| format!("{what}: {e}"))?;
    if !status.is_success() {
        return Err(format!("{what}: {status} {}", body["error"]));
    }
    Ok(body)
}

/// Creates an import at `base` (the API's URL, ending in `/v1`), uploads `file`, then prints
/// a progress line to `out` every `every` until the import finishes. Returns the final import.
pub async fn import_file(
    base: &str,
    key: &str,
    file: &std::path::Path,
    every: Duration,
    out: &mut impl Write,
) -> Result<Value, String> {
    let body = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let http = reqwest::Client::new();
    let created = http
        .post(format!("{base}/imports"))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(json!({"format": "ndjson"}).to_string())
        .send()
        .await
        .map_err(|e| format!("POST /imports: {e}"))?;
    let created = json_of(created, "POST /imports").await?;
    let id = created["result"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let url = created["result"]["uploadUrl"].as_str().unwrap_or_default();
    let _ = writeln!(out, "import {id}: uploading {} bytes", body.len());
    let put = http
        .put(url)
        .body(body)
        .send()
        .await
        .map_err(|e| format!("upload: {e}"))?;
    if !put.status().is_success() {
        return Err(format!("upload: {}", put.status()));
    }
    loop {
        let r = http
            .get(format!("{base}/imports/{id}"))
            .bearer_auth(key)
            .send()
            .await
            .map_err(|e| format!("GET /imports/{id}: {e}"))?;
        let job = json_of(r, "GET /imports/{id}").await?["result"].clone();
        let _ = write!(out, "\r{}", progress_line(&job, 30));
        let _ = out.flush();
        if finished(&job) {
            let _ = writeln!(out);
            return Ok(job);
        }
        tokio::time::sleep(every).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_show_the_share_done() {
        let job = json!({"status": "running", "total": 200, "processed": 50, "created": 40,
                         "updated": 5, "failed": 5});
        assert_eq!(
            progress_line(&job, 10),
            "[##........]  25%  50/200 lines  created 40  updated 5  failed 5  (running)"
        );
        let counting = json!({"status": "running", "total": null, "processed": 0});
        assert_eq!(
            progress_line(&counting, 4),
            "[....]   –%  0/? lines  created 0  updated 0  failed 0  (running)"
        );
        let empty = json!({"status": "succeeded", "total": 0, "processed": 0});
        assert!(progress_line(&empty, 4).starts_with("[####] 100%"));
        assert!(finished(&empty) && !finished(&job));
    }
}
