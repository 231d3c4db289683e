//! `replay --db`, `inspect` and `trace` on a PostgreSQL database named by its URL, against a
//! real server that the test harness starts.

use crate::{curator, fails_with, keyed_runs, text};
use curator_testkit::postgres::PgServer;

#[test]
fn replay_inspect_and_trace_take_a_postgres_url() {
    let Some(server) = PgServer::shared() else { return };
    server.psql("postgres", "CREATE DATABASE cli_records");
    let url = server.url_for("cli_records");
    let dir = tempfile::tempdir().unwrap();
    let file = keyed_runs(dir.path());
    let out = curator(&["replay", file.to_str().unwrap(), "--db", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("recorded 2 conversations into postgres://"),
        "{}",
        text(&out.stderr)
    );
    // Recording again skips what is there.
    let again = curator(&["replay", file.to_str().unwrap(), "--db", &url]);
    assert!(text(&again.stderr).contains("2 already there, skipped"), "{}", text(&again.stderr));

    let all = text(&curator(&["inspect", &url]).stdout);
    assert!(all.contains("2 evaluations"), "{all}");
    let alice = text(&curator(&["inspect", &url, "--key", "alice"]).stdout);
    assert!(alice.contains("1 evaluation of session `alice`") && !alice.contains("bob"), "{alice}");
    let bob = text(&curator(&["trace", &url, "--key", "bob"]).stdout);
    assert!(bob.contains("a task for bob") && !bob.contains("alice"), "{bob}");

    // A password never appears in what the command prints.
    let secret = format!("postgres://curator:hunter2@127.0.0.1:{}/cli_records", server.port());
    let out = curator(&["inspect", &secret]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("hunter2") && text(&out.stdout).contains(":***@"));
    fails_with(
        &curator(&["trace", &url, "--key", "carol"]),
        2,
        "no evaluation or loop session of session `carol`",
    );

    // Pruning: a dry run (read-only transactions) says what a prune then deletes.
    let dry = curator(&["prune", &url, "--key", "alice", "--dry-run"]);
    assert!(text(&dry.stdout).contains("would delete 1 evaluation"), "{}", text(&dry.stderr));
    let done = curator(&["prune", &url, "--key", "alice", "--vacuum"]);
    assert!(text(&done.stdout).contains("deleted 1 evaluation"), "{}", text(&done.stderr));
    assert!(text(&done.stdout).contains("vacuumed"), "{}", text(&done.stdout));
    let all = text(&curator(&["inspect", &url]).stdout);
    assert!(all.contains("1 evaluation") && !all.contains("alice"), "{all}");
}

#[test]
fn the_password_comes_from_pgpassfile_or_the_home_folders_pgpass() {
    use std::os::unix::fs::PermissionsExt as _;

    let Some(server) = PgServer::shared() else { return };
    let role = format!("cli_pgpass_{}", std::process::id());
    server.password_role(&role, "pa:ss");
    server.psql("postgres", &format!("CREATE DATABASE {role} OWNER {role}"));
    let url = format!("postgres://{role}@127.0.0.1:{}/{role}", server.port());
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let pgpass = dir.path().join("pgpass");
    std::fs::write(&pgpass, format!("127.0.0.1:{}:{role}:{role}:pa\\:ss\n", server.port()))
        .unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let runs = keyed_runs(dir.path());
    // A child process of its own environment: no password but the files named here.
    let run = |args: &[&str], passfile: Option<&std::path::Path>| {
        let mut command = crate::command();
        command
            .args(args)
            .env_remove("PGPASSWORD")
            .env_remove("PGPASSFILE")
            .env("HOME", home.path());
        if let Some(file) = passfile {
            command.env("PGPASSFILE", file);
        }
        command.output().unwrap()
    };
    let out = run(&["replay", runs.to_str().unwrap(), "--db", &url], Some(&pgpass));
    assert!(out.status.success(), "{}", text(&out.stderr));
    // No password anywhere: refused.
    fails_with(&run(&["inspect", &url], None), 2, "password missing");
    // `~/.pgpass`, read when PGPASSFILE is not set.
    std::fs::copy(&pgpass, home.path().join(".pgpass")).unwrap();
    let out = run(&["inspect", &url], None);
    assert!(text(&out.stdout).contains("2 evaluations"), "{}", text(&out.stderr));
    // A file others may read is ignored.
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    fails_with(&run(&["inspect", &url], Some(&pgpass)), 2, "password missing");
}
