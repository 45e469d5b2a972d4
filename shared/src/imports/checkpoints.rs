//! The list checkpoints' S3 adapter (`search/snapshot/checkpoint.rs` is the port): objects
//! under `checkpoints/` of the deployment's bucket, the one the imports use.

use crate::search::snapshot::CheckpointStore;
use futures_util::future::BoxFuture;

/// Checkpoints in `bucket`.
pub struct S3Checkpoints {
    pub client: aws_sdk_s3::Client,
    pub bucket: String,
}

impl CheckpointStore for S3Checkpoints {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, String>> {
        Box::pin(async move {
            let out = self
                .client
                .get_object()
                .bucket(&self.bucket)
                .key(key)
                .send()
                .await;
            match out {
                Ok(out) => out
                    .body
                    .collect()
                    .await
                    .map(|b| Some(b.into_bytes().to_vec()))
                    .map_err(|e| format!("GetObject body: {e}")),
                Err(e) => {
                    use aws_sdk_s3::error::ProvideErrorMetadata;
                    match e.as_service_error().and_then(|s| s.code()) {
                        Some("NoSuchKey") => Ok(None),
                        _ => Err(format!("GetObject: {e}")),
                    }
                }
            }
        })
    }

    fn put<'a>(&'a self, key: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.client
                .put_object()
                .bucket(&self.bucket)
                .key(key)
                .body(bytes.into())
                .send()
                .await
                .map(|_| ())
                .map_err(|e| format!("PutObject: {e}"))
        })
    }
}
