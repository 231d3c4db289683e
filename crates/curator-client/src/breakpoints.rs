//! Anthropic's prompt-cache breakpoints, placed on a Messages API body as curator's views are
//! built to be read back: at the end of the head (the tool definitions, the system prompt and
//! the task, which every view opens with), on the block before curator's note of what a
//! compaction left out (where the run every compaction keeps ends), and on the last two
//! messages (the newest, which the next request reads back, and the one before, so that a
//! request that appended more than Anthropic's 20-block lookback still finds a write).

use curator_strategies::notes;
use serde_json::{Map, Value, json};

/// Anthropic's limit of breakpoints per request.
const MAX_BREAKPOINTS: usize = 4;

/// The shortest prefix a breakpoint is placed after, in tokens (about four characters of
/// the body's JSON a token): Anthropic caches nothing shorter on most models, so a
/// breakpoint there would only take one of the four.
const MIN_PREFIX_TOKENS: usize = 1_024;

fn marker() -> Value {
    json!({"type": "ephemeral"})
}

fn tokens(value: &Value) -> usize {
    value.to_string().len() / 4
}

/// Whether `block` carries a breakpoint.
fn marked(block: &Value) -> bool {
    block.get("cache_control").is_some()
}

/// Blocks that can carry a breakpoint: not thinking.
fn markable(block: &Value) -> bool {
    !matches!(block.get("type").and_then(Value::as_str), Some("thinking" | "redacted_thinking"))
}

/// Marks the last block of a content value (a string becomes one text block); false when
/// it has no block that can carry one, or its last one already does.
fn mark_content(content: &mut Value) -> bool {
    if let Value::String(text) = content {
        *content =
            json!([{"type": "text", "text": std::mem::take(text), "cache_control": marker()}]);
        return true;
    }
    let Some(blocks) = content.as_array_mut() else { return false };
    let Some(last) = blocks.iter_mut().rev().find(|b| markable(b)) else { return false };
    match last.as_object_mut() {
        Some(block) if !block.contains_key("cache_control") => {
            block.insert("cache_control".into(), marker());
            true
        }
        _ => false,
    }
}

/// How many breakpoints `body` already carries.
fn existing(body: &Map<String, Value>) -> usize {
    let in_blocks = |value: Option<&Value>| {
        value
            .and_then(Value::as_array)
            .map_or(0, |blocks| blocks.iter().filter(|b| marked(b)).count())
    };
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(0, |messages| messages.iter().map(|m| in_blocks(m.get("content"))).sum());
    in_blocks(body.get("tools")) + in_blocks(body.get("system")) + messages
}

