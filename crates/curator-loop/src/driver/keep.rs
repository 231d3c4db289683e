//! What a loop keeps in its store: its state after each iteration, redacted as configured.

use super::ConversationLoop;
use crate::persist::HeadValues;
use crate::{Paused, Result};

impl ConversationLoop {
    pub(super) fn save(&mut self) -> Result<()> {
        // Once saved, a resumed iteration is kept for good.
        self.undo = None;
        if self.persister.is_none() {
            self.unsaved = false;
            return Ok(());
        }
        // What is kept is redacted when the loop redacts what it persists: the next input
        // and the paused iteration's outputs too, not only the turns.
        let input: std::borrow::Cow<'_, str> = if self.redacts_persisted() {
            self.as_persisted(self.input.clone()).into()
        } else {
            self.input.as_str().into()
        };
        let paused = self.paused.as_ref().map(|p| self.persisted_pause(p));
        let values = HeadValues {
            iteration: self.iteration,
            input: &input,
            running: self.running,
            run_start: self.run_start,
            quota_used: self.account.used(),
            paused: paused.as_ref(),
        };
        let Some(persister) = &mut self.persister else { return Ok(()) };
        persister.save(self.history.messages(), &values, &self.lens)?;
        // The lens of completed iterations is saved for good; an iteration under way (paused
        // at a human step) is saved again, whole, when it completes.
        let completed = self.iteration;
        self.lens.retain(|t| t.iteration > completed);
        self.unsaved = false;
        Ok(())
    }

    /// A pause as kept: its outputs and nested state redacted when the loop redacts what it
    /// persists.
    pub(super) fn persisted_pause(&self, paused: &Paused) -> Paused {
        if !self.redacts_persisted() {
            return paused.clone();
        }
        let mut kept = paused.clone();
        for (_, output) in &mut kept.outputs {
            *output = self.as_persisted(std::mem::take(output));
        }
        kept.prompt = kept.prompt.map(|p| self.as_persisted(p));
        if let Some(nested) = &mut kept.nested {
            self.redact_value(nested);
        }
        kept
    }

    /// Redacts every string in `value` (a nested step's state).
    fn redact_value(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(text) => *text = self.as_persisted(std::mem::take(text)),
            serde_json::Value::Array(items) => {
                for item in items {
                    self.redact_value(item);
                }
            }
            serde_json::Value::Object(map) => {
                for item in map.values_mut() {
                    self.redact_value(item);
                }
            }
            _ => {}
        }
    }

    pub(super) fn redacts_persisted(&self) -> bool {
        self.redactor.is_some() && self.config.redact.persisted
    }

    /// Turn text as kept: redacted when `redact.persisted` is on.
    pub(super) fn as_persisted(&self, text: String) -> String {
        match (&self.redactor, self.config.redact.persisted) {
            (Some(redactor), true) => match redactor.redact(&text) {
                std::borrow::Cow::Borrowed(_) => text,
                std::borrow::Cow::Owned(redacted) => redacted,
            },
            _ => text,
        }
    }
}
