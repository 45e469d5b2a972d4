//! `catalog-admin import` and `export`: clients of the imports and exports APIs. An import
//! uploads an NDJSON file and shows its progress from `GET /imports/{id}` until it finishes;
//! an export shows its progress from `GET /exports/{id}`, then downloads its file.

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

/// One line of progress for an export as `GET /exports/{id}` renders it:
/// `[#####.....]  50%  500/1000 entities  (running)`.
pub fn export_progress_line(job: &Value, width: usize) -> String {
    let (written, total) = (
        job["written"].as_u64().unwrap_or(0),
        job["total"].as_u64().unwrap_or(0),
    );
    // entities created while it runs can take it past the total counted at its start
    let (done, share) = match (written.min(total), total) {
        (_, 0) => (width, 100),
        (w, t) => (w as usize * width / t as usize, w * 100 / t),
    };
    format!(
        "[{}{}] {share:3}%  {written}/{total} entities  ({})",
        "#".repeat(done),
        ".".repeat(width - done),
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

/// Starts an export of `request` (`POST /exports`'s body) at `base`, prints a progress line
/// to `out` every `every` until it finishes, then downloads its file (gzip NDJSON, as
/// served) to `file`. Returns the final export.
pub async fn export_file(
    base: &str,
    key: &str,
    request: &Value,
    file: &std::path::Path,
    every: Duration,
    out: &mut impl Write,
) -> Result<Value, String> {
    let http = reqwest::Client::new();
    let created = http
        .post(format!("{base}/exports"))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(request.to_string())
        .send()
        .await
        .map_err(|e| format!("POST /exports: {e}"))?;
    let created = json_of(created, "POST /exports").await?;
    let id = created["result"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let _ = writeln!(out, "export {id}: as of {}", created["result"]["asOf"]);
    let job = loop {
        let r = http
            .get(format!("{base}/exports/{id}"))
            .bearer_auth(key)
            .send()
            .await
            .map_err(|e| format!("GET /exports/{id}: {e}"))?;
        let job = json_of(r, "GET /exports/{id}").await?["result"].clone();
        let _ = write!(out, "\r{}", export_progress_line(&job, 30));
        let _ = out.flush();
        if finished(&job) {
            let _ = writeln!(out);
            break job;
        }
        tokio::time::sleep(every).await;
    };
    let Some(url) = job["url"].as_str() else {
        return Ok(job);
    };
    let r = http
        .get(url)
        .send()
        .await
        .map_err(|e| format!("download: {e}"))?;
    if !r.status().is_success() {
        return Err(format!("download: {}", r.status()));
    }
    let bytes = r.bytes().await.map_err(|e| format!("download: {e}"))?;
    std::fs::write(file, &bytes).map_err(|e| format!("{}: {e}", file.display()))?;
    let _ = writeln!(
        out,
        "downloaded {} bytes to {}",
        bytes.len(),
        file.display()
    );
    Ok(job)
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

    #[test]
    fn export_progress_lines_show_the_share_written() {
        let job = json!({"status": "running", "total": 200, "written": 50});
        assert_eq!(
            export_progress_line(&job, 10),
            "[##........]  25%  50/200 entities  (running)"
        );
        let grown = json!({"status": "succeeded", "total": 2, "written": 3});
        assert_eq!(
            export_progress_line(&grown, 4),
            "[####] 100%  3/2 entities  (succeeded)"
        );
        let empty = json!({"status": "succeeded", "total": 0, "written": 0});
        assert!(export_progress_line(&empty, 4).starts_with("[####] 100%"));
    }
}
