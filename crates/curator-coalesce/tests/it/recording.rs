//! The order `CoalescedConversation` records in: a reply, then its execution. A call out of
//! that order is refused with a typed error and writes nothing (issue 16, second review).

use curator_coalesce::{
    CoalescedConversation, Error, Run, SingleUserCoalesced, TURNS_CHECKPOINT, TurnDraft, Value,
};
use curator_model::{Message, PromptRef};
use curator_session::{Conversation, MemoryStore, SessionStore};

#[expect(clippy::unwrap_used, reason = "a helper of tests: an error is a test failure")]
fn open(store: &MemoryStore) -> CoalescedConversation<&MemoryStore> {
    let run = Run::new("You write PTC-Lisp.", "Add 1 and 2");
    let conversation = Conversation::open(
        store,
        "job-1",
        PromptRef::new("demo", "lisp"),
        Message::system(run.system.as_str()),
    )
    .unwrap();
    CoalescedConversation::open(conversation, run, SingleUserCoalesced::default()).unwrap()
}

/// How many turns the latest version of the turns checkpoint holds.
#[expect(clippy::unwrap_used, reason = "a helper of tests: an error is a test failure")]
fn saved(store: &MemoryStore, agent: &CoalescedConversation<&MemoryStore>) -> Option<usize> {
    let name = format!("{TURNS_CHECKPOINT}/{}", agent.conversation().evaluation_id());
    store.checkpoint(&name).unwrap().map(|saved| saved.document.as_array().map_or(0, Vec::len))
}

#[test]
fn an_execution_without_a_pending_reply_is_refused_and_saves_nothing() {
    let store = MemoryStore::new();
    let mut agent = open(&store);
    // Nothing replied yet.
    let refused = agent.record_execution(TurnDraft::returned("(+ 1 2)", Value::from(3)));
    let Err(error) = refused else { panic!("accepted: {refused:?}") };
    assert!(matches!(error, Error::NoPendingReply { executions: 0 }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "no reply is waiting for its execution (0 executions recorded): record the model's \
         reply with `record_reply` first"
    );
    assert_eq!(saved(&store, &agent), None, "the refused execution was saved");
    assert!(agent.turns().is_empty());

    // One turn done, then a second execution of the same reply.
    let draft = agent.record_reply(Message::assistant("(+ 1 2)")).unwrap();
    agent.record_execution(draft.clone()).unwrap();
    let error = agent.record_execution(draft).unwrap_err();
    assert!(matches!(error, Error::NoPendingReply { executions: 1 }), "{error:?}");
    assert_eq!(saved(&store, &agent), Some(1), "the refused execution was saved");
    assert_eq!(agent.turns().len(), 1);
    assert_eq!(agent.turns_left(), 4);

    // Reopened, the run is where it was: one turn, a reply expected.
    drop(agent);
    let agent = open(&store);
    assert_eq!((agent.turns().len(), agent.turns_left()), (1, 4));
    assert_eq!(agent.pending_program(), None);
}

#[test]
fn a_second_reply_before_the_execution_is_refused() {
    let store = MemoryStore::new();
    let mut agent = open(&store);
    let first = agent.record_reply(Message::assistant("(def e 5)")).unwrap();
    let record = agent.conversation().history().len();
    let error = agent.record_reply(Message::assistant("(def f 6)")).unwrap_err();
    assert!(matches!(error, Error::ReplyPending { turn: 1 }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "the reply of turn 1 has not been executed yet: record its execution with \
         `record_execution` before the next reply"
    );
    assert_eq!(agent.conversation().history().len(), record, "the refused reply was recorded");
    assert_eq!(agent.pending_program(), Some(first.clone()), "the first reply's program is lost");
    agent.record_execution(first).unwrap();
    assert_eq!(agent.turns().as_slice()[0].program(), "(def e 5)");
}

#[test]
fn a_checkpoint_ahead_of_the_record_is_named_the_right_way_round() {
    let store = MemoryStore::new();
    let agent = open(&store);
    let name = format!("{TURNS_CHECKPOINT}/{}", agent.conversation().evaluation_id());
    drop(agent);
    // Two turns saved, no reply recorded: the checkpoint is ahead of the record.
    let mut turns = curator_coalesce::Turns::new();
    turns.push(TurnDraft::returned("(+ 1 2)", Value::from(3)));
    turns.push(TurnDraft::returned("(+ 2 2)", Value::from(4)));
    store.put_checkpoint(&name, &serde_json::to_value(&turns).unwrap()).unwrap();
    let run = Run::new("You write PTC-Lisp.", "Add 1 and 2");
    let conversation = Conversation::open(
        &store,
        "job-1",
        PromptRef::new("demo", "lisp"),
        Message::system(run.system.as_str()),
    )
    .unwrap();
    let error =
        CoalescedConversation::open(conversation, run, SingleUserCoalesced::default()).unwrap_err();
    assert!(matches!(error, Error::TurnsAheadOfRecord { recorded: 0, saved: 2, .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!("the checkpoint `{name}` holds 2 turns but the record only 0 executions")
    );
}
