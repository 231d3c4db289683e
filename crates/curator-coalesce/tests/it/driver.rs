//! `CoalescedConversation` end to end: a scripted model over six turns with a failure and
//! its recovery, the output and tool-call limits, and the exact request at each call.

use curator_coalesce::{
    CoalescedConversation, CoalescedOutcome, DataEntry, Definition, Executed, RecordedToolCall,
    Run, SingleUserCoalesced, TURNS_CHECKPOINT, ToolSpec, TurnDraft, TurnResult, Value,
};
use std::sync::Arc;

use curator::sqlite::SqliteStore;
use curator_model::{BoxError, Message, PromptRef};
use curator_session::{Conversation, MemoryStore, SessionStore};

fn laptop(sku: &str, price: i64) -> Value {
    Value::map([
        ("sku", Value::from(sku)),
        ("kind", Value::keyword("laptop")),
        ("price", Value::from(price)),
    ])
}

fn run() -> Run {
    Run::new("You write PTC-Lisp.", "Find the in-stock laptops with good reviews")
        .with_tools(vec![
            ToolSpec::new("get-stock", ["sku"], "sku:string -> map"),
            ToolSpec::new("search-reviews", ["query"], "query:string -> string"),
        ])
        .with_data(vec![DataEntry::new(
            "products",
            Value::list([
                laptop("L1", 1200),
                laptop("L2", 900),
                Value::map([
                    ("sku", Value::from("M1")),
                    ("kind", Value::keyword("mouse")),
                    ("price", Value::from(25)),
                ]),
            ]),
        )])
        .with_max_turns(6)
}

fn define(name: &str, value: Value) -> Definition {
    Definition { name: name.to_owned(), value }
}

/// The model's six replies.
const PROGRAMS: [&str; 6] = [
    "(def laptops (filter #(= :laptop (:kind %)) data/products))",
    "(def stock-l1 (tool/get-stock \"L1\")) (def stock-l2 (tool/get-stock \"L2\")) (println \"stock:\" (:count stock-l1) (:count stock-l2))",
    "(def reviews (tool/search-review \"laptops\"))",
    "(def reviews (tool/search-reviews \"laptops\")) (println reviews)",
    "(def in-stock (filter #(pos? (:count %)) [stock-l1 stock-l2])) (tool/get-stock \"L1\") (println (count in-stock))",
    "(return {:sku \"L1\" :rating 4.6})",
];

/// What the interpreter did with each program: the memory is the snapshot after the turn.
fn executed(turn: usize, mut draft: TurnDraft) -> Executed {
    let laptops = Value::list([laptop("L1", 1200), laptop("L2", 900)]);
    let stock = |sku: &str, count: i64| {
        Value::map([("sku", Value::from(sku)), ("count", Value::from(count))])
    };
    let reviews = Value::from("L1: 4.6 stars (212 reviews); L2: 3.1 stars (40 reviews)");
    let memory_two = vec![
        define("laptops", laptops.clone()),
        define("stock-l1", stock("L1", 3)),
        define("stock-l2", stock("L2", 0)),
    ];
    draft.result = Some(TurnResult::Returned(Value::Nil));
    match turn {
        0 => draft.memory = vec![define("laptops", laptops)],
        1 => {
            draft.tool_calls = vec![
                RecordedToolCall::new("get-stock", Value::from("L1"), stock("L1", 3)),
                RecordedToolCall::new("get-stock", Value::from("L2"), stock("L2", 0)),
            ];
            draft.prints = vec!["stock: 3 0".to_owned()];
            draft.memory = memory_two;
        }
        2 => {
            draft.result =
                Some(TurnResult::Failed("undefined symbol 'tool/search-review'".to_owned()));
            draft.memory = memory_two;
        }
        3 => {
            draft.tool_calls = vec![RecordedToolCall::new(
                "search-reviews",
                Value::from("laptops"),
                reviews.clone(),
            )];
            draft.prints =
                vec!["L1: 4.6 stars (212 reviews); L2: 3.1 stars (40 reviews)".to_owned()];
            draft.memory = [memory_two, vec![define("reviews", reviews)]].concat();
        }
        4 => {
            draft.tool_calls =
                vec![RecordedToolCall::new("get-stock", Value::from("L1"), stock("L1", 3))];
            draft.prints = vec!["1".to_owned()];
            let mut memory = memory_two;
            memory.push(define("reviews", reviews));
            memory.push(define("in-stock", Value::list([stock("L1", 3)])));
            draft.memory = memory;
        }
        _ => {
            draft.result = Some(TurnResult::Returned(Value::map([
                ("sku", Value::from("L1")),
                ("rating", Value::from(4.6)),
            ])));
            return Executed::Finished(draft);
        }
    }
    Executed::Continue(draft)
}

