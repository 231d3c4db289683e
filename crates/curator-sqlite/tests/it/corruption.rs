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

/// A damaged page of the `(evaluation, sequence)` index that hides a row: the read is
/// refused as `Corrupt` (it read the record shorter, exit 0), a resumed conversation is
/// refused, and an append at the hidden row's sequence is refused, so that no sequence is
/// ever held by two rows.
#[test]
fn an_index_that_hides_a_row_is_refused_on_read_resume_and_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hidden.db");
    let prompt = PromptRef::new("d", "a");
    let evaluation = {
        let store = SqliteStore::open(&path).unwrap();
        let mut c =
            Conversation::open(&store, "user", prompt.clone(), Message::system("s")).unwrap();
        for n in 0..5 {
            c.add_user(format!("question {n}")).unwrap();
            c.record_assistant(Message::assistant(format!("answer {n}"))).unwrap();
        }
        store.vacuum().unwrap();
        c.evaluation_id()
    };
    // The index's root page (a leaf, with 11 rows) loses its last cell: the row at sequence
    // 10 is no longer found through it, and SQLite's own reads see no error.
    let root: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_entries_2'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let page = (usize::try_from(root).unwrap() - 1) * PAGE;
    assert_eq!(bytes[page], 0x0a, "the index root is a leaf");
    let cells = u16::from_be_bytes([bytes[page + 3], bytes[page + 4]]);
    assert_eq!(cells, 11);
    bytes[page + 3..page + 5].copy_from_slice(&(cells - 1).to_be_bytes());
    std::fs::write(&path, &bytes).unwrap();

    let read = SqliteStore::open_read_only(&path).unwrap();
    let error = read.entries(evaluation).unwrap_err();
    assert!(is_corrupt(&error), "{error}");
    assert!(error.to_string().contains("10 rows read by sequence, 11 by time"), "{error}");
    // Read in pages (as `curator inspect` and `trace` read), the same.
    for page in [3, 10, 100] {
        let mut pages = 0;
        let error = read
            .entries_in_pages(evaluation, page, &mut |_| {
                pages += 1;
                std::ops::ControlFlow::Continue(())
            })
            .unwrap_err();
        assert!(is_corrupt(&error), "pages of {page}: {error}");
        assert!(error.to_string().contains("10 rows read by sequence, 11 by time"), "{error}");
        assert!(pages >= 1, "pages of {page}");
    }
    drop(read);

    let store = SqliteStore::open(&path).unwrap();
    let resumed = Conversation::open(&store, "user", prompt.clone(), Message::system("s"));
    let Err(error) = resumed else { panic!("a resume of a record read short is refused") };
    assert!(is_corrupt(&error), "{error}");
    // An append at the hidden row's sequence, without reading first.
    let entry = curator_model::Entry::builder(evaluation, Message::user("again"))
        .sequence(10)
        .build()
        .unwrap();
    let error = store.append(&curator_session::SessionKey::new("user"), &entry).unwrap_err();
    assert!(is_corrupt(&error), "{error}");
    drop(store);
    let rows: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM entries NOT INDEXED WHERE sequence = 10", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 1, "one row holds sequence 10");
}

fn is_corrupt(error: &curator_session::Error) -> bool {
    matches!(error, curator_session::Error::Store { kind: StoreErrorKind::Corrupt, .. })
}

/// A message that is not UTF-8 is `Corrupt`, naming the table, the evaluation and the
/// sequence of its row.
#[test]
fn a_message_that_is_not_utf8_names_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("utf8.db");
    let evaluation = {
        let store = SqliteStore::open(&path).unwrap();
        let mut c =
            Conversation::open(&store, "user", PromptRef::new("d", "a"), Message::system("s"))
                .unwrap();
        c.add_user("question").unwrap();
        c.evaluation_id()
    };
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE entries SET message = CAST(X'7b22ff22fe7d' AS TEXT) WHERE sequence = 1",
            [],
        )
        .unwrap();
    let store = SqliteStore::open_read_only(&path).unwrap();
    let error = store.entries(evaluation).unwrap_err();
    assert!(is_corrupt(&error), "{error}");
    let text = error.to_string();
    assert!(
        text.contains("entries row at sequence 1 of evaluation") && text.contains("UTF-8"),
        "{text}"
    );
}
