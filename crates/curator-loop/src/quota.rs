//! Quotas: a budget of tokens for a run of a loop, reserved at the start of each iteration
//! and reconciled at its end with what the model calls reported.

use std::sync::Arc;

use curator_client::Usage;
use curator_strategies::Summarizer;

use crate::error::{Error, Result};

/// A budget of tokens for one run of a loop (from [`run`](crate::ConversationLoop::run) to
/// its end): every model call of the run counts against it, the agent steps' and the
/// history summarizer's.
///
/// - **Reserve**: before an iteration runs anything, the loop reserves `reserve` tokens of
///   what is left; when less is left (or nothing, with a reservation of 0), the run stops
///   with [`Error::QuotaExhausted`] and the iteration does not start (nothing of it is
///   recorded). A reservation over the limit is refused when the loop is built.
/// - **Reconcile**: when the iteration ends, it is charged what its steps reported
///   ([`Output::usage`](crate::Output::usage): input and output tokens, cache reads
///   included, as the client reported them) plus what the summarizers' calls took
///   ([`Summarizer::tokens_used`]); an iteration in which no step reported usage is charged
///   its whole reservation, so that a model that reports nothing still spends the quota.
///   A failed iteration is charged what was reported before it failed.
/// - **Shares**: each step is told the tokens it may still take
///   ([`StepCall::quota`](crate::StepCall::quota): the reservation less what the steps
///   before it reported); a [`Parallel`](crate::Parallel) step splits its share equally
///   between its branches.
///
/// What a run used is saved with the loop's checkpoint, so a resumed run goes on with the
/// same account; an iteration that pauses is charged what it took so far when it pauses, so
/// that another process finishing it charges only the rest. A new run starts with the whole
/// quota.
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::Quota;
///
/// // 50,000 tokens a run; each iteration needs 6,000 to start.
/// let quota = Quota::new(50_000, 6_000);
/// assert_eq!((quota.limit(), quota.reserve()), (50_000, 6_000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    limit: u64,
    reserve: u64,
}

impl Quota {
    /// A quota of `limit` tokens a run, each iteration reserving `reserve` of them before it
    /// starts (an iteration's model calls and summaries should fit in it).
    pub const fn new(limit: u64, reserve: u64) -> Self {
        Self { limit, reserve }
    }

    /// The tokens a run may use.
    pub const fn limit(&self) -> u64 {
        self.limit
    }

    /// The tokens an iteration reserves before it starts.
    pub const fn reserve(&self) -> u64 {
        self.reserve
    }
}

/// A loop's account under its quota: what the run used, and the open iteration's
/// reservation and reports.
pub(crate) struct Account {
    quota: Option<Quota>,
    used: u64,
    summarizers: Vec<Arc<dyn Summarizer>>,
    /// What the open iteration's steps reported, if any did.
    reported: Option<u64>,
    /// The summarizers' count when the iteration opened.
    summarized_at_open: u64,
    /// What the open iteration's steps reported before it paused (charged then).
    settled: u64,
}

impl Account {
    pub(crate) fn new(quota: Option<Quota>, summarizers: Vec<Arc<dyn Summarizer>>) -> Self {
        Self { quota, used: 0, summarizers, reported: None, summarized_at_open: 0, settled: 0 }
    }

    /// What the run used so far.
    pub(crate) fn used(&self) -> u64 {
        self.used
    }

    /// Takes a saved run's use (a resume), or 0 for a new run.
    pub(crate) fn set_used(&mut self, used: u64) {
        self.used = used;
    }

    /// Opens an iteration: reserves its tokens.
    ///
    /// # Errors
    ///
    /// [`Error::QuotaExhausted`] when less than the reservation is left.
    pub(crate) fn open(&mut self) -> Result<()> {
        let Some(quota) = self.quota else { return Ok(()) };
        // Nothing left is exhausted too, whatever the reservation (0 reserves nothing).
        if quota.limit.saturating_sub(self.used) < quota.reserve.max(1) {
            return Err(Error::QuotaExhausted {
                limit: quota.limit,
                used: self.used,
                reserve: quota.reserve,
            });
        }
        self.reported = None;
        self.settled = 0;
        self.summarized_at_open = self.summarized();
        Ok(())
    }

    /// The tokens the next step of the open iteration may take.
    pub(crate) fn share(&self) -> Option<u64> {
        self.quota.map(|q| {
            q.reserve.saturating_sub(self.settled).saturating_sub(self.reported.unwrap_or(0))
        })
    }

    /// A step's report.
    pub(crate) fn report(&mut self, usage: Option<Usage>) {
        if let Some(usage) = usage {
            self.reported = Some(self.reported.unwrap_or(0).saturating_add(usage.total()));
        }
    }

    /// Closes the open iteration: charges what it reported (its reservation when it
    /// reported nothing and `completed`) and what the summarizers took.
    pub(crate) fn close(&mut self, completed: bool) {
        let Some(quota) = self.quota else { return };
        let steps = match self.reported.take() {
            Some(reported) => reported,
            None if completed => quota.reserve,
            None => 0,
        };
        let summaries = self.summarized().saturating_sub(self.summarized_at_open);
        self.used = self.used.saturating_add(steps).saturating_add(summaries);
    }

    /// Charges what the open iteration took so far (its steps' reports and the
    /// summarizers' calls) and keeps it open: it paused, and its checkpoint must hold what
    /// it used for the process that finishes it.
    /// Returns whether its steps reported usage, and what they reported so far.
    pub(crate) fn settle(&mut self) -> (bool, u64) {
        if self.quota.is_none() {
            return (false, 0);
        }
        let steps = self.reported.map_or(0, |reported| {
            self.reported = Some(0);
            reported
        });
        self.settled = self.settled.saturating_add(steps);
        let summarized = self.summarized();
        let summaries = summarized.saturating_sub(self.summarized_at_open);
        self.summarized_at_open = summarized;
        self.used = self.used.saturating_add(steps).saturating_add(summaries);
        (self.reported.is_some(), self.settled)
    }

    /// Goes on with a paused iteration (in this process or another): its steps before the
    /// pause were settled, `reported` says whether they reported usage and `settled` what
    /// they reported.
    pub(crate) fn resume(&mut self, reported: bool, settled: u64) {
        self.reported = reported.then_some(0);
        self.settled = settled;
        self.summarized_at_open = self.summarized();
    }

    fn summarized(&self) -> u64 {
        self.summarizers.iter().map(|s| Summarizer::tokens_used(&**s)).fold(0, u64::saturating_add)
    }
}
