//! What both providers can express of a message, for comparing across formats.

use curator_model::{Message, Part, Role};
use serde_json::Value;

/// The provider-independent meaning of a message: role, text, non-text parts, tool calls with
/// parsed arguments, the answered call and the error mark. It leaves out what a conversion
/// through the other format legitimately changes: string vs one text part, `null` vs empty
/// text, argument whitespace, the `name` field (Anthropic has none) and provider fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    /// The role.
    pub role: Role,
    /// The text.
    pub text: String,
    /// Non-text parts, as JSON of the neutral model.
    pub other_parts: Vec<Value>,
    /// `(id, name, arguments)` of each call.
    pub calls: Vec<(String, String, Value)>,
    /// The answered call.
    pub tool_call_id: Option<String>,
    /// The error mark.
    pub is_error: bool,
}

/// Projects one message.
pub fn project(m: &Message) -> Projection {
    let other_parts = match m.content() {
        Some(curator_model::Content::Parts(parts)) => parts
            .iter()
            .filter(|p| !matches!(p, Part::Text { .. }))
            .map(|p| serde_json::to_value(p).unwrap_or(Value::Null))
            .collect(),
        _ => Vec::new(),
    };
    Projection {
        role: m.role(),
        text: m.text().into_owned(),
        other_parts,
        calls: m
            .tool_calls()
            .iter()
            .map(|c| {
                (c.id().to_owned(), c.name().to_owned(), c.arguments_json().unwrap_or(Value::Null))
            })
            .collect(),
        tool_call_id: m.tool_call_id().map(str::to_owned),
        is_error: m.is_error(),
    }
}

/// Projects a list, merging what the Anthropic format merges: consecutive user messages
/// (their texts joined by a newline) and consecutive assistant messages.
pub fn project_merged(messages: &[Message]) -> Vec<Projection> {
    let mut out: Vec<Projection> = Vec::new();
    for m in messages {
        let p = project(m);
        if let Some(last) = out.last_mut() {
            let mergeable = last.role == p.role
                && matches!(p.role, Role::User | Role::Assistant | Role::System);
            if mergeable {
                match (last.text.is_empty(), p.text.is_empty()) {
                    (_, true) => {}
                    (true, false) => last.text = p.text,
                    (false, false) => {
                        last.text.push('\n');
                        last.text.push_str(&p.text);
                    }
                }
                last.other_parts.extend(p.other_parts);
                last.calls.extend(p.calls);
                continue;
            }
        }
        out.push(p);
    }
    out
}
