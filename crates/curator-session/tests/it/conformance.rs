//! The store conformance suite on `MemoryStore`.

curator_session::store_conformance_tests!(curator_session::MemoryStore::new);

mod claims {
    use std::time::Duration;

    use curator_session::{ClaimStore, Error, MemoryStore, SessionKey};

    curator_session::claim_conformance_tests!(MemoryStore::new);

    /// A claim whose worker stopped renewing it (a thread that died) is taken over once its
    /// lease runs out, and the old holder learns it lost the claim.
    #[test]
    fn a_lapsed_claim_is_taken_over_and_its_holder_told() {
        let store = MemoryStore::new();
        let key = SessionKey::new("job");
        let stale = store.claim(&key, Duration::from_millis(80)).unwrap();
        stale.renew().unwrap();
        assert!(matches!(store.claim(&key, Duration::from_secs(5)), Err(Error::Claimed { .. })));
        std::thread::sleep(Duration::from_millis(120));
        let fresh = store.claim(&key, Duration::from_secs(5)).unwrap();
        assert!(matches!(stale.renew(), Err(Error::ClaimLost { .. })));
        // Releasing (or dropping) the lost claim leaves the new holder's claim alone.
        stale.release().unwrap();
        fresh.renew().unwrap();
        assert!(matches!(store.claim(&key, Duration::from_secs(5)), Err(Error::Claimed { .. })));
    }
}
