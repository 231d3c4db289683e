//! The session crate's store and claim conformance suites, unchanged, on `PgStore`.

fn server() -> bool {
    curator_testkit::postgres::PgServer::shared().is_some()
}

curator_session::store_conformance_tests!(when server(), crate::support::TestStore::new);

mod claims {
    curator_session::claim_conformance_tests!(when super::server(), crate::support::TestStore::new);
}
