//! Crash and resume: dropped at every point, resumed from the store.

use std::collections::HashMap;

use curator_model::{Entry, Message, PromptRef, Role, ToolCall};
use curator_session::{Conversation, Error, MemoryStore, ResumePolicy, SessionStore};

fn prompt() -> PromptRef {
    PromptRef::new("tests", "crash")
}

/// The scripted model: turn 1 calls three tools, turn 2 calls one, turn 3 answers.
fn reply(turn: u32) -> Message {
    match turn {
        1 => Message::assistant_with_calls(
            Some("Checking.".into()),
            vec![
                ToolCall::new("a", "read", "{}"),
                ToolCall::new("b", "read", "{}"),
                ToolCall::new("c", "write", "{}"),
            ],
        ),
        2 => Message::assistant_with_calls(None, vec![ToolCall::new("d", "test", "{}")]),
        _ => Message::assistant("All done."),
    }
}

/// Runs the scripted loop, stopping (as if the process died) after `crash_after` record calls;
/// counts how often each tool call ran.
fn run(
    conversation: &mut Conversation<&MemoryStore>,
    runs: &mut HashMap<String, usize>,
    crash_after: Option<usize>,
) -> bool {
    let mut records = 0;
    let mut tick = || {
        records += 1;
        crash_after.is_some_and(|n| records >= n)
    };
    // First finish what a crash left pending.
    for context in conversation.tool_contexts() {
        *runs.entry(context.call_id().to_owned()).or_default() += 1;
        conversation
            .record_tool_result(
                context.call_id(),
                Ok::<_, String>(format!("result {}", context.call_id())),
            )
            .unwrap();
        if tick() {
            return false;
        }
    }
    while conversation.turn() < 3 {
        let calls = conversation.record_assistant(reply(conversation.turn() + 1)).unwrap();
        if tick() {
            return false;
        }
        for call in calls {
            *runs.entry(call.id().to_owned()).or_default() += 1;
            conversation
                .record_tool_result(call.id(), Ok::<_, String>(format!("result {}", call.id())))
                .unwrap();
            if tick() {
                return false;
            }
        }
    }
    true
}

/// What two runs must agree on: everything but ids and times.
fn shape(entries: &[Entry]) -> Vec<(u64, u32, Message)> {
    entries.iter().map(|e| (e.sequence, e.turn, e.message.clone())).collect()
}

#[test]
fn a_crash_at_every_point_resumes_to_the_same_record() {
    let reference = MemoryStore::new();
    let mut runs = HashMap::new();
    let mut c = Conversation::start(&reference, "test", prompt(), Message::system("s")).unwrap();
    assert!(run(&mut c, &mut runs, None));
    let expected = shape(&reference.entries(c.evaluation_id()).unwrap());
    let total_records = expected.len() - 1;
    assert_eq!(total_records, 7);

    for crash_after in 1..total_records {
        let store = MemoryStore::new();
        let mut runs = HashMap::new();
        {
            let mut c =
                Conversation::start(&store, "test", prompt(), Message::system("s")).unwrap();
            assert!(!run(&mut c, &mut runs, Some(crash_after)));
        }
        let before: HashMap<String, usize> = runs.clone();
        let mut resumed = Conversation::resume(&store, "test", &prompt()).unwrap();
        let pending: Vec<String> =
            resumed.tool_contexts().iter().map(|t| t.call_id().to_owned()).collect();
        assert!(resumed.tool_contexts().iter().all(|t| t.is_resume));
        assert!(run(&mut resumed, &mut runs, None));

        let evaluation = resumed.evaluation_id();
        assert_eq!(
            shape(&store.entries(evaluation).unwrap()),
            expected,
            "crash after {crash_after} records"
        );
        for (id, count) in &runs {
            let ran_after_resume = count - before.get(id).copied().unwrap_or(0);
            if pending.contains(id) {
                assert_eq!(
                    ran_after_resume, 1,
                    "pending call {id} must run exactly once more (crash after {crash_after})"
                );
            } else if before.contains_key(id) {
                assert_eq!(
                    ran_after_resume, 0,
                    "completed call {id} ran again (crash after {crash_after})"
                );
            }
            assert_eq!(*count, 1, "call {id} ran {count} times in all (crash after {crash_after})");
        }
    }
}

