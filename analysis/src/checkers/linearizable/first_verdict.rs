//! First verdict fast: once one key is proven not linearizable, so is the history, and
//! the keys still being searched only add more witnesses. They get a bounded extra time
//! (the grace) and are then reported `not checked (history already invalid)`; searches
//! not started when the first invalid key was found are not started at all (keys the fast
//! path decides are always decided: it is cheap). With `all_anomalies` every key is
//! checked.
//!
//! Invariant: the signal only ever stops keys after some key was found invalid, so it can
//! never turn a valid or unknown history's verdict into anything else, and an invalid
//! history stays invalid.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Shared by all keys of one check.
#[derive(Debug)]
pub struct FirstVerdict {
    started: Instant,
    /// `None`: wait for every key (`all_anomalies`).
    grace: Option<Duration>,
    /// Nanoseconds after `started` from which keys stop; `u64::MAX` while no key failed.
    stop_at: AtomicU64,
}

impl FirstVerdict {
    pub fn new(grace: Option<Duration>) -> Self {
        FirstVerdict {
            started: Instant::now(),
            grace,
            stop_at: AtomicU64::new(u64::MAX),
        }
    }

    /// Records that a key was found invalid (the first one sets the cut-off).
    pub fn key_invalid(&self) {
        if let Some(grace) = self.grace {
            let at = (self.started.elapsed() + grace)
                .as_nanos()
                .min(u64::MAX as u128 - 1) as u64;
            self.stop_at.fetch_min(at, Ordering::Relaxed);
        }
    }

    /// True once some key was found invalid, unless every key is to be checked: keys not
    /// started by then are not started at all.
    pub fn history_invalid(&self) -> bool {
        self.grace.is_some() && self.stop_at.load(Ordering::Relaxed) != u64::MAX
    }

    /// True once the grace after the first invalid key has run out.
    pub fn stopped(&self) -> bool {
        let at = self.stop_at.load(Ordering::Relaxed);
        at != u64::MAX && self.started.elapsed().as_nanos() >= at as u128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_only_after_an_invalid_key_and_its_grace_and_never_when_waiting_for_all() {
        let fv = FirstVerdict::new(Some(Duration::ZERO));
        assert!(!fv.stopped() && !fv.history_invalid(), "no key failed yet");
        fv.key_invalid();
        assert!(fv.stopped());
        assert!(fv.history_invalid());
        let all = FirstVerdict::new(None);
        all.key_invalid();
        assert!(!all.stopped() && !all.history_invalid());
        let later = FirstVerdict::new(Some(Duration::from_secs(3600)));
        later.key_invalid();
        assert!(!later.stopped(), "the grace has not run out");
    }
}
