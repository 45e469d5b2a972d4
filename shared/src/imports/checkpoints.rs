//! The list checkpoints' S3 adapter (`search/snapshot/checkpoint.rs` is the port): objects
//! under `checkpoints/` of the deployment's bucket, the one the imports use. A large
//! checkpoint is read in ranged parts fetched in parallel, all of one version of the object;
//! a checkpoint is written only over an older one (conditional PutObject on the ETag seen).

use crate::domain::time::Timestamp;
use crate::search::snapshot::{
    failed_key, failure_of, list_of, wanted_key, CheckpointStore, Fetched, Stamp, CHECKPOINT_PREFIX,
};
use crate::store::items::EntityKind;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::{ByteStream, SdkBody};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use std::collections::{BTreeSet, HashMap};

/// Bytes per ranged GET.
const PART: u64 = 8 << 20;
/// Ranged GETs under way at once.
const PARALLEL: usize = 8;
/// Largest checkpoint read: past it (more than the snapshots of any function size hold) the
/// loader reads the index instead.
const MAX_BYTES: u64 = 8 << 30;
/// The user metadata that holds a checkpoint's position (milliseconds since the epoch).
pub const SYNCED: &str = "synced";
/// The user metadata that holds the start of the full read a checkpoint descends from
/// (milliseconds since the epoch; absent on checkpoints written before it: the oldest).
pub const FULL: &str = "full";
/// Conditional writes tried: each lost one means another writer's succeeded, so this many
/// processes may write the same checkpoint at once before one gives up (leaving a valid,
/// older one).
const WRITE_TRIES: usize = 8;

/// Reads of a checkpoint tried: each one lost means a newer checkpoint replaced it between
/// its first part and a later one (the read then starts again, on the newer one).
const READ_TRIES: usize = 3;

/// Why one read of a checkpoint stopped.
enum Read {
    /// A later part's version is not the first part's: the checkpoint was replaced.
    Replaced,
    Failed(String),
}

/// A list in use, as the bucket's listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub org: String,
    pub kind: EntityKind,
    /// When its checkpoint was written (seconds since the epoch), when it has one.
    pub written: Option<i64>,
    /// Its checkpoint's size.
    pub bytes: Option<u64>,
    /// Its builds' failures in a row, when the last one failed.
    pub failed: Option<Failed>,
}

/// The last builds of a list failed: how many in a row, the last one when (seconds since
/// the epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failed {
    pub failures: u32,
    pub at: i64,
}

/// Checkpoints in `bucket`.
pub struct S3Checkpoints {
    pub client: aws_sdk_s3::Client,
    pub bucket: String,
}

/// A checkpoint's stamp, from its user metadata.
fn stamp_of(metadata: Option<&std::collections::HashMap<String, String>>) -> Option<Stamp> {
    let ms = |name: &str| metadata?.get(name)?.parse::<i64>().ok();
    Some(Stamp {
        synced: Timestamp::from_millis(ms(SYNCED)?),
        full: Timestamp::from_millis(ms(FULL).unwrap_or(0)),
    })
}

/// The total size in a `Content-Range` answer (`bytes 0-8388607/12345678`).
fn total_of(content_range: Option<&str>) -> Option<u64> {
    content_range?.rsplit_once('/')?.1.parse().ok()
}

/// Whether a conditional write lost to another writer (S3 answers 412, or 409 to writes
/// that raced each other).
fn lost_race<E>(e: &SdkError<E, HttpResponse>) -> bool {
    e.raw_response()
        .is_some_and(|r| matches!(r.status().as_u16(), 409 | 412))
}

