//! Restarting an extension that exited by itself (a crash, an exit, a component stopped
//! for a limit), never one the host stopped: [`RestartPolicy`] (the embedder's default,
//! overridden per extension by the user's `settings.json`), and [`Restarts`], the
//! decision for one extension — exponential backoff with jitter, capped, forgotten
//! after a stable run, given up after too many in a window.

use serde::Serialize;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// When an extension that exited by itself is started again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RestartPolicy {
    /// Restart at all (each extension's `settings.json` choice overrides it).
    pub enabled: bool,
    /// The wait before the first restart; each next one doubles it.
    pub initial: Duration,
    /// The longest wait.
    pub max_delay: Duration,
    /// A run at least this long forgets the earlier restarts: the next crash waits
    /// `initial` again.
    pub stable: Duration,
    /// At most this many restarts within [`RestartPolicy::window`]; the next exit is
    /// final.
    pub max_restarts: usize,
    pub window: Duration,
}

impl Default for RestartPolicy {
    /// On: 1 s (of which half by chance), doubling to at most 30 s; forgotten after 60 s
    /// of running; at most 5 restarts in 5 minutes.
    fn default() -> Self {
        RestartPolicy {
            enabled: true,
            initial: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            stable: Duration::from_secs(60),
            max_restarts: 5,
            window: Duration::from_secs(300),
        }
    }
}

impl RestartPolicy {
    /// Never restart.
    pub fn off() -> Self {
        RestartPolicy {
            enabled: false,
            ..RestartPolicy::default()
        }
    }
}

/// One extension's restarts, as `list` (the sidecar's, the library's) shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RestartInfo {
    /// How many times it was started again since the host loaded it.
    pub count: u64,
    /// Why it exited the last time it was started again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_exit: Option<String>,
    /// It exited too often: it is not started again until a reload.
    pub given_up: bool,
}

/// What [`Restarts::after_exit`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Decision {
    /// Start it again after this wait: restart number `attempt` since it last ran
    /// stably.
    Restart { delay: Duration, attempt: u32 },
    /// Restarts are off for it.
    Off,
    /// Too many restarts in the window: no more.
    GiveUp,
}

/// The restart state of one extension.
#[derive(Debug, Default)]
pub(super) struct Restarts {
    /// When each restart within the window was decided.
    recent: VecDeque<Instant>,
    /// Restarts since it last ran stably.
    attempt: u32,
    pub(super) info: RestartInfo,
}

impl Restarts {
    /// Decides after an exit at `now` of a run that began at `started`, with `jitter` in
    /// [0, 1) (the share of the wait's second half that is waited).
    pub(super) fn after_exit(
        &mut self,
        policy: &RestartPolicy,
        started: Instant,
        now: Instant,
        jitter: f64,
    ) -> Decision {
        if !policy.enabled {
            return Decision::Off;
        }
        if now.saturating_duration_since(started) >= policy.stable {
            self.attempt = 0;
            self.recent.clear();
        }
        while self
            .recent
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= policy.window)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= policy.max_restarts {
            self.info.given_up = true;
            return Decision::GiveUp;
        }
        self.recent.push_back(now);
        self.attempt += 1;
        let doubled = policy
            .initial
            .saturating_mul(1u32 << (self.attempt - 1).min(20));
        let full = doubled.min(policy.max_delay);
        // Half the wait always, the other half by chance: restarts of many extensions
        // that failed together do not come back together.
        let delay = full / 2 + full.mul_f64(jitter.clamp(0.0, 1.0) / 2.0);
        Decision::Restart {
            delay,
            attempt: self.attempt,
        }
    }
}

/// A number in [0, 1) that differs from call to call and from process to process (no
/// need of a good random source: it spreads waits).
pub(super) fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RestartPolicy {
        RestartPolicy::default()
    }

    /// Waits double from `initial` to the cap, half of each fixed and half by chance.
    #[test]
    fn waits_double_up_to_the_cap_with_jitter() {
        let mut r = Restarts::default();
        let p = RestartPolicy {
            max_restarts: 100,
            window: Duration::from_secs(1),
            ..policy()
        };
        let t0 = Instant::now();
        let mut now = t0;
        let mut waits = Vec::new();
        for _ in 0..9 {
            // Each run lasted 1 s: not stable, and the window holds one restart at most.
            let started = now;
            now += Duration::from_secs(1);
            match r.after_exit(&p, started, now, 1.0) {
                Decision::Restart { delay, .. } => waits.push(delay.as_millis()),
                d => panic!("{d:?}"),
            }
        }
        assert_eq!(
            waits,
            [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000]
        );
        let mut r = Restarts::default();
        let Decision::Restart { delay, attempt } = r.after_exit(&p, t0, t0, 0.0) else {
            panic!()
        };
        assert_eq!((delay, attempt), (Duration::from_millis(500), 1));
        assert!(jitter() >= 0.0 && jitter() < 1.0);
        assert_ne!(jitter(), jitter(), "two calls differ");
    }

    /// The sixth exit within five minutes is final; a stable run forgets the count and
    /// the wait; exits older than the window no longer count.
    #[test]
    fn gives_up_after_too_many_in_the_window_and_forgets_after_a_stable_run() {
        let p = policy();
        let t0 = Instant::now();
        let mut r = Restarts::default();
        for i in 0..5 {
            let at = t0 + Duration::from_secs(i);
            assert!(matches!(
                r.after_exit(&p, at, at, 0.5),
                Decision::Restart { attempt, .. } if attempt == i as u32 + 1
            ));
        }
        let at = t0 + Duration::from_secs(6);
        assert_eq!(r.after_exit(&p, at, at, 0.5), Decision::GiveUp);
        assert!(r.info.given_up);

        let mut r = Restarts::default();
        for i in 0..3 {
            let at = t0 + Duration::from_secs(i);
            r.after_exit(&p, at, at, 1.0);
        }
        // Ran 60 s: stable. The next wait is the first one again.
        let started = t0 + Duration::from_secs(10);
        let now = started + Duration::from_secs(60);
        assert_eq!(
            r.after_exit(&p, started, now, 1.0),
            Decision::Restart {
                delay: Duration::from_secs(1),
                attempt: 1
            }
        );

        let mut r = Restarts::default();
        for i in 0..5 {
            let at = t0 + Duration::from_secs(i);
            r.after_exit(&p, at, at, 1.0);
        }
        // Five minutes after the first, it has room again.
        let at = t0 + Duration::from_secs(300);
        assert!(matches!(
            r.after_exit(&p, at, at, 1.0),
            Decision::Restart { .. }
        ));
    }

    #[test]
    fn off_never_restarts() {
        let mut r = Restarts::default();
        let t0 = Instant::now();
        assert_eq!(
            r.after_exit(&RestartPolicy::off(), t0, t0, 0.5),
            Decision::Off
        );
    }
}