#[test]
fn interrupted_calls_can_be_answered_instead_of_rerun() {
    let store = MemoryStore::new();
    {
        let mut c = Conversation::start(&store, "test", prompt(), Message::system("s")).unwrap();
        c.record_assistant(reply(1)).unwrap();
        c.record_tool_result("a", Ok::<_, String>("A")).unwrap();
    }
    let mut resumed = Conversation::resume(&store, "test", &prompt()).unwrap();
    assert_eq!(resumed.repair(ResumePolicy::AnswerInterrupted).unwrap(), vec![]);
    assert!(resumed.pending_tool_calls().is_empty());
    let record = store.entries(resumed.evaluation_id()).unwrap();
    let answers: Vec<_> = record[3..]
        .iter()
        .map(|e| (e.message.tool_call_id().unwrap().to_owned(), e.message.is_error()))
        .collect();
    assert_eq!(answers, [("b".to_owned(), true), ("c".to_owned(), true)]);
    assert!(record[4].message.text().contains("interrupted"));
    // The loop goes on with numbering where it stopped.
    resumed.record_assistant(Message::assistant("I will retry later.")).unwrap();
    let last = store.entries(resumed.evaluation_id()).unwrap().pop().unwrap();
    assert_eq!((last.sequence, last.turn, last.message.role()), (5, 2, Role::Assistant));
}

#[test]
fn resume_errors_are_typed() {
    let store = MemoryStore::new();
    assert!(matches!(
        Conversation::resume(&store, "test", &prompt()),
        Err(Error::ConversationNotFound { evaluation: None, .. })
    ));
    let c = Conversation::start(&store, "test", prompt(), Message::system("s")).unwrap();
    let other = PromptRef::new("tests", "other");
    // Resuming is scoped to the key and the prompt: another prompt finds nothing to resume,
    // and reopening this evaluation by id for another prompt is refused.
    assert!(matches!(
        Conversation::resume(&store, "test", &other),
        Err(Error::ConversationNotFound { evaluation: None, .. })
    ));
    match Conversation::resume_evaluation(&store, "test", c.evaluation_id(), &other) {
        Err(Error::PromptMismatch { expected, found }) => {
            assert_eq!((expected, found), (other, Some(prompt())));
        }
        x => panic!("expected PromptMismatch, got {x:?}"),
    }
    let missing = curator_model::EvaluationId::new();
    assert!(matches!(
        Conversation::resume_evaluation(&store, "test", missing, &prompt()),
        Err(Error::ConversationNotFound { evaluation: Some(e), .. }) if e == missing
    ));
    assert!(Conversation::resume_evaluation(&store, "test", c.evaluation_id(), &prompt()).is_ok());
    assert!(matches!(
        Conversation::resume_evaluation(&store, "someone else", c.evaluation_id(), &prompt()),
        Err(Error::KeyMismatch { .. })
    ));
}

/// What another worker does to the store while a stalled one writes its start marks.
type Takeover<'s> = Box<dyn FnOnce(&MemoryStore) + Send + 's>;

/// A store whose first checkpoint write (fenced or not) lets another worker act, `before`
/// the write reaches the store or right `after` it: the widest window a worker stalled in
/// `mark_started` leaves.
struct TakenOverWhileMarking<'s> {
    inner: &'s MemoryStore,
    takeover: std::sync::Mutex<Option<Takeover<'s>>>,
    before: bool,
}

impl TakenOverWhileMarking<'_> {
    fn write<T>(
        &self,
        write: impl FnOnce() -> curator_session::Result<T>,
    ) -> curator_session::Result<T> {
        let takeover = self.takeover.lock().unwrap().take();
        let Some(takeover) = takeover else { return write() };
        if self.before {
            takeover(self.inner);
            write()
        } else {
            let written = write();
            takeover(self.inner);
            written
        }
    }
}

