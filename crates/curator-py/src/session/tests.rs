//! Tests of the item sessions: turns, reasoning items, curation and stores.

use super::*;
use curator::session::MemoryStore;

fn message(role: &str, text: &str) -> Value {
    json!({"type": "message", "role": role, "content": [{"type": if role == "assistant" { "output_text" } else { "input_text" }, "text": text}]})
}

/// A task, then `rounds` of reasoning, a call and its output, then a reasoned answer.
fn agent_items(rounds: usize, output: usize) -> Vec<Value> {
    let mut items = vec![json!({"role": "user", "content": "Find the biggest log file."})];
    for i in 0..rounds {
        items.push(json!({"type": "reasoning", "id": format!("rs_{i}"), "summary": []}));
        items.push(json!({"type": "function_call", "id": format!("fc_{i}"), "call_id": format!("call_{i}"), "name": "du", "arguments": format!("{{\"dir\":\"/var/log/{i}\"}}"), "status": "completed"}));
        items.push(json!({"type": "function_call_output", "call_id": format!("call_{i}"), "output": format!("{i} blocks ").repeat(output)}));
    }
    items.push(json!({"type": "reasoning", "id": "rs_end", "summary": [{"type": "summary_text", "text": "x ".repeat(200)}]}));
    items.push(message("assistant", "The biggest is /var/log/3."));
    items
}

fn open(store: &Arc<dyn SessionStore>, config: Option<&StrategyConfig>) -> ItemLog {
    ItemLog::open(Arc::clone(store), "user-1", ItemFormat::Responses, config).unwrap()
}

#[track_caller]
fn check_valid(items: &[Value]) {
    // Every output answers a call shown before it, every call is answered, and every
    // item whose reasoning was recorded right before it is shown with it.
    let messages = formats::responses::to_messages(items).unwrap();
    curator::model::validate::responses(&messages).unwrap();
}

#[test]
fn items_come_back_as_added_whole_or_newest_first() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let items = agent_items(3, 5);
    let mut log = open(&store, None);
    // Split between a reasoning item and its call: the call joins it across calls.
    log.add(&items[..2]).unwrap();
    log.add(&items[2..]).unwrap();
    assert_eq!(log.items(None).unwrap(), items);
    for limit in 0..=items.len() + 1 {
        let start = items.len().saturating_sub(limit);
        assert_eq!(log.items(Some(limit)).unwrap(), items[start..], "limit {limit}");
    }
    // The reasoning item and its call are one message of the history.
    assert_eq!(log.held.history.len(), items.len() - 3);
    // Another process opening the session loads the same.
    assert_eq!(open(&store, None).items(None).unwrap(), items);
}

#[test]
fn a_pipeline_hands_out_a_valid_shorter_view() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let items = agent_items(40, 200);
    open(&store, None).add(&items).unwrap();
    let config = StrategyConfig::default_pipeline(2_000);
    let mut log = open(&store, Some(&config));
    let view = log.items(None).unwrap();
    assert!(view.len() < items.len() / 2, "{} items kept", view.len());
    check_valid(&view);
    assert_eq!(view.first(), items.first(), "the task is kept");
    assert_eq!(view[view.len() - 2..], items[items.len() - 2..], "the answer and its reasoning");
    // Kept items are the items given, unchanged or shortened, never invented ids.
    for item in &view {
        if let Some(id) = item.get("id") {
            let given = items.iter().find(|i| i.get("id") == Some(id)).unwrap();
            assert_eq!(given["type"], item["type"]);
        }
    }
    // The limit reads the record, not the view.
    assert_eq!(log.items(Some(3)).unwrap(), items[items.len() - 3..]);
}

