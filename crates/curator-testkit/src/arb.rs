//! proptest generators of message lists that both providers accept.

use curator_model::{Content, ImageSource, Message, Part, ToolCall};
use proptest::prelude::*;

/// Text of 1 to 40 characters, mixing ASCII, accented letters, CJK and emoji.
pub fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .,é中😀\n]{1,40}".prop_filter("non-blank", |s| !s.trim().is_empty())
}

/// Longer text (up to 400 characters), for tool outputs.
pub fn long_text() -> impl Strategy<Value = String> {
    "[a-z0-9 éü中😀\n]{1,400}".prop_filter("non-blank", |s| !s.trim().is_empty())
}

/// JSON object text for tool arguments, sometimes pretty-printed so that exact-text
/// preservation is exercised.
pub fn arguments() -> impl Strategy<Value = String> {
    (proptest::collection::btree_map("[a-z]{1,6}", "[a-z0-9 ]{0,12}", 0..4), any::<bool>())
        .prop_map(|(map, pretty)| {
            let value = serde_json::to_value(map).unwrap_or_default();
            if pretty {
                serde_json::to_string_pretty(&value).unwrap_or_default()
            } else {
                value.to_string()
            }
        })
}

/// Content for a user message: text, or parts with text and sometimes an image.
pub fn user_content() -> impl Strategy<Value = Content> {
    prop_oneof![
        4 => text().prop_map(Content::Text),
        1 => (text(), any::<bool>()).prop_map(|(t, url)| {
            let source = if url {
                ImageSource::Url { url: "https://example.com/a.png".into() }
            } else {
                ImageSource::Base64 { media_type: "image/png".into(), data: "iVBORw0KGgo=".into() }
            };
            Content::Parts(vec![Part::text(t), Part::image(source)])
        }),
    ]
}

/// One step of an agent loop, as generated before ids are assigned.
#[derive(Debug, Clone)]
enum Step {
    /// An assistant reply without calls, then (when `user` is set) a user message.
    Say { text: String, user: Option<Content> },
    /// An assistant message with calls, their answers, then maybe a user message.
    Call {
        text: Option<String>,
        calls: Vec<(String, String, String, bool, bool)>,
        user: Option<Content>,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let call = (long_text(), "[a-z_]{1,10}", arguments(), any::<bool>(), any::<bool>());
    prop_oneof![
        1 => (text(), proptest::option::of(user_content())).prop_map(|(text, user)| Step::Say { text, user }),
        3 => (
            proptest::option::of(text()),
            proptest::collection::vec(call, 1..=3),
            proptest::option::weighted(0.2, user_content()),
        )
            .prop_map(|(text, calls, user)| Step::Call { text, calls, user }),
    ]
}

/// A valid history: an optional system message, the task (a user message), then 0 to
/// `max_steps` steps. Tool-call ids are reused across steps (as real transcripts do); when
/// `allow_pending` is set the last step may leave calls unanswered.
pub fn history_with(max_steps: usize, allow_pending: bool) -> impl Strategy<Value = Vec<Message>> {
    (
        proptest::option::of(text()),
        user_content(),
        proptest::collection::vec(step(), 0..=max_steps),
        any::<bool>(),
        0usize..3,
    )
        .prop_map(move |(system, task, steps, reuse_ids, pending_keep)| {
            let mut out = Vec::new();
            if let Some(system) = system {
                out.push(Message::system(system));
            }
            out.push(Message::user(task));
            let last = steps.len().saturating_sub(1);
            for (n, step) in steps.into_iter().enumerate() {
                match step {
                    Step::Say { text, user } => {
                        out.push(Message::assistant(text));
                        if let Some(user) = user {
                            out.push(Message::user(user));
                        }
                    }
                    Step::Call { text, calls, user } => {
                        // Ids repeat across steps when `reuse_ids` is set, never within a step.
                        let id = |k: usize| {
                            if reuse_ids { format!("call_{k}") } else { format!("call_{n}_{k}") }
                        };
                        let tool_calls = calls
                            .iter()
                            .enumerate()
                            .map(|(k, (_, name, args, _, _))| {
                                ToolCall::new(id(k), name.clone(), args.clone())
                            })
                            .collect();
                        out.push(Message::assistant_with_calls(
                            text.map(Content::Text),
                            tool_calls,
                        ));
                        let pending = allow_pending && n == last;
                        let answered = if pending {
                            pending_keep.min(calls.len().saturating_sub(1))
                        } else {
                            calls.len()
                        };
                        // Answer in reverse order: providers accept results in any order.
                        for (k, (output, name, _, failed, named)) in
                            calls.iter().enumerate().take(answered).rev()
                        {
                            let mut result = if *failed {
                                Message::tool_error(id(k), output.as_str())
                            } else {
                                Message::tool_result(id(k), output.as_str())
                            };
                            if *named {
                                result = result.with_name(name.clone());
                            }
                            out.push(result);
                        }
                        if let (Some(user), false) = (user, pending) {
                            out.push(Message::user(user));
                        }
                    }
                }
            }
            out
        })
}

/// A valid, complete-or-pending history of up to 12 steps.
pub fn history() -> impl Strategy<Value = Vec<Message>> {
    history_with(12, true)
}
