//! Opening: connection settings, a newer or foreign schema refused before anything is
//! written, concurrent creators, the version recorded.

use curator_postgres::{Error, PG_SCHEMA_VERSION, PgOptions, PgStore, RootCertificates, SslMode};
use curator_session::{SessionStore, StoreErrorKind};
use curator_testkit::postgres::PgServer;

use crate::support::fresh_schema;

fn options(server: &PgServer, schema: &str) -> PgOptions {
    PgOptions::from_url(&server.url()).unwrap().with_schema(schema).unwrap()
}

#[test]
fn a_new_schema_is_created_with_its_version_and_reopened_without_writes() {
    let Some(server) = PgServer::shared() else { return };
    let schema = fresh_schema();
    let store = PgStore::open(options(server, &schema)).unwrap();
    assert_eq!(store.schema(), schema);
    let version = server.psql("postgres", &format!("SELECT version FROM {schema}.schema_version"));
    assert_eq!(version, PG_SCHEMA_VERSION.to_string());
    // Reopening a current schema writes nothing: it works for a user who may only read.
    server.psql(
        "postgres",
        &format!(
            "DROP ROLE IF EXISTS reader_{schema}; CREATE ROLE reader_{schema} LOGIN;
             GRANT USAGE ON SCHEMA {schema} TO reader_{schema};
             GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO reader_{schema};"
        ),
    );
    let url = format!("postgres://reader_{schema}@127.0.0.1:{}/postgres", server.port());
    let reader =
        PgStore::open(PgOptions::from_url(&url).unwrap().with_schema(&schema).unwrap()).unwrap();
    assert!(reader.evaluations().unwrap().is_empty());
    let e = reader.put_checkpoint("x", &serde_json::json!(1)).unwrap_err();
    assert!(
        matches!(e, curator_session::Error::Store { kind: StoreErrorKind::ReadOnly, .. }),
        "{e:?}"
    );
}

