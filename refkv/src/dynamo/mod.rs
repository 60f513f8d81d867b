//! refkv's DynamoDB-compatible API (`refkv serve --dynamo-listen IP:PORT`): the JSON 1.0
//! protocol (`POST /`, `X-Amz-Target: DynamoDB_20120810.<Operation>`) over plain HTTP/1.1,
//! serving the subset of [`model`] through refkv's own transactions ([`ops`]). Requests are
//! not authenticated (the SigV4 signature is ignored).
//!
//! Errors are DynamoDB's shape: HTTP 400 (500 for `InternalServerError`, 503 for
//! `ServiceUnavailable`) with `{"__type": "com.amazonaws.dynamodb.v20120810#<Type>",
//! "message": …}`; `InternalServerError` is sent only when the operation may have
//! committed (docs/dynamodb.md).
//!
//! Invariant: each operation runs in a task of its own, so a client that gives up (or a
//! broken connection) never stops a transaction half way between its commit steps.

pub mod model;
pub mod ops;
pub mod typed;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, Response, StatusCode};
use ops::{Dynamo, Refused};
use serde_json::{json, Value};
use std::sync::Arc;

/// The prefix of every `X-Amz-Target`.
const TARGET_PREFIX: &str = "DynamoDB_20120810.";
/// The largest request body accepted.
const MAX_BODY: usize = 1 << 20;

/// Status, error type and message of a refusal.
fn error_parts(r: Refused) -> (StatusCode, &'static str, String) {
    match r {
        Refused::Validation(m) => (StatusCode::BAD_REQUEST, "ValidationException", m),
        Refused::ResourceNotFound(m) => (StatusCode::BAD_REQUEST, "ResourceNotFoundException", m),
        Refused::ResourceInUse(m) => (StatusCode::BAD_REQUEST, "ResourceInUseException", m),
        Refused::TransactionCanceled { reason, message } => (
            StatusCode::BAD_REQUEST,
            "TransactionCanceledException",
            format!("Transaction cancelled, please refer cancellation reasons for specific reasons [{reason}]: {message}"),
        ),
        Refused::ConditionalCheckFailed(m) => (StatusCode::BAD_REQUEST, "ConditionalCheckFailedException", m),
        Refused::TransactionConflict(m) => (StatusCode::BAD_REQUEST, "TransactionConflictException", m),
        Refused::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", m),
        Refused::Internal(m) => (StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError", m),
    }
}

fn json_response(
    status: StatusCode,
    body: &Value,
    error_type: Option<&str>,
) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    let headers = r.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    if let Some(t) = error_type.and_then(|t| hyper::header::HeaderValue::from_str(t).ok()) {
        headers.insert("x-amzn-ErrorType", t);
    }
    r
}

/// The reply to an operation's outcome.
pub fn reply(outcome: Result<Value, Refused>) -> Response<Full<Bytes>> {
    match outcome {
        Ok(body) => json_response(StatusCode::OK, &body, None),
        Err(r) => {
            let (status, kind, message) = error_parts(r);
            let body = json!({ "__type": format!("com.amazonaws.dynamodb.v20120810#{kind}"), "message": message });
            json_response(status, &body, Some(kind))
        }
    }
}

/// Handles one HTTP request.
async fn handle(api: Arc<Dynamo>, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    let target = req
        .headers()
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let Some(op) = target.strip_prefix(TARGET_PREFIX).map(str::to_string) else {
        return reply(Err(Refused::Validation(format!(
            "unknown X-Amz-Target {target:?}"
        ))));
    };
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return reply(Err(Refused::Validation(format!("reading the body: {e}")))),
    };
    let input: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return reply(Err(Refused::Validation(format!(
                "the body is not JSON: {e}"
            ))))
        }
    };
    let outcome = tokio::spawn(async move { api.call(&op, &input).await })
        .await
        .unwrap_or_else(|e| {
            Err(Refused::Internal(format!(
                "outcome unknown: the operation's task failed: {e}"
            )))
        });
    reply(outcome)
}

/// Serves the API on `listener` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, api: Arc<Dynamo>) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("dynamodb accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let api = api.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let api = api.clone();
                async move { Ok::<_, std::convert::Infallible>(handle(api, req).await) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                tracing::debug!("dynamodb connection: {e}");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(r: Response<Full<Bytes>>) -> Value {
        serde_json::from_slice(&r.into_body().collect().await.unwrap().to_bytes()).unwrap()
    }

    #[tokio::test]
    async fn errors_have_dynamodbs_shape_and_status() {
        let r = reply(Err(Refused::TransactionCanceled {
            reason: "ConditionalCheckFailed",
            message: "m".into(),
        }));
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            r.headers()["x-amzn-ErrorType"],
            "TransactionCanceledException"
        );
        let body = body_of(r).await;
        assert_eq!(
            body["__type"],
            "com.amazonaws.dynamodb.v20120810#TransactionCanceledException"
        );
        assert!(body["message"]
            .as_str()
            .unwrap()
            .contains("[ConditionalCheckFailed]"));
        assert_eq!(
            reply(Err(Refused::Internal("x".into()))).status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            reply(Err(Refused::Unavailable("x".into()))).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        let ok = reply(Ok(json!({})));
        assert_eq!(
            (ok.status(), ok.headers()["content-type"].to_str().unwrap()),
            (StatusCode::OK, "application/x-amz-json-1.0")
        );
    }
}
