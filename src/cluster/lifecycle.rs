//! Watching server processes exit: the bookkeeping every cluster kind shares.
//!
//! A cluster reports each exit of a node's server exactly once, as a [`NodeExit`], and says
//! whether faultline asked for it. [`ExitBook`] holds, per node, the *incarnation* (bumped
//! by every start) and whether an exit of it is expected.
//!
//! Invariants (no race between a kill and the watcher):
//! - a kill marks the node's exit expected *before* it signals the process, so an exit
//!   observed at any time after the kill began is expected; so is every exit once the
//!   teardown began;
//! - a start is bracketed: [`ExitBook::starting`] before the process is spawned and
//!   [`ExitBook::started`] once it runs, each bumping the incarnation; nothing is claimed
//!   in between, and an observation taken under another incarnation is dropped, so a stale
//!   "exited" seen around a restart is never reported as a new, unexpected exit (a start
//!   that failed leaves the node `starting`: nothing runs, nothing can exit);
//! - an incarnation's exit is reported at most once.

use std::collections::HashMap;
use std::sync::Mutex;

/// Lines of a node's log an exit report carries.
pub const LOG_TAIL_LINES: usize = 20;
/// Lines searched for the crash line (a Go panic prints its stacks after it).
pub const CRASH_SEARCH_LINES: usize = 4000;

/// One exit of a node's server process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeExit {
    pub node: String,
    /// A kill fault was aimed at the node, or the cluster was being torn down.
    pub expected: bool,
    pub exit_code: Option<i32>,
    /// The signal that ended it (`SIGKILL`), when the cluster kind can tell.
    pub signal: Option<String>,
    /// The last [`LOG_TAIL_LINES`] lines its incarnation wrote.
    pub log_tail: Vec<String>,
    /// The line that says why it died (`panic: …`, `fatal error: …`, `… panicked at …`).
    pub crash_line: Option<String>,
}

impl NodeExit {
    /// The exit of `node` with this status, described from the lines of its log since it
    /// started.
    pub fn new(
        node: &str,
        expected: bool,
        exit_code: Option<i32>,
        signal: Option<String>,
        log: &[String],
    ) -> NodeExit {
        let search = &log[log.len().saturating_sub(CRASH_SEARCH_LINES)..];
        NodeExit {
            node: node.to_string(),
            expected,
            exit_code,
            signal,
            log_tail: log[log.len().saturating_sub(LOG_TAIL_LINES)..].to_vec(),
            crash_line: analysis::checkers::crashes::crash_line(search),
        }
    }

    /// `exit code 101`, `signal SIGSEGV` or `unknown status`.
    pub fn status(&self) -> String {
        analysis::checkers::crashes::status_text(
            self.signal.as_deref(),
            self.exit_code.map(i64::from),
        )
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct NodeBook {
    incarnation: u64,
    starting: bool,
    exit_expected: bool,
    reported: bool,
}

/// Per-node incarnations and expectations (see the module invariants).
#[derive(Debug, Default)]
pub struct ExitBook {
    nodes: Mutex<HashMap<String, NodeBook>>,
    tearing_down: std::sync::atomic::AtomicBool,
}

impl ExitBook {
    fn with<T>(&self, node: &str, f: impl FnOnce(&mut NodeBook) -> T) -> T {
        let mut nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
        f(nodes.entry(node.to_string()).or_default())
    }

    /// A new process of `node` is about to start.
    pub fn starting(&self, node: &str) {
        self.with(node, |b| {
            *b = NodeBook {
                incarnation: b.incarnation + 1,
                starting: true,
                exit_expected: false,
                reported: false,
            }
        });
    }

    /// The new process of `node` runs.
    pub fn started(&self, node: &str) {
        self.with(node, |b| {
            b.incarnation += 1;
            b.starting = false;
        });
    }

    /// `node` is about to be killed on purpose.
    pub fn expect_exit(&self, node: &str) {
        self.with(node, |b| b.exit_expected = true);
    }

    /// Every exit from now on is expected (the cluster is being torn down).
    pub fn tearing_down(&self) {
        self.tearing_down
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The current incarnation of `node`, read before looking at its process.
    pub fn incarnation(&self, node: &str) -> u64 {
        self.with(node, |b| b.incarnation)
    }

    /// Nodes whose exit was reported and that have not been started since, by name.
    pub fn down_nodes(&self) -> Vec<String> {
        let nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
        let mut down: Vec<String> = nodes
            .iter()
            .filter(|(_, b)| b.reported && !b.starting)
            .map(|(n, _)| n.clone())
            .collect();
        down.sort();
        down
    }

    /// Claims the report of the exit of `node` seen under `incarnation`: `None` when that
    /// incarnation is gone, a start is under way or the exit was reported already, else
    /// whether it was expected.
    pub fn claim_exit(&self, node: &str, incarnation: u64) -> Option<bool> {
        let teardown = self.tearing_down.load(std::sync::atomic::Ordering::SeqCst);
        self.with(node, |b| {
            if b.starting || b.incarnation != incarnation || b.reported {
                return None;
            }
            b.reported = true;
            Some(b.exit_expected || teardown)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(book: &ExitBook, node: &str) {
        book.starting(node);
        book.started(node);
    }

    #[test]
    fn an_exit_is_reported_once_and_expected_only_after_a_kill() {
        let book = ExitBook::default();
        start(&book, "n1");
        let inc = book.incarnation("n1");
        assert_eq!(
            book.claim_exit("n1", inc),
            Some(false),
            "nobody asked for it"
        );
        assert_eq!(book.claim_exit("n1", inc), None, "reported once");
        assert_eq!(book.down_nodes(), ["n1"], "down until started again");
        start(&book, "n1");
        assert!(book.down_nodes().is_empty());
        book.expect_exit("n1");
        assert_eq!(book.claim_exit("n1", book.incarnation("n1")), Some(true));
    }

    #[test]
    fn an_observation_from_before_a_restart_is_dropped() {
        let book = ExitBook::default();
        start(&book, "n2");
        book.expect_exit("n2");
        let seen_under = book.incarnation("n2");
        book.starting("n2"); // the nemesis restarts it after the poll looked
        let seen_while_starting = book.incarnation("n2");
        assert_eq!(book.claim_exit("n2", seen_under), None);
        assert_eq!(
            book.claim_exit("n2", seen_while_starting),
            None,
            "nothing is claimed while a start is under way"
        );
        book.started("n2");
        assert_eq!(
            book.claim_exit("n2", seen_while_starting),
            None,
            "seen before the new process ran"
        );
        assert_eq!(
            book.claim_exit("n2", book.incarnation("n2")),
            Some(false),
            "the new process's own exit still counts"
        );
    }

    #[test]
    fn every_exit_during_teardown_is_expected() {
        let book = ExitBook::default();
        start(&book, "n3");
        book.tearing_down();
        assert_eq!(book.claim_exit("n3", book.incarnation("n3")), Some(true));
    }

    #[test]
    fn an_exit_carries_its_tail_and_crash_line() {
        let mut log: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
        log.insert(
            10,
            "panic: runtime error: makeslice: cap out of range".into(),
        );
        let exit = NodeExit::new("n1", false, Some(2), None, &log);
        assert_eq!(exit.log_tail.len(), LOG_TAIL_LINES);
        assert_eq!(exit.log_tail.last().map(String::as_str), Some("line 99"));
        assert_eq!(
            exit.crash_line.as_deref(),
            Some("panic: runtime error: makeslice: cap out of range"),
            "found above the tail"
        );
        assert_eq!(exit.status(), "exit code 2");
    }
}
