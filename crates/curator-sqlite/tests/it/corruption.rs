//! Damage SQLite cannot see (issue 33): random bytes flipped in the pages that hold rows,
//! 200 times; every read returns the recorded data or a typed `Corrupt`, never other data.

use curator_model::{Message, PromptRef};
use curator_session::{Conversation, SessionStore, StoreErrorKind};
use curator_sqlite::SqliteStore;
use curator_testkit::processes::Xorshift;

const PAGE: usize = 4_096;

#[test]
fn flipped_bytes_in_row_pages_are_read_back_or_refused_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original.db");
    {
        let store = SqliteStore::open(&original).unwrap();
        for user in 0..6 {
            let mut c = Conversation::open(
                &store,
                format!("user-{user}"),
                PromptRef::new("d", "a"),
                Message::system("s"),
            )
            .unwrap();
            for n in 0..20 {
                c.add_user(format!("marker question {user}-{n}: {}", "abc ".repeat(40))).unwrap();
                c.record_assistant(Message::assistant(format!("marker answer {user}-{n}")))
                    .unwrap();
            }
        }
        store.vacuum().unwrap();
    }
    let reference = SqliteStore::open_read_only(&original).unwrap();
    let evaluations: Vec<_> =
        reference.evaluations().unwrap().into_iter().map(|e| e.evaluation_id).collect();
    let recorded: Vec<_> = evaluations.iter().map(|e| reference.entries(*e).unwrap()).collect();
    let snapshot = reference.snapshot().unwrap();
    drop(reference);
    let bytes = std::fs::read(&original).unwrap();
    // The pages that hold rows: those with a message's text in them.
    let row_pages: Vec<usize> = (1..bytes.len() / PAGE)
        .filter(|page| bytes[page * PAGE..(page + 1) * PAGE].windows(6).any(|w| w == b"marker"))
        .collect();
    assert!(row_pages.len() > 5, "{} row pages", row_pages.len());
    let mut random = Xorshift::new(0x00c0_ffee);
    let (mut same, mut refused, mut unreadable) = (0, 0, 0);
    for trial in 0..200 {
        let mut damaged = bytes.clone();
        let page = row_pages[usize::try_from(random.next_u64()).unwrap() % row_pages.len()];
        for _ in 0..=(random.next_u64() % 3) {
            let at = page * PAGE + usize::try_from(random.next_u64()).unwrap() % PAGE;
            damaged[at] ^= 1 << (random.next_u64() % 8);
        }
        let path = dir.path().join(format!("trial-{trial}.db"));
        std::fs::write(&path, &damaged).unwrap();
        let store = match SqliteStore::open_read_only(&path) {
            Ok(store) => store,
            Err(e) => {
                assert_eq!(e.kind(), StoreErrorKind::Corrupt, "trial {trial}: {e}");
                unreadable += 1;
                continue;
            }
        };
        for (evaluation, entries) in evaluations.iter().zip(&recorded) {
            match store.entries(*evaluation) {
                Ok(read) if read == *entries => same += 1,
                Ok(read) => panic!(
                    "trial {trial}: evaluation {evaluation} read back other data ({} entries for {})",
                    read.len(),
                    entries.len()
                ),
                Err(e) => {
                    assert!(
                        matches!(
                            e,
                            curator_session::Error::Store { kind: StoreErrorKind::Corrupt, .. }
                        ),
                        "trial {trial}: {e}"
                    );
                    refused += 1;
                }
            }
        }
        match store.snapshot() {
            Ok(read) => assert_eq!(read, snapshot, "trial {trial}: the snapshot read other data"),
            Err(e) => assert!(
                matches!(e, curator_session::Error::Store { kind: StoreErrorKind::Corrupt, .. }),
                "trial {trial}: {e}"
            ),
        }
        drop(store);
        std::fs::remove_file(&path).unwrap();
    }
    println!(
        "200 damaged files: {same} evaluations read back whole, {refused} refused as corrupt, {unreadable} files refused at open"
    );
    assert!(refused > 0);
}
