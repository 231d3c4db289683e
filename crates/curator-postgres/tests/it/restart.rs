//! A server restart between two appends: a typed, retryable error, then appends succeed
//! again, and nothing acknowledged is lost.

use curator_model::{Message, PromptRef};
use curator_postgres::{PgOptions, PgStore};
use curator_session::{Conversation, SessionStore, StoreErrorKind};
use curator_testkit::postgres::PgServer;

#[test]
fn a_restart_between_appends_is_retryable_and_loses_nothing() {
    // A server of its own: restarting the shared one would break the other tests.
    let Some(server) = PgServer::start() else { return };
    let store =
        PgStore::open(PgOptions::from_url(&server.url()).unwrap().with_pool_size(3)).unwrap();
    // Three connections in the pool, so that stale idle ones would fail later calls too.
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| store.evaluations().unwrap());
        }
    });
    let prompt = PromptRef::new("restart", "agent");
    let mut c = Conversation::open(&store, "job", prompt.clone(), Message::system("s")).unwrap();
    c.add_user("before the restart").unwrap();

    server.restart();

    let e = c.add_user("after the restart").unwrap_err();
    assert!(e.is_retryable(), "{e:?}");
    assert!(
        matches!(e, curator_session::Error::Store { kind: StoreErrorKind::Unavailable, .. }),
        "{e:?}"
    );
    // The retry re-sends the same entry on a fresh connection.
    c.add_user("after the restart").unwrap();
    c.add_user("and on").unwrap();
    for _ in 0..3 {
        store.evaluations().unwrap();
    }
    let texts: Vec<String> = store
        .entries(c.evaluation_id())
        .unwrap()
        .iter()
        .map(|e| e.message.text().into_owned())
        .collect();
    assert_eq!(texts, ["s", "before the restart", "after the restart", "and on"]);
    let resumed = Conversation::resume(&store, "job", &prompt).unwrap();
    assert_eq!(resumed.next_sequence(), 4);
}
