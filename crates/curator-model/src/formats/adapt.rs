//! Messages read in one format adapted to what the other format's API accepts.

use std::borrow::Borrow;

use crate::{Content, Message, Part, Role};

/// See [`super::openai::adapt`].
pub(super) fn for_openai<M: Borrow<Message>>(messages: &[M]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut images: Vec<Part> = Vec::new();
    for message in messages.iter().map(Borrow::borrow) {
        if message.role() != Role::Tool && !images.is_empty() {
            out.push(Message::user(Content::Parts(std::mem::take(&mut images))));
        }
        match message.role() {
            Role::Assistant => {
                let merge_into = out
                    .last_mut()
                    .filter(|last| last.role() == Role::Assistant && last.has_tool_calls());
                match merge_into {
                    Some(last) => *last = merged(last, message),
                    None => out.push(plain_text(message.clone())),
                }
            }
            Role::Tool => out.push(tool_for_openai(message, &mut images)),
            Role::User => out.push(plain_text(message.clone())),
            Role::System => out.push(message.clone()),
        }
    }
    if !images.is_empty() {
        out.push(Message::user(Content::Parts(images)));
    }
    out
}

/// One assistant turn from two assistant messages: the content, then the calls, of both.
fn merged(first: &Message, second: &Message) -> Message {
    let mut parts = Vec::new();
    for content in [first.content(), second.content()].into_iter().flatten() {
        match content {
            Content::Text(text) if text.is_empty() => {}
            Content::Text(text) => parts.push(Part::text(text.as_str())),
            Content::Parts(more) => parts.extend(more.iter().cloned()),
        }
    }
    let content = if parts.is_empty() { None } else { Some(Content::Parts(parts)) };
    let calls = first.tool_calls().iter().chain(second.tool_calls()).cloned().collect();
    let mut out = Message::assistant_with_calls(content, calls).with_extra(first.extra().cloned());
    if let Some(name) = first.name() {
        out = out.with_name(name);
    }
    plain_text(out)
}

/// A message whose content is one plain text part, with that text as a string (the
/// Anthropic writer makes such a part of the text of a user or assistant message that
/// shares its turn with blocks).
fn plain_text(message: Message) -> Message {
    match message.content() {
        Some(Content::Parts(parts)) => match parts.as_slice() {
            [Part::Text { text, extra: None }] => {
                let text = text.clone();
                message.with_content(Some(Content::Text(text)))
            }
            _ => message,
        },
        _ => message,
    }
}

/// A tool message OpenAI accepts: content always present, only text in it; its images are
/// moved to `images`.
fn tool_for_openai(message: &Message, images: &mut Vec<Part>) -> Message {
    match message.content() {
        None => message.clone_with_content(Some(Content::Text(String::new()))),
        Some(Content::Parts(parts)) if parts.iter().any(|p| matches!(p, Part::Image { .. })) => {
            let (moved, kept): (Vec<Part>, Vec<Part>) =
                parts.iter().cloned().partition(|p| matches!(p, Part::Image { .. }));
            images.extend(moved);
            message.clone_with_content(Some(tool_text(kept)))
        }
        Some(Content::Parts(parts)) if parts.is_empty() => {
            message.clone_with_content(Some(Content::Text(String::new())))
        }
        Some(_) => message.clone(),
    }
}

fn tool_text(parts: Vec<Part>) -> Content {
    match parts.as_slice() {
        [] => Content::Text(String::new()),
        [Part::Text { text, extra: None }] => Content::Text(text.clone()),
        _ => Content::Parts(parts),
    }
}

/// See [`super::anthropic::adapt`].
pub(super) fn for_anthropic<M: Borrow<Message>>(messages: &[M]) -> Vec<Message> {
    let mut previous: Option<&Message> = None;
    messages
        .iter()
        .map(|message| {
            let message = message.borrow();
            // An assistant message after one that calls no tool stays a message of its own,
            // as OpenAI had it (the API merges them; reading back keeps them apart).
            let apart = previous
                .replace(message)
                .is_some_and(|p| p.role() == Role::Assistant && !p.has_tool_calls())
                && message.role() == Role::Assistant;
            let message = &message.clone().with_starts_turn(apart || message.starts_turn());
            match message.content() {
                Some(Content::Text(text)) if message.has_tool_calls() && text.trim().is_empty() => {
                    message.clone().with_content(None)
                }
                Some(Content::Parts(parts))
                    if parts.iter().any(|p| p.as_text().is_some_and(|t| t.trim().is_empty())) =>
                {
                    let kept: Vec<Part> = parts
                        .iter()
                        .filter(|p| !p.as_text().is_some_and(|t| t.trim().is_empty()))
                        .cloned()
                        .collect();
                    let content = if kept.is_empty() && message.has_tool_calls() {
                        None
                    } else {
                        Some(Content::Parts(kept))
                    };
                    message.clone().with_content(content)
                }
                _ => message.clone(),
            }
        })
        .collect()
}
