//! `curator prune`: retention. Deletes a session, all but the last evaluations of each
//! session, or what is older than a date, never a session a worker holds; optionally gives
//! the space back.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use curator::conversation_loop::{ErasedLoops, erase_loops};
use curator::postgres::{PgOptions, PgStore};
use curator::session::{ClaimStore, Prune, Pruned, SessionKey, SessionStore, prune};

use crate::output::plural;
use crate::session_file;

/// What to prune, from the command line.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub(crate) key: Option<String>,
    pub(crate) keep_last: Option<usize>,
    pub(crate) older_than: Option<String>,
}

impl Rule {
    fn prune(&self, now: DateTime<Utc>) -> Result<Prune> {
        match (&self.key, self.keep_last, &self.older_than) {
            (Some(key), None, None) => {
                let key = SessionKey::new(key.as_str());
                key.check()?;
                Ok(Prune::Session(key))
            }
            (None, Some(keep), None) => Ok(Prune::KeepLast(keep)),
            (None, None, Some(when)) => {
                let time = before(when, now)?;
                if time > now {
                    bail!(
                        "--older-than `{when}` is in the future: every evaluation is older than it; \
                         to delete a session say --key, to keep none say --keep-last 0"
                    );
                }
                Ok(Prune::OlderThan(time))
            }
            (None, None, None) => {
                bail!("say what to prune: --key K, --keep-last N or --older-than DATE")
            }
            _ => {
                bail!("--key, --keep-last and --older-than cannot be combined: prune once for each")
            }
        }
    }
}

/// `2026-01-31`, an RFC 3339 time, or an age (`30d`, `12h`, `90m`) before `now`.
fn before(when: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    if let Ok(time) = DateTime::parse_from_rfc3339(when) {
        return Ok(time.with_timezone(&Utc));
    }
    if let Ok(date) = NaiveDate::parse_from_str(when, "%Y-%m-%d") {
        return Ok(date.and_hms_opt(0, 0, 0).map_or(now, |t| t.and_utc()));
    }
    let not_a_when = || {
        anyhow!(
            "--older-than `{when}`: not a date (2026-01-31), a time (RFC 3339) or an age (30d, 12h, 90m)"
        )
    };
    // The unit is the last character, which may be any character of the input: split on
    // a character boundary, and take only plain digits before it (no sign: an age is
    // never negative, and `-5d` would otherwise mean five days from now).
    let (number, seconds) = if let Some(number) = when.strip_suffix('d') {
        (number, 86_400)
    } else if let Some(number) = when.strip_suffix('h') {
        (number, 3_600)
    } else if let Some(number) = when.strip_suffix('m') {
        (number, 60)
    } else {
        return Err(not_a_when());
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_a_when());
    }
    number
        .parse::<i64>()
        .ok()
        .and_then(|count| count.checked_mul(seconds))
        .and_then(TimeDelta::try_seconds)
        .and_then(|age| now.checked_sub_signed(age))
        .ok_or_else(|| anyhow!("--older-than `{when}`: an age reaching before the calendar starts"))
}

/// Prunes the store at `location` by `rule`; `vacuum` gives the space back afterwards.
pub(crate) fn run(location: &Path, rule: &Rule, dry_run: bool, vacuum: bool) -> Result<String> {
    let rule = rule.prune(Utc::now())?;
    let name = session_file::name(location);
    let mut out = String::new();
    let loops;
    // Each store is first opened read-only, which refuses a missing or empty file, another
    // application's database or a database without curator's schema without writing: a
    // prune never creates a store. A dry run reads through it and nothing else.
    let report = if let Some(url) = session_file::url(location) {
        let options = PgOptions::from_url(url)
            .with_context(|| format!("cannot use the database URL {name}"))?
            .with_pool_size(1);
        let reader = PgStore::open_read_only(options)
            .with_context(|| format!("cannot open the database {name}"))?;
        if dry_run {
            loops = loops_of(&reader, &rule, true, &name)?;
            prune(&reader, &rule, true).with_context(|| format!("cannot read {name}"))?
        } else {
            drop(reader);
            let store: PgStore = session_file::open_postgres(url, location)?;
            let report = prune(&store, &rule, false).with_context(|| {
                format!("cannot prune {name} (each session is pruned whole or not at all)")
            })?;
            loops = loops_of(&store, &rule, false, &name)?;
            if vacuum {
                store
                    .vacuum()
                    .with_context(|| format!("cannot vacuum {name} (the prune is done)"))?;
                let _ = writeln!(out, "vacuumed: the space of deleted rows goes to new rows");
            }
            report
        }
    } else {
        let reader = session_file::open_sqlite(location, true)?;
        if dry_run {
            loops = loops_of(&reader, &rule, true, &name)?;
            prune(&reader, &rule, true).with_context(|| format!("cannot read {name}"))?
        } else {
            drop(reader);
            let store = session_file::open_sqlite(location, false)?;
            let report = prune(&store, &rule, false).with_context(|| {
                format!("cannot prune {name} (each session is pruned whole or not at all)")
            })?;
            loops = loops_of(&store, &rule, false, &name)?;
            if vacuum {
                let before = on_disk(location);
                store
                    .vacuum()
                    .with_context(|| format!("cannot vacuum {name} (the prune is done)"))?;
                let after = on_disk(location);
                let _ = writeln!(
                    out,
                    "vacuumed: {before} bytes before, {after} after (the file and its log)"
                );
            }
            report
        }
    };
    let verb = if dry_run { "would delete" } else { "deleted" };
    let mut lines = String::new();
    for saved in &loops.erased {
        let _ = writeln!(
            lines,
            "  {verb} loop session `{}` (loop `{}`, {})",
            SessionKey::new(saved.key.as_str()).shortened(80),
            saved.name,
            plural(saved.state.turns.len(), "turn", "turns")
        );
    }
    for saved in &loops.held {
        let _ = writeln!(
            lines,
            "  left alone: loop session `{}` (loop `{}`) is held by a running loop; prune again later",
            SessionKey::new(saved.key.as_str()).shortened(80),
            saved.name
        );
    }
    Ok(summary(&name, &report) + &lines + &out)
}

