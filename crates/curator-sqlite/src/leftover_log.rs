//! Reading a file whose write-ahead log a stopped writer left behind, without writing beside
//! it: a private copy of the file and its log.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A folder of the temporary directory, readable by this user only, holding a copy of a
/// session file and its `-wal`; removed when dropped.
#[derive(Debug)]
pub(crate) struct PrivateCopy {
    dir: PathBuf,
    /// The copy of the session file, its log beside it.
    pub(crate) file: PathBuf,
}

impl PrivateCopy {
    /// Copies `path` and its `-wal` into a new private folder. SQLite reads the log only
    /// with its shared-memory index (`-shm`), which it would create beside the file; a
    /// writer always has one, so a log without it was left by a writer that stopped, and
    /// the committed transactions it holds are read from the copy.
    pub(crate) fn of(path: &Path) -> std::io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = path.file_name().unwrap_or(std::ffi::OsStr::new("session.db"));
        let dir = loop {
            let candidate = std::env::temp_dir().join(format!(
                "curator-read-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&candidate) {
                Ok(()) => break candidate,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    // Name the folder (`TMPDIR` may name one that is not there).
                    let message = format!("creating {}: {e}", candidate.display());
                    return Err(std::io::Error::new(e.kind(), message));
                }
            }
        };
        let copy = Self { file: dir.join(name), dir };
        std::fs::copy(path, &copy.file)?;
        std::fs::copy(
            crate::schema::sibling(path, "-wal"),
            crate::schema::sibling(&copy.file, "-wal"),
        )?;
        Ok(copy)
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        // Nothing to report to: a folder left in the temporary directory is the worst case.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
