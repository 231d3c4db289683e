//! libpq's password file (`~/.pgpass`, `PGPASSFILE`, `passfile`): the password of a
//! connection that gives none, read line by line exactly as libpq reads it.
//!
//! Each line is `hostname:port:database:username:password`; a field that is only `*`
//! matches anything, `\:` and `\\` stand for `:` and `\`, lines starting with `#` are
//! comments, and the first line that matches gives the password. A file that others may read
//! or write (any group or world permission bit) is ignored, as libpq ignores it: a password
//! file that leaks is not one to trust.

use std::borrow::Cow;
use std::path::Path;

/// The socket folder this crate (like libpq as Debian builds it) connects to when no host is
/// given; a connection through it matches the `localhost` lines of a password file, as in
/// libpq.
pub(crate) const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// What the lines of a password file are matched against: one host of a connection.
#[derive(Clone, Debug)]
pub(crate) struct Target<'a> {
    /// The host name, an address, or a socket folder (the default one as `localhost`).
    pub(crate) host: Cow<'a, str>,
    pub(crate) port: u16,
    pub(crate) database: &'a str,
    pub(crate) user: &'a str,
}

/// What looking in a password file found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// The password of the first line that matches (empty when that line's is).
    Found(Vec<u8>),
    /// There is no file, or no line matches.
    NotFound,
    /// The file was not read, for this reason (libpq's).
    Ignored(&'static str),
}

/// The rest of `line` after its next field, when that field matches `token` (libpq's
/// `pwdfMatchesString`): `*` alone matches anything, a backslash makes the next byte
/// literal, and an unescaped `:` ends the field.
fn field<'l>(line: &'l [u8], token: &[u8]) -> Option<&'l [u8]> {
    if let Some(rest) = line.strip_prefix(b"*:") {
        return Some(rest);
    }
    let (mut rest, mut token) = (line, token);
    loop {
        let (escaped, byte, after) = match rest {
            [b'\\', byte, after @ ..] => (true, *byte, after),
            [byte, after @ ..] => (false, *byte, after),
            [] => return None,
        };
        if byte == b':' && !escaped && token.is_empty() {
            return Some(after);
        }
        let (&expected, tail) = token.split_first()?;
        if byte != expected {
            return None;
        }
        (rest, token) = (after, tail);
    }
}

/// The password at the start of `rest`: up to the first unescaped `:`, escapes removed.
fn password(rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rest.len());
    let mut bytes = rest.iter().copied();
    while let Some(byte) = bytes.next() {
        match byte {
            b':' => break,
            // A backslash at the very end stays, as in libpq.
            b'\\' => out.push(bytes.next().unwrap_or(b'\\')),
            byte => out.push(byte),
        }
    }
    out
}

/// The password the first matching line of `contents` gives `target`.
pub(crate) fn find(contents: &[u8], target: &Target<'_>) -> Option<Vec<u8>> {
    let port = target.port.to_string();
    let tokens = [
        target.host.as_bytes(),
        port.as_bytes(),
        target.database.as_bytes(),
        target.user.as_bytes(),
    ];
    contents.split(|&b| b == b'\n').find_map(|line| {
        let end = line.iter().rposition(|&b| b != b'\r').map_or(0, |i| i + 1);
        let line = &line[..end];
        if line.is_empty() || line.starts_with(b"#") {
            return None;
        }
        let rest = tokens.iter().try_fold(line, |rest, token| field(rest, token))?;
        Some(password(rest))
    })
}

