//! Where a session file is opened: what is at the path, checked before SQLite touches it,
//! and the helpers of opening (its URI, retries while busy, errors that name the file).

use std::path::Path;

use curator_session::StoreErrorKind;

use crate::error::{Error, Result};

pub(crate) fn open_error<'a>(
    path: &'a Path,
    context: &'static str,
) -> impl Fn(rusqlite::Error) -> Error + 'a {
    move |e| Error::sqlite(path, context, e)
}

/// Runs `f` until it does not fail as busy, or `timeout` has passed.
pub(crate) fn retry_open<T>(
    timeout: std::time::Duration,
    mut f: impl FnMut() -> Result<T>,
) -> Result<T> {
    let started = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match f() {
            Err(e) if e.is_retryable() && started.elapsed() < timeout => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// A `file:` URI for `path` with `query`, percent-encoding what a URI cannot hold as is.
pub(crate) fn uri(path: &Path, query: &str) -> String {
    use std::fmt::Write as _;
    use std::os::unix::ffi::OsStrExt as _;
    let mut out = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out.push('?');
    out.push_str(query);
    out
}

/// Checks what is at `path` before SQLite touches it: `Ok(true)` for a regular file,
/// `Ok(false)` for nothing (in a folder that exists). Anything else (a FIFO, which would make
/// opening hang; a device; a folder) and a missing folder are refused at once, named.
pub(crate) fn check_place(path: &Path) -> Result<bool> {
    use std::os::unix::fs::FileTypeExt as _;
    match std::fs::metadata(path) {
        Ok(meta) => {
            let kind = meta.file_type();
            let what = if kind.is_file() {
                return Ok(true);
            } else if kind.is_dir() {
                "a folder"
            } else if kind.is_fifo() {
                "a FIFO (a named pipe)"
            } else if kind.is_block_device() || kind.is_char_device() {
                "a device"
            } else if kind.is_socket() {
                "a socket"
            } else {
                "something else"
            };
            Err(Error::NotAFile { path: path.to_owned(), what })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
            match folder {
                Some(folder) if !folder.is_dir() => Err(Error::Sqlite {
                    path: path.to_owned(),
                    context: "opening: the folder to hold the file does not exist",
                    kind: StoreErrorKind::NotFound,
                    source: Box::new(e),
                }),
                _ => Ok(false),
            }
        }
        Err(e) => Err(Error::Sqlite {
            path: path.to_owned(),
            context: "opening: the file's information cannot be read",
            kind: if e.kind() == std::io::ErrorKind::PermissionDenied {
                StoreErrorKind::ReadOnly
            } else {
                StoreErrorKind::Io
            },
            source: Box::new(e),
        }),
    }
}

/// An I/O failure while opening, told apart when its cause is a full disk: SQLite reports
/// some writes that find no room (its shared-memory file growing) as plain I/O errors.
pub(crate) fn named_when_full(path: &Path, error: Error) -> Error {
    match error {
        Error::Sqlite { context, kind: StoreErrorKind::Io, source, .. } if disk_is_full(path) => {
            Error::Sqlite { path: path.to_owned(), context, kind: StoreErrorKind::Full, source }
        }
        other => other,
    }
}

/// Whether the file system of `path`'s folder has no room for 64 KiB more (a probe file,
/// written and removed).
fn disk_is_full(path: &Path) -> bool {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let probe = folder.join(format!(".curator-space-probe-{}", std::process::id()));
    let written = std::fs::write(&probe, vec![0u8; 64 * 1024]);
    let _ = std::fs::remove_file(&probe);
    matches!(written, Err(e) if e.kind() == std::io::ErrorKind::StorageFull)
}

/// Refuses, before SQLite opens it (and leaves its `-wal` and `-shm` files beside it), a
/// session file this process cannot write.
pub(crate) fn check_writable(path: &Path) -> Result<()> {
    match std::fs::OpenOptions::new().read(true).write(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) => Err(Error::Sqlite {
            path: path.to_owned(),
            context: "opening the file to write",
            kind: match e.kind() {
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                    StoreErrorKind::ReadOnly
                }
                _ => StoreErrorKind::Io,
            },
            source: Box::new(e),
        }),
    }
}
