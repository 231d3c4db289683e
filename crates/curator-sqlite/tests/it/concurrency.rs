//! Reads of an evaluation while another connection appends to it: each read is of one
//! moment of the record, never refused as damaged because a row came between its steps.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use curator_model::{Entry, EvaluationId, Message};
use curator_session::{SessionKey, SessionStore};
use curator_sqlite::SqliteStore;

/// A read counts the rows it read against the second index; an append by another
/// connection between the read and the count made a whole record read as `Corrupt`
/// ("4 rows read by sequence, 5 by time"). The evaluations are kept short, so that the
/// reader reads often.
#[test]
fn reads_while_another_connection_appends_are_whole_and_never_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    let evaluations: Vec<EvaluationId> = (0..800).map(|_| EvaluationId::new()).collect();
    let rows = 5_u64;
    let (current, done) = (AtomicUsize::new(0), AtomicBool::new(false));
    // Two connections of their own, as two processes have.
    let (writer, store) = (SqliteStore::open(&path).unwrap(), SqliteStore::open(&path).unwrap());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let store = writer;
            let key = SessionKey::new("user");
            for (at, evaluation) in evaluations.iter().enumerate() {
                current.store(at, Ordering::SeqCst);
                for sequence in 0..rows {
                    let entry = Entry::builder(*evaluation, Message::user(format!("m{sequence}")))
                        .sequence(sequence)
                        .build()
                        .unwrap();
                    store.append(&key, &entry).unwrap();
                }
            }
            done.store(true, Ordering::SeqCst);
        });
        let mut reads = 0_u32;
        while !done.load(Ordering::SeqCst) {
            let evaluation = evaluations[current.load(Ordering::SeqCst)];
            let entries = store.entries(evaluation).unwrap();
            assert!(entries.iter().zip(0..).all(|(e, n)| e.sequence == n), "in order, no gap");
            let mut paged = 0;
            store
                .entries_in_pages(evaluation, 7, &mut |page| {
                    paged += page.len();
                    std::ops::ControlFlow::Continue(())
                })
                .unwrap();
            assert!(paged >= entries.len(), "{paged} rows in pages after {}", entries.len());
            reads += 1;
        }
        assert!(reads >= 20, "{reads} reads");
    });
    let store = SqliteStore::open_read_only(&path).unwrap();
    for evaluation in evaluations {
        assert_eq!(store.entries(evaluation).unwrap().len(), usize::try_from(rows).unwrap());
    }
}

/// A paged read (as `curator inspect` and `trace` read) of an evaluation that retention
/// deletes between two pages reads the rows it got, not a damaged index: the rows counted
/// before the first page are gone from both indexes.
#[test]
fn a_paged_read_of_an_evaluation_deleted_between_pages_is_not_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pruned.db");
    let (reader, pruner) = (SqliteStore::open(&path).unwrap(), SqliteStore::open(&path).unwrap());
    let (key, evaluation) = (SessionKey::new("user"), EvaluationId::new());
    for sequence in 0..20 {
        let entry = Entry::builder(evaluation, Message::user(format!("m{sequence}")))
            .sequence(sequence)
            .build()
            .unwrap();
        pruner.append(&key, &entry).unwrap();
    }
    let mut pages = Vec::new();
    reader
        .entries_in_pages(evaluation, 5, &mut |page| {
            if pages.is_empty() {
                assert_eq!(pruner.delete_evaluations(&key, &[evaluation]).unwrap(), 20);
            }
            pages.push(page.len());
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(pages, [5], "the first page, then nothing is left");
}
