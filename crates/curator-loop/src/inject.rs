//! Injection: the bounded history put into an agent step's request, as messages or as a
//! text block, never touching the step's system messages.

use curator_model::{Message, Role};

/// Whether an agent step's own last message repeats the newest turn, and which copy goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Repeat {
    /// It does not: both are sent.
    No,
    /// The step's own copy is sent (whole); the history's is left out.
    DropNewest,
    /// The history's copy is sent; the step's is left out.
    DropOwn,
}

/// The history put into a request: messages, or the rendered block (`None` when there is no
/// history to render).
pub(crate) enum Injected {
    Messages(Vec<Message>),
    Block(Option<String>),
}

/// The request an agent is sent: `own` (the step's system messages, then its own messages)
/// with the bounded history injected.
///
/// With [`Repeat::DropOwn`] (the step's last own message repeats the newest turn, and the
/// history's copy is the one sent), that message is not sent twice. With
/// [`Repeat::DropNewest`] the history was injected without its newest turn already, and the
/// step's own copy goes whole.
pub(crate) fn inject(own: Vec<Message>, history: Injected, repeat: Repeat) -> Vec<Message> {
    let systems = own.iter().take_while(|m| m.role() == Role::System).count();
    let mut own = own.into_iter();
    let mut out: Vec<Message> = Vec::with_capacity(systems + 2);
    out.extend(own.by_ref().take(systems));
    let mut rest: Vec<Message> = own.collect();
    if repeat == Repeat::DropOwn {
        rest.pop();
    }
    match history {
        Injected::Messages(history) => {
            out.extend(history);
            out.extend(rest);
        }
        Injected::Block(None) => out.extend(rest),
        Injected::Block(Some(block)) => {
            match rest.iter().rposition(|m| m.role() == Role::User) {
                Some(i) => {
                    // The block's own buffer takes the prompt: one copy of the prompt, none
                    // of the block.
                    let mut prompt = block;
                    let own = rest[i].text();
                    prompt.reserve(2 + own.len());
                    prompt.push_str("\n\n");
                    prompt.push_str(&own);
                    rest[i] = rest[i].clone_with_content(Some(prompt.into()));
                }
                None => rest.push(Message::user(block)),
            }
            out.extend(rest);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::Injection;
    use crate::template::HistoryTemplate;
    use crate::turn::ConversationTurn;

    #[track_caller]
    fn check(
        own: Vec<Message>,
        history: Vec<Message>,
        injection: Injection,
        expected: &[(&str, &str)],
    ) {
        let repeat = if matches!((own.last(), history.last()), (Some(a), Some(b)) if a.role() == Role::User && b.role() == Role::User && a.text() == b.text())
        {
            Repeat::DropOwn
        } else {
            Repeat::No
        };
        let history = match injection {
            Injection::Prompt if history.is_empty() => Injected::Block(None),
            Injection::Prompt => {
                let turns: Vec<ConversationTurn> =
                    history.iter().filter_map(ConversationTurn::from_message).collect();
                Injected::Block(Some(HistoryTemplate::default_template().render(&turns).unwrap()))
            }
            _ => Injected::Messages(history),
        };
        let out = inject(own, history, repeat);
        let got: Vec<(String, String)> =
            out.iter().map(|m| (m.role().to_string(), m.text().into_owned())).collect();
        let expected: Vec<(String, String)> =
            expected.iter().map(|(r, t)| ((*r).to_owned(), (*t).to_owned())).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn messages_go_after_the_system_prompt_and_before_the_own_messages() {
        check(
            vec![Message::system("sys"), Message::user("now")],
            vec![Message::user("a"), Message::assistant("b")],
            Injection::Messages,
            &[("system", "sys"), ("user", "a"), ("assistant", "b"), ("user", "now")],
        );
    }

    #[test]
    fn the_input_already_in_the_history_is_not_repeated() {
        check(
            vec![Message::system("sys"), Message::user("yes")],
            vec![Message::assistant("ok?"), Message::user("yes")],
            Injection::Messages,
            &[("system", "sys"), ("assistant", "ok?"), ("user", "yes")],
        );
    }

    #[test]
    fn a_prompt_gets_the_block_before_it_and_the_system_prompt_is_untouched() {
        check(
            vec![Message::system("sys"), Message::user("now")],
            vec![Message::user("a"), Message::assistant("b")],
            Injection::Prompt,
            &[
                ("system", "sys"),
                (
                    "user",
                    "<conversation_history>\nuser: a\nassistant: b\n</conversation_history>\n\nnow",
                ),
            ],
        );
    }

    #[test]
    fn no_history_leaves_the_request_as_it_was() {
        check(vec![Message::user("now")], vec![], Injection::Messages, &[("user", "now")]);
    }
}
