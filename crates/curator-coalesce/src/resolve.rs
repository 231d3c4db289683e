//! Auto-fallback resolution of bare names, the rule the rendered prelude promises the model.

use crate::error::{Error, Result};
use crate::namespace::{DataEntry, Run, ToolSpec};
use crate::turn::Turns;
use crate::value::Value;

/// What a name refers to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Resolved<'a> {
    /// A definition in the user namespace (the latest one of that name).
    User(&'a Value),
    /// A tool.
    Tool(&'a ToolSpec),
    /// An input.
    Data(&'a DataEntry),
}

impl Run {
    /// Resolve a name as an interpreter embedding this crate should: `tool/x` and `data/x`
    /// directly; a bare name against the user definitions of the successful turns first,
    /// then `tool/` and `data/`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{DataEntry, Resolved, Run, ToolSpec, Turns, Value};
    ///
    /// let run = Run::new("s", "m")
    ///     .with_tools(vec![ToolSpec::new("fetch-users", ["category"], "")])
    ///     .with_data(vec![DataEntry::new("fetch-users", Value::Nil), DataEntry::new("config", Value::Nil)]);
    /// let turns = Turns::new();
    /// assert!(matches!(run.resolve(&turns, "config")?, Resolved::Data(_)));
    /// assert!(matches!(run.resolve(&turns, "tool/fetch-users")?, Resolved::Tool(_)));
    /// assert!(run.resolve(&turns, "fetch-users").is_err());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Undefined`] when nothing has the name; [`Error::Ambiguous`] when a bare
    /// name with no user definition is both a tool and an input.
    pub fn resolve<'a>(&'a self, turns: &'a Turns, name: &str) -> Result<Resolved<'a>> {
        let tool = |bare: &str| self.tools.iter().find(|tool| tool.name == bare);
        let data = |bare: &str| self.data.iter().find(|entry| entry.name == bare);
        let undefined = || Error::Undefined { name: name.to_owned() };
        if let Some(bare) = name.strip_prefix("tool/") {
            return tool(bare).map(Resolved::Tool).ok_or_else(undefined);
        }
        if let Some(bare) = name.strip_prefix("data/") {
            return data(bare).map(Resolved::Data).ok_or_else(undefined);
        }
        let bare = name.strip_prefix("user/").unwrap_or(name);
        // The newest definition wins, so search backwards and stop at the first match.
        let latest = turns
            .iter()
            .rev()
            .filter(|turn| turn.success())
            .flat_map(|turn| turn.memory().iter().rev())
            .find(|definition| definition.name == bare);
        if let Some(definition) = latest {
            return Ok(Resolved::User(&definition.value));
        }
        if name.starts_with("user/") {
            return Err(undefined());
        }
        match (tool(bare), data(bare)) {
            (Some(_), Some(_)) => Err(Error::Ambiguous { name: bare.to_owned() }),
            (Some(tool), None) => Ok(Resolved::Tool(tool)),
            (None, Some(entry)) => Ok(Resolved::Data(entry)),
            (None, None) => Err(undefined()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::{Definition, TurnDraft};

    #[test]
    fn local_definitions_take_precedence_and_qualified_names_skip_them() {
        let run = Run::new("s", "m")
            .with_tools(vec![ToolSpec::new("foo", ["x"], "")])
            .with_data(vec![DataEntry::new("foo", Value::from(1))]);
        let mut turns = Turns::new();
        assert!(
            matches!(run.resolve(&turns, "foo"), Err(Error::Ambiguous { name }) if name == "foo")
        );
        let mut draft = TurnDraft::returned("(def foo 2)", Value::Nil);
        draft.memory = vec![Definition { name: "foo".to_owned(), value: Value::from(2) }];
        turns.push(draft);
        assert!(
            matches!(run.resolve(&turns, "foo"), Ok(Resolved::User(value)) if *value == Value::from(2))
        );
        assert!(
            matches!(run.resolve(&turns, "user/foo"), Ok(Resolved::User(value)) if *value == Value::from(2))
        );
        assert!(
            matches!(run.resolve(&turns, "data/foo"), Ok(Resolved::Data(entry)) if entry.value == Value::from(1))
        );
        for name in ["tool/bar", "user/bar"] {
            assert!(
                matches!(run.resolve(&turns, name), Err(Error::Undefined { name: n }) if n == name)
            );
        }
    }

    #[test]
    fn definitions_of_failed_turns_do_not_resolve() {
        let run = Run::new("s", "m");
        let mut turns = Turns::new();
        let mut draft = TurnDraft::failed("(def x 1) (boom)", "undefined symbol 'boom'");
        draft.memory = vec![Definition { name: "x".to_owned(), value: Value::from(1) }];
        turns.push(draft);
        assert!(matches!(run.resolve(&turns, "x"), Err(Error::Undefined { name }) if name == "x"));
    }
}
