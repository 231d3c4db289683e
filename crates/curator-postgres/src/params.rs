//! Taking the libpq parameters the `postgres` client's parser does not know out of a
//! connection string: `sslmode` (it knows only three of libpq's five modes), `sslrootcert`
//! and `passfile`.

use crate::{Error, Result};

/// The parameters of ours a connection string gave, as written.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct OwnParams {
    pub(crate) ssl_mode: Option<String>,
    pub(crate) root_certificates: Option<String>,
    /// libpq's `passfile`: the password file to read when no password is given.
    pub(crate) password_file: Option<String>,
}

/// The names of the parameters [`OwnParams`] holds.
const OWN: &[&str] = &["sslmode", "sslrootcert", "passfile"];

impl OwnParams {
    /// Keeps `value` when `key` is one of ours; says whether it was.
    fn take(&mut self, key: &str, value: String) -> bool {
        match key {
            "sslmode" => self.ssl_mode = Some(value),
            "sslrootcert" => self.root_certificates = Some(value),
            "passfile" => self.password_file = Some(value),
            _ => return false,
        }
        true
    }
}

/// `text` (a URL or a `key=value` string) without the parameters of ours, and those
/// parameters.
///
/// # Errors
///
/// [`Error::Config`] when a value is badly quoted or percent-encoded.
pub(crate) fn take_own_params(text: &str) -> Result<(String, OwnParams)> {
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        from_url(text)
    } else {
        from_key_values(text)
    }
}

fn config_error(reason: String) -> Error {
    Error::Config { reason, source: None }
}

fn from_url(url: &str) -> Result<(String, OwnParams)> {
    let mut params = OwnParams::default();
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), params));
    };
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !OWN.contains(&key) {
            kept.push(pair);
            continue;
        }
        params.take(key, percent_decode(value)?);
    }
    let rest = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
    Ok((rest, params))
}

/// `value` with its `%XX` escapes decoded.
fn percent_decode(value: &str) -> Result<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| config_error(format!("bad percent escape in `{value}`")))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(byte);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| config_error(format!("`{value}` is not UTF-8")))
}

/// Splits a libpq `key=value` string: values may be single-quoted, and a backslash escapes
/// the next character. The parameters that are not ours are kept as written.
fn from_key_values(text: &str) -> Result<(String, OwnParams)> {
    let mut params = OwnParams::default();
    let mut kept: Vec<&str> = Vec::new();
    let mut chars = text.char_indices().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, _)) = chars.peek() else { break };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next_if(|(_, c)| *c == '=').is_none() {
            // Not `key=value`: leave it for the client's parser to report.
            kept.push(text.get(start..).unwrap_or_default());
            break;
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        let quoted = chars.next_if(|(_, c)| *c == '\'').is_some();
        let mut closed = !quoted;
        while let Some((_, c)) = chars.peek().copied() {
            if !quoted && c.is_whitespace() {
                break;
            }
            chars.next();
            match c {
                '\\' => {
                    let (_, escaped) = chars.next().ok_or_else(|| {
                        config_error(format!("`{key}`: a backslash ends the connection string"))
                    })?;
                    value.push(escaped);
                }
                '\'' if quoted => {
                    closed = true;
                    break;
                }
                c => value.push(c),
            }
        }
        if !closed {
            return Err(config_error(format!("`{key}`: the quoted value is not closed")));
        }
        let end = chars.peek().map_or(text.len(), |&(i, _)| i);
        if !params.take(&key, value) {
            kept.push(text.get(start..end).unwrap_or_default());
        }
    }
    Ok((kept.join(" "), params))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(text: &str) -> (String, Option<String>, Option<String>) {
        let (rest, params) = take_own_params(text).unwrap();
        (rest, params.ssl_mode, params.root_certificates)
    }

    #[expect(clippy::unnecessary_wraps, reason = "compared with the Options taken")]
    fn some(s: &str) -> Option<String> {
        Some(s.to_owned())
    }

    #[test]
    fn url_parameters_are_taken_and_the_others_kept() {
        assert_eq!(
            take(
                "postgres://a@h:1/db?sslmode=verify-full&application_name=x&sslrootcert=%2Ftmp%2Fca.pem"
            ),
            (
                "postgres://a@h:1/db?application_name=x".to_owned(),
                some("verify-full"),
                some("/tmp/ca.pem")
            )
        );
        assert_eq!(
            take("postgresql://h/db?sslmode=require"),
            ("postgresql://h/db".to_owned(), some("require"), None)
        );
        assert_eq!(take("postgres://h/db"), ("postgres://h/db".to_owned(), None, None));
    }

    #[test]
    fn key_value_parameters_are_taken_with_quotes_and_escapes() {
        assert_eq!(
            take(r"host=h sslmode = verify-ca  user=a sslrootcert='/certs/my ca\'s.pem' dbname=x"),
            ("host=h user=a dbname=x".to_owned(), some("verify-ca"), some("/certs/my ca's.pem"))
        );
        assert_eq!(take("host=h"), ("host=h".to_owned(), None, None));
        assert_eq!(take(""), (String::new(), None, None));
    }

    #[test]
    fn bad_quoting_and_escapes_are_config_errors() {
        for text in
            ["host=h sslrootcert='/open", r"sslmode=require\", "postgres://h/d?sslrootcert=%zz"]
        {
            let error = take_own_params(text).unwrap_err();
            assert!(matches!(error, Error::Config { .. }), "{text}: {error}");
        }
    }

    #[test]
    fn the_password_file_is_taken_from_urls_and_key_value_strings() {
        for text in [
            "postgres://a@h/db?passfile=%2Fhome%2Fa%2Fmy%20pgpass&application_name=x",
            r"host=h passfile='/home/a/my pgpass' application_name=x",
        ] {
            let (rest, params) = take_own_params(text).unwrap();
            assert_eq!(params.password_file.as_deref(), Some("/home/a/my pgpass"), "{text}");
            assert!(!rest.contains("passfile") && rest.contains("application_name=x"), "{rest}");
        }
    }

    #[test]
    fn text_that_is_not_key_value_is_left_for_the_client() {
        assert_eq!(take("host=h junk"), ("host=h junk".to_owned(), None, None));
    }
}
