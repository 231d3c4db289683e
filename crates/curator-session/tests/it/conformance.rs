//! The store conformance suite on `MemoryStore`.

curator_session::store_conformance_tests!(curator_session::MemoryStore::new);