/// The loop sessions (`curator chat` among them) of the key a `--key` prune erases, erased
/// (their saved turns are checkpoints, deleted under the loop's claim) or, in a dry run,
/// listed.
fn loops_of<S: SessionStore + ClaimStore>(
    store: &S,
    rule: &Prune,
    dry_run: bool,
    name: &str,
) -> Result<ErasedLoops> {
    let Prune::Session(key) = rule else { return Ok(ErasedLoops::default()) };
    erase_loops(store, key.as_str(), dry_run).with_context(|| {
        format!("cannot erase the loop sessions of `{}` in {name}", key.shortened(80))
    })
}

/// The bytes of a SQLite file and its write-ahead log.
fn on_disk(location: &Path) -> u64 {
    let size = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
    let mut log = location.as_os_str().to_owned();
    log.push("-wal");
    size(location) + size(Path::new(&log))
}

fn summary(name: &str, report: &Pruned) -> String {
    let mut out = String::new();
    let verb = if report.dry_run { "would delete" } else { "deleted" };
    let _ = writeln!(
        out,
        "{name}: {verb} {} ({})",
        plural(report.evaluations.len(), "evaluation", "evaluations"),
        plural(usize::try_from(report.messages).unwrap_or(usize::MAX), "message", "messages")
    );
    for e in &report.evaluations {
        let _ = writeln!(
            out,
            "  {}  {}  {} messages  last {}",
            e.evaluation_id,
            e.key.shortened(80),
            e.messages,
            e.last_at.format("%Y-%m-%d %H:%M:%S")
        );
    }
    if !report.heads.is_empty() {
        let _ = writeln!(
            out,
            "  {verb} {} (the Python sessions' records of pops and clears)",
            plural(report.heads.len(), "item log head", "item log heads")
        );
    }
    for key in &report.claimed {
        let _ = writeln!(
            out,
            "  left alone: session `{}` is held by a worker (a live claim); prune again later",
            key.shortened(80)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_dates_and_times_are_read() {
        let now = DateTime::parse_from_rfc3339("2026-11-24T12:00:00Z").unwrap().with_timezone(&Utc);
        assert_eq!(before("30d", now).unwrap().to_rfc3339(), "2026-10-25T12:00:00+00:00");
        assert_eq!(before("12h", now).unwrap().to_rfc3339(), "2026-11-24T00:00:00+00:00");
        assert_eq!(before("2026-01-31", now).unwrap().to_rfc3339(), "2026-01-31T00:00:00+00:00");
        assert!(before("soon", now).unwrap_err().to_string().contains("not a date"));
    }

    /// An age that is negative, signed, too large for the calendar, or ends in a character
    /// of several bytes is refused by name, never a panic nor a time in the future.
    #[test]
    fn a_time_in_the_future_is_refused() {
        let now = Utc::now();
        let rule = |when: &str| Rule { key: None, keep_last: None, older_than: Some(when.into()) };
        let err = rule("2999-01-01").prune(now).unwrap_err().to_string();
        assert!(err.contains("is in the future"), "{err}");
        assert!(rule("2000-01-01").prune(now).is_ok());
        assert!(rule("0d").prune(now).is_ok());
    }

    #[test]
    fn odd_ages_are_refused() {
        #[track_caller]
        fn check(when: &str, expected: &str) {
            let now = DateTime::parse_from_rfc3339("2026-11-24T12:00:00Z").unwrap();
            let error = before(when, now.with_timezone(&Utc)).unwrap_err().to_string();
            assert!(error.contains(expected), "{when}: {error}");
            assert!(error.contains(&format!("`{when}`")), "{when}: {error}");
        }
        check("99999999999d", "before the calendar starts");
        check("9223372036854775807m", "before the calendar starts");
        check("-5d", "not a date");
        check("+5d", "not a date");
        check("5\u{e9}", "not a date");
        check("\u{e9}", "not a date");
        check("d", "not a date");
        check("", "not a date");
        check("5 d", "not a date");
    }
}
