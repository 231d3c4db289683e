//! Rendering the history as a text block for prompt-only agents, through a sandboxed
//! minijinja template.

use std::sync::Arc;

use minijinja::value::{Enumerator, Object};
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};

use crate::error::{Error, Result};
use crate::turn::ConversationTurn;

/// The template used when a loop names none: the turns inside a clearly delimited block,
/// one `role: content` paragraph each.
pub const DEFAULT_TEMPLATE: &str = "<conversation_history>\n{% for turn in history %}{{ turn.role }}: {{ turn.content }}\n{% endfor %}</conversation_history>";

/// The most template instructions one rendering may run: a template that loops without end
/// fails instead of hanging the loop.
const FUEL: u64 = 10_000_000;

/// A compiled history template.
///
/// The template is sandboxed: it sees one variable, `history` (a list of turns with `role`
/// and `content`), no file, no environment, no other template; nothing is HTML-escaped;
/// an undefined name is an error rather than an empty string; its running time is bounded
/// by fuel. A template that does not compile, or that fails on a sample history, is refused
/// when it is made, so a bad template is reported when the configuration is loaded.
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{ConversationTurn, HistoryTemplate};
///
/// let template = HistoryTemplate::new("{% for t in history %}[{{ t.role }}] {{ t.content }}\n{% endfor %}")?;
/// let text = template.render(&[ConversationTurn::user("hi"), ConversationTurn::assistant("hello")])?;
/// assert_eq!(text, "[user] hi\n[assistant] hello\n");
/// assert!(HistoryTemplate::new("{% for t in history %}").is_err());            // does not compile
/// assert!(HistoryTemplate::new("{{ secrets.api_key }}").is_err());              // sees only the history
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct HistoryTemplate {
    env: Environment<'static>,
}

const NAME: &str = "history";

impl HistoryTemplate {
    /// Compiles `source` and tries it on a sample history.
    ///
    /// # Errors
    ///
    /// [`Error::Template`] with the engine's message (and line) when it does not compile or
    /// fails on the sample.
    pub fn new(source: &str) -> Result<Self> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_fuel(Some(FUEL));
        env.set_recursion_limit(64);
        env.add_template_owned(NAME, source.to_owned()).map_err(template_error)?;
        let template = Self { env };
        template.render(&[
            ConversationTurn::user("sample question"),
            ConversationTurn::assistant("sample answer"),
        ])?;
        Ok(template)
    }

    /// The default template ([`DEFAULT_TEMPLATE`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::conversation_loop::{ConversationTurn, HistoryTemplate};
    ///
    /// let text = HistoryTemplate::default_template().render(&[ConversationTurn::user("hi")])?;
    /// assert_eq!(text, "<conversation_history>\nuser: hi\n</conversation_history>");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn default_template() -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_fuel(Some(FUEL));
        // The default template is a constant known to compile (a unit test renders it).
        let _ = env.add_template(NAME, DEFAULT_TEMPLATE);
        Self { env }
    }

    /// Renders `turns`.
    ///
    /// # Errors
    ///
    /// [`Error::Template`] when the template fails on these turns (it ran out of fuel, a
    /// filter failed).
    pub fn render(&self, turns: &[ConversationTurn]) -> Result<String> {
        self.render_values(turns.iter().map(|t| turn_value(t.role.as_str(), &t.content)).collect())
    }

    /// Renders a history already made of template values ([`turn_value`]).
    pub(crate) fn render_values(&self, history: Vec<Value>) -> Result<String> {
        let template = self.env.get_template(NAME).map_err(template_error)?;
        let history = Value::from(history);
        template.render(minijinja::context! { history }).map_err(template_error)
    }
}

/// A turn as the template sees it: a map of its two fields and nothing else. An object
/// rather than a map value: looking up `role` or `content` is a match, not a search, and the
/// strings are made once.
#[derive(Debug)]
struct TurnObject {
    role: Value,
    content: Value,
}

impl Object for TurnObject {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        match key {
            "role" => Some(self.role.clone()),
            "content" => Some(self.content.clone()),
            _ => None,
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Str(&["role", "content"])
    }
}

/// A turn as the template sees it: its two fields and nothing else.
pub(crate) fn turn_value(role: &str, content: &str) -> Value {
    Value::from_object(TurnObject { role: Value::from(role), content: Value::from(content) })
}

fn template_error(e: minijinja::Error) -> Error {
    let reason = match e.line() {
        Some(line) => format!("{} (line {line})", e.kind()),
        None => e.kind().to_string(),
    };
    Error::Template { reason, source: Box::new(e) }
}