#[test]
fn a_newer_schema_is_refused_and_left_alone() {
    let Some(server) = PgServer::shared() else { return };
    let schema = fresh_schema();
    drop(PgStore::open(options(server, &schema)).unwrap());
    server.psql("postgres", &format!("UPDATE {schema}.schema_version SET version = 99"));
    match PgStore::open(options(server, &schema)) {
        Err(Error::NewerSchema { found: 99, supported, .. }) => {
            assert_eq!(supported, PG_SCHEMA_VERSION);
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    let version = server.psql("postgres", &format!("SELECT version FROM {schema}.schema_version"));
    assert_eq!(version, "99");
    let e: curator_session::Error = PgStore::open(options(server, &schema)).unwrap_err().into();
    assert!(matches!(e, curator_session::Error::Incompatible { backend: "postgres", .. }));
}

#[test]
fn another_applications_schema_is_refused_and_left_alone() {
    let Some(server) = PgServer::shared() else { return };
    let schema = fresh_schema();
    server.psql(
        "postgres",
        &format!("CREATE SCHEMA {schema}; CREATE TABLE {schema}.orders (id int); CREATE TABLE {schema}.entries (x int);"),
    );
    match PgStore::open(options(server, &schema)) {
        Err(Error::ForeignSchema { tables: 2, .. }) => {}
        other => panic!("expected ForeignSchema, got {other:?}"),
    }
    let tables = server
        .psql("postgres", &format!("SELECT count(*) FROM pg_tables WHERE schemaname = '{schema}'"));
    assert_eq!(tables, "2", "nothing was created");
}

#[test]
fn workers_creating_one_schema_at_once_all_open_it() {
    let Some(server) = PgServer::shared() else { return };
    let schema = fresh_schema();
    let opened: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| PgStore::open(options(server, &schema)).map(drop)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for result in opened {
        result.unwrap();
    }
}

#[test]
fn unreachable_servers_and_bad_settings_are_typed() {
    // A port nothing listens on: the server is unavailable, which is worth retrying.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://curator@127.0.0.1:{port}/postgres?connect_timeout=2");
    let e = PgStore::connect(&url).unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::Unavailable, "{e:?}");
    assert!(e.is_retryable());
    assert!(matches!(
        PgOptions::from_url("postgres://h/db?sslmode=sometimes"),
        Err(Error::Config { .. })
    ));
    assert!(matches!(
        PgOptions::from_url("postgres://u@h/db").unwrap().with_schema("a-b"),
        Err(Error::Config { .. })
    ));
}

#[test]
fn the_url_says_where_and_the_pool_size_is_kept() {
    let options =
        PgOptions::from_url("postgres://agent@db.internal:6543/records?connect_timeout=3")
            .unwrap()
            .with_pool_size(0);
    assert_eq!(options.pool_size(), 1, "a pool has at least one connection");
    assert_eq!(options.connect_timeout(), std::time::Duration::from_secs(3));
    assert_eq!(options.schema(), curator_postgres::DEFAULT_SCHEMA);
}

#[test]
fn libpq_tls_settings_are_read_from_urls_and_key_value_strings() {
    let tls = cfg!(feature = "tls");
    for (text, mode, roots) in [
        (
            "postgres://a@h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
            SslMode::VerifyFull,
            Some(RootCertificates::File("/etc/ca.pem".into())),
        ),
        (
            "host=h user=a sslmode=verify-ca sslrootcert=system",
            SslMode::VerifyCa,
            Some(RootCertificates::System),
        ),
        ("postgresql://a@h/db?sslmode=require", SslMode::Require, None),
    ] {
        match PgOptions::from_url(text) {
            Ok(options) => {
                assert!(tls, "{text}: a build without TLS must refuse {mode}");
                assert_eq!(options.ssl_mode(), mode, "{text}");
                if std::env::var_os("PGSSLROOTCERT").is_none() {
                    assert_eq!(options.root_certificates(), roots.as_ref(), "{text}");
                }
            }
            Err(Error::Config { reason, .. }) => {
                assert!(!tls && reason.contains("`tls` feature"), "{text}: {reason}");
            }
            Err(other) => panic!("{text}: {other:?}"),
        }
    }
    // Modes that do not insist on TLS are read by every build; `allow` reads as `prefer`.
    for (text, mode) in [
        ("postgres://a@h/db?sslmode=disable", SslMode::Disable),
        ("postgres://a@h/db?sslmode=allow", SslMode::Prefer),
        ("host=h user=a", SslMode::Prefer),
    ] {
        assert_eq!(PgOptions::from_url(text).unwrap().ssl_mode(), mode, "{text}");
    }
    let e = PgOptions::from_url("host=h user=a sslmode=verify-everything").unwrap_err();
    assert!(e.to_string().contains("verify-everything"), "{e}");
}

#[test]
fn errors_say_what_postgresql_said() {
    let Some(server) = PgServer::shared() else { return };
    let error = PgStore::connect(&server.url_for("no_such_database")).unwrap_err();
    assert!(error.to_string().contains("database \"no_such_database\" does not exist"), "{error}");
}

#[test]
fn the_store_works_and_drops_inside_a_tokio_runtime() {
    // The blocking client panics when it blocks on a runtime's thread; the store runs its
    // calls (and the goodbyes of its connections) on a thread of its own there.
    let Some(server) = PgServer::shared() else { return };
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let store = PgStore::open(options(server, &fresh_schema())).unwrap();
        assert!(store.evaluations().unwrap().is_empty());
        store.put_checkpoint("x", &serde_json::json!(1)).unwrap();
        drop(store);
    });
}

/// Every schema of `database` and its tables, as the catalog lists them.
fn catalog(server: &PgServer, database: &str) -> String {
    server.psql(
        database,
        "SELECT string_agg(schema_name, ',' ORDER BY schema_name) FROM information_schema.schemata
         UNION ALL
         SELECT string_agg(table_schema || '.' || table_name, ',' ORDER BY table_schema, table_name)
         FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
    )
}