impl S3Checkpoints {
    /// The bytes `range` of the object's version `etag`.
    async fn part(&self, key: &str, range: String, etag: &str) -> Result<Vec<u8>, Read> {
        let out = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .range(range)
            .if_match(etag)
            .send()
            .await
            .map_err(|e| match e.raw_response().map(|r| r.status().as_u16()) {
                // the object was replaced since the first part was read
                Some(412) => Read::Replaced,
                _ => Read::Failed(format!("GetObject (part): {}", DisplayErrorContext(&e))),
            })?;
        out.body
            .collect()
            .await
            .map(|b| b.into_bytes().to_vec())
            .map_err(|e| Read::Failed(format!("GetObject body: {e}")))
    }

    /// The lists in use (those with a note, refreshed by the serving processes that load
    /// them), each with what the listing tells of its checkpoint and of its failed builds:
    /// one ListObjectsV2 per 1,000 objects, nothing read.
    pub async fn lists(&self) -> Result<Vec<Listed>, String> {
        let mut noted = BTreeSet::new();
        let mut written = HashMap::new();
        let mut failed = HashMap::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(CHECKPOINT_PREFIX)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| format!("ListObjectsV2: {}", DisplayErrorContext(&e)))?;
            for object in page.contents() {
                let Some(key) = object.key() else { continue };
                let at = object.last_modified().map_or(0, |t| t.secs());
                if let Some((org, kind, failures)) = failure_of(key) {
                    failed.insert((org, kind), Failed { failures, at });
                    continue;
                }
                let Some((org, kind)) = list_of(key) else {
                    continue;
                };
                if key == wanted_key(&org, kind) {
                    noted.insert((org, kind));
                } else {
                    let bytes = object.size().map_or(0, |b| b.max(0) as u64);
                    written.insert((org, kind), (at, bytes));
                }
            }
        }
        Ok(noted
            .into_iter()
            .map(|list| {
                let checkpoint = written.get(&list).copied();
                let failed = failed.remove(&list);
                Listed {
                    written: checkpoint.map(|(at, _)| at),
                    bytes: checkpoint.map(|(_, bytes)| bytes),
                    failed,
                    org: list.0,
                    kind: list.1,
                }
            })
            .collect())
    }

    /// Notes that the build of `org`'s list of `kind` failed once more after `before`
    /// failures in a row: the note of `before + 1` replaces the one of `before`.
    pub async fn note_failure(
        &self,
        org: &str,
        kind: EntityKind,
        before: Option<u32>,
        why: &str,
    ) -> Result<(), String> {
        let failures = before.unwrap_or(0).saturating_add(1);
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(failed_key(org, kind, failures))
            .body(ByteStream::from(why.as_bytes().to_vec()))
            .send()
            .await
            .map_err(|e| format!("PutObject: {}", DisplayErrorContext(&e)))?;
        match before {
            Some(n) => self.clear_failure(org, kind, n).await,
            None => Ok(()),
        }
    }

    /// Removes the note of `failures` failed builds of `org`'s list of `kind` (after one
    /// succeeded, or a newer note replaced it).
    pub async fn clear_failure(
        &self,
        org: &str,
        kind: EntityKind,
        failures: u32,
    ) -> Result<(), String> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(failed_key(org, kind, failures))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| format!("DeleteObject: {}", DisplayErrorContext(&e)))
    }

    /// The ETag and the stamp of the checkpoint at `key`, when there is one.
    async fn head(&self, key: &str) -> Result<Option<(String, Option<Stamp>)>, String> {
        match self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => Ok(Some((
                out.e_tag().unwrap_or_default().to_string(),
                stamp_of(out.metadata()),
            ))),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(None),
            Err(e) => Err(format!("HeadObject: {}", DisplayErrorContext(&e))),
        }
    }

    /// One read of the checkpoint at `key`: its first part, then the rest of that version.
    async fn read(&self, key: &str) -> Result<Option<Fetched>, Read> {
        let first = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .range(format!("bytes=0-{}", PART - 1))
            .send()
            .await;
        let first = match first {
            Ok(out) => out,
            Err(e) => {
                return match e.as_service_error().and_then(|s| s.code()) {
                    Some("NoSuchKey") => Ok(None),
                    _ => Err(Read::Failed(format!(
                        "GetObject: {}",
                        DisplayErrorContext(&e)
                    ))),
                }
            }
        };
        let etag = first.e_tag().unwrap_or_default().to_string();
        let full = stamp_of(first.metadata()).map_or(Timestamp::from_millis(0), |s| s.full);
        let total = total_of(first.content_range());
        let mut bytes = first
            .body
            .collect()
            .await
            .map_err(|e| Read::Failed(format!("GetObject body: {e}")))?
            .into_bytes()
            .to_vec();
        let total = total.unwrap_or(bytes.len() as u64);
        if total > MAX_BYTES {
            return Err(Read::Failed(format!(
                "a checkpoint of {total} bytes is past the limit"
            )));
        }
        bytes.reserve((total as usize).saturating_sub(bytes.len()));
        let rest = (bytes.len() as u64..total).step_by(PART as usize);
        let mut parts = stream::iter(rest)
            .map(|start| {
                let end = (start + PART).min(total) - 1;
                self.part(key, format!("bytes={start}-{end}"), &etag)
            })
            .buffered(PARALLEL);
        while let Some(part) = parts.try_next().await? {
            bytes.extend_from_slice(&part);
        }
        if bytes.len() as u64 != total {
            return Err(Read::Failed(format!(
                "read {} of {total} bytes",
                bytes.len()
            )));
        }
        Ok(Some((bytes, full)))
    }
}