#[test]
fn pop_and_clear_are_recorded_and_lose_nothing() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let items = agent_items(2, 3);
    let mut log = open(&store, None);
    log.add(&items).unwrap();
    assert_eq!(log.pop().unwrap().as_ref(), items.last());
    // The pop's own head is not read back as another process's change: no reload.
    let rebuilt = log.held.history.id();
    // A call popped from the message it joined leaves the reasoning item.
    let mut expected = items[..items.len() - 1].to_vec();
    assert_eq!(log.items(None).unwrap(), expected);
    assert_eq!(log.held.history.id(), rebuilt);
    for _ in 0..4 {
        assert_eq!(log.pop().unwrap(), expected.pop());
    }
    assert_eq!(log.items(None).unwrap(), expected);
    assert_eq!(open(&store, None).items(None).unwrap(), expected);
    let first = log.held.evaluation;
    log.clear().unwrap();
    assert!(log.items(None).unwrap().is_empty());
    assert_eq!(log.pop().unwrap(), None);
    assert!(open(&store, None).items(None).unwrap().is_empty());
    // The record still holds every item added.
    assert_eq!(store.entries(first).unwrap().len(), items.len());
    log.add(&items[..1]).unwrap();
    assert_eq!(open(&store, None).items(None).unwrap(), items[..1]);
}

#[test]
fn items_added_after_retention_deleted_the_evaluation_are_all_seen() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let items = agent_items(1, 3);
    let mut log = open(&store, None);
    log.add(&items).unwrap();
    log.pop().unwrap();
    let key = SessionKey::new("user-1");
    store.delete_evaluations(&key, &[log.held.evaluation]).unwrap();
    let mut log = open(&store, None);
    assert!(log.items(None).unwrap().is_empty());
    log.add(&items).unwrap();
    assert_eq!(open(&store, None).items(None).unwrap(), items);
}

#[test]
fn two_sessions_on_one_file_see_each_others_items() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    // Two stores: two connections, as two processes have.
    let a: Arc<dyn SessionStore> = Arc::new(curator::sqlite::SqliteStore::open(&path).unwrap());
    let b: Arc<dyn SessionStore> = Arc::new(curator::sqlite::SqliteStore::open(&path).unwrap());
    let items = agent_items(2, 3);
    let (mut first, mut second) = (open(&a, None), open(&b, None));
    first.add(&items[..3]).unwrap();
    second.add(&items[3..5]).unwrap();
    first.add(&items[5..]).unwrap();
    assert_eq!(first.items(None).unwrap(), items);
    assert_eq!(second.items(None).unwrap(), items);
    second.pop().unwrap();
    assert_eq!(first.items(None).unwrap(), items[..items.len() - 1]);
    second.clear().unwrap();
    assert!(first.items(None).unwrap().is_empty());
}

#[test]
fn two_sessions_on_one_connection_see_each_others_items() {
    let dir = tempfile::tempdir().unwrap();
    // One store: the other session's commits are this connection's own, which SQLite's
    // data version does not count; the store's change stamp does.
    let store: Arc<dyn SessionStore> =
        Arc::new(curator::sqlite::SqliteStore::open(dir.path().join("sessions.db")).unwrap());
    let items = agent_items(2, 3);
    let (mut first, mut second) = (open(&store, None), open(&store, None));
    assert!(first.items(None).unwrap().is_empty());
    second.add(&items[..3]).unwrap();
    assert_eq!(first.items(None).unwrap(), items[..3]);
    second.add(&items[3..]).unwrap();
    assert_eq!(first.items(None).unwrap(), items);
    assert_eq!(first.items(None).unwrap(), items, "nothing new: the reads are skipped");
    second.pop().unwrap();
    assert_eq!(first.items(None).unwrap(), items[..items.len() - 1]);
    second.clear().unwrap();
    assert!(first.items(None).unwrap().is_empty());
}

