//! Per-key limits on the search: wall time and memory. A search that runs out turns into
//! an `unknown` verdict for its key instead of a hang or an out-of-memory kill.

use std::time::{Duration, Instant};

pub struct Budget {
    started: Instant,
    time: Duration,
    memory_bytes: u64,
}

/// Which limit a search ran into.
#[derive(Debug, Clone, PartialEq)]
pub enum Exceeded {
    Time { limit: Duration },
    Memory { limit_bytes: u64, used_bytes: u64 },
}

impl Budget {
    pub fn start(time: Duration, memory_bytes: u64) -> Self {
        Budget { started: Instant::now(), time, memory_bytes }
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn check_time(&self) -> Result<(), Exceeded> {
        if self.started.elapsed() > self.time {
            return Err(Exceeded::Time { limit: self.time });
        }
        Ok(())
    }

    pub fn check_memory(&self, used_bytes: u64) -> Result<(), Exceeded> {
        if used_bytes > self.memory_bytes {
            return Err(Exceeded::Memory { limit_bytes: self.memory_bytes, used_bytes });
        }
        Ok(())
    }
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exceeded::Time { limit } => write!(f, "the search exceeded its time budget of {:.3} s", limit.as_secs_f64()),
            Exceeded::Memory { limit_bytes, used_bytes } => write!(
                f,
                "the search exceeded its memory budget of {} MiB (used {} MiB)",
                limit_bytes >> 20,
                used_bytes >> 20
            ),
        }
    }
}
