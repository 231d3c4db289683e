//! Encrypted connections (the `tls` feature) against a server that lets TCP clients in over
//! TLS only, with a certificate for `localhost` signed by a throwaway authority: each
//! `sslmode` checks what libpq's does, and refuses what libpq's refuses.

use std::sync::OnceLock;

use curator_model::{Entry, EvaluationId, Message, PromptRef};
use curator_postgres::{Error, PgOptions, PgStore, SslMode};
use curator_session::{SessionKey, SessionStore};
use curator_testkit::error_chain;
use curator_testkit::postgres::PgServer;

use crate::support::fresh_schema;

fn server() -> Option<&'static PgServer> {
    static SERVER: OnceLock<Option<PgServer>> = OnceLock::new();
    SERVER.get_or_init(PgServer::start_tls).as_ref()
}

/// A URL for `host`, reaching the loopback address whatever the name resolves to.
fn url(server: &PgServer, host: &str, params: &str) -> String {
    format!("postgres://curator@{host}:{}/postgres?hostaddr=127.0.0.1&{params}", server.port())
}

fn open(options: PgOptions) -> Result<PgStore, Error> {
    PgStore::open(options.with_schema(&fresh_schema()).unwrap())
}

fn round_trip(store: &PgStore) {
    let key = SessionKey::new("tls");
    let entry = Entry::builder(EvaluationId::new(), Message::user("over TLS"))
        .prompt(PromptRef::new("p", "v"))
        .build()
        .unwrap();
    store.append(&key, &entry).unwrap();
    assert_eq!(store.entries(entry.evaluation_id).unwrap(), vec![entry]);
}

#[test]
fn verify_full_with_the_authority_connects_encrypted() {
    let Some(server) = server() else { return };
    let options = PgOptions::from_url(&url(server, "localhost", "sslmode=verify-full"))
        .unwrap()
        .with_root_certificates(server.ca_file());
    assert_eq!(options.ssl_mode(), SslMode::VerifyFull);
    round_trip(&open(options).unwrap());
    // The same through the URL alone, percent-encoded as URLs are.
    let ca = server.ca_file().to_string_lossy().replace('/', "%2F");
    let options = PgOptions::from_url(&url(
        server,
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    ))
    .unwrap();
    round_trip(&open(options).unwrap());
}

#[test]
fn the_server_refuses_unencrypted_clients() {
    // What makes the other tests' successes prove encryption.
    let Some(server) = server() else { return };
    let options = PgOptions::from_url(&url(server, "localhost", "sslmode=disable")).unwrap();
    let error = open(options).unwrap_err();
    assert!(error_chain(&error).contains("no encryption"), "{}", error_chain(&error));
}

#[test]
fn verify_full_refuses_a_certificate_for_another_name() {
    let Some(server) = server() else { return };
    let options = PgOptions::from_url(&url(server, "127.0.0.1", "sslmode=verify-full"))
        .unwrap()
        .with_root_certificates(server.ca_file());
    let error = open(options).unwrap_err();
    assert!(matches!(error, Error::Postgres { .. }), "{error:?}");
    let text = error.to_string().to_lowercase();
    assert!(text.contains("not valid for name") || text.contains("notvalidforname"), "{text}");
    // A refused certificate is refused again: not a server to wait for.
    assert!(!error.is_retryable(), "{error:?}");
}

#[test]
fn verify_ca_accepts_the_authority_whatever_the_name() {
    let Some(server) = server() else { return };
    let options = PgOptions::from_url(&url(server, "127.0.0.1", "sslmode=verify-ca"))
        .unwrap()
        .with_root_certificates(server.ca_file());
    round_trip(&open(options).unwrap());
}

#[test]
fn an_authority_that_signed_nothing_is_refused_in_every_mode_that_checks() {
    let Some(server) = server() else { return };
    for mode in ["verify-full", "verify-ca", "require"] {
        let options = PgOptions::from_url(&url(server, "localhost", &format!("sslmode={mode}")))
            .unwrap()
            .with_root_certificates(server.other_ca_file());
        let error = open(options).unwrap_err();
        // Said in the error's own message, and not retryable.
        assert!(error.to_string().contains("UnknownIssuer"), "{mode}: {}", error_chain(&error));
        assert_eq!(error.kind(), curator_session::StoreErrorKind::Other, "{mode}");
    }
}

#[test]
fn require_and_prefer_without_roots_encrypt_without_checking() {
    let Some(server) = server() else { return };
    if std::env::var_os("HOME")
        .is_some_and(|home| std::path::Path::new(&home).join(".postgresql/root.crt").exists())
    {
        eprintln!("skipping: ~/.postgresql/root.crt exists, so libpq's modes check against it");
        return;
    }
    for mode in ["require", "prefer"] {
        let options =
            PgOptions::from_url(&url(server, "127.0.0.1", &format!("sslmode={mode}"))).unwrap();
        round_trip(&open(options).unwrap());
    }
    // Verifying needs authorities to trust: said before any connection is tried.
    let options = PgOptions::from_url(&url(server, "localhost", "sslmode=verify-full")).unwrap();
    match open(options) {
        Err(Error::Config { reason, .. }) => assert!(reason.contains("sslrootcert"), "{reason}"),
        other => panic!("expected a Config error, got {other:?}"),
    }
}

#[test]
fn unreadable_root_certificates_are_config_errors_naming_the_file() {
    let Some(server) = server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    for file in [dir.path().join("missing.pem"), empty] {
        let options = PgOptions::from_url(&url(server, "localhost", "sslmode=verify-full"))
            .unwrap()
            .with_root_certificates(&file);
        match open(options) {
            Err(Error::Config { reason, .. }) => {
                assert!(reason.contains(&*file.to_string_lossy()), "{reason}");
            }
            other => panic!("expected a Config error for {}, got {other:?}", file.display()),
        }
    }
}
