//! How the loop runs the pieces of work of one [`Action::Run`](crate::Action::Run): one after
//! the other ([`drive`](crate::drive)), or all at once ([`drive_parallel`](crate::drive_parallel)).

/// Runs the pieces of one [`Action::Run`](crate::Action::Run), handing each with what it
/// gave to `record` the moment it is done. Implemented by every closure
/// `FnMut(&W) -> R` (the pieces in order, each recorded before the next starts) and by
/// [`Parallel`] (all at once).
pub(crate) trait RunWork<W, R> {
    /// Runs `items`, handing each with its result to `record` as it completes.
    ///
    /// # Errors
    ///
    /// The first error of `record`: nothing more is recorded after it (pieces already
    /// running finish, and what they gave is dropped).
    fn run_batch<E>(
        &mut self,
        items: Vec<W>,
        record: &mut dyn FnMut(W, R) -> Result<(), E>,
    ) -> Result<(), E>;
}

impl<W, R, F: FnMut(&W) -> R> RunWork<W, R> for F {
    fn run_batch<E>(
        &mut self,
        items: Vec<W>,
        record: &mut dyn FnMut(W, R) -> Result<(), E>,
    ) -> Result<(), E> {
        for item in items {
            let result = self(&item);
            record(item, result)?;
        }
        Ok(())
    }
}

/// Runs the pieces of each [`Action::Run`](crate::Action::Run) at once, one thread each
/// (scoped: none outlives the batch), and records each as it returns, in the order they
/// finish. For tools that wait on the network, a batch of parallel calls takes as long as
/// its slowest call instead of their sum. A crash loses at most the pieces still running:
/// the record says which, and a resume runs only those.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Parallel<F>(pub(crate) F);

impl<W, R, F> RunWork<W, R> for Parallel<F>
where
    W: Send,
    R: Send,
    F: Fn(&W) -> R + Sync,
{
    fn run_batch<E>(
        &mut self,
        items: Vec<W>,
        record: &mut dyn FnMut(W, R) -> Result<(), E>,
    ) -> Result<(), E> {
        if items.len() < 2 {
            return (&self.0).run_batch(items, record);
        }
        let run = &self.0;
        std::thread::scope(|scope| {
            let (send, results) = std::sync::mpsc::channel();
            for item in items {
                let send = send.clone();
                scope.spawn(move || {
                    let result = run(&item);
                    // The receiver lives until every sender is gone, or the batch failed.
                    let _ = send.send((item, result));
                });
            }
            drop(send);
            for (item, result) in results {
                record(item, result)?;
            }
            Ok(())
        })
    }
}
