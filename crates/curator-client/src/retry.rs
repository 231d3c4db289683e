//! When a model call is tried again, and how long it waits first: exponential backoff with
//! jitter, or the server's `retry-after`.

use std::hash::BuildHasher;
use std::time::Duration;

#[cfg(feature = "http")]
use serde_json::Value;

#[cfg(feature = "http")]
use crate::endpoint::Endpoint;
#[cfg(feature = "http")]
use crate::error::ClientError;

/// How a client retries a request that failed in a way that may pass: a 429 or 5xx answer,
/// a timeout, a connection failure
/// ([`HttpError::is_retryable`](crate::HttpError::is_retryable)). Any
/// other failure (400, 401, a malformed reply) ends the call at once.
///
/// Before retry `n` (counting from 1) the client waits the server's `retry-after`, when it
/// sent one, capped at `max_backoff`; otherwise the [`backoff`](Self::backoff)
/// `initial_backoff × multiplierⁿ⁻¹`, capped at `max_backoff`, with **jitter**: a random
/// wait between half of it and all of it, so that many clients refused at once do not come
/// back at once. [`without_jitter`](Self::without_jitter) makes the waits exact.
///
/// The default: 4 attempts, waits from 500 ms doubling up to 8 s, with jitter.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use curator::client::Retry;
///
/// let retry = Retry::default().without_jitter();
/// assert_eq!(retry.max_attempts(), 4);
/// let waits: Vec<_> = (1..=6).map(|n| retry.backoff(n)).collect();
/// assert_eq!(waits, [500, 1_000, 2_000, 4_000, 8_000, 8_000].map(Duration::from_millis));
///
/// // The server's `retry-after` wins, up to `max_backoff`.
/// assert_eq!(retry.delay(1, Some(Duration::from_secs(3))), Duration::from_secs(3));
/// assert_eq!(retry.delay(1, Some(Duration::from_secs(60))), Duration::from_secs(8));
///
/// // Tests retry at once.
/// let fast = Retry::default().with_backoff(Duration::ZERO, Duration::ZERO);
/// assert_eq!(fast.delay(3, None), Duration::ZERO);
/// assert_eq!(Retry::none().max_attempts(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Retry {
    max_attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    multiplier: f64,
    jitter: bool,
}

impl Default for Retry {
    fn default() -> Self {
        Self::new()
    }
}

impl Retry {
    /// The default policy: 4 attempts, waits from 500 ms doubling up to 8 s, with jitter.
    pub const fn new() -> Self {
        Self {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            multiplier: 2.0,
            jitter: true,
        }
    }

    /// One attempt: no retry.
    pub const fn none() -> Self {
        Self::new().with_max_attempts(1)
    }

    /// Makes at most `max_attempts` requests in all (0 counts as 1).
    #[must_use]
    pub const fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = if max_attempts == 0 { 1 } else { max_attempts };
        self
    }

    /// Waits `initial` before the first retry, never more than `max` before any (nor for a
    /// `retry-after`); `max` below `initial` caps `initial` too.
    #[must_use]
    pub const fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// Multiplies the wait by `multiplier` after each retry (1 keeps it constant; less than
    /// 1, or not a number, counts as 1).
    #[must_use]
    pub fn with_multiplier(mut self, multiplier: f64) -> Self {
        self.multiplier = if multiplier >= 1.0 { multiplier } else { 1.0 };
        self
    }

    /// Waits exactly the backoff, with no random part: for tests, and for a single client
    /// that has no crowd to spread.
    #[must_use]
    pub const fn without_jitter(mut self) -> Self {
        self.jitter = false;
        self
    }

    /// The most requests one call makes.
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The wait before the first retry.
    pub const fn initial_backoff(&self) -> Duration {
        self.initial_backoff
    }

    /// The longest wait before a retry.
    pub const fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// The factor the wait grows by after each retry.
    pub const fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// Whether waits are jittered.
    pub const fn has_jitter(&self) -> bool {
        self.jitter
    }

    /// The wait before retry `retry` (counting from 1), before jitter:
    /// `initial_backoff × multiplier^(retry − 1)`, capped at `max_backoff`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exponent = i32::try_from(retry.saturating_sub(1)).unwrap_or(i32::MAX);
        let seconds = self.initial_backoff.as_secs_f64() * self.multiplier.powi(exponent);
        Duration::try_from_secs_f64(seconds).unwrap_or(self.max_backoff).min(self.max_backoff)
    }

    /// What the client waits before retry `retry`: the server's `retry_after` capped at
    /// `max_backoff` when there is one, else the [`backoff`](Self::backoff), jittered
    /// between half of it and all of it unless [`without_jitter`](Self::without_jitter).
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max_backoff);
        }
        let backoff = self.backoff(retry);
        if !self.jitter {
            return backoff;
        }
        // A fresh `RandomState` is seeded anew for each call: randomness without a
        // dependency, which is all jitter needs.
        let random = std::collections::hash_map::RandomState::new().hash_one(retry);
        #[expect(clippy::cast_precision_loss, reason = "53 random bits make an exact f64")]
        let fraction = (random >> 11) as f64 / (1_u64 << 53) as f64;
        Duration::try_from_secs_f64(backoff.as_secs_f64() * (0.5 + fraction / 2.0))
            .unwrap_or(backoff)
    }
}

