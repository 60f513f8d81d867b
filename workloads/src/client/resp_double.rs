//! A small RESP server for tests (the Redis client's, and the targets' built on it): it parses each command (an array of bulk strings), logs
//! it with the double's name, and answers whatever the test's handler returns (raw RESP
//! bytes). Connection set-up chatter (`CLIENT SETINFO`) is answered `+OK` and not logged.
//!
//! Invariant: commands on one connection are answered in order, as a Redis server does.

use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

pub type Handler = Arc<dyn Fn(&[Vec<u8>]) -> Vec<u8> + Send + Sync>;
pub type Log = Arc<Mutex<Vec<(String, Vec<String>)>>>;

pub struct RespDouble {
    pub addr: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RespDouble {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `handler` on a fresh loopback port; every command lands in `log` under `name`.
pub async fn start(name: &str, log: Log, handler: Handler) -> RespDouble {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("local address").to_string();
    let name = name.to_string();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, name.clone(), log.clone(), handler.clone()));
        }
    });
    RespDouble { addr, task }
}

async fn serve(stream: TcpStream, name: String, log: Log, handler: Handler) {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    while let Some(cmd) = read_command(&mut read).await {
        let reply = if cmd
            .first()
            .is_some_and(|c| c.eq_ignore_ascii_case(b"CLIENT"))
        {
            b"+OK\r\n".to_vec()
        } else {
            log.lock().unwrap().push((
                name.clone(),
                cmd.iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect(),
            ));
            handler(&cmd)
        };
        if write.write_all(&reply).await.is_err() {
            return;
        }
    }
}

async fn read_line(read: &mut BufReader<tokio::net::tcp::OwnedReadHalf>) -> Option<String> {
    let mut line = String::new();
    (read.read_line(&mut line).await.ok()? > 0).then(|| line.trim_end().to_string())
}

async fn read_command(
    read: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> Option<Vec<Vec<u8>>> {
    let count: usize = read_line(read).await?.strip_prefix('*')?.parse().ok()?;
    let mut args = Vec::with_capacity(count);
    for _ in 0..count {
        let len: usize = read_line(read).await?.strip_prefix('$')?.parse().ok()?;
        let mut arg = vec![0; len + 2];
        read.read_exact(&mut arg).await.ok()?;
        arg.truncate(len);
        args.push(arg);
    }
    Some(args)
}

/// RESP encodings of the replies tests need.
pub fn ok() -> Vec<u8> {
    b"+OK\r\n".to_vec()
}
pub fn int(n: i64) -> Vec<u8> {
    format!(":{n}\r\n").into_bytes()
}
pub fn nil() -> Vec<u8> {
    b"$-1\r\n".to_vec()
}
pub fn error(text: &str) -> Vec<u8> {
    format!("-{text}\r\n").into_bytes()
}
pub fn bulk(b: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", b.len()).into_bytes();
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
    out
}
pub fn array(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", items.len()).into_bytes();
    for i in items {
        out.extend_from_slice(i);
    }
    out
}
