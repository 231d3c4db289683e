//! Start marks: a durable note, written before a tool call runs, that it started; so that a
//! resume tells the calls a crash interrupted while they ran from those that never started.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::{Conversation, Error, Result, SessionStore, StoreErrorKind};

/// The checkpoint that holds an evaluation's start marks: `curator.started/<evaluation>`.
fn checkpoint_name<S: SessionStore>(conversation: &Conversation<S>) -> String {
    crate::retention::started_checkpoint(conversation.evaluation_id())
}

impl<S: SessionStore> Conversation<S> {
    /// Keeps a start mark for every tool call from now on: the caller calls
    /// [`mark_started`](Conversation::mark_started) before it runs a call, so that after a
    /// crash a call without a mark is known not to have started ([`ToolContext::started`](crate::ToolContext::started)
    /// is `false`: run it) and a call with one was interrupted while it ran (run it again
    /// or answer it, as the [`ResumePolicy`](crate::ResumePolicy) says). Reads the marks of a
    /// resumed conversation's pending calls.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef, ToolCall};
    /// use curator::session::{Conversation, MemoryStore, ResumePolicy};
    ///
    /// let store = MemoryStore::new();
    /// let prompt = PromptRef::new("demo", "agent");
    /// let mut c = Conversation::open(&store, "job-1", prompt.clone(), Message::system("s"))?.with_start_marks()?;
    /// c.add_user("pay and notify")?;
    /// c.record_assistant(Message::assistant_with_calls(None, vec![
    ///     ToolCall::new("pay", "pay", "{}"),
    ///     ToolCall::new("notify", "notify", "{}"),
    /// ]))?;
    /// c.mark_started(&["pay"])?;
    /// drop(c); // the process dies while `pay` runs, before `notify` started
    ///
    /// let mut resumed = Conversation::open(&store, "job-1", prompt, Message::system("s"))?.with_start_marks()?;
    /// let started: Vec<(String, bool)> = resumed.tool_contexts().iter().map(|c| (c.call_id().to_owned(), c.started)).collect();
    /// assert_eq!(started, [("pay".to_owned(), true), ("notify".to_owned(), false)]);
    /// // `pay` is answered as interrupted; `notify`, which never started, is handed back to run.
    /// let to_run = resumed.repair(ResumePolicy::AnswerInterrupted)?;
    /// assert_eq!(to_run.len(), 1);
    /// assert_eq!(to_run[0].call_id(), "notify");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A store error; [`Error::Store`] of kind [`Corrupt`](StoreErrorKind::Corrupt) when the
    /// marks' checkpoint is not one this build wrote.
    pub fn with_start_marks(mut self) -> Result<Self> {
        self.marks.enable();
        if self.pending_tool_calls().is_empty() {
            return Ok(self);
        }
        let name = checkpoint_name(&self);
        let Some(checkpoint) = self.store().checkpoint(&name)? else { return Ok(self) };
        let (reply, calls) = read_marks(&checkpoint.document).ok_or_else(|| {
            Error::store(
                "conversation",
                StoreErrorKind::Corrupt,
                format!("checkpoint `{name}` does not hold start marks ({{\"reply\": n, \"calls\": [ids]}})"),
                None,
            )
        })?;
        if Some(reply) == self.reply_sequence() {
            self.marks.restore(calls);
        }
        Ok(self)
    }

    /// Records, durably and before they run, that these pending calls start: one write for
    /// all of them (a batch run in parallel is marked at once). Marking a call twice is
    /// harmless. See [`with_start_marks`](Conversation::with_start_marks).
    ///
    /// Under a fence ([`with_fence`](Conversation::with_fence)), the marks are written with
    /// [`SessionStore::put_checkpoint_fenced`], which checks the claim in the same
    /// transaction as the write: a worker whose claim another took over gets
    /// [`Error::Fenced`], writes nothing (so it never overwrites the new holder's marks) and
    /// must not run the calls; a worker whose write passed the check wrote its marks before
    /// any new claim was taken, so a new holder reads them and does not run the calls again.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownToolCall`] for an id that is not pending (nothing is written);
    /// [`Error::Fenced`] when the claim was taken over or ended, or the fence names another
    /// session (nothing is written); a store error (the call must then not run: its start
    /// is not recorded).
    pub fn mark_started(&mut self, call_ids: &[&str]) -> Result<()> {
        if let Some(unknown) =
            call_ids.iter().find(|id| !self.pending_tool_calls().iter().any(|c| c.id() == **id))
        {
            return Err(Error::UnknownToolCall { call_id: (*unknown).to_owned() });
        }
        let started = self.marks.with(call_ids);
        let document = json!({ "reply": self.reply_sequence(), "calls": started });
        self.put_own_checkpoint(&checkpoint_name(self), &document)?;
        self.marks.restore(started);
        Ok(())
    }
}

/// The reply's sequence and the ids of a marks document.
fn read_marks(document: &Value) -> Option<(u64, BTreeSet<String>)> {
    let reply = document.get("reply")?.as_u64()?;
    let calls = document.get("calls")?.as_array()?;
    let ids = calls.iter().map(|id| id.as_str().map(str::to_owned)).collect::<Option<_>>()?;
    Some((reply, ids))
}