impl SessionStore for TakenOverWhileMarking<'_> {
    fn append(
        &self,
        key: &curator_session::SessionKey,
        entry: &Entry,
    ) -> curator_session::Result<curator_session::Appended> {
        self.inner.append(key, entry)
    }
    fn append_batch(
        &self,
        key: &curator_session::SessionKey,
        entries: &[Entry],
    ) -> curator_session::Result<Vec<curator_session::Appended>> {
        self.inner.append_batch(key, entries)
    }
    fn append_batch_fenced(
        &self,
        key: &curator_session::SessionKey,
        entries: &[Entry],
        fence: &curator_session::Fence,
    ) -> curator_session::Result<Vec<curator_session::Appended>> {
        self.inner.append_batch_fenced(key, entries, fence)
    }
    fn entries(
        &self,
        evaluation: curator_model::EvaluationId,
    ) -> curator_session::Result<Vec<Entry>> {
        self.inner.entries(evaluation)
    }
    fn evaluations(&self) -> curator_session::Result<Vec<curator_session::EvaluationSummary>> {
        self.inner.evaluations()
    }
    fn latest_evaluation_of(
        &self,
        key: &curator_session::SessionKey,
        prompt: &PromptRef,
    ) -> curator_session::Result<Option<curator_model::EvaluationId>> {
        self.inner.latest_evaluation_of(key, prompt)
    }
    fn put_checkpoint(
        &self,
        name: &str,
        document: &serde_json::Value,
    ) -> curator_session::Result<u64> {
        self.write(|| self.inner.put_checkpoint(name, document))
    }
    fn put_checkpoint_fenced(
        &self,
        name: &str,
        document: &serde_json::Value,
        fence: &curator_session::Fence,
    ) -> curator_session::Result<u64> {
        self.write(|| self.inner.put_checkpoint_fenced(name, document, fence))
    }
    fn checkpoint(
        &self,
        name: &str,
    ) -> curator_session::Result<Option<curator_session::Checkpoint>> {
        self.inner.checkpoint(name)
    }
    fn snapshot(&self) -> curator_session::Result<curator_session::Snapshot> {
        self.inner.snapshot()
    }
    fn restore(&self, snapshot: &curator_session::Snapshot) -> curator_session::Result<()> {
        self.inner.restore(snapshot)
    }
}

/// A worker stalls in `mark_started(["a"])` past its lease; meanwhile another claims the
/// session, marks `b` started and dies while `b` runs. Returns what the stalled worker's
/// `mark_started` gave, and the calls a third worker then sees started.
fn stall_while_marking(before: bool) -> (curator_session::Result<()>, Vec<String>) {
    use std::time::Duration;

    use curator_session::{ClaimStore, SessionKey};
    let store = MemoryStore::new();
    let key = SessionKey::new("ticket-10");
    let first = store.claim(&key, Duration::from_millis(30)).unwrap();
    let takeover: Takeover<'_> = Box::new({
        let key = key.clone();
        move |store: &MemoryStore| {
            std::thread::sleep(Duration::from_millis(60));
            let second = store.claim(&key, Duration::from_secs(30)).unwrap();
            let mut holder = Conversation::open(store, key, prompt(), Message::system("s"))
                .unwrap()
                .with_start_marks()
                .unwrap()
                .with_fence(second.fence().unwrap());
            holder.mark_started(&["b"]).unwrap();
            // `b` runs; the holder dies before recording its result, its claim left to
            // run out.
            std::mem::forget(second);
        }
    });
    let wrapper = TakenOverWhileMarking {
        inner: &store,
        takeover: std::sync::Mutex::new(Some(takeover)),
        before,
    };
    let mut stalled = Conversation::open(&wrapper, key.clone(), prompt(), Message::system("s"))
        .unwrap()
        .with_start_marks()
        .unwrap()
        .with_fence(first.fence().unwrap());
    stalled.add_user("send both").unwrap();
    stalled
        .record_assistant(Message::assistant_with_calls(
            None,
            vec![ToolCall::new("a", "send", "{}"), ToolCall::new("b", "send", "{}")],
        ))
        .unwrap();
    let marked = stalled.mark_started(&["a"]);
    let third = Conversation::open(&store, key, prompt(), Message::system("s"))
        .unwrap()
        .with_start_marks()
        .unwrap();
    let started = third
        .tool_contexts()
        .iter()
        .filter(|c| c.started)
        .map(|c| c.call_id().to_owned())
        .collect();
    (marked, started)
}

