//! Writing to stdout and stderr without ever panicking: a closed pipe ends the command quietly.
//!
//! `println!` panics when stdout is a pipe whose reader has gone (`curator replay --json |
//! head`); every line the commands print goes through [`out`] instead, which returns the
//! `io::Error`, and `main` turns a broken pipe into a quiet exit with status 0, as ripgrep
//! does. Notes on stderr ([`note!`]) ignore write errors: there is nobody left to tell.

use std::io::{self, Write};

/// Writes formatted text to stdout.
pub(crate) fn out(args: std::fmt::Arguments<'_>) -> io::Result<()> {
    io::stdout().lock().write_fmt(args)
}

/// Writes raw text to stdout.
pub(crate) fn out_str(text: &str) -> io::Result<()> {
    io::stdout().lock().write_all(text.as_bytes())
}

/// An error and its causes, each said once: `{:#}` of an [`anyhow::Error`] joins every
/// cause's text, and libraries often repeat their source's text in their own (SQLite's
/// "database disk image is malformed" then "Error code 11: database disk image is
/// malformed"); a cause whose text is already said, or that only prefixes what was said,
/// is left out. The JSON parser's message for a lone UTF-16 surrogate is explained.
#[derive(Debug)]
pub(crate) struct Chain<'e>(pub(crate) &'e anyhow::Error);

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut said = String::new();
        let mut last = String::new();
        for cause in self.0.chain() {
            let text = cause.to_string();
            if text.is_empty()
                || said.contains(&text)
                || (!last.is_empty() && text.ends_with(&last))
            {
                continue;
            }
            if !said.is_empty() {
                said.push_str(": ");
            }
            said.push_str(&text);
            last = text;
        }
        f.write_str(&said)?;
        // The JSON parser's words for a lone UTF-16 surrogate (`"\ud800"` with no pair)
        // do not say what is wrong.
        if said.contains("hex escape") {
            f.write_str(
                " (a `\\u` escape is four hex digits, and a surrogate such as `\\ud800` must be followed by the `\\udc00`-`\\udfff` escape that completes it: alone it is not text)",
            )?;
        }
        Ok(())
    }
}

/// Whether an error (or one of its causes) is a write into a closed pipe: an `io::Error`, or
/// a `serde_json::Error` from writing JSON straight into stdout (which keeps the `io::Error`
/// inside, out of the error chain).
pub(crate) fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        let kind = match cause.downcast_ref::<io::Error>() {
            Some(e) => Some(e.kind()),
            None => {
                cause.downcast_ref::<serde_json::Error>().and_then(serde_json::Error::io_error_kind)
            }
        };
        kind == Some(io::ErrorKind::BrokenPipe)
    })
}

/// Whether stdout is a pipe (or socket) whose reader has gone, asked without writing: a
/// zero-timeout `poll`, which reports an error condition on a pipe with no reader left. A
/// command that prints its results only at the end (`curator replay | head -1`) checks it
/// between conversations, to stop instead of working for nobody.
#[cfg(unix)]
pub(crate) fn stdout_closed() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};

    let stdout = io::stdout();
    let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
    poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: 0 }))
        .is_ok_and(|_| fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP))
}

/// Whether stdout's reader has gone; unknown (so `false`) off Unix.
#[cfg(not(unix))]
pub(crate) fn stdout_closed() -> bool {
    false
}

/// Prints a line to stdout, returning the `io::Result` (use with `?`).
macro_rules! outln {
    () => { $crate::output::out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Prints a line to stderr, ignoring a closed stderr.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Prints to stderr without a newline (progress bars), ignoring a closed stderr.
macro_rules! note_inline {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, $($arg)*);
        let _ = stderr.flush();
    }};
}

pub(crate) use {note, note_inline, outln};

/// `n thing` or `n things`.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The peak resident memory of this process, from `/proc/self/status` (`VmHWM`), in kB.
///
/// Printed on stderr at exit when `CURATOR_PEAK_RSS` is set, so that a test can measure the
/// memory a real run takes on a large input.
pub(crate) fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_is_singular_for_one() {
        assert_eq!(plural(1, "conversation", "conversations"), "1 conversation");
        assert_eq!(plural(0, "conversation", "conversations"), "0 conversations");
        assert_eq!(plural(2, "call", "calls"), "2 calls");
    }

    #[test]
    fn a_broken_pipe_is_recognised_through_context() {
        let error = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe))
            .context("cannot write the table");
        assert!(is_broken_pipe(&error));
        assert!(!is_broken_pipe(&anyhow::anyhow!("other")));
        let json = serde_json::Error::io(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(is_broken_pipe(&anyhow::Error::from(json)));
    }

    #[test]
    fn each_cause_is_said_once() {
        // A source whose text its error repeats, then a prefix of the same text.
        let source = anyhow::anyhow!("Error code 11: database disk image is malformed");
        let error = source.context("database disk image is malformed").context("reading rows");
        assert_eq!(Chain(&error).to_string(), "reading rows: database disk image is malformed");
        let repeated = anyhow::anyhow!("OpenAI answered HTTP 500 (4 attempts)")
            .context("OpenAI answered HTTP 500 (4 attempts)");
        assert_eq!(Chain(&repeated).to_string(), "OpenAI answered HTTP 500 (4 attempts)");
        let plain = anyhow::anyhow!("not found").context("cannot open s.db");
        assert_eq!(Chain(&plain).to_string(), "cannot open s.db: not found");
    }
}