/// Looks in the password file at `path` for each of `targets` in turn (the hosts of a
/// connection, in order); the first host with a matching line gives the password.
pub(crate) fn read(path: &Path, targets: &[Target<'_>]) -> Lookup {
    let Ok(metadata) = std::fs::metadata(path) else { return Lookup::NotFound };
    if !metadata.is_file() {
        return Lookup::Ignored("it is not a plain file");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if metadata.permissions().mode() & 0o077 != 0 {
            return Lookup::Ignored(
                "it has group or world access; permissions should be u=rw (0600) or less",
            );
        }
    }
    let Ok(contents) = std::fs::read(path) else { return Lookup::Ignored("it cannot be read") };
    targets.iter().find_map(|t| find(&contents, t)).map_or(Lookup::NotFound, Lookup::Found)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn target<'a>(host: &'a str, port: u16, database: &'a str, user: &'a str) -> Target<'a> {
        Target { host: Cow::Borrowed(host), port, database, user }
    }

    #[track_caller]
    fn check(contents: &str, target: &Target<'_>, expected: Option<&str>) {
        let found = find(contents.as_bytes(), target);
        assert_eq!(
            found.as_deref().map(String::from_utf8_lossy).as_deref(),
            expected,
            "{contents:?} for {target:?}"
        );
    }

    #[test]
    fn fields_match_exactly_or_by_wildcard() {
        let db = target("db.internal", 5432, "records", "agent");
        check("db.internal:5432:records:agent:s3cret\n", &db, Some("s3cret"));
        check("*:*:*:*:any\n", &db, Some("any"));
        check("db.internal:*:records:*:some\n", &db, Some("some"));
        for other in [
            "db.internal:5433:records:agent:x",
            "db.internal:5432:records:agents:x",
            "db.internal:5432:record:agent:x",
            "db:5432:records:agent:x",
            // `*` is a wildcard only as a whole field.
            "db.*:5432:records:agent:x",
            "*x:5432:records:agent:x",
            // Four fields: no password, so no match.
            "db.internal:5432:records:agent",
        ] {
            check(other, &db, None);
        }
    }

    #[test]
    fn the_first_matching_line_wins_and_comments_and_blank_lines_are_skipped() {
        let db = target("h", 5432, "d", "u");
        check("# h:5432:d:u:commented\n\nh:5432:d:u:first\n*:*:*:*:second\n", &db, Some("first"));
        check("*:*:*:*:wild\nh:5432:d:u:exact\n", &db, Some("wild"));
        // Windows line ends; a password ends at the line's end or at an unescaped colon.
        check("h:5432:d:u:crlf\r\n", &db, Some("crlf"));
        check("h:5432:d:u:pass:ignored", &db, Some("pass"));
        check("h:5432:d:u:", &db, Some(""));
        check(" h:5432:d:u:x", &db, None);
    }

    #[test]
    fn backslashes_escape_colons_and_backslashes() {
        let odd = target("h", 5432, "my:db", r"dom\user");
        check(r"h:5432:my\:db:dom\\user:p\:a\\ss\word", &odd, Some(r"p:a\ssword"));
        // Escaped, the colon belongs to the field: `my:db` is not the database `my`.
        check(r"h:5432:my\:db:*:x", &target("h", 5432, "my", "db"), None);
        // A backslash at the end of the password stays.
        check(r"h:5432:my\:db:dom\\user:end\", &odd, Some(r"end\"));
        // An IPv6 address: libpq lets unescaped colons match the colons of a host.
        check("::1:5432:d:u:six", &target("::1", 5432, "d", "u"), Some("six"));
    }

    #[test]
    fn a_file_others_may_read_is_ignored_as_libpq_ignores_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(&path, "h:5432:d:u:secret\n").unwrap();
        let targets = [target("other", 5432, "d", "u"), target("h", 5432, "d", "u")];
        for (mode, expected) in [
            (0o600, Lookup::Found(b"secret".to_vec())),
            (0o400, Lookup::Found(b"secret".to_vec())),
            (
                0o640,
                Lookup::Ignored(
                    "it has group or world access; permissions should be u=rw (0600) or less",
                ),
            ),
            (
                0o604,
                Lookup::Ignored(
                    "it has group or world access; permissions should be u=rw (0600) or less",
                ),
            ),
        ] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(read(&path, &targets), expected, "mode {mode:o}");
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(&path, &targets[..1]), Lookup::NotFound);
        assert_eq!(read(&dir.path().join("missing"), &targets), Lookup::NotFound);
        assert_eq!(read(dir.path(), &targets), Lookup::Ignored("it is not a plain file"));
    }
}
