//! What an agent step is sent: the bounded history, injected as the step asks, with the
//! step's own copy of the current message sent once.

use curator_model::{Message, Role};
use curator_strategies::{
    CharEstimate, CurationContext, HistoryManager, HistoryManagerExt, TokenCounter, Tokenizer, View,
};

use super::ConversationLoop;
use crate::config::DEFAULT_MAX_TOKENS;
use crate::error::{Error, Result};
use crate::inject::{Injected, Repeat, inject};
use crate::step::Injection;

impl ConversationLoop {
    /// The messages agent step `i` is sent for `input`, and, when traces are on, the same
    /// redacted.
    pub(super) fn request(
        &self,
        i: usize,
        input: &str,
        injection: Injection,
    ) -> Result<(Vec<Message>, Option<Vec<Message>>)> {
        let (name, step) = &self.steps[i];
        let own = step.request(input);
        let tracing = self.trace.is_some() || self.keeps_lens();
        let redact_sent = self.config.redact.sent;
        let ctx = CurationContext::default().with_preserve_system(false).with_preserve_task(false);
        let history_error = |source| Error::History { step: name.clone(), source };
        let bounded = match (&self.bound, self.roles[i].use_history) {
            (Some(bound), true) => {
                Some(bound.curate_history(&self.history, &ctx).map_err(history_error)?)
            }
            _ => None,
        };
        let repeat = match &bounded {
            Some(view) => self.repeat(name, own.last(), view)?,
            None => Repeat::No,
        };
        let redacted = match (&self.redactor, &bounded) {
            (Some(redactor), Some(view)) if tracing || redact_sent => {
                Some(Some(redactor.curate(view.clone(), &ctx).map_err(history_error)?))
            }
            (Some(_), None) if tracing || redact_sent => Some(None),
            _ => None,
        };
        let redacted_request = match (redacted, &self.redactor) {
            (Some(view), Some(redactor)) => {
                let own = own
                    .iter()
                    .map(|m| match redactor.redact(&m.text()) {
                        std::borrow::Cow::Borrowed(_) => m.clone(),
                        std::borrow::Cow::Owned(text) => m.clone_with_content(Some(text.into())),
                    })
                    .collect();
                Some(inject(own, self.injected(view.as_ref(), injection, repeat)?, repeat))
            }
            _ => None,
        };
        if redact_sent && let Some(sent) = redacted_request {
            let traced = tracing.then(|| sent.clone());
            return Ok((sent, traced));
        }
        let sent = inject(own, self.injected(bounded.as_ref(), injection, repeat)?, repeat);
        Ok((sent, redacted_request.filter(|_| tracing)))
    }

    /// Whether the step's own last message (`mine`) repeats the newest turn, and which copy
    /// is sent. A user turn is the current message (the human's answer, or the seed, that
    /// the step is handed as its input): the step's own copy is sent whole and the
    /// history's is left out, unless the bound had to shorten it, which only
    /// `cut_current_message` allows. An assistant turn is the reply the step is handed back
    /// (a loop whose agent's input is its previous output): it is sent once, as the
    /// assistant's, never again as a user message.
    fn repeat(&self, step: &str, mine: Option<&Message>, view: &View<'_>) -> Result<Repeat> {
        let (Some(mine), Some(newest)) = (mine, self.history.messages().last()) else {
            return Ok(Repeat::No);
        };
        if mine.role() != Role::User {
            return Ok(Repeat::No);
        }
        // The record keeps the text as persisted: redacted, when the loop redacts what it
        // keeps.
        let repeats = if self.redacts_persisted() {
            self.as_persisted(mine.text().into_owned()) == newest.text()
        } else {
            mine.text() == newest.text()
        };
        // The seed is kept with `init.prefix` before it: it repeats the step's input too, and
        // its prefixed copy (the one the configuration asks for) is the one sent. Each run's
        // first iteration opens with its seed.
        let prefixed_seed = !repeats
            && self.iteration == self.run_start
            && self.config.init.prefix.as_ref().is_some_and(|prefix| {
                self.as_persisted(format!("{prefix}{}", mine.text())) == newest.text()
            });
        if !repeats && !prefixed_seed {
            return Ok(Repeat::No);
        }
        let last = self.history.len() - 1;
        let Some(index) = view.len().checked_sub(1).filter(|&i| view.pos(i) == Some(last)) else {
            // The bound left the newest turn out (it sends no history): the step's copy goes.
            return Ok(Repeat::No);
        };
        let shown = view.message(index);
        if newest.role() != Role::User {
            return Ok(Repeat::DropOwn);
        }
        if shown.text() == newest.text() {
            return Ok(if prefixed_seed { Repeat::DropOwn } else { Repeat::DropNewest });
        }
        if self.history_config.cut_current_message.unwrap_or(false) {
            return Ok(Repeat::DropOwn);
        }
        let tokenizer = self.history_config.tokenizer.unwrap_or(Tokenizer::O200k);
        let tokens = match tokenizer.counter() {
            Ok(counter) => counter.count_text(&mine.text()),
            Err(_) => CharEstimate::default().count_text(&mine.text()),
        };
        Err(Error::MessageTooLong {
            step: step.to_owned(),
            tokens,
            max_tokens: self.history_config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        })
    }

    /// The bounded history in the form `injection` takes, without its newest turn when the
    /// step sends its own copy of it. A turn the view shows unchanged is turned into a
    /// template value once over the loop's life (memoised by position), so rendering costs
    /// the template's run, not a copy of every kept turn.
    fn injected(
        &self,
        view: Option<&View<'_>>,
        injection: Injection,
        repeat: Repeat,
    ) -> Result<Injected> {
        let left_out = usize::from(repeat == Repeat::DropNewest);
        let Some(view) = view.filter(|v| v.len() > left_out) else {
            return Ok(match injection {
                Injection::Prompt => Injected::Block(None),
                _ => Injected::Messages(Vec::new()),
            });
        };
        let shown = view.len() - left_out;
        if injection != Injection::Prompt {
            let mut messages = view.to_messages();
            messages.truncate(shown);
            return Ok(Injected::Messages(messages));
        }
        let mut cache = self.values.borrow_mut();
        let values = view
            .iter()
            .take(shown)
            .map(|entry| {
                let fresh = || {
                    self.template.turn_value(entry.message.role().as_str(), &entry.message.text())
                };
                match (entry.pos, entry.message.is_borrowed()) {
                    (Some(pos), true) => {
                        if cache.len() <= pos {
                            cache.resize(pos + 1, None);
                        }
                        cache[pos].get_or_insert_with(fresh).clone()
                    }
                    _ => fresh(),
                }
            })
            .collect();
        drop(cache);
        Ok(Injected::Block(Some(self.template.render_values(values)?)))
    }
}