#[test]
fn six_turns_with_a_failure_and_its_recovery() {
    let store = MemoryStore::new();
    let conversation = Conversation::open(
        &store,
        "job-1",
        PromptRef::new("demo", "lisp"),
        Message::system("You write PTC-Lisp."),
    )
    .unwrap();
    let compression = SingleUserCoalesced::default().with_println_limit(2).with_tool_call_limit(2);
    let mut agent = CoalescedConversation::open(conversation, run(), compression).unwrap();
    let mut requests: Vec<Vec<Message>> = Vec::new();
    let mut turn = 0;
    let outcome = agent
        .run_blocking(
            |request| {
                requests.push(request.to_vec());
                Ok::<_, BoxError>(Message::assistant(format!(
                    "```clojure\n{}\n```",
                    PROGRAMS[requests.len() - 1]
                )))
            },
            |draft| {
                turn += 1;
                Ok(executed(turn - 1, draft))
            },
        )
        .unwrap();
    let CoalescedOutcome::Finished(last) = outcome else { panic!("{outcome:?}") };
    assert_eq!(last.number(), 6);

    let head = "Find the in-stock laptops with good reviews\n\n\
                ;; === tool/ ===\n\
                (tool/get-stock sku)             ; sku:string -> map\n\
                (tool/search-reviews query)      ; query:string -> string\n\n\
                ;; === data/ ===\n\
                data/products                    ; list[3], sample: {:sku \"L1\", :kind :laptop, :price 1200}\n\n";
    let prelude = ";; === user/ (your prelude) ===\n\
                   laptops                          ; = list[2], sample: {:sku \"L1\", :kind :laptop, :price 1200}\n";
    let stock = "stock-l1                         ; = map[2]\n\
                 stock-l2                         ; = map[2]\n";
    let first_calls = ";; Tool calls made:\n;   get-stock(\"L1\")\n;   get-stock(\"L2\")\n\n;; Output:\nstock: 3 0\n\n";
    let reviews = "L1: 4.6 stars (212 reviews); L2: 3.1 stars (40 reviews)";
    let expected = [
        format!("{head};; No tool calls made\n\nTurns left: 6"),
        format!("{head}{prelude}\n;; No tool calls made\n\nTurns left: 5"),
        format!("{head}{prelude}{stock}\n{first_calls}Turns left: 4"),
        // The failed attempt shows while the run is failing ...
        format!(
            "{head}{prelude}{stock}\n{first_calls}---\nYour previous attempt:\n```clojure\n\
             (def reviews (tool/search-review \"laptops\"))\n```\n\n\
             Error: undefined symbol 'tool/search-review'\n---\n\nTurns left: 3"
        ),
        // ... and collapses once a turn succeeds; the limits keep the last two calls and
        // the last two println calls, and count the others.
        format!(
            "{head}{prelude}{stock}reviews                          ; = string\n\n\
             ;; Tool calls made:\n;   ... 1 earlier tool call not shown (tool_call_limit 2)\n;   get-stock(\"L2\")\n;   search-reviews(\"laptops\")\n\n\
             ;; Output:\nstock: 3 0\n{reviews}\n\nTurns left: 2"
        ),
        format!(
            "{head}{prelude}{stock}reviews                          ; = string\n\
             in-stock                         ; = list[1]\n\n\
             ;; Tool calls made:\n;   ... 2 earlier tool calls not shown (tool_call_limit 2)\n\
             ;   search-reviews(\"laptops\")\n;   get-stock(\"L1\")\n\n\
             ;; Output:\n;; ... 1 earlier println call not shown (println_limit 2)\n{reviews}\n1\n\nTurns left: 1"
        ),
    ];
    assert_eq!(requests.len(), expected.len());
    for (index, (request, expected)) in requests.iter().zip(&expected).enumerate() {
        assert_eq!(
            request,
            &[Message::system("You write PTC-Lisp."), Message::user(expected.as_str())],
            "call {}:\n{}",
            index + 1,
            request[1].text()
        );
    }

    // The record reads like the full history: the opening, then each reply as it came and
    // what its program did.
    let record = agent.conversation().history().messages();
    assert_eq!(record.len(), 2 + 2 * 6);
    assert_eq!(record[1].text(), head.trim_end());
    assert_eq!(record[2].text(), format!("```clojure\n{}\n```", PROGRAMS[0]));
    assert_eq!(
        record[5].text(),
        "Result: nil\n\n;; Tool calls made:\n;   get-stock(\"L1\")\n;   get-stock(\"L2\")\n\n;; Output:\nstock: 3 0"
    );
    assert_eq!(record[7].text(), "Error: undefined symbol 'tool/search-review'");
    assert_eq!(record[13].text(), "Result: {:sku \"L1\", :rating 4.6}");
    assert_eq!(agent.turns_left(), 0);
}

