//! The PostgreSQL store: workers on many machines share one record, and a claim keeps two
//! of them from driving one session at once.
//!
//! Run it against a server with `CURATOR_PG_URL=postgres://user@host/db cargo run -p curator
//! --features postgres --example postgres` (or with the standard `PGHOST`, `PGUSER`...
//! variables). Without either, it says so and exits.

#![expect(clippy::print_stdout, reason = "an example shows what happens")]

use std::time::Duration;

use curator::postgres::PgOptions;
use curator::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let set = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let options = match (set("CURATOR_PG_URL"), set("PGHOST")) {
        (Some(url), _) => PgOptions::from_url(&url)?,
        (None, Some(_)) => PgOptions::from_env()?,
        (None, None) => {
            println!("skipping: set CURATOR_PG_URL (or PGHOST...) to a PostgreSQL server");
            return Ok(());
        }
    };
    // A schema of its own (`DROP SCHEMA curator_example CASCADE` when done), so that the
    // example never touches other tables; a key of its own on every run.
    let store = PgStore::open(options.with_schema("curator_example")?)?;
    let key = SessionKey::new(format!("ticket-{}", std::process::id()));

    let claim = store.claim(&key, Duration::from_secs(30))?;
    match store.claim(&key, Duration::from_secs(30)) {
        Err(curator::session::Error::Claimed { .. }) => {
            println!("a second worker is refused the claim");
        }
        other => println!("unexpected: {other:?}"),
    }
    let mut c = Conversation::open(
        &store,
        key.clone(),
        PromptRef::new("support", "v1"),
        Message::system("You answer tickets."),
    )?;
    c.add_user("My invoice is wrong.")?;
    let calls = c.record_assistant(Message::assistant_with_calls(
        None,
        vec![ToolCall::new("c1", "lookup_invoice", r#"{"ticket": 7}"#)],
    ))?;
    claim.renew()?; // still this worker's session: run the call
    c.record_tool_result(calls[0].id(), Ok::<_, String>("invoice 7: EUR 90, should be EUR 80"))?;
    c.record_assistant(Message::assistant("I corrected it to EUR 80."))?;
    drop(c);
    claim.release()?;

    let resumed = Conversation::resume(&store, key.clone(), &PromptRef::new("support", "v1"))?;
    let next = match resumed.next_step() {
        Action::Finished(_) => "Finished",
        Action::CallModel => "CallModel",
        Action::Run(_) => "Run",
        _ => "WaitForUser",
    };
    println!("resumed by another worker: {} messages, next step {next}", resumed.history().len());
    Ok(())
}
