//! A minimal read-only HTTP/1.1 server for the store, on tokio: `/` is the run list, every
//! other path a file or directory under the store root. One request per connection
//! (`Connection: close`), GET and HEAD only. Paths are percent-decoded, `.`/`..` segments
//! are refused, and the resolved file must lie inside the canonical store root (this also
//! catches symlinks pointing out of the store). A run's `report.html` is generated on first
//! request if it does not exist yet.

use super::runs;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const MAX_HEAD: usize = 16 * 1024;
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `store` on `listener` until the task is dropped.
pub async fn serve(store: PathBuf, listener: TcpListener) -> Result<()> {
    let root = Arc::new(
        store
            .canonicalize()
            .with_context(|| format!("store {} does not exist", store.display()))?,
    );
    loop {
        let (stream, _) = listener.accept().await.context("accepting a connection")?;
        let root = Arc::clone(&root);
        tokio::spawn(async move {
            // A client that goes away mid-response is not an error worth reporting.
            let _ = handle(stream, &root).await;
        });
    }
}

/// A response before it is written.
struct Response {
    status: &'static str,
    content_type: &'static str,
    body: Body,
    location: Option<String>,
}

enum Body {
    Text(String),
    File(PathBuf, u64),
}

impl Response {
    fn text(status: &'static str, message: impl Into<String>) -> Self {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: Body::Text(message.into() + "\n"),
            location: None,
        }
    }
    fn html(body: String) -> Self {
        Response {
            status: "200 OK",
            content_type: "text/html; charset=utf-8",
            body: Body::Text(body),
            location: None,
        }
    }
}

async fn handle(mut stream: TcpStream, root: &Path) -> std::io::Result<()> {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(Some(head))) => head,
        Ok(Ok(None)) => {
            return write(
                &mut stream,
                Response::text("400 Bad Request", "request head too large or incomplete"),
                false,
            )
            .await
        }
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return write(
                &mut stream,
                Response::text("408 Request Timeout", "request timed out"),
                false,
            )
            .await
        }
    };
    let (method, target) = match parse_request_line(&head) {
        Some(parts) => parts,
        None => {
            return write(
                &mut stream,
                Response::text("400 Bad Request", "malformed request line"),
                false,
            )
            .await
        }
    };
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return write(
            &mut stream,
            Response::text("405 Method Not Allowed", "only GET and HEAD"),
            false,
        )
        .await;
    }
    let root = root.to_path_buf();
    let response = tokio::task::spawn_blocking(move || route(&root, &target))
        .await
        .unwrap_or_else(|_| Response::text("500 Internal Server Error", "handler failed"));
    write(&mut stream, response, head_only).await
}

/// Reads until the blank line ending the request head; `None` if it is too large or the
/// client closed first.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok(Some(String::from_utf8_lossy(&buf[..end]).into_owned()));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
    }
}

/// `(method, target)` from `GET /path HTTP/1.1`.
fn parse_request_line(head: &str) -> Option<(String, String)> {
    let line = head.lines().next()?;
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !version.starts_with("HTTP/1.") || !target.starts_with('/') {
        return None;
    }
    Some((method.to_string(), target.to_string()))
}