/// Marks block `index` of a message's content blocks, unless it is thinking or carries a
/// breakpoint already; whether it marked it.
fn mark_block(content: &mut Value, index: usize) -> bool {
    let Some(block) = content.get_mut(index).and_then(Value::as_object_mut) else { return false };
    if block.contains_key("cache_control")
        || matches!(
            block.get("type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        )
    {
        return false;
    }
    block.insert("cache_control".into(), marker());
    true
}

/// The block before curator's note of what a compaction left out, as (message, block):
/// where the compaction's opening ends. `None` without a note, or with nothing before it.
/// Reads the contents as block lists, as [`place`] writes them before it looks.
fn boundary(messages: &[Value]) -> Option<(usize, usize)> {
    let blocks = |m: usize| messages[m].get("content").and_then(Value::as_array);
    let opens =
        |block: &Value| block.get("text").and_then(Value::as_str).is_some_and(notes::opens_note);
    let (m, at) =
        (0..messages.len()).find_map(|m| Some((m, blocks(m)?.iter().position(opens)?)))?;
    if at > 0 {
        return Some((m, at - 1));
    }
    let previous = m.checked_sub(1)?;
    Some((previous, blocks(previous)?.len().checked_sub(1)?))
}

/// Places breakpoints on `body`: the end of the head (the task's last block, or the system
/// prompt's when no user message opens the messages), the block before curator's note of
/// what a compaction left out, the last block of the newest message and of the one before,
/// each only where the prefix it ends is long enough to be cached, never past four in all
/// (those the body already has count).
///
/// A body too short to cache is left as it is. Otherwise every message's text is written
/// as a list of blocks first (a string as one text block),
/// so that a message is the same bytes whether or not it carries a breakpoint: the request
/// after this one, whose newest messages are others, starts with this one's blocks but
/// the markers, and reads back what this one wrote.
pub(crate) fn place(body: &mut Map<String, Value>) {
    let whole: usize = ["tools", "system", "messages"]
        .iter()
        .filter_map(|field| body.get(*field))
        .map(tokens)
        .sum();
    if whole < MIN_PREFIX_TOKENS {
        // Too short to cache anywhere: sent as it is.
        return;
    }
    if let Some(Value::Array(messages)) = body.get_mut("messages") {
        for message in messages.iter_mut() {
            if let Some(content) = message.get_mut("content")
                && let Value::String(text) = content
            {
                *content = json!([{"type": "text", "text": std::mem::take(text)}]);
            }
        }
    }
    let mut left = MAX_BREAKPOINTS.saturating_sub(existing(body));
    let prefix: usize =
        ["tools", "system"].iter().filter_map(|field| body.get(*field)).map(tokens).sum();
    let task_first = body
        .get("messages")
        .and_then(|messages| messages.get(0))
        .is_some_and(|first| first.get("role").and_then(Value::as_str) == Some("user"));
    if !task_first
        && prefix >= MIN_PREFIX_TOKENS
        && let Some(system) = body.get_mut("system")
        && mark_content(system)
    {
        // No task opens the messages: the head ends with the system prompt.
        left -= 1;
    }
    let Some(Value::Array(messages)) = body.get_mut("messages") else { return };
    let ends: Vec<usize> = messages
        .iter()
        .scan(prefix, |sum, message| {
            *sum += tokens(message);
            Some(*sum)
        })
        .collect();
    let boundary = boundary(messages);
    // The head: the tools, the system prompt and the task (the first message, a user's),
    // which every view of the conversation opens with; up to the note when a compaction's
    // note follows the task in the same turn.
    if task_first && left > 0 && ends[0] >= MIN_PREFIX_TOKENS {
        let marked = match boundary {
            Some((0, block)) => {
                messages[0].get_mut("content").is_some_and(|c| mark_block(c, block))
            }
            _ => messages[0].get_mut("content").is_some_and(mark_content),
        };
        if marked {
            left -= 1;
        }
    }
    if let Some((m, block)) = boundary
        && left > 0
        && ends[m] >= MIN_PREFIX_TOKENS
        && let Some(content) = messages[m].get_mut("content")
        && mark_block(content, block)
    {
        left -= 1;
    }
    for index in (0..messages.len()).rev().take(2) {
        if left == 0 || ends[index] < MIN_PREFIX_TOKENS {
            break;
        }
        if let Some(content) = messages[index].get_mut("content")
            && mark_content(content)
        {
            left -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(body: &Map<String, Value>) -> usize {
        existing(body)
    }

    #[test]
    fn a_long_request_gets_four_and_a_short_one_none() {
        let long = "policy ".repeat(1_000);
        let mut body = json!({
            "system": long,
            "tools": [{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}}],
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "tool_use", "id": "1", "name": "a", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "1", "content": "ok"}]},
            ],
        });
        let map = body.as_object_mut().unwrap();
        place(map);
        // The head's end (the task), and the last two messages; the tools and the system
        // prompt are read back through the task's breakpoint.
        assert_eq!(count(map), 3);
        assert!(map["tools"][1].get("cache_control").is_none());
        assert_eq!(map["system"], long.as_str());
        assert!(marked(&map["messages"][0]["content"][0]));
        assert!(marked(&map["messages"][2]["content"][0]));
        // The thinking block is passed over for the tool use after it.
        assert!(marked(&map["messages"][1]["content"][1]));
        assert!(!marked(&map["messages"][1]["content"][0]));
        assert_eq!(
            map["messages"][0]["content"],
            json!([{"type": "text", "text": "go", "cache_control": {"type": "ephemeral"}}])
        );

        // Without a task first, the head ends with the system prompt.
        let mut body = json!({
            "system": long,
            "messages": [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "hi"}],
        });
        let map = body.as_object_mut().unwrap();
        place(map);
        assert!(marked(&map["system"][0]));
        assert_eq!(count(map), 3);

        let mut short =
            json!({"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]});
        let map = short.as_object_mut().unwrap();
        place(map);
        assert_eq!(count(map), 0);
        assert_eq!(map["system"], "Be brief.");
    }

    #[test]
    fn breakpoints_already_there_count_toward_the_four() {
        let long = "x ".repeat(3_000);
        let marked_block =
            json!([{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]);
        let mut body = json!({
            "system": long,
            "messages": [
                {"role": "user", "content": marked_block},
                {"role": "assistant", "content": marked_block},
                {"role": "user", "content": marked_block},
                {"role": "assistant", "content": "done"},
            ],
        });
        let map = body.as_object_mut().unwrap();
        place(map);
        // The three there, and the newest message: four, none on the system prompt.
        assert_eq!(count(map), 4);
        assert!(marked(&map["messages"][3]["content"][0]));
        assert_eq!(map["system"], long.as_str(), "no fifth breakpoint");
    }

    #[test]
    fn the_block_before_a_compaction_note_gets_one() {
        let long = "policy ".repeat(1_000);
        let note = "[curator left out 7 earlier messages to fit the context; ask for what you need again.]";
        let mut body = json!({
            "system": long,
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "1", "name": "a", "input": {}}]},
                // The opening's last result and the note, merged into one user turn.
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "1", "content": "ok"},
                                             {"type": "text", "text": note}]},
                {"role": "assistant", "content": "next"},
                {"role": "user", "content": "and then?"},
            ],
        });
        let map = body.as_object_mut().unwrap();
        place(map);
        // The task, the opening's end, and the newest two: four.
        assert!(marked(&map["messages"][2]["content"][0]));
        assert!(!marked(&map["messages"][2]["content"][1]), "not the note itself");
        assert!(marked(&map["messages"][4]["content"][0]));
        assert!(marked(&map["messages"][3]["content"][0]));
        assert_eq!(count(map), 4);

        // A note that is a message of its own: the previous message's last block.
        let mut body = json!({
            "system": long,
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "user", "content": note},
                {"role": "assistant", "content": "next"},
                {"role": "user", "content": "and then?"},
            ],
        });
        let map = body.as_object_mut().unwrap();
        place(map);
        assert!(marked(&map["messages"][0]["content"][0]));
        assert!(!marked(&map["messages"][1]["content"][0]));

        // The task and the note in one user turn: the head ends on the task's block, which
        // is also the opening's end (one breakpoint), never on the note.
        let mut body = json!({
            "system": long,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "go"},
                                             {"type": "text", "text": note}]},
                {"role": "assistant", "content": "next"},
                {"role": "user", "content": "and then?"},
            ],
        });
        let map = body.as_object_mut().unwrap();
        place(map);
        assert!(marked(&map["messages"][0]["content"][0]));
        assert!(!marked(&map["messages"][0]["content"][1]), "not the note itself");
        assert_eq!(count(map), 3);
    }
}
