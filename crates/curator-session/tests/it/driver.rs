//! The driver protocol with a driver of the caller's own: what `drive` and `drive_async`
//! refuse (an empty `Run`, a second run of one driver at once), where `prepare` runs, and a
//! cancelled run that leaves the driver free.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use curator_model::{BoxError, Message, PromptRef, Role, ToolCall};
use curator_session::{
    Action, AsyncDriver, Conversation, Curation, Driver, Error, MemoryStore, Outcome, ToolContext,
    drive, drive_async,
};
use curator_strategies::{CurationContext, Passthrough};

/// A driver kept in memory: the model asks for one tool call, then answers. `PREPARES` is a
/// parameter, so that both places `prepare` can run are tested with one driver.
#[derive(Default)]
struct Scripted<const PREPARES: bool = false> {
    log: Vec<Message>,
    pending: Vec<String>,
    done: Option<String>,
    /// Says `Run(vec![])` whatever the state: a driver that breaks the protocol.
    empty_run: bool,
    /// The thread of each `prepare`.
    prepared_on: Arc<Mutex<Vec<ThreadId>>>,
}

impl<const P: bool> Scripted<P> {
    fn asked() -> Self {
        Self { log: vec![Message::user("go")], ..Self::default() }
    }
}

impl<const P: bool> Driver for Scripted<P> {
    type Work = String;
    type WorkResult = String;
    type Output = String;
    type Reply = Message;
    type Error = Error;
    type Curation<'c> = ();
    const PREPARES: bool = P;

    fn action(&self) -> Action<String, String> {
        if self.empty_run {
            Action::Run(Vec::new())
        } else if !self.pending.is_empty() {
            Action::Run(self.pending.clone())
        } else if let Some(done) = &self.done {
            Action::Finished(done.clone())
        } else if self.log.is_empty() {
            Action::WaitForUser
        } else {
            Action::CallModel
        }
    }

    fn prepare(&mut self) -> Result<(), Error> {
        self.prepared_on.lock().unwrap().push(std::thread::current().id());
        Ok(())
    }

    fn build_request(&self, (): ()) -> Result<Vec<Message>, Error> {
        Ok(self.log.clone())
    }

    fn record_reply(&mut self, reply: Message) -> Result<(), Error> {
        self.pending = reply.tool_calls().iter().map(|call| call.id().to_owned()).collect();
        if self.pending.is_empty() {
            self.done = Some(reply.text().into_owned());
        }
        self.log.push(reply);
        Ok(())
    }

    fn record_work(&mut self, work: String, result: String) -> Result<(), Error> {
        self.pending.retain(|pending| *pending != work);
        self.log.push(Message::tool_result(work, result));
        Ok(())
    }

    fn provider_failed(source: BoxError) -> Error {
        Error::Provider(source)
    }
}

/// The model of every test here: a tool call first, then the answer.
fn reply_to(request: &[Message]) -> Message {
    match request.last().map(Message::role) {
        Some(Role::Tool) => Message::assistant("done"),
        _ => Message::assistant_with_calls(None, vec![ToolCall::new("t1", "charge", "{}")]),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
}

#[test]
fn drive_refuses_an_empty_run_at_once() {
    // On a thread of its own, so that a `drive` that loops forever fails the test instead
    // of hanging it.
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut driver = Scripted::<false> { empty_run: true, ..Scripted::asked() };
        let mut works = 0;
        let outcome = drive(
            &mut driver,
            (),
            |request| Ok(reply_to(request)),
            |work: &String| {
                works += 1;
                work.clone()
            },
            5,
        );
        let _ = sender.send((outcome, works));
    });
    let (outcome, works) = receiver
        .recv_timeout(Duration::from_secs(5))
        .expect("drive returns at once on an empty Run, instead of asking again forever");
    let err = outcome.unwrap_err();
    assert!(matches!(err, Error::EmptyRun { .. }), "{err}");
    assert!(err.to_string().contains("Scripted"), "the error names the driver: {err}");
    assert_eq!(works, 0);
}

#[test]
fn drive_async_refuses_an_empty_run_at_once() {
    runtime().block_on(async {
        let driver = AsyncDriver::new(Scripted::<false> { empty_run: true, ..Scripted::asked() });
        let outcome = tokio::time::timeout(
            Duration::from_secs(5),
            drive_async(
                &driver,
                (),
                async |request: &[Message]| Ok(reply_to(request)),
                async |work: &String| work.clone(),
                5,
            ),
        )
        .await
        .expect("drive_async returns at once on an empty Run, instead of asking again forever");
        assert!(matches!(outcome, Err(Error::EmptyRun { .. })), "{outcome:?}");
    });
}