/// Decodes `%XX` escapes; `None` on a malformed escape or non-UTF-8 result.
fn percent_decode(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The store-relative path segments of a request target, or `None` if it tries to leave
/// the store (`..`), names a hidden file, or is malformed.
pub fn safe_segments(target: &str) -> Option<Vec<String>> {
    let path = target.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_decode(path)?;
    let mut segments = Vec::new();
    for segment in decoded.split('/').filter(|s| !s.is_empty()) {
        if segment == "."
            || segment == ".."
            || segment.starts_with('.')
            || segment.contains(['\\', '\0'])
        {
            return None;
        }
        segments.push(segment.to_string());
    }
    Some(segments)
}

fn route(root: &Path, target: &str) -> Response {
    let Some(segments) = safe_segments(target) else {
        return Response::text("400 Bad Request", "bad path");
    };
    if segments.is_empty() {
        return match runs::list_runs(root).and_then(|list| runs::render_list(root, &list)) {
            Ok(html) => Response::html(html),
            Err(e) => Response::text("500 Internal Server Error", format!("{e:#}")),
        };
    }
    let mut path = root.to_path_buf();
    path.extend(&segments);
    if segments.last().map(String::as_str) == Some(super::REPORT_FILE) && !path.exists() {
        if let Some(run_dir) = path.parent().filter(|d| d.join("history.jsonl").is_file()) {
            if inside(root, run_dir).is_some() {
                if let Err(e) = super::generate(run_dir, None) {
                    return Response::text(
                        "500 Internal Server Error",
                        format!("cannot generate the report: {e:#}"),
                    );
                }
            }
        }
    }
    let Some(real) = inside(root, &path) else {
        return Response::text("404 Not Found", "not found");
    };
    if real.is_dir() {
        if !target.split(['?', '#']).next().unwrap_or("").ends_with('/') {
            let mut redirect = Response::text("301 Moved Permanently", "moved");
            redirect.location = Some(format!("/{}/", segments.join("/")));
            return redirect;
        }
        return match listing(&real, &segments) {
            Ok(html) => Response::html(html),
            Err(e) => Response::text("500 Internal Server Error", format!("{e:#}")),
        };
    }
    match real.metadata() {
        Ok(meta) => Response {
            status: "200 OK",
            content_type: content_type(&real),
            body: Body::File(real, meta.len()),
            location: None,
        },
        Err(_) => Response::text("404 Not Found", "not found"),
    }
}

/// The canonical form of `path` if it exists and lies inside `root` (already canonical).
fn inside(root: &Path, path: &Path) -> Option<PathBuf> {
    let real = path.canonicalize().ok()?;
    real.starts_with(root).then_some(real)
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jsonl" | "log" | "txt" | "edn" | "xml" | "yml" | "yaml" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn listing(dir: &Path, segments: &[String]) -> Result<String> {
    let mut names: Vec<(String, bool)> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            (!name.starts_with('.')).then(|| (name, e.path().is_dir()))
        })
        .collect();
    names.sort();
    let title = super::svg::escape(&segments.join("/"));
    let mut html = format!("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body style=\"font-family:sans-serif\"><h1>{title}</h1><p><a href=\"/\">all runs</a></p><ul>");
    for (name, is_dir) in names {
        let shown = super::svg::escape(&name);
        let href = format!("{}{}", encode_segment(&name), if is_dir { "/" } else { "" });
        html.push_str(&format!(
            "<li><a href=\"{href}\">{shown}{}</a></li>",
            if is_dir { "/" } else { "" }
        ));
    }
    html.push_str("</ul></body></html>");
    Ok(html)
}

fn encode_segment(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn write(stream: &mut TcpStream, response: Response, head_only: bool) -> std::io::Result<()> {
    let length = match &response.body {
        Body::Text(t) => t.len() as u64,
        Body::File(_, len) => *len,
    };
    let mut head = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {length}\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n",
        response.status, response.content_type
    );
    if let Some(location) = &response.location {
        head.push_str(&format!("Location: {location}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    if !head_only {
        match response.body {
            Body::Text(text) => stream.write_all(text.as_bytes()).await?,
            Body::File(path, _) => {
                let mut file = tokio::fs::File::open(&path).await?;
                tokio::io::copy(&mut file, stream).await?;
            }
        }
    }
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_paths_that_leave_the_store() {
        assert_eq!(
            safe_segments("/a/b/report.html"),
            Some(vec!["a".into(), "b".into(), "report.html".into()])
        );
        assert_eq!(safe_segments("/?x=1"), Some(vec![]));
        for bad in [
            "/../etc/passwd",
            "/a/%2e%2e/%2E%2E/x",
            "/a/..%2fb",
            "/.git/config",
            "/a%5c..%5cb",
            "/%zz",
            "/%ff%fe",
        ] {
            assert_eq!(safe_segments(bad), None, "{bad}");
        }
    }

    #[test]
    fn parses_only_well_formed_request_lines() {
        assert_eq!(
            parse_request_line("GET / HTTP/1.1\r\nHost: x"),
            Some(("GET".into(), "/".into()))
        );
        assert_eq!(parse_request_line("GET http://evil/ HTTP/1.1"), None);
        assert_eq!(parse_request_line("GET / SPDY"), None);
    }
}
