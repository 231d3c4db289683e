//! The PostgreSQL session store of curator: one durable record shared by agent workers on
//! many machines, so that any worker can resume a conversation another worker started or
//! lost.
//!
//! This crate implements [`curator_session::SessionStore`] and
//! [`curator_session::ClaimStore`] on PostgreSQL through the synchronous `postgres` client
//! and a small pool of connections. It sits beside `curator-sqlite` above the session
//! layer.
//!
//! - [`PgStore::connect`] takes a URL (or a `key=value` string), completed from the standard
//!   `PG*` environment variables and, when no password is given, libpq's password file
//!   (`~/.pgpass`, see [`PgOptions`]); [`PgStore::open`] takes [`PgOptions`] (schema, pool
//!   size, connect timeout).
//! - The tables live in one schema (`curator` by default) whose version is kept in a
//!   `schema_version` table: a missing or older schema is created or migrated when opened,
//!   a newer one or another application's tables are refused with a typed [`Error`].
//!   [`PgStore::open_read_only`], for tools that only read, never creates or migrates:
//!   a database without the schema is [`Error::NoSchema`], and the server refuses writes.
//! - Connections are encrypted with the `tls` feature (rustls), as libpq's `sslmode` and
//!   `sslrootcert` say ([`SslMode`]); without it, the modes that insist on TLS are refused.
//! - Claims are lease rows timed by the server's clock: a worker that dies loses its claim
//!   when its lease runs out.
//! - A lost connection (a server restart) is a retryable error of kind
//!   [`Unavailable`](curator_session::StoreErrorKind::Unavailable); the next call connects
//!   afresh.
//! - Snapshots are the same JSON as every other store's, so they move between stores.
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use curator::model::{Message, PromptRef};
//! use curator::postgres::PgStore;
//! use curator::session::{ClaimStore, Conversation, SessionKey};
//!
//! let store = PgStore::connect("postgres://agent@db.internal/records")?;
//! let key = SessionKey::new("ticket-7");
//! let claim = store.claim(&key, Duration::from_secs(30))?;
//! let mut conversation = Conversation::open(&store, key, PromptRef::new("support", "triage"), Message::system("Be brief."))?;
//! for call in conversation.tool_contexts() {
//!     claim.renew()?; // still this worker's session: re-run the pending call
//!     conversation.record_tool_result(call.call_id(), Ok::<_, String>("done"))?;
//! }
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod claims;
mod conn;
mod error;
mod options;
mod params;
mod pgpass;
mod pool;
mod schema;
mod store;
#[cfg(feature = "tls")]
mod tls;

pub use error::{Error, Result};
pub use options::{
    DEFAULT_SCHEMA, LOCK_TIMEOUT, PgOptions, RootCertificates, STALLED_TRANSACTION_TIMEOUT,
    STATEMENT_TIMEOUT, SslMode,
};
pub use schema::PG_SCHEMA_VERSION;
pub use store::PgStore;
