//! The names settled by the driver-protocol issue: the old ones are deprecated and still work
//! as before, so that code written against them keeps building.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]
#![allow(deprecated, reason = "the old names are what this tests")]

use std::sync::Arc;

use curator::model::Message;
use curator::strategies::{
    CharEstimate, CurationContext, Extractive, HistoryManagerExt, RelevanceBudget, Summarize,
    Summarizer, TokenBudget, TokenCounter,
};

#[test]
fn the_shared_counter_and_summarizer_setters_still_work() {
    let counter: Arc<dyn TokenCounter> = Arc::new(CharEstimate::default());
    let messages = vec![Message::system("s"), Message::user("hi")];
    let ctx = CurationContext::default();
    let old = TokenBudget::new(1_000).with_shared_counter(Arc::clone(&counter));
    let new = TokenBudget::new(1_000).with_counter(Arc::clone(&counter));
    assert_eq!(
        old.curate_messages(&messages, &ctx).unwrap(),
        new.curate_messages(&messages, &ctx).unwrap()
    );
    let old = RelevanceBudget::new(1_000).with_shared_counter(Arc::clone(&counter));
    assert_eq!(old.curate_messages(&messages, &ctx).unwrap().len(), 2);
    let summarizer: Arc<dyn Summarizer> = Arc::new(Extractive::default());
    let old = Summarize::with_shared(Arc::clone(&summarizer));
    let new = Summarize::new(summarizer);
    assert_eq!(
        old.curate_messages(&messages, &ctx).unwrap(),
        new.curate_messages(&messages, &ctx).unwrap()
    );
}

#[cfg(feature = "sqlite")]
#[test]
fn sqlite_options_keep_their_old_name() {
    use curator::sqlite::{Durability, Options, SqliteOptions};
    let old: Options = Options::default().with_durability(Durability::Normal);
    let new: SqliteOptions = SqliteOptions::default().with_durability(Durability::Normal);
    assert_eq!(old, new);
}
