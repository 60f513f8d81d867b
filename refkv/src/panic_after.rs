//! `refkv serve --panic-after ID=DURATION`: a test-only switch that makes node `ID` panic
//! `DURATION` after it starts, so the harness can be tested against a server that dies on
//! its own (docs/refkv.md).
//!
//! Every node of a cluster gets the same flags, so the switch names the node that dies; the
//! others ignore it. The panic goes through the default panic hook (it prints
//! `thread '…' panicked at …` and the message to stderr, as any Rust panic does) and then
//! the process exits with status 101, Rust's panic status — the way an unrecovered panic
//! takes down a whole Go server.

use std::time::Duration;

/// Which node panics, and when after its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PanicAfter {
    pub node: u64,
    pub after: Duration,
}

/// Parses `ID=DURATION` (`2=5s`, `1=500ms`).
pub fn parse(text: &str) -> Result<PanicAfter, String> {
    let (id, after) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not ID=DURATION (e.g. 2=5s)"))?;
    let node = id
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("{text:?}: {id:?} is not a node id"))?;
    let after = crate::autosplit::parse_duration(after).map_err(|e| format!("{text:?}: {e}"))?;
    Ok(PanicAfter { node, after })
}

/// Starts the timer on a thread of its own when `spec` names node `id`.
pub fn arm(id: u64, spec: Option<PanicAfter>) {
    let Some(PanicAfter { node, after }) = spec.filter(|s| s.node == id) else {
        return;
    };
    let armed = std::thread::Builder::new()
        .name("panic-after".into())
        .spawn(move || {
            std::thread::sleep(after);
            let _ = std::panic::catch_unwind(|| {
                panic!(
                    "refkv: --panic-after: node {node} panics {after:?} after its start, as asked"
                )
            });
            std::process::exit(101);
        });
    if let Err(e) = armed {
        eprintln!("refkv: cannot start the --panic-after timer: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_node_and_duration_and_explains_bad_input() {
        assert_eq!(
            parse("2=5s"),
            Ok(PanicAfter {
                node: 2,
                after: Duration::from_secs(5)
            })
        );
        assert_eq!(parse("1=500ms").unwrap().after, Duration::from_millis(500));
        assert!(parse("5s").unwrap_err().contains("ID=DURATION"));
        assert!(parse("x=5s").unwrap_err().contains("not a node id"));
        assert!(parse("2=soon").is_err());
    }
}