#[test]
fn a_read_only_store_never_creates_a_schema() {
    let Some(server) = PgServer::shared() else { return };
    // A database of its own: other tests create schemas in `postgres` meanwhile.
    let database = format!("empty_{}", fresh_schema());
    server.psql("postgres", &format!("CREATE DATABASE {database}"));
    let options = || PgOptions::from_url(&server.url_for(&database)).unwrap();
    let before = catalog(server, &database);
    match PgStore::open_read_only(options()) {
        Err(e @ Error::NoSchema { .. }) => {
            assert_eq!(
                e.to_string(),
                format!(
                    "no curator schema `curator` in database `{database}`: not a curator store (nothing was created)"
                )
            );
            assert_eq!(e.kind(), StoreErrorKind::NotFound);
        }
        other => panic!("expected NoSchema, got {other:?}"),
    }
    assert_eq!(catalog(server, &database), before, "nothing was created");
    // An empty schema (no tables) is no curator store either, and is left empty.
    server.psql(&database, "CREATE SCHEMA curator");
    let before = catalog(server, &database);
    assert!(matches!(PgStore::open_read_only(options()), Err(Error::NoSchema { .. })));
    assert_eq!(catalog(server, &database), before);
}

#[test]
fn a_read_only_store_refuses_foreign_and_newer_schemas() {
    let Some(server) = PgServer::shared() else { return };
    let foreign = fresh_schema();
    server.psql(
        "postgres",
        &format!("CREATE SCHEMA {foreign}; CREATE TABLE {foreign}.orders (id int)"),
    );
    assert!(matches!(
        PgStore::open_read_only(options(server, &foreign)),
        Err(Error::ForeignSchema { tables: 1, .. })
    ));
    let newer = fresh_schema();
    drop(PgStore::open(options(server, &newer)).unwrap());
    server.psql("postgres", &format!("UPDATE {newer}.schema_version SET version = 99"));
    assert!(matches!(
        PgStore::open_read_only(options(server, &newer)),
        Err(Error::NewerSchema { found: 99, .. })
    ));
}

#[test]
fn a_read_only_store_reads_and_the_server_refuses_its_writes() {
    let Some(server) = PgServer::shared() else { return };
    let schema = fresh_schema();
    let writer = PgStore::open(options(server, &schema)).unwrap();
    let key = curator_session::SessionKey::new("alice");
    let evaluation = curator_model::EvaluationId::new();
    let entry = curator_model::Entry::builder(evaluation, curator_model::Message::system("s"))
        .build()
        .unwrap();
    writer.append(&key, &entry).unwrap();
    writer.put_checkpoint("loop", &serde_json::json!({"i": 1})).unwrap();

    let reader = PgStore::open_read_only(options(server, &schema).with_pool_size(2)).unwrap();
    assert_eq!(reader.evaluations_of(&key).unwrap().len(), 1);
    assert_eq!(reader.entries(evaluation).unwrap(), vec![entry.clone()]);
    assert_eq!(reader.snapshot().unwrap(), writer.snapshot().unwrap());
    let before = server.psql("postgres", &format!("SELECT count(*) FROM {schema}.entries"));
    let other = curator_model::Entry::builder(
        curator_model::EvaluationId::new(),
        curator_model::Message::system("s"),
    )
    .build()
    .unwrap();
    for refused in [
        reader.append(&key, &other).map(drop),
        reader.append_batch(&key, std::slice::from_ref(&other)).map(drop),
        reader.put_checkpoint("loop", &serde_json::json!(2)).map(drop),
    ] {
        let e = refused.unwrap_err();
        assert!(
            matches!(e, curator_session::Error::Store { kind: StoreErrorKind::ReadOnly, .. }),
            "{e:?}"
        );
    }
    assert_eq!(server.psql("postgres", &format!("SELECT count(*) FROM {schema}.entries")), before);
    assert_eq!(reader.checkpoint("loop").unwrap().unwrap().version, 1);
}