/// The claim is checked in the same write as the start marks: a worker taken over between
/// deciding to mark its calls and the write gets `Fenced` and writes nothing, so the marks
/// of the new holder, which died while `b` ran, stand and a third worker does not run `b`
/// again. (Checked before and after a plain write, the stalled worker's marks overwrote
/// them: `b` looked never started.)
#[test]
fn a_worker_taken_over_while_marking_calls_started_writes_no_marks() {
    let (marked, started) = stall_while_marking(true);
    assert!(matches!(marked, Err(Error::Fenced { current: Some(_), .. })), "{marked:?}");
    assert_eq!(started, ["b"], "the new holder's marks were overwritten");
}

/// Taken over right after its marks were written, the stalled worker's write stands: the new
/// holder read its marks (`a` started) and marked `b` on top of them.
#[test]
fn a_worker_taken_over_after_marking_calls_started_keeps_its_marks() {
    let (marked, started) = stall_while_marking(false);
    assert!(marked.is_ok(), "{marked:?}");
    assert_eq!(started, ["a", "b"]);
}

/// A worker whose claim another took over, before it marked its pending call started, gets
/// `Fenced` from `mark_started` (and so must not run the call): the new holder, which saw the
/// call not started, runs it, and the call runs once. Its marks stay the new holder's.
#[test]
fn a_worker_taken_over_before_marking_a_call_started_is_fenced() {
    use std::time::Duration;

    use curator_session::{ClaimStore, ResumePolicy, SessionKey};
    let store = MemoryStore::new();
    let key = SessionKey::new("ticket-9");
    let first = store.claim(&key, Duration::from_millis(30)).unwrap();
    let mut stalled = Conversation::open(&store, key.clone(), prompt(), Message::system("s"))
        .unwrap()
        .with_start_marks()
        .unwrap()
        .with_fence(first.fence().unwrap());
    stalled.add_user("send it").unwrap();
    stalled
        .record_assistant(Message::assistant_with_calls(
            None,
            vec![ToolCall::new("x", "send", "{}")],
        ))
        .unwrap();
    // The worker stops past its lease; another claims the session and runs the call.
    std::thread::sleep(Duration::from_millis(60));
    let second = store.claim(&key, Duration::from_secs(30)).unwrap();
    let mut holder = Conversation::open(&store, key.clone(), prompt(), Message::system("s"))
        .unwrap()
        .with_start_marks()
        .unwrap()
        .with_fence(second.fence().unwrap());
    let pending = holder.repair(ResumePolicy::AnswerInterrupted).unwrap();
    assert_eq!(pending.len(), 1, "the call was never started: the new holder runs it");
    holder.mark_started(&["x"]).unwrap();
    // The stalled worker wakes up: marking the call started is refused.
    let err = stalled.mark_started(&["x"]).unwrap_err();
    assert!(matches!(err, Error::Fenced { .. }), "{err}");
    // The new holder's marks stand: a third worker would not run the call again.
    drop(second);
    let mut third = Conversation::open(&store, key, prompt(), Message::system("s"))
        .unwrap()
        .with_start_marks()
        .unwrap();
    let to_run = third.repair(ResumePolicy::AnswerInterrupted).unwrap();
    assert!(to_run.is_empty(), "the call is marked started: it is answered, not run again");
}

#[test]
fn a_fence_of_another_session_marks_nothing_started() {
    use std::time::Duration;

    use curator_session::{ClaimStore, SessionKey};
    let store = MemoryStore::new();
    let key = SessionKey::new("ticket-10");
    let other = store.claim(&SessionKey::new("ticket-11"), Duration::from_secs(30)).unwrap();
    let mut conversation = Conversation::open(&store, key.clone(), prompt(), Message::system("s"))
        .unwrap()
        .with_start_marks()
        .unwrap();
    conversation.add_user("send it").unwrap();
    conversation
        .record_assistant(Message::assistant_with_calls(
            None,
            vec![ToolCall::new("x", "send", "{}")],
        ))
        .unwrap();
    let mut conversation = conversation.with_fence(other.fence().unwrap());
    let err = conversation.mark_started(&["x"]).unwrap_err();
    assert!(matches!(&err, Error::Fenced { key: k, .. } if *k == key), "{err}");
    let mut next = Conversation::open(&store, key, prompt(), Message::system("s"))
        .unwrap()
        .with_start_marks()
        .unwrap();
    let pending = next.repair(ResumePolicy::AnswerInterrupted).unwrap();
    assert_eq!(pending.len(), 1, "no start mark was written: the call is still to run");
}