/// Posts `body` to `path` of `endpoint`, retrying as `retry` says; the failure of the last
/// attempt becomes a [`ClientError`] of `provider`.
#[cfg(feature = "http")]
pub(crate) fn post(
    endpoint: &Endpoint,
    retry: &Retry,
    provider: &'static str,
    path: &str,
    body: &Value,
) -> Result<Value, ClientError> {
    retrying(endpoint, retry, provider, || endpoint.post_json(path, body))
}

/// Posts `body` to `path` of `endpoint` for a stream of server-sent events, retrying as
/// `retry` says until the server answers 2xx (a stream, once it flows, is not retried).
#[cfg(feature = "http")]
pub(crate) fn post_stream(
    endpoint: &Endpoint,
    retry: &Retry,
    provider: &'static str,
    path: &str,
    body: &Value,
) -> Result<Box<dyn std::io::BufRead + Send>, ClientError> {
    retrying(endpoint, retry, provider, || endpoint.post_stream(path, body))
}

/// Runs `send` until it succeeds, fails in a way that does not pass, or the attempts run out.
#[cfg(feature = "http")]
fn retrying<T>(
    endpoint: &Endpoint,
    retry: &Retry,
    provider: &'static str,
    mut send: impl FnMut() -> Result<T, crate::HttpError>,
) -> Result<T, ClientError> {
    let mut attempts = 1;
    loop {
        match send() {
            Ok(value) => return Ok(value),
            Err(error) if error.is_retryable() && attempts < retry.max_attempts => {
                std::thread::sleep(retry.delay(attempts, error.retry_after));
                attempts += 1;
            }
            Err(error) => {
                return Err(ClientError::from_http(provider, error, attempts, endpoint.timeout()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Retry;

    #[test]
    fn jitter_stays_between_half_the_backoff_and_all_of_it() {
        let retry = Retry::default();
        for n in 1..=6 {
            let full = retry.backoff(n);
            for _ in 0..50 {
                let wait = retry.delay(n, None);
                assert!(wait >= full / 2 && wait <= full, "{wait:?} for {full:?}");
            }
        }
    }

    #[test]
    fn backoff_never_overflows_and_stays_capped() {
        let retry = Retry::default().with_multiplier(10.0).without_jitter();
        assert_eq!(retry.backoff(u32::MAX), Duration::from_secs(8));
        assert_eq!(retry.backoff(1), Duration::from_millis(500));
        assert_eq!(retry.with_multiplier(f64::NAN).backoff(5), Duration::from_millis(500));
        let capped = Retry::default().with_backoff(Duration::from_secs(5), Duration::from_secs(1));
        assert_eq!(capped.without_jitter().backoff(1), Duration::from_secs(1));
        assert_eq!(Retry::default().with_max_attempts(0).max_attempts(), 1);
    }
}
