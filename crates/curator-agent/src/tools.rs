//! A registry of named tools, each a closure with its JSON schema, that an agent runs for the
//! model's tool calls.

use std::collections::BTreeMap;
use std::sync::Arc;

use curator_model::json_kind;
use serde_json::{Value, json};

use curator_session::ToolContext;

/// Why a tool gave no result: it failed (the model is told, the run goes on) or it stops the
/// run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The call failed: recorded as the call's error result, which the model reads on its
    /// next turn.
    #[error("{0}")]
    Failed(String),
    /// The run must stop now (a worker lost its claim, a budget ran out, a person must
    /// decide): nothing is recorded for this call, which stays pending (marked started), and
    /// the run ends with [`AgentEnd::Stopped`](crate::AgentEnd::Stopped). The next run
    /// resumes it as the [`ResumePolicy`](curator_session::ResumePolicy) says.
    #[error("the run was stopped: {0}")]
    Stop(String),
}

impl ToolError {
    /// A failed call, with what the model should read.
    pub fn failed(reason: impl Into<String>) -> Self {
        Self::Failed(reason.into())
    }

    /// A call that stops the run, with why.
    pub fn stop(reason: impl Into<String>) -> Self {
        Self::Stop(reason.into())
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(error: serde_json::Error) -> Self {
        Self::Failed(format!("bad arguments: {error}"))
    }
}

impl From<String> for ToolError {
    fn from(reason: String) -> Self {
        Self::Failed(reason)
    }
}

impl From<&str> for ToolError {
    fn from(reason: &str) -> Self {
        Self::Failed(reason.to_owned())
    }
}

/// What a tool is handed: its arguments (parsed JSON) and the call they came with.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolInput<'a> {
    /// The arguments, parsed (`{}` when the model sent none).
    pub args: Value,
    /// The call, its id usable as an idempotency key.
    pub context: &'a ToolContext,
}

