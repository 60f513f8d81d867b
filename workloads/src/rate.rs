//! Global rate limiting across all processes: a single schedule of evenly spaced start
//! slots (`1/rate` apart) handed out in order. A slot is never scheduled in the past, so
//! after a stall (every process blocked on slow calls) the schedule restarts from "now"
//! instead of bursting to catch up: the achieved rate is at most the target. Each process
//! adds a random jitter in `[0, interval)` to its slot so starts do not align.

use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug)]
pub struct RateLimiter {
    interval: Option<Duration>,
    next: Mutex<Option<Instant>>,
}

impl RateLimiter {
    /// `rate` in ops/s; 0 (or not finite) = unlimited.
    pub fn new(rate: f64) -> RateLimiter {
        let interval =
            (rate.is_finite() && rate > 0.0).then(|| Duration::from_secs_f64(1.0 / rate));
        RateLimiter {
            interval,
            next: Mutex::new(None),
        }
    }

    pub fn interval(&self) -> Option<Duration> {
        self.interval
    }

    /// Reserves the next start slot at or after `now`.
    pub fn reserve(&self, now: Instant) -> Instant {
        let Some(interval) = self.interval else {
            return now;
        };
        let mut next = self
            .next
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let slot = match *next {
            Some(t) if t > now => t,
            _ => now,
        };
        *next = Some(slot + interval);
        slot
    }

    /// The jitter to add to a slot for a uniform sample `u` in `[0, 1)`.
    pub fn jitter(&self, u: f64) -> Duration {
        self.interval
            .map_or(Duration::ZERO, |i| i.mul_f64(u.clamp(0.0, 1.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_spaced_by_the_interval() {
        let rl = RateLimiter::new(100.0);
        let now = Instant::now();
        let slots: Vec<Duration> = (0..5).map(|_| rl.reserve(now) - now).collect();
        let ms: Vec<u128> = slots.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, vec![0, 10, 20, 30, 40]);
    }

    #[test]
    fn no_burst_after_a_stall() {
        let rl = RateLimiter::new(10.0);
        let t0 = Instant::now();
        rl.reserve(t0);
        let later = t0 + Duration::from_secs(5);
        assert_eq!(rl.reserve(later), later);
        assert_eq!(rl.reserve(later) - later, Duration::from_millis(100));
    }

    #[test]
    fn ops_in_a_window_match_the_rate() {
        // 1,000 reservations at 250 ops/s span 4 s minus one interval.
        let rl = RateLimiter::new(250.0);
        let t0 = Instant::now();
        let last = (0..1000).map(|_| rl.reserve(t0)).last().unwrap();
        assert_eq!((last - t0).as_millis(), 3996);
    }

    #[test]
    fn unlimited_rate_never_waits() {
        let rl = RateLimiter::new(0.0);
        let now = Instant::now();
        assert!((0..10).all(|_| rl.reserve(now) == now));
        assert_eq!(rl.jitter(0.5), Duration::ZERO);
        assert_eq!(
            RateLimiter::new(10.0).jitter(0.5),
            Duration::from_millis(50)
        );
    }
}
