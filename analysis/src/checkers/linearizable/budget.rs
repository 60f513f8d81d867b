//! Per-key limits on the search: wall time and memory. A search that runs out turns into
//! an `unknown` verdict for its key instead of a hang or an out-of-memory kill.

use super::first_verdict::FirstVerdict;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct Budget {
    /// Stops the search once another key proved the history invalid (see
    /// [`FirstVerdict`]).
    stop: Option<Arc<FirstVerdict>>,
    started: Instant,
    time: Duration,
    memory_bytes: u64,
    /// The time limit is what remained of the whole check's budget, not the key's own.
    time_is_remainder: bool,
}

/// How a key stopped by [`FirstVerdict`] is reported.
pub const NOT_CHECKED: &str = "not checked (history already invalid)";

/// Which limit a search ran into.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Exceeded {
    #[error("{}", time_message(limit, *remainder_of_total))]
    Time {
        limit: Duration,
        remainder_of_total: bool,
    },
    #[error("the search exceeded its memory budget of {} MiB (used {} MiB)", limit_bytes >> 20, used_bytes >> 20)]
    Memory { limit_bytes: u64, used_bytes: u64 },
    /// Another key proved the history invalid and the grace ran out.
    #[error("{NOT_CHECKED}")]
    HistoryInvalid,
}

impl Budget {
    pub fn start(time: Duration, memory_bytes: u64) -> Self {
        Budget {
            stop: None,
            started: Instant::now(),
            time,
            memory_bytes,
            time_is_remainder: false,
        }
    }

    /// A budget of `per_key` time, cut short if the whole check's `deadline` comes first.
    pub fn start_until(per_key: Duration, deadline: Instant, memory_bytes: u64) -> Self {
        let left = deadline.saturating_duration_since(Instant::now());
        Budget {
            time_is_remainder: left < per_key,
            ..Budget::start(per_key.min(left), memory_bytes)
        }
    }

    /// The same budget, also stopped by `stop`.
    pub fn stopped_by(self, stop: Arc<FirstVerdict>) -> Self {
        Budget {
            stop: Some(stop),
            ..self
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn check_time(&self) -> Result<(), Exceeded> {
        if self.stop.as_ref().is_some_and(|s| s.stopped()) {
            return Err(Exceeded::HistoryInvalid);
        }
        if self.started.elapsed() > self.time {
            return Err(Exceeded::Time {
                limit: self.time,
                remainder_of_total: self.time_is_remainder,
            });
        }
        Ok(())
    }

    pub fn check_memory(&self, used_bytes: u64) -> Result<(), Exceeded> {
        if used_bytes > self.memory_bytes {
            return Err(Exceeded::Memory {
                limit_bytes: self.memory_bytes,
                used_bytes,
            });
        }
        Ok(())
    }
}

/// The message of a time limit: the key's own, or what remained of the whole check's.
fn time_message(limit: &Duration, remainder_of_total: bool) -> String {
    if remainder_of_total {
        format!(
            "the check's total time budget ran out ({:.3} s were left for this key)",
            limit.as_secs_f64()
        )
    } else {
        format!(
            "the search exceeded its time budget of {:.3} s",
            limit.as_secs_f64()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_says_which_it_was() {
        let time = |remainder_of_total| {
            Exceeded::Time {
                limit: Duration::from_millis(1500),
                remainder_of_total,
            }
            .to_string()
        };
        assert_eq!(
            time(false),
            "the search exceeded its time budget of 1.500 s"
        );
        assert_eq!(
            time(true),
            "the check's total time budget ran out (1.500 s were left for this key)"
        );
        let memory = Exceeded::Memory {
            limit_bytes: 64 << 20,
            used_bytes: 65 << 20,
        }
        .to_string();
        assert_eq!(
            memory,
            "the search exceeded its memory budget of 64 MiB (used 65 MiB)"
        );
        assert_eq!(Exceeded::HistoryInvalid.to_string(), NOT_CHECKED);
    }
}