#[test]
fn drive_async_runs_prepare_in_place_unless_the_driver_prepares() {
    // A driver that overrides `prepare` without setting `PREPARES` is still prepared, as
    // `drive` prepares it, on the runtime's thread; one that sets it is prepared on a
    // blocking thread.
    let runtime = runtime();
    let here = std::thread::current().id();

    let in_place = Scripted::<false>::asked();
    let prepared_in_place = Arc::clone(&in_place.prepared_on);
    let driver = AsyncDriver::new(in_place);
    let outcome = runtime.block_on(drive_async(
        &driver,
        (),
        async |request: &[Message]| Ok(reply_to(request)),
        async |work: &String| format!("ran {work}"),
        5,
    ));
    assert_eq!(outcome.unwrap(), Outcome::Finished("done".to_owned()));
    assert_eq!(*prepared_in_place.lock().unwrap(), [here, here], "once per model call, here");

    let blocking = Scripted::<true>::asked();
    let prepared_blocking = Arc::clone(&blocking.prepared_on);
    let driver = AsyncDriver::new(blocking);
    let outcome = runtime.block_on(drive_async(
        &driver,
        (),
        async |request: &[Message]| Ok(reply_to(request)),
        async |work: &String| format!("ran {work}"),
        5,
    ));
    assert_eq!(outcome.unwrap(), Outcome::Finished("done".to_owned()));
    let threads = prepared_blocking.lock().unwrap().clone();
    assert_eq!(threads.len(), 2, "once per model call");
    assert!(threads.iter().all(|thread| *thread != here), "on tokio's blocking threads");
}

#[test]
fn a_second_drive_async_of_one_driver_is_refused_while_the_first_runs() {
    runtime().block_on(async {
        let driver = AsyncDriver::new(Scripted::<false>::asked());
        let clone = driver.clone();
        let works = AtomicUsize::new(0);
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let mut released = Some(released);
        let first = drive_async(
            &driver,
            (),
            async |request: &[Message]| {
                // The first model call waits until the second run was tried.
                if let Some(released) = released.take() {
                    released.await.unwrap();
                }
                Ok(reply_to(request))
            },
            async |work: &String| {
                works.fetch_add(1, Ordering::SeqCst);
                format!("ran {work}")
            },
            5,
        );
        let second = async {
            let outcome = drive_async(
                &clone,
                (),
                async |request: &[Message]| Ok(reply_to(request)),
                async |work: &String| {
                    works.fetch_add(1, Ordering::SeqCst);
                    format!("ran {work}")
                },
                5,
            )
            .await;
            release.send(()).unwrap();
            outcome
        };
        let (first, second) = tokio::join!(first, second);
        assert_eq!(first.unwrap(), Outcome::Finished("done".to_owned()));
        let err = second.unwrap_err();
        assert!(matches!(err, Error::AlreadyRunning { .. }), "{err}");
        assert_eq!(works.load(Ordering::SeqCst), 1, "the work ran once");

        // Once the first run is over, the driver can be run again: it is finished.
        let again = drive_async(
            &clone,
            (),
            async |_request: &[Message]| Err::<Message, BoxError>("not called".into()),
            async |work: &String| work.clone(),
            5,
        )
        .await;
        assert_eq!(again.unwrap(), Outcome::Finished("done".to_owned()));
    });
}

#[test]
fn a_dropped_drive_async_leaves_the_driver_free_to_run_again() {
    runtime().block_on(async {
        let driver = AsyncDriver::new(Scripted::<false>::asked());
        let cancelled = tokio::time::timeout(
            Duration::from_millis(20),
            drive_async(
                &driver,
                (),
                async |_request: &[Message]| {
                    std::future::pending::<Result<Message, BoxError>>().await
                },
                async |work: &String| work.clone(),
                5,
            ),
        )
        .await;
        assert!(cancelled.is_err(), "the run was cancelled while the model was called");
        let outcome = drive_async(
            &driver,
            (),
            async |request: &[Message]| Ok(reply_to(request)),
            async |work: &String| format!("ran {work}"),
            5,
        )
        .await;
        assert_eq!(outcome.unwrap(), Outcome::Finished("done".to_owned()));
    });
}

#[test]
fn two_tasks_driving_clones_of_one_conversation_run_its_tool_once() {
    // The fresh-eyes review's case: a side-effecting tool, two tasks on a multi-thread
    // runtime, each with a clone of one `AsyncDriver`.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let conversation = Conversation::open(
            MemoryStore::new(),
            "job",
            PromptRef::new("tests", "driver"),
            Message::system("s"),
        )
        .unwrap();
        let driver = AsyncDriver::new(conversation);
        driver.call(|c| c.add_user("charge the card")).await.unwrap();
        let charges = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let driver = driver.clone();
                let charges = Arc::clone(&charges);
                tokio::spawn(async move {
                    let window = Passthrough;
                    let ctx = CurationContext::default();
                    drive_async(
                        &driver,
                        Curation::new(&window, &ctx),
                        async move |request: &[Message]| {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok(reply_to(request))
                        },
                        async move |_call: &ToolContext| {
                            charges.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok("charged".into())
                        },
                        5,
                    )
                    .await
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.unwrap());
        }
        // Each task either drove the conversation to its answer or was refused (the second
        // one usually is; one that starts after the first run ended finds it finished).
        for outcome in &outcomes {
            assert!(
                matches!(outcome, Ok(Outcome::Finished(_)) | Err(Error::AlreadyRunning { .. })),
                "{outcomes:?}"
            );
        }
        assert_eq!(charges.load(Ordering::SeqCst), 1, "the card was charged once");
        assert_eq!(driver.with(|c| c.history().len()).await, 5);
    });
}

