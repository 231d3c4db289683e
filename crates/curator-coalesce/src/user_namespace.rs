//! The `user/` namespace of the USER message (the section the model sees as "your prelude"):
//! the definitions accumulated over the successful turns.

use crate::turn::Turns;
use crate::value::Value;

/// One name in the accumulated user namespace, with whether its sample may be shown.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UserDefinition<'a> {
    pub(crate) name: &'a str,
    pub(crate) value: &'a Value,
    /// False when the turn that last defined the name printed output: the model chose what
    /// to see, so the `user/` section does not show the same data again as a sample.
    pub(crate) sample: bool,
}

/// The definitions of every successful turn, oldest first; a redefined name keeps the place
/// of its first definition and takes the latest value.
///
/// A turn's `memory` is the namespace after it (a snapshot), so a name it lists with the
/// value it already had was not defined by it: the name keeps the sample rule of the turn
/// that gave it that value. Callers that pass only what each turn defined get the same
/// result.
pub(crate) fn accumulate(turns: &Turns) -> Vec<UserDefinition<'_>> {
    let mut entries: Vec<UserDefinition<'_>> = Vec::new();
    for turn in turns.iter().filter(|turn| turn.success()) {
        let sample = turn.prints().is_empty();
        for definition in turn.memory() {
            let entry = UserDefinition { name: &definition.name, value: &definition.value, sample };
            match entries.iter_mut().find(|existing| existing.name == definition.name) {
                Some(existing) if existing.value == &definition.value => {}
                Some(existing) => *existing = entry,
                None => entries.push(entry),
            }
        }
    }
    entries
}