type ToolFn = dyn Fn(&ToolInput<'_>) -> Result<String, ToolError> + Send + Sync;

#[derive(Clone)]
struct Tool {
    definition: Value,
    run: Arc<ToolFn>,
}

/// Named tools, each a closure with its JSON schema: what the model is offered
/// ([`definitions`](Tools::definitions), in the OpenAI `tools` shape, converted for other
/// providers by their clients) and what runs for its calls ([`run`](Tools::run)). Cheap to
/// clone (the closures are shared).
///
/// A call to a tool that does not exist, or whose arguments are not a JSON object, is a
/// failed call the model is told about ([`ToolError::Failed`]), never a crash.
///
/// # Examples
///
/// ```
/// use curator::model::ToolCall;
/// use curator::agent::{ToolError, Tools};
/// use curator::session::ToolContext;
/// use serde_json::json;
///
/// let tools = Tools::new().add(
///     "add",
///     "Adds two numbers.",
///     json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
///     |args| {
///         let (a, b) = (args["a"].as_f64(), args["b"].as_f64());
///         let (Some(a), Some(b)) = (a, b) else { return Err(ToolError::failed("a and b must be numbers")) };
///         Ok((a + b).to_string())
///     },
/// );
/// assert_eq!(tools.definitions()[0]["function"]["name"], "add");
/// let call = ToolContext::new(ToolCall::new("c1", "add", r#"{"a": 2, "b": 2}"#));
/// assert_eq!(tools.run(&call), Ok("4".to_owned()));
/// let unknown = ToolContext::new(ToolCall::new("c2", "mul", "{}"));
/// assert!(matches!(tools.run(&unknown), Err(ToolError::Failed(reason)) if reason.contains("no tool named `mul`")));
/// ```
#[derive(Clone, Default)]
pub struct Tools {
    tools: BTreeMap<String, Tool>,
}

impl Tools {
    /// No tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool called `name` that the model is told does `description`, taking
    /// arguments described by the JSON schema `parameters`, run by `run` with the parsed
    /// arguments. A tool added under a name already taken replaces the earlier one.
    #[must_use]
    pub fn add(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        run: impl Fn(&Value) -> Result<String, ToolError> + Send + Sync + 'static,
    ) -> Self {
        self.add_with_context(name, description, parameters, move |input| run(&input.args))
    }

    /// As [`add`](Tools::add), for a tool that needs its call too: its id (an idempotency
    /// key for side effects), whether it is run again after a crash
    /// ([`ToolContext::is_resume`], [`ToolContext::started`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::ToolCall;
    /// use curator::agent::Tools;
    /// use curator::session::ToolContext;
    /// use serde_json::json;
    ///
    /// let tools = Tools::new().add_with_context("pay", "Pays the order.", json!({"type": "object"}), |input| {
    ///     // The call id keys the payment, so that a re-run after a crash pays once.
    ///     Ok(format!("paid under key {}", input.context.call_id()))
    /// });
    /// let call = ToolContext::new(ToolCall::new("call_9", "pay", "{}"));
    /// assert_eq!(tools.run(&call), Ok("paid under key call_9".to_owned()));
    /// ```
    #[must_use]
    pub fn add_with_context(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        run: impl Fn(&ToolInput<'_>) -> Result<String, ToolError> + Send + Sync + 'static,
    ) -> Self {
        let name = name.into();
        let mut function = serde_json::Map::new();
        function.insert("name".to_owned(), Value::String(name.clone()));
        function.insert("description".to_owned(), Value::String(description.into()));
        function.insert("parameters".to_owned(), parameters);
        let definition = json!({"type": "function", "function": function});
        self.tools.insert(name, Tool { definition, run: Arc::new(run) });
        self
    }

    /// The tools as the model is offered them: a JSON array in the OpenAI `tools` shape,
    /// sorted by name (so that requests are byte-stable for the provider's prompt cache).
    pub fn definitions(&self) -> Value {
        Value::Array(self.tools.values().map(|tool| tool.definition.clone()).collect())
    }

    /// The tools' names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Whether there is no tool.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Runs the tool a call names with its arguments.
    ///
    /// # Errors
    ///
    /// The tool's own [`ToolError`]; [`ToolError::Failed`] naming the known tools for a call
    /// to an unknown one, and for arguments that are not a JSON object.
    pub fn run(&self, context: &ToolContext) -> Result<String, ToolError> {
        let call = &context.call;
        let Some(tool) = self.tools.get(call.name()) else {
            let known: Vec<&str> = self.names().collect();
            return Err(ToolError::Failed(format!(
                "no tool named `{}` (the tools are: {})",
                call.name(),
                if known.is_empty() { "none".to_owned() } else { known.join(", ") }
            )));
        };
        let raw = call.arguments();
        let args = if raw.trim().is_empty() {
            Value::Object(serde_json::Map::new())
        } else {
            match serde_json::from_str::<Value>(raw) {
                Ok(args @ Value::Object(_)) => args,
                Ok(other) => {
                    return Err(ToolError::Failed(format!(
                        "the arguments of `{}` must be a JSON object, not {}",
                        call.name(),
                        json_kind(&other)
                    )));
                }
                Err(e) => {
                    return Err(ToolError::Failed(format!(
                        "the arguments of `{}` are not JSON: {e}",
                        call.name()
                    )));
                }
            }
        };
        (tool.run)(&ToolInput { args, context })
    }

    /// Runs several calls at once, one thread each (in place when there is one), and gives
    /// their outcomes in the calls' order. A tool that panics gives a failed call
    /// (`the tool panicked: <its panic message>`), as the model is told; the other calls are
    /// unaffected.
    pub fn run_all(&self, contexts: &[ToolContext]) -> Vec<Result<String, ToolError>> {
        if let [context] = contexts {
            return vec![self.run_caught(context)];
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = contexts
                .iter()
                .map(|context| scope.spawn(move || self.run_caught(context)))
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap_or_else(|payload| panicked(payload.as_ref())))
                .collect()
        })
    }

    /// Runs one call as [`run_all`](Tools::run_all) does: a tool that panics gives a failed
    /// call (`the tool panicked: <its panic message>`) instead of unwinding into the caller.
    ///
    /// # Errors
    ///
    /// As [`run`](Tools::run).
    pub fn run_one(&self, context: &ToolContext) -> Result<String, ToolError> {
        self.run_caught(context)
    }

    fn run_caught(&self, context: &ToolContext) -> Result<String, ToolError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run(context)))
            .unwrap_or_else(|payload| panicked(payload.as_ref()))
    }
}

/// The failed call a panic gives, with the panic's message when it has one (`panic!` with a
/// literal or a format gives a `&str` or a `String`).
fn panicked(payload: &(dyn std::any::Any + Send)) -> Result<String, ToolError> {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned());
    Err(ToolError::Failed(match message {
        Some(message) => format!("the tool panicked: {message}"),
        None => "the tool panicked".to_owned(),
    }))
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}