#[test]
fn a_run_resumes_after_a_crash_before_and_after_execution() {
    let store = MemoryStore::new();
    let prompt = PromptRef::new("demo", "lisp");
    let open = || {
        let conversation = Conversation::open(
            &store,
            "job-1",
            prompt.clone(),
            Message::system("You write PTC-Lisp."),
        )
        .unwrap();
        CoalescedConversation::open(conversation, run(), SingleUserCoalesced::default()).unwrap()
    };
    let mut agent = open();
    let draft = agent.record_reply(Message::assistant(PROGRAMS[0])).unwrap();
    // The process dies before the program ran: the reply's program is handed back.
    drop(agent);
    let mut agent = open();
    assert_eq!(agent.pending_program(), Some(draft.clone()));
    let Executed::Continue(done) = executed(0, draft) else { unreachable!() };
    agent.record_execution(done).unwrap();
    let before = agent.request();
    assert_eq!(agent.pending_program(), None);
    drop(agent);
    let agent = open();
    assert_eq!(agent.request(), before, "the same request after the resume");
    assert_eq!(agent.turns().len(), 1);
    assert_eq!(agent.conversation().history().len(), 4);

    // A crash between saving the turns and recording the execution: reopening records it.
    let mut agent = agent;
    let draft = agent.record_reply(Message::assistant(PROGRAMS[1])).unwrap();
    let Executed::Continue(done) = executed(1, draft) else { unreachable!() };
    let mut turns = agent.turns().clone();
    turns.push(done);
    let name = format!("{TURNS_CHECKPOINT}/{}", agent.conversation().evaluation_id());
    SessionStore::put_checkpoint(&store, &name, &serde_json::to_value(&turns).unwrap()).unwrap();
    drop(agent);
    let agent = open();
    assert_eq!(agent.turns(), &turns);
    assert_eq!(agent.pending_program(), None);
    let record = agent.conversation().history().messages();
    assert_eq!(record.len(), 6);
    assert!(
        record[5].text().starts_with("Result: nil\n\n;; Tool calls made:"),
        "{}",
        record[5].text()
    );
}

#[test]
fn the_async_face_sends_what_the_blocking_one_sends() {
    let compression = SingleUserCoalesced::default().with_println_limit(2).with_tool_call_limit(2);
    let store = MemoryStore::new();
    let conversation = Conversation::open(
        &store,
        "job-1",
        PromptRef::new("demo", "lisp"),
        Message::system("You write PTC-Lisp."),
    )
    .unwrap();
    let mut agent = CoalescedConversation::open(conversation, run(), compression).unwrap();
    let mut blocking: Vec<Vec<Message>> = Vec::new();
    let mut turn = 0;
    agent
        .run_blocking(
            |request| {
                blocking.push(request.to_vec());
                Ok::<_, BoxError>(Message::assistant(PROGRAMS[blocking.len() - 1]))
            },
            |draft| {
                turn += 1;
                Ok(executed(turn - 1, draft))
            },
        )
        .unwrap();

    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let asynchronous = runtime.block_on(async {
        let agent = CoalescedConversation::open_async(
            MemoryStore::new(),
            "job-1",
            PromptRef::new("demo", "lisp"),
            run(),
            compression,
        )
        .await
        .unwrap();
        let mut requests: Vec<Vec<Message>> = Vec::new();
        let mut turn = 0;
        let outcome = CoalescedConversation::run_async(
            &agent,
            async |request: &[Message]| {
                requests.push(request.to_vec());
                Ok::<_, BoxError>(Message::assistant(PROGRAMS[requests.len() - 1]))
            },
            async |draft: TurnDraft| {
                turn += 1;
                Ok(executed(turn - 1, draft))
            },
        )
        .await
        .unwrap();
        assert!(matches!(outcome, CoalescedOutcome::Finished(_)));
        requests
    });
    assert_eq!(blocking.len(), 6);
    assert_eq!(asynchronous, blocking);
}