impl CheckpointStore for S3Checkpoints {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Fetched>, String>> {
        Box::pin(async move {
            for _ in 0..READ_TRIES {
                match self.read(key).await {
                    Ok(fetched) => return Ok(fetched),
                    Err(Read::Replaced) => continue,
                    Err(Read::Failed(e)) => return Err(e),
                }
            }
            Err(format!(
                "{key} was replaced during each of {READ_TRIES} reads"
            ))
        })
    }

    fn stamp<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Stamp>, String>> {
        Box::pin(async move { Ok(self.head(key).await?.and_then(|(_, stamp)| stamp)) })
    }

    fn want<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.client
                .put_object()
                .bucket(&self.bucket)
                .key(key)
                .body(ByteStream::from_static(b""))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| format!("PutObject (note): {}", DisplayErrorContext(&e)))
        })
    }

    fn put_newer<'a>(
        &'a self,
        key: &'a str,
        bytes: Vec<u8>,
        stamp: Stamp,
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let body = SdkBody::from(bytes);
            for _ in 0..WRITE_TRIES {
                let put = self
                    .client
                    .put_object()
                    .bucket(&self.bucket)
                    .key(key)
                    .metadata(SYNCED, stamp.synced.millis().to_string())
                    .metadata(FULL, stamp.full.millis().to_string());
                let put = match self.head(key).await? {
                    // a newer full read wins; then a later position
                    Some((_, Some(theirs)))
                        if (theirs.full, theirs.synced) >= (stamp.full, stamp.synced) =>
                    {
                        return Ok(false)
                    }
                    Some((etag, _)) => put.if_match(etag),
                    None => put.if_none_match("*"),
                };
                let body = body
                    .try_clone()
                    .ok_or("the checkpoint's body cannot be sent again")?;
                match put.body(ByteStream::new(body)).send().await {
                    Ok(_) => return Ok(true),
                    Err(e) if lost_race(&e) => continue,
                    Err(e) => return Err(format!("PutObject: {}", DisplayErrorContext(&e))),
                }
            }
            Ok(false)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::total_of;

    #[test]
    fn the_total_comes_from_the_content_range() {
        assert_eq!(total_of(Some("bytes 0-8388607/12345678")), Some(12_345_678));
        assert_eq!(total_of(Some("bytes 0-9/10")), Some(10));
        assert_eq!(total_of(Some("bytes */10")), Some(10));
        assert_eq!(total_of(Some("bytes 0-9/*")), None);
        assert_eq!(total_of(None), None);
    }
}
