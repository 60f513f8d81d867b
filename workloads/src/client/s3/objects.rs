//! The S3 client's object capability ([`ObjectClient`], the `objects` workload): a body put
//! by one `PutObject` or by a multipart upload (`CreateMultipartUpload`, `UploadPart` per
//! part, `CompleteMultipartUpload`), and a `GetObject` of the whole body.
//!
//! Outcomes (the table of [`super::classify`], plus one rule for the multipart steps): the
//! steps before `CompleteMultipartUpload` change no object, so a failure of one is a
//! definite failure of the write (classified as a read: [`CallKind::Read`]) and the upload
//! is aborted in the background, best effort; a failed `CompleteMultipartUpload` is
//! classified as any write ([`CallKind::Mutation`]).
//!
//! Invariants: parts are numbered from 1 in body order and completed in that order with
//! the ETags their uploads answered; every part but the last is `part_size` bytes (S3 and
//! elastickv refuse a non-last part under 5 MiB, `EntityTooSmall`).

use super::{classify_sdk, S3Client, BUCKET};
use crate::client::classify::{CallError, CallKind, Certainty};
use crate::client::{CallResult, ObjectClient};
use crate::objects::Upload;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use futures::future::BoxFuture;
use futures::FutureExt;

impl S3Client {
    async fn put_whole(&self, key: &str, body: Vec<u8>) -> CallResult<()> {
        let sdk = self.ready().await?;
        sdk.put_object()
            .bucket(BUCKET)
            .key(key)
            .content_type("application/octet-stream")
            .body(body.into())
            .send()
            .await
            .map_err(|e| classify_sdk(CallKind::Mutation, &e))?;
        Ok(())
    }

    async fn put_multipart(&self, key: &str, body: Vec<u8>, part_size: u64) -> CallResult<()> {
        let sdk = self.ready().await?;
        let created = sdk
            .create_multipart_upload()
            .bucket(BUCKET)
            .key(key)
            .content_type("application/octet-stream")
            .send()
            .await
            .map_err(|e| classify_sdk(CallKind::Read, &e))?;
        let upload_id = created.upload_id().unwrap_or_default().to_string();
        if upload_id.is_empty() {
            return Err(CallError::new(
                Certainty::Definite,
                "bad-response",
                "CreateMultipartUpload answered no upload id",
            ));
        }
        let parts = match self.upload_parts(key, &upload_id, &body, part_size).await {
            Ok(parts) => parts,
            Err(e) => {
                self.abort_in_background(key, &upload_id);
                return Err(e);
            }
        };
        sdk.complete_multipart_upload()
            .bucket(BUCKET)
            .key(key)
            .upload_id(&upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .map_err(|e| classify_sdk(CallKind::Mutation, &e))?;
        Ok(())
    }

    /// Uploads `body` in parts of `part_size` bytes; the completed parts, in order.
    async fn upload_parts(
        &self,
        key: &str,
        upload_id: &str,
        body: &[u8],
        part_size: u64,
    ) -> CallResult<Vec<CompletedPart>> {
        let size = usize::try_from(part_size.max(1)).unwrap_or(usize::MAX);
        let mut parts = Vec::new();
        for (n, chunk) in body.chunks(size).enumerate() {
            let number = i32::try_from(n + 1)
                .map_err(|_| CallError::new(Certainty::Definite, "bad-object", "too many parts"))?;
            let out = self
                .sdk
                .upload_part()
                .bucket(BUCKET)
                .key(key)
                .upload_id(upload_id)
                .part_number(number)
                .body(chunk.to_vec().into())
                .send()
                .await
                .map_err(|e| classify_sdk(CallKind::Read, &e))?;
            parts.push(
                CompletedPart::builder()
                    .part_number(number)
                    .set_e_tag(out.e_tag().map(str::to_string))
                    .build(),
            );
        }
        Ok(parts)
    }

    /// `AbortMultipartUpload`, not waited for: an upload never completed changes no object,
    /// so its outcome does not matter to the history.
    fn abort_in_background(&self, key: &str, upload_id: &str) {
        let abort = self
            .sdk
            .abort_multipart_upload()
            .bucket(BUCKET)
            .key(key)
            .upload_id(upload_id);
        tokio::spawn(async move {
            let _ = abort.send().await;
        });
    }
}

impl ObjectClient for S3Client {
    fn put_object<'a>(
        &'a self,
        key: &'a str,
        body: Vec<u8>,
        upload: Upload,
    ) -> BoxFuture<'a, CallResult<()>> {
        match upload {
            Upload::Single => self.put_whole(key, body).boxed(),
            Upload::Multipart { part_size } => self.put_multipart(key, body, part_size).boxed(),
        }
    }

    fn get_object<'a>(&'a self, key: &'a str) -> BoxFuture<'a, CallResult<Option<Vec<u8>>>> {
        async move { Ok(self.get(key.as_bytes()).await?.value) }.boxed()
    }
}
