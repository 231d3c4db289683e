//! The facade's `Error`: every module's error converts into it, and whether trying again
//! may help is found wherever the store's error sits.
#![allow(clippy::unwrap_used, reason = "tests")]

use curator::session::{Error as SessionError, StoreErrorKind};

fn busy() -> SessionError {
    SessionError::store("postgres", StoreErrorKind::Unavailable, "appending", None)
}

#[test]
fn a_store_outage_is_retryable_through_every_layer() {
    assert!(curator::Error::from(busy()).is_retryable());
    #[cfg(feature = "tasks")]
    {
        let wrapped = curator::tasks::Error::from(busy());
        assert!(curator::Error::from(wrapped).is_retryable());
    }
    #[cfg(feature = "loop")]
    {
        // A loop step that used `?` into the facade's error: still found.
        let step = curator::conversation_loop::Error::Step {
            step: "agent".into(),
            iteration: 1,
            source: Box::new(curator::Error::from(busy())),
        };
        assert!(curator::Error::from(step).is_retryable());
    }
    let other = SessionError::store("postgres", StoreErrorKind::Corrupt, "reading", None);
    assert!(!curator::Error::from(other).is_retryable());
}

#[test]
fn the_error_is_small() {
    assert!(size_of::<curator::Error>() <= 16);
}
