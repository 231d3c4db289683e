//! `inspect` and `trace` only read: a SQLite file or a PostgreSQL database that is not a
//! curator store is refused by name and left exactly as it was (its bytes, the files beside
//! it, the database's catalog).

use std::path::Path;

use curator_testkit::postgres::PgServer;

use crate::{curator, fails_with};

/// The files of `dir` with their bytes, by name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// The commands that read a store, on `store`.
fn reading_commands(store: &str) -> [Vec<&str>; 4] {
    [
        vec!["inspect", store],
        vec!["inspect", store, "--key", "alice"],
        vec!["trace", store],
        vec!["trace", store, "--key", "alice", "--view", "curated"],
    ]
}

#[test]
fn inspect_and_trace_leave_a_foreign_or_empty_sqlite_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    // Another application's SQLite file (a table `orders` with two rows), copied so that the
    // fixture itself is never at risk.
    let foreign = dir.path().join("orders.sqlite");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/orders.sqlite"), &foreign)
        .unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, "").unwrap();
    let before = files(dir.path());
    for (file, message) in [
        (&foreign, "orders.sqlite: a SQLite database of another application"),
        (&empty, "empty.db: opening read-only: not found: the file is empty"),
    ] {
        for command in reading_commands(file.to_str().unwrap()) {
            fails_with(&curator(&command), 2, message);
        }
        for dry in [true, false] {
            let mut prune = vec!["prune", file.to_str().unwrap(), "--key", "alice"];
            prune.extend(dry.then_some("--dry-run"));
            fails_with(&curator(&prune), 2, message);
        }
    }
    // The same files (no `-wal`, `-shm` or `-journal` left beside them), byte for byte.
    assert!(files(dir.path()) == before, "a reading command changed the folder");
}

/// The schemas and tables of `database` and how many relations it holds, as its catalog
/// lists them.
fn catalog(server: &PgServer, database: &str) -> String {
    server.psql(
        database,
        "SELECT string_agg(schema_name, ',' ORDER BY schema_name) FROM information_schema.schemata
         UNION ALL
         SELECT string_agg(table_schema || '.' || table_name, ',' ORDER BY table_schema, table_name)
         FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')
         UNION ALL
         SELECT count(*)::text FROM pg_class",
    )
}

#[test]
fn inspect_and_trace_create_nothing_in_a_postgres_database_without_curators_schema() {
    let Some(server) = PgServer::shared() else { return };
    let empty = format!("cli_empty_{}", std::process::id());
    let foreign = format!("cli_foreign_{}", std::process::id());
    server.psql("postgres", &format!("CREATE DATABASE {empty}"));
    server.psql("postgres", &format!("CREATE DATABASE {foreign}"));
    // Another application happens to use a schema named `curator`.
    server.psql(&foreign, "CREATE SCHEMA curator; CREATE TABLE curator.orders (id int)");
    for (database, message) in [
        (
            &empty,
            format!(
                "no curator schema `curator` in database `{empty}`: not a curator store (nothing was created)"
            ),
        ),
        (&foreign, "schema `curator` holds 1 tables of another application".to_owned()),
    ] {
        let before = catalog(server, database);
        let url = server.url_for(database);
        for command in reading_commands(&url) {
            fails_with(&curator(&command), 2, &message);
        }
        // Nor does a prune, which writes only into a curator store.
        for dry in [true, false] {
            let mut prune = vec!["prune", url.as_str(), "--key", "alice"];
            prune.extend(dry.then_some("--dry-run"));
            fails_with(&curator(&prune), 2, &message);
        }
        assert_eq!(catalog(server, database), before, "{database}: nothing was created");
    }
}

/// A password given on the command line (a libpq connection string taken for a file, a model
/// server's URL) is never printed back.
#[test]
fn passwords_on_the_command_line_are_not_printed() {
    let conninfo = "host=db1 user=app password=S3cretPw dbname=x";
    for args in [
        vec!["inspect", conninfo],
        vec!["trace", conninfo],
        vec!["prune", conninfo, "--keep-last", "1"],
    ] {
        let output = curator(&args);
        fails_with(&output, 2, "password=***");
        let all = format!("{}{}", crate::text(&output.stdout), crate::text(&output.stderr));
        assert!(!all.contains("S3cretPw"), "{args:?}: {all}");
    }
    let output = curator(&["chat", "--base-url", "htp://bob:S3cret@host", "--model", "m"]);
    fails_with(&output, 2, "htp://bob:***@host");
    assert!(!crate::text(&output.stderr).contains("S3cret@"));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let banner = std::process::Command::new(env!("CARGO_BIN_EXE_curator"))
        .args(["chat", "--base-url", "http://bob:S3cret@127.0.0.1:9", "--model", "m", "--db"])
        .arg(&db)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let shown = crate::text(&banner.stdout);
    assert!(shown.contains("http://bob:***@127.0.0.1:9"), "{shown}");
    assert!(!shown.contains("S3cret"), "{shown}");
}
