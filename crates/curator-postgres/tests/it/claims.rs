//! Claims that outlive their worker: taken over once the lease runs out, and the old holder
//! told it lost the claim.

use std::time::Duration;

use curator_session::{ClaimStore, Error, SessionKey};

#[test]
fn a_lapsed_claim_is_taken_over_and_its_holder_told() {
    let Some(store) = crate::support::store() else { return };
    let key = SessionKey::new("job");
    let stale = store.claim(&key, Duration::from_millis(300)).unwrap();
    stale.renew().unwrap();
    match store.claim(&key, Duration::from_secs(5)) {
        Err(Error::Claimed { expires_in: Some(left), .. }) => {
            assert!(left <= Duration::from_millis(300), "{left:?}");
        }
        other => panic!("expected Claimed with the time left, got {other:?}"),
    }
    std::thread::sleep(Duration::from_millis(400));
    let fresh = store.claim(&key, Duration::from_secs(5)).unwrap();
    assert!(matches!(stale.renew(), Err(Error::ClaimLost { .. })));
    // Releasing the lost claim leaves the new holder's row alone.
    stale.release().unwrap();
    fresh.renew().unwrap();
    assert!(matches!(store.claim(&key, Duration::from_secs(5)), Err(Error::Claimed { .. })));
}

#[test]
fn claims_are_shared_by_stores_on_one_schema() {
    let Some(store) = crate::support::store() else { return };
    let server = curator_testkit::postgres::PgServer::shared().unwrap();
    let options = curator_postgres::PgOptions::from_url(&server.url())
        .unwrap()
        .with_schema(store.schema())
        .unwrap();
    let other = curator_postgres::PgStore::open(options).unwrap();
    let key = SessionKey::new("shared");
    let claim = store.claim(&key, Duration::from_secs(30)).unwrap();
    assert!(matches!(other.claim(&key, Duration::from_secs(30)), Err(Error::Claimed { .. })));
    drop(claim);
    other.claim(&key, Duration::from_secs(30)).unwrap();
}

#[test]
fn the_async_face_claims_renews_and_releases_on_blocking_threads() {
    let Some(store) = crate::support::store() else { return };
    let store = std::sync::Arc::new(store);
    let key = SessionKey::new("async");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    runtime.block_on(async {
        let lease = Duration::from_millis(400);
        let claim =
            curator_session::Claim::take_async(store.clone(), key.clone(), lease).await.unwrap();
        let racer = curator_session::Claim::take_async(store.clone(), key.clone(), lease).await;
        assert!(matches!(racer, Err(Error::Claimed { .. })), "{racer:?}");
        claim.renew_async().await.unwrap();
        // A holder that stops renewing: once its lease ran out another worker takes the key
        // (waiting on a blocking thread), and the lapsed holder learns it lost the claim.
        let lapsed = claim;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let fresh = curator_session::Claim::take_within_async(
            store.clone(),
            key.clone(),
            Duration::from_secs(5),
            Duration::from_secs(2),
        )
        .await
        .unwrap();
        assert!(matches!(lapsed.renew_async().await, Err(Error::ClaimLost { .. })));
        fresh.release_async().await.unwrap();
        let again =
            curator_session::Claim::take_async(store.clone(), key.clone(), lease).await.unwrap();
        // Dropped on the runtime's thread: the blocking client must not run there (it would
        // panic), yet the key is free as soon as `drop` returns.
        drop(again);
        let last = curator_session::Claim::take_async(store.clone(), key.clone(), lease).await;
        assert!(last.is_ok(), "{last:?}");
    });
}

/// A holder stalled inside a fenced write (its transaction open, the claim row locked `FOR
/// SHARE`, as a worker stopped by SIGSTOP or cut off by the network leaves it) delays a
/// takeover by the claim wait and the lock timeout at most: `claim_within` returns (with a
/// typed error) instead of waiting for the holder.
#[test]
fn a_stalled_holder_delays_a_takeover_by_the_wait_and_a_margin_at_most() {
    let Some(store) = crate::support::store() else { return };
    let key = SessionKey::new("stalled");
    let stale = store.claim(&key, Duration::from_millis(500)).unwrap();
    // The stalled worker: its own connection, inside the fence's read.
    let server = curator_testkit::postgres::PgServer::shared().unwrap();
    let mut holder = postgres::Client::connect(&server.url(), postgres::NoTls).unwrap();
    let mut tx = holder.transaction().unwrap();
    tx.query(
        &format!(
            "SELECT token FROM \"{}\".claims WHERE session_key = $1 FOR SHARE",
            store.schema()
        ),
        &[&key.as_str()],
    )
    .unwrap();
    std::mem::forget(stale);
    std::thread::sleep(Duration::from_millis(600));
    let started = std::time::Instant::now();
    let taken = store.claim_within(&key, Duration::from_secs(1), Duration::from_secs(3));
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(3) + curator_postgres::LOCK_TIMEOUT + Duration::from_secs(1),
        "the takeover waited {waited:?}"
    );
    match taken {
        Err(e) => assert!(e.is_retryable(), "{e}"),
        Ok(_) => panic!("taken while the row is locked"),
    }
    // Once the holder's transaction ends, the takeover goes through.
    tx.rollback().unwrap();
    store.claim_within(&key, Duration::from_secs(1), Duration::from_secs(3)).unwrap();
}

/// A holder whose connection to the server is gone (its process died: the server ended its
/// backend) is taken over at once, long before its lease runs out; a living holder is not.
/// The old holder, should it live on, is told it lost the claim.
#[test]
fn a_holder_whose_backend_is_gone_is_taken_over_without_waiting_out_the_lease() {
    let Some(store) = crate::support::store() else { return };
    let key = SessionKey::new("gone");
    let lease = Duration::from_mins(5);
    let old = store.claim(&key, lease).unwrap();
    assert!(matches!(store.claim(&key, lease), Err(Error::Claimed { .. })), "the holder lives");
    // End the backend that holds the holder's lock, as the server does when a process dies.
    let server = curator_testkit::postgres::PgServer::shared().unwrap();
    let mut admin = postgres::Client::connect(&server.url(), postgres::NoTls).unwrap();
    let lock_key: i64 = admin
        .query_one(
            &format!("SELECT lock_key FROM \"{}\".claims WHERE session_key = $1", store.schema()),
            &[&key.as_str()],
        )
        .unwrap()
        .get(0);
    let ended: i64 = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory'
                AND granted AND ((classid::bigint << 32) | objid::bigint) = $1",
            &[&lock_key],
        )
        .unwrap()
        .get(0);
    assert_eq!(ended, 1, "one backend held the holder's lock");
    let started = std::time::Instant::now();
    let new = store.claim_within(&key, lease, Duration::from_secs(5)).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    let token = |c: &curator_session::Claim| c.fence().map(|f| f.token);
    assert!(token(&new) > token(&old), "{:?} {:?}", token(&new), token(&old));
    assert!(matches!(old.renew(), Err(Error::ClaimLost { .. })));
    new.renew().unwrap();
    assert!(matches!(store.claim(&key, lease), Err(Error::Claimed { .. })), "the new holder lives");
}
