//! Rows this build cannot read, written into the tables with SQL: each is a typed `Corrupt`
//! error naming the row, never a default value.

use curator_model::{EvaluationId, Message, PromptRef};
use curator_postgres::{PgOptions, PgStore};
use curator_session::{Conversation, SessionStore, StoreErrorKind};
use curator_testkit::postgres::PgServer;

use crate::support::fresh_schema;

/// A store in a fresh schema of the shared server, and the schema's name.
fn store(server: &PgServer) -> (PgStore, String) {
    let schema = fresh_schema();
    let options = PgOptions::from_url(&server.url()).unwrap().with_schema(&schema).unwrap();
    (PgStore::open(options).unwrap(), schema)
}

/// Records a system message, returning its evaluation.
fn one_message(store: &PgStore) -> EvaluationId {
    Conversation::start(store, "test", PromptRef::new("b", "r"), Message::system("s"))
        .unwrap()
        .evaluation_id()
}

/// The message of the `Corrupt` error `result` holds.
#[track_caller]
fn corrupt<T: std::fmt::Debug>(result: curator_session::Result<T>) -> String {
    match result {
        Err(curator_session::Error::Store {
            kind: StoreErrorKind::Corrupt,
            backend: "postgres",
            message,
            ..
        }) => message,
        other => panic!("expected a Corrupt error of the PostgreSQL store, got {other:?}"),
    }
}

#[test]
fn a_negative_checkpoint_version_is_corrupt_not_zero() {
    let Some(server) = PgServer::shared() else { return };
    let (store, schema) = store(server);
    store.put_checkpoint("progress", &serde_json::json!({"done": 2})).unwrap();
    server.psql("postgres", &format!("UPDATE {schema}.checkpoints SET version = -1"));
    let message = corrupt(store.checkpoint("progress"));
    assert!(message.contains("checkpoints row `progress`: version -1"), "{message}");
    let message = corrupt(store.snapshot());
    assert!(message.contains("`progress`"), "{message}");
    // Saving again counts on from the bad version: still negative, still refused.
    server.psql("postgres", &format!("UPDATE {schema}.checkpoints SET version = -5"));
    let message = corrupt(store.put_checkpoint("progress", &serde_json::json!({})));
    assert!(message.contains("version -4"), "{message}");
}

#[test]
fn a_negative_turn_is_corrupt_in_the_entries_and_in_the_summary() {
    let Some(server) = PgServer::shared() else { return };
    let (store, schema) = store(server);
    let evaluation = one_message(&store);
    server.psql("postgres", &format!("UPDATE {schema}.entries SET turn = -1"));
    let message = corrupt(store.evaluations());
    assert!(message.contains(&format!("evaluation {evaluation}: turn -1")), "{message}");
    corrupt(store.evaluation(evaluation));
    let message = corrupt(store.entries(evaluation));
    assert!(message.contains(&format!("sequence 0 of evaluation {evaluation}")), "{message}");
}

#[test]
fn a_negative_sequence_and_a_broken_message_are_corrupt_and_named() {
    let Some(server) = PgServer::shared() else { return };
    let (store, schema) = store(server);
    let evaluation = one_message(&store);
    server.psql("postgres", &format!("UPDATE {schema}.entries SET sequence = -3"));
    let message = corrupt(store.entries(evaluation));
    assert!(message.contains("sequence -3") && message.contains("negative"), "{message}");
    server.psql("postgres", &format!("UPDATE {schema}.entries SET sequence = 0, message = '{{'"));
    let error = store.snapshot().unwrap_err();
    let cause = std::error::Error::source(&error).expect("a cause");
    assert!(cause.downcast_ref::<serde_json::Error>().is_some(), "{cause:?}");
    assert!(corrupt(Err::<(), _>(error)).contains("the message cannot be read"));
}