/// Two calls of one reply that each wait for the other: they finish only when they run at
/// once. Each result is recorded as its call returns: the slow one last.
#[test]
fn drive_parallel_runs_a_replys_calls_at_once_and_records_each_as_it_returns() {
    use std::sync::Barrier;
    let mut conversation =
        Conversation::open(MemoryStore::new(), "p", PromptRef::new("t", "p"), Message::system("s"))
            .unwrap();
    conversation.add_user("both").unwrap();
    let barrier = Barrier::new(2);
    let calls = [ToolCall::new("slow", "wait", "{}"), ToolCall::new("fast", "wait", "{}")];
    let outcome = curator_session::drive_parallel(
        &mut conversation,
        Curation::new(&Passthrough, &CurationContext::default()),
        |request| {
            Ok(match request.last().map(Message::role) {
                Some(Role::Tool) => Message::assistant("done"),
                _ => Message::assistant_with_calls(None, calls.to_vec()),
            })
        },
        |context| {
            // Sequential work would wait here for ever: the test's timeout would catch it.
            barrier.wait();
            if context.call_id() == "slow" {
                std::thread::sleep(Duration::from_millis(200));
            }
            Ok(context.call_id().into())
        },
        5,
    )
    .unwrap();
    assert_eq!(outcome, Outcome::Finished(Message::assistant("done")));
    let results: Vec<&str> =
        conversation.history().messages().iter().filter_map(Message::tool_call_id).collect();
    assert_eq!(results, ["fast", "slow"]);
}

/// A driver's `start_work` sees each batch before it runs and chooses what runs: here it
/// answers one call itself, and the loop runs only the other.
#[test]
fn start_work_chooses_what_of_a_batch_runs() {
    struct Answering(Conversation<MemoryStore>);
    impl Driver for Answering {
        type Work = ToolContext;
        type WorkResult = curator_session::ToolOutcome;
        type Output = Message;
        type Reply = Message;
        type Error = Error;
        type Curation<'c> = Curation<'c>;
        fn action(&self) -> Action<ToolContext, Message> {
            self.0.next_step()
        }
        fn start_work(&mut self, work: Vec<ToolContext>) -> Result<Vec<ToolContext>, Error> {
            self.0.record_tool_result("mine", Ok::<_, String>("answered by the driver"))?;
            Ok(work.into_iter().filter(|c| c.call_id() != "mine").collect())
        }
        fn build_request(&self, curation: Curation<'_>) -> Result<Vec<Message>, Error> {
            self.0.build_request(curation)
        }
        fn record_reply(&mut self, reply: Message) -> Result<(), Error> {
            self.0.record_reply(reply)
        }
        fn record_work(
            &mut self,
            work: ToolContext,
            result: Self::WorkResult,
        ) -> Result<(), Error> {
            self.0.record_work(work, result)
        }
        fn provider_failed(source: BoxError) -> Error {
            Error::Provider(source)
        }
    }
    let mut conversation =
        Conversation::open(MemoryStore::new(), "w", PromptRef::new("t", "w"), Message::system("s"))
            .unwrap();
    conversation.add_user("go").unwrap();
    let mut driver = Answering(conversation);
    let ran = AtomicUsize::new(0);
    let outcome = drive(
        &mut driver,
        Curation::new(&Passthrough, &CurationContext::default()),
        |request| {
            Ok(match request.last().map(Message::role) {
                Some(Role::Tool) => Message::assistant("done"),
                _ => Message::assistant_with_calls(
                    None,
                    vec![ToolCall::new("mine", "t", "{}"), ToolCall::new("yours", "t", "{}")],
                ),
            })
        },
        |context| {
            assert_eq!(context.call_id(), "yours");
            ran.fetch_add(1, Ordering::SeqCst);
            Ok("ran".into())
        },
        5,
    )
    .unwrap();
    assert_eq!(outcome, Outcome::Finished(Message::assistant("done")));
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let texts: Vec<String> =
        driver.0.history().messages().iter().map(|m| m.text().into_owned()).collect();
    assert!(texts.contains(&"answered by the driver".to_owned()), "{texts:?}");
}
