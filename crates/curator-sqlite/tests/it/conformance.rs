//! The session crate's store conformance suite, unchanged, on `SqliteStore`.

curator_session::store_conformance_tests!(crate::support::TempStore::new);

mod claims {
    curator_session::claim_conformance_tests!(crate::support::TempStore::new);
}