#[test]
fn a_run_that_never_finishes_ends_when_its_turns_run_out() {
    let run = Run::new("You write PTC-Lisp.", "Count to ten.");
    let conversation = Conversation::open(
        MemoryStore::new(),
        "job-count",
        PromptRef::new("tests", "coalesce"),
        Message::system(run.system.as_str()),
    )
    .unwrap();
    let mut agent =
        CoalescedConversation::open(conversation, run, SingleUserCoalesced::default()).unwrap();
    let turns = agent.turns_left();
    let mut asked = 0;
    let outcome = agent
        .run_blocking(
            |_request: &[Message]| {
                asked += 1;
                Ok::<_, BoxError>(Message::assistant("(+ 1 1)"))
            },
            |mut draft: TurnDraft| {
                draft.result = Some(TurnResult::Returned(Value::from(2)));
                Ok(Executed::Continue(draft))
            },
        )
        .unwrap();
    assert_eq!(outcome, CoalescedOutcome::MaxTurns);
    assert_eq!((asked, agent.turns_left()), (turns, 0));
}

/// The fresh-eyes review's case: a run the executor finishes on its first turn, opened again
/// on the same store and key (`open` gives a fresh handle on the store each time, as a new
/// process would) and run again. Returns the outcome of each run and the provider calls.
#[expect(clippy::unwrap_used, reason = "a helper of tests: an error is a test failure")]
fn finish_then_reopen<S: SessionStore>(open: impl Fn() -> S) -> (Vec<CoalescedOutcome>, usize) {
    let mut asked = 0;
    let mut executed = 0;
    let mut outcomes = Vec::new();
    for _ in 0..2 {
        let run = Run::new("You write PTC-Lisp.", "Add 1 and 2");
        let conversation = Conversation::open(
            open(),
            "job-1",
            PromptRef::new("demo", "lisp"),
            Message::system(run.system.as_str()),
        )
        .unwrap();
        let mut agent =
            CoalescedConversation::open(conversation, run, SingleUserCoalesced::default()).unwrap();
        let outcome = agent
            .run_blocking(
                |_request| {
                    asked += 1;
                    Ok::<_, BoxError>(Message::assistant("(+ 1 2)"))
                },
                |mut draft| {
                    executed += 1;
                    draft.result = Some(TurnResult::Returned(Value::from(3)));
                    Ok(Executed::Finished(draft))
                },
            )
            .unwrap();
        assert_eq!(agent.conversation().history().len(), 4, "system, mission, reply, result");
        outcomes.push(outcome);
    }
    assert_eq!(executed, 1, "the program ran once");
    (outcomes, asked)
}

#[test]
fn a_finished_run_reopened_on_a_shared_memory_store_returns_at_once() {
    let store = Arc::new(MemoryStore::new());
    let (outcomes, asked) = finish_then_reopen(|| Arc::clone(&store));
    assert_eq!(asked, 1, "the model is not called again once the run finished");
    let numbers: Vec<_> =
        outcomes.into_iter().map(|outcome| outcome.finished().map(|turn| turn.number())).collect();
    assert_eq!(numbers, [Some(1), Some(1)]);

    // The async face reads it back too.
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let run = Run::new("You write PTC-Lisp.", "Add 1 and 2");
        let agent = CoalescedConversation::open_async(
            Arc::clone(&store),
            "job-1",
            PromptRef::new("demo", "lisp"),
            run,
            SingleUserCoalesced::default(),
        )
        .await
        .unwrap();
        let outcome = CoalescedConversation::run_async(
            &agent,
            async |_request: &[Message]| Err::<Message, BoxError>("not called".into()),
            async |_draft: TurnDraft| Err::<Executed, BoxError>("not called".into()),
        )
        .await
        .unwrap();
        assert_eq!(
            outcome.finished().map(|turn| turn.program().to_owned()).as_deref(),
            Some("(+ 1 2)")
        );
    });
}

#[test]
fn a_finished_run_reopened_from_its_sqlite_file_returns_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let (outcomes, asked) = finish_then_reopen(|| SqliteStore::open(&path).unwrap());
    assert_eq!(asked, 1, "the model is not called again once the run finished");
    assert_eq!(outcomes[0], outcomes[1], "the same finished turn");
    assert!(matches!(&outcomes[1], CoalescedOutcome::Finished(turn) if turn.number() == 1));
}
