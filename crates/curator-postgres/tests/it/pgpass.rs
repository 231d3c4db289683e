//! The password file (libpq's `passfile`, `PGPASSFILE`, `~/.pgpass`), against a server that
//! asks the role for its password. (`PGPASSFILE` and `~/.pgpass` are read by the CLI's
//! tests, whose child processes get their own environment.)

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use curator_postgres::{PgOptions, PgStore};
use curator_session::SessionStore;
use curator_testkit::postgres::PgServer;

use crate::support::fresh_schema;

fn write(path: &Path, lines: &str, mode: u32) {
    std::fs::write(path, lines).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_password_file_gives_the_password_as_libpq_reads_it() {
    let Some(server) = PgServer::shared() else { return };
    if std::env::var_os("PGPASSWORD").is_some() {
        return; // The variable gives a password before any file.
    }
    let role = format!("pgpass_{}", std::process::id());
    // A colon and a backslash in the password, escaped in the file.
    server.password_role(&role, r"s3cr:et\x");
    server.psql("postgres", &format!("GRANT CREATE ON DATABASE postgres TO {role}"));
    let port = server.port();
    let url = format!("postgres://{role}@127.0.0.1:{port}/postgres");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pgpass");
    let lines = format!(
        "# other servers first\n127.0.0.1:1:*:*:wrong\n127.0.0.1:{port}:postgres:{role}:s3cr\\:et\\\\x\n*:*:*:*:wrong\n"
    );
    let open = |options: PgOptions| PgStore::open(options.with_schema(&fresh_schema()).unwrap());

    write(&file, &lines, 0o600);
    let store = open(PgOptions::from_url(&url).unwrap().with_password_file(&file)).unwrap();
    assert!(store.evaluations().unwrap().is_empty());
    // Named in the URL, as libpq's `passfile`.
    let named = format!("{url}?passfile={}", file.display());
    open(PgOptions::from_url(&named).unwrap()).unwrap();
    // No file, or no line for this server: no password, refused.
    let none = dir.path().join("none");
    let e = open(PgOptions::from_url(&url).unwrap().with_password_file(&none)).unwrap_err();
    assert!(e.to_string().contains("password"), "{e}");
    // A password in the URL comes first.
    let given = format!("postgres://{role}:wrong@127.0.0.1:{port}/postgres");
    let e = open(PgOptions::from_url(&given).unwrap().with_password_file(&file)).unwrap_err();
    assert!(e.to_string().contains("password authentication failed"), "{e}");
    // A file that others may read is ignored, as libpq ignores it.
    write(&file, &lines, 0o644);
    let e = open(PgOptions::from_url(&url).unwrap().with_password_file(&file)).unwrap_err();
    assert!(e.to_string().contains("password"), "{e}");
}