#[test]
fn unsendable_items_are_found_as_items_are_added() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let mut log = open(&store, Some(&StrategyConfig::default_pipeline(4_000)));
    log.add(&agent_items(1, 3)).unwrap();
    assert!(log.unsendable().is_empty());
    // An output answering no call, then a reasoned call a user message closes.
    log.add(&[json!({"type": "function_call_output", "call_id": "nobody", "output": "?"})])
        .unwrap();
    assert_eq!(log.unsendable(), [6]);
    log.add(&[
        json!({"type": "reasoning", "id": "rs_x", "summary": []}),
        json!({"type": "function_call", "call_id": "call_x", "name": "du", "arguments": "{}"}),
    ])
    .unwrap();
    assert_eq!(log.unsendable(), [6], "a call waiting at the end is the present");
    log.add(&[message("user", "never mind")]).unwrap();
    // The call a user message closed is left out of the view and named, with the
    // reasoning item it joined: the two are one message of the history.
    assert_eq!(log.unsendable(), [6, 7, 8]);
    let view = log.items(None).unwrap();
    for call in ["nobody", "call_x"] {
        assert!(view.iter().all(|i| i.get("call_id") != Some(&json!(call))), "{call}");
    }
    // Found the same from scratch, as another process opening the session does.
    let mut again = open(&store, None);
    again.items(None).unwrap();
    assert_eq!(again.unsendable(), [6, 7, 8]);
    // Another orphan after the user message is found from where the last check settled.
    log.add(&[json!({"type": "function_call_output", "call_id": "late", "output": "?"})]).unwrap();
    assert_eq!(log.unsendable(), [6, 7, 8, 10]);
    log.pop().unwrap();
    assert_eq!(log.unsendable(), [6, 7, 8]);
}

#[test]
fn bad_items_and_keys_are_refused_naming_them() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let mut log = open(&store, None);
    let error = log
        .add(&[
            message("user", "hi"),
            json!({"type": "function_call", "call_id": "c1", "arguments": "{}"}),
        ])
        .unwrap_err();
    assert_eq!(error.kind(), "missing_field");
    assert!(matches!(error, Failure::Item { index: 1, .. }));
    assert!(log.items(None).unwrap().is_empty(), "nothing of the batch is recorded");
    let error =
        log.add(&[json!({"role": "tool", "tool_call_id": "c", "content": "x"})]).unwrap_err();
    assert_eq!(error.kind(), "foreign_field", "a Chat Completions tool message");
    let error = ItemLog::open(Arc::clone(&store), "", ItemFormat::Responses, None).unwrap_err();
    assert_eq!(error.kind(), "bad_key");
    assert_eq!(ItemFormat::from_name("xml").unwrap_err().kind(), "invalid_argument");
}

#[test]
fn a_corrupt_head_is_named() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    store.put_checkpoint("curator.items/responses/user-1", &json!({"generation": "x"})).unwrap();
    // Opening reads nothing; the first call that needs the items says it.
    let mut log = ItemLog::open(store, "user-1", ItemFormat::Responses, None).unwrap();
    assert_eq!(log.items(None).unwrap_err().kind(), "corrupt");
}

#[test]
fn a_read_only_sqlite_file_is_said_in_terms_of_what_a_session_needs() {
    let error = curator::sqlite::Error::Sqlite {
        path: "s.db".into(),
        context: "reading the header",
        kind: StoreErrorKind::ReadOnly,
        source: "attempt to write a readonly database".into(),
    };
    let Failure::Store { kind, message } = sqlite_failure(&error) else {
        panic!("not a store failure")
    };
    assert_eq!(kind, "read_only");
    assert!(message.starts_with("s.db: reading the header: read-only: "), "{message}");
    assert!(message.contains("writable") && !message.contains("SqliteStore"), "{message}");
}

#[test]
fn opening_reads_nothing_until_a_call_needs_the_items() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let mut writer = open(&store, None);
    writer.add(&agent_items(2, 3)).unwrap();
    let mut reader = open(&store, None);
    assert_eq!(reader.len(), 0, "nothing is loaded by opening");
    assert_eq!(reader.items(None).unwrap(), agent_items(2, 3));
    assert_eq!(reader.len(), agent_items(2, 3).len());
}

#[test]
fn a_deleted_sqlite_file_refuses_writes_naming_it() {
    let dir = std::env::temp_dir().join(format!("curator-py-deleted-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.db");
    let store = open_store(path.to_str().unwrap()).unwrap();
    let mut log = open(&store, None).watching_file(path.clone());
    log.add(&[message("user", "first")]).unwrap();
    std::fs::remove_file(&path).unwrap();
    let Err(Failure::Store { kind, message: said }) = log.add(&[message("user", "lost?")]) else {
        panic!("a write to a deleted file was taken")
    };
    assert_eq!(kind, "unavailable");
    assert!(said.contains("deleted") && said.contains("s.db"), "{said}");
    assert!(log.pop().is_err() && log.clear().is_err());
    std::fs::remove_dir_all(&dir).ok();
}
