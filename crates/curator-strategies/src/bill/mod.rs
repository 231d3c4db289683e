//! The bill of a conversation's provider calls as providers compute it, prompt cache
//! included: per call, the input tokens, those read from the cache, those written to it,
//! the uncached rest, and the price.
//!
//! A view's cost is not its size: providers bill a prefix that repeats an earlier request's
//! at about a tenth of the input price, so what a call costs depends on the call before it.
//! - [`Request`]: a request's input as a cache reads it (the tool definitions and each
//!   message one [`Block`], with Anthropic's breakpoints where curator places them).
//! - [`Biller`]: one conversation's cache under a [`CacheRule`] (OpenAI's automatic prefix
//!   cache, or Anthropic's breakpoints), billing each request against the earlier ones.
//! - [`Prices`]: a model's prices per million tokens, from the maintained `genai-prices`
//!   data ([`Prices::for_model`]) or given.
//!
//! The shared prefix is counted in whole messages: a message that changed is not read from
//! the cache, even where its first tokens are the same, so what is read is at most a few
//! tokens short of what a provider would read.
//!
//! # Examples
//!
//! Sending a growing conversation whole, under OpenAI's rule: from the second call on, all
//! but what was appended is read from the cache.
//!
//! ```
//! use curator::model::Message;
//! use curator::strategies::CharEstimate;
//! use curator::strategies::bill::{Biller, CacheRule, Prices, Request};
//!
//! let counter = CharEstimate::default();
//! let mut messages = vec![Message::system("You are a coding agent. ".repeat(300)), Message::user("Fix it.")];
//! let mut biller = Biller::new(CacheRule::openai());
//! let prices = Prices::new(2.5, 10.0);
//! let mut dollars = 0.0;
//! for i in 0..5 {
//!     let bill = biller.bill(&Request::from_messages(&messages, &counter));
//!     if i > 0 {
//!         assert!(bill.cache_read_tokens > bill.uncached_tokens());
//!     }
//!     dollars += prices.price(&bill);
//!     messages.push(Message::assistant(format!("step {i}")));
//!     messages.push(Message::user("go on"));
//! }
//! assert!(dollars > 0.0);
//! ```

mod cache;
mod prices;
mod request;

pub use cache::{Biller, CacheRule, CallBill, Ttl};
pub use prices::Prices;
pub use request::{Block, Request, RequestEnd};
