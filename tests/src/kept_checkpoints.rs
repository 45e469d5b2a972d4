//! `make dev`'s list checkpoints kept across restarts: moto holds S3 in memory only, so the
//! dev script saves the bucket's `checkpoints/` to `.local/checkpoints` when it stops and
//! puts them back when it starts (with their `synced` position), and a restarted stack's
//! first list starts from them as a deployed one does.

use std::path::{Component, Path, PathBuf};

use catalog::imports::checkpoints::{FULL, SYNCED};

const PREFIX: &str = "checkpoints/";

/// The file of `key` under `dir`, for keys of our own checkpoints only (plain segments).
fn file_of(dir: &Path, key: &str) -> Option<PathBuf> {
    let rel = Path::new(key.strip_prefix(PREFIX)?);
    rel.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| dir.join(rel))
}

/// Saves every checkpoint of `bucket` under `dir` (`<org>/<type>/1` and its `.synced`);
/// how many.
pub async fn save(s3: &aws_sdk_s3::Client, bucket: &str, dir: &Path) -> Result<usize, String> {
    let mut saved = 0;
    let mut pages = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(PREFIX)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| format!("ListObjectsV2: {e}"))?;
        for key in page.contents().iter().filter_map(|o| o.key()) {
            let Some(file) = file_of(dir, key) else {
                continue;
            };
            let object = s3
                .get_object()
                .bucket(bucket)
                .key(key)
                .send()
                .await
                .map_err(|e| format!("GetObject {key}: {e}"))?;
            // the `.synced` file: the position, then the full read it descends from
            let synced = object.metadata().and_then(|m| {
                let full = m.get(FULL).map_or("0", String::as_str);
                Some(format!("{}\n{full}", m.get(SYNCED)?))
            });
            let bytes = object
                .body
                .collect()
                .await
                .map_err(|e| format!("GetObject {key}: {e}"))?
                .into_bytes();
            let Some(synced) = synced else {
                continue;
            };
            std::fs::create_dir_all(file.parent().expect("a parent")).map_err(|e| e.to_string())?;
            std::fs::write(&file, &bytes).map_err(|e| e.to_string())?;
            std::fs::write(file.with_extension("synced"), synced).map_err(|e| e.to_string())?;
            saved += 1;
        }
    }
    Ok(saved)
}

/// Puts the checkpoints saved under `dir` back into `bucket`; how many.
pub async fn restore(s3: &aws_sdk_s3::Client, bucket: &str, dir: &Path) -> Result<usize, String> {
    let mut restored = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if path.extension().is_some_and(|e| e == "synced") {
                continue;
            }
            let Ok(stamp) = std::fs::read_to_string(path.with_extension("synced")) else {
                continue;
            };
            let mut lines = stamp.lines().map(str::trim);
            let synced = lines.next().unwrap_or_default().to_string();
            let full = lines.next().unwrap_or("0").to_string();
            let rel = path.strip_prefix(dir).map_err(|e| e.to_string())?;
            let key = format!("{PREFIX}{}", rel.to_string_lossy());
            let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
            s3.put_object()
                .bucket(bucket)
                .key(&key)
                .metadata(SYNCED, synced)
                .metadata(FULL, full)
                .body(bytes.into())
                .send()
                .await
                .map_err(|e| format!("PutObject {key}: {e}"))?;
            restored += 1;
        }
    }
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::file_of;
    use std::path::Path;

    #[test]
    fn only_plain_checkpoint_keys_have_a_file() {
        let dir = Path::new("/d");
        assert_eq!(
            file_of(dir, "checkpoints/org_1/sku/1"),
            Some(dir.join("org_1/sku/1"))
        );
        assert_eq!(file_of(dir, "imports/x"), None);
        assert_eq!(file_of(dir, "checkpoints/../x"), None);
        assert_eq!(file_of(dir, "checkpoints//etc/x"), None);
    }
}
