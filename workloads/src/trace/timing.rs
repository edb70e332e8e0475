//! When each request of a replay starts. Closed loop (the default): a client thread
//! issues its next request as soon as the previous one is done, and a request's time is
//! the time inside its engine calls. Open loop (`--rate`): the trace's timestamps are
//! scaled so that the whole replay arrives at the given rate, each request is issued at
//! its intended time (the thread sleeps when early), and its latencies are measured from
//! that intended time, so that a slow engine's queueing shows instead of hiding behind a
//! late start (no coordinated omission).

use std::time::{Duration, Instant};

use super::schedule::{Arrival, Schedule};

/// How a replay is driven.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplayOptions {
    /// Client threads; tenants are dealt to them (tenant t to thread t mod threads), so
    /// each tenant's requests keep their order.
    pub threads: u32,
    /// Open loop: requests per second of the whole replay (all tenants); None: closed
    /// loop.
    pub rate: Option<f64>,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            threads: 1,
            rate: None,
        }
    }
}

/// The replay's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    start: Instant,
    /// Open loop: wall nanoseconds per trace millisecond.
    ns_per_trace_ms: Option<f64>,
}

impl Clock {
    /// Starts the clock now for `schedule` driven as `options` says.
    pub(crate) fn start(schedule: &Schedule, options: &ReplayOptions) -> Clock {
        let ns_per_trace_ms = options.rate.filter(|r| *r > 0.0).map(|rate| {
            let requests = schedule.arrivals.len() as f64;
            let replay_ns = requests / rate * 1e9;
            replay_ns / (schedule.span_ms.max(1) as f64)
        });
        Clock {
            start: Instant::now(),
            ns_per_trace_ms,
        }
    }

    /// Open loop: sleeps until `arrival`'s intended start (when early) and returns it;
    /// closed loop: None at once.
    pub(crate) fn wait_for(&self, arrival: &Arrival) -> Option<Instant> {
        let per_ms = self.ns_per_trace_ms?;
        let intended = self.start + Duration::from_nanos((arrival.at_ms as f64 * per_ms) as u64);
        let now = Instant::now();
        if intended > now {
            std::thread::sleep(intended - now);
        }
        Some(intended)
    }

    /// Time since the clock started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::parse_trace;
    use std::path::Path;

    #[test]
    fn open_loop_times_scale_the_trace_to_the_rate_and_closed_loop_has_none() {
        let text = r#"{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}
{"timestamp": 1000, "input_length": 1, "output_length": 1, "hash_ids": [2]}"#;
        let trace = parse_trace(Path::new("t.jsonl"), text).expect("valid");
        let schedule = Schedule::new(&trace, 1, None).expect("schedules");
        let closed = Clock::start(&schedule, &ReplayOptions::default());
        assert_eq!(closed.wait_for(&schedule.arrivals[1]), None);
        // Two requests at 2,000 a second: the second is due 1 ms after the first.
        let open = Clock::start(
            &schedule,
            &ReplayOptions {
                threads: 1,
                rate: Some(2_000.0),
            },
        );
        assert_eq!(open.ns_per_trace_ms, Some(1_000.0));
        let due = open.wait_for(&schedule.arrivals[1]).expect("open loop");
        assert_eq!(due - open.start, Duration::from_millis(1));
        assert!(Instant::now() >= due);
    }
}
