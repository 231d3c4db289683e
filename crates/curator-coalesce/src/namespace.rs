//! What the program can reach besides its own definitions: the `tool/` and `data/` namespaces.

use serde::{Deserialize, Serialize};

use crate::value::Value;

/// A tool as the `tool/` section lists it: `(tool/{name} {params})  ; {signature}, "{description}"`.
///
/// # Examples
///
/// ```
/// use curator::coalesce::ToolSpec;
///
/// let tool = ToolSpec::new("search-reviews", ["query"], "query:string -> string");
/// assert_eq!(tool.name, "search-reviews");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name, without `tool/`.
    pub name: String,
    /// Parameter names, in order.
    pub params: Vec<String>,
    /// The signature shown to the model, such as `query:string -> string`; may be empty.
    pub signature: String,
    /// A one-line description, shown after the signature when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl ToolSpec {
    /// A tool with its parameters and signature.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::ToolSpec;
    ///
    /// let tool = ToolSpec::new("get-inventory", Vec::<String>::new(), "-> map");
    /// assert!(tool.params.is_empty());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new<P: Into<String>>(
        name: impl Into<String>,
        params: impl IntoIterator<Item = P>,
        signature: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            params: params.into_iter().map(Into::into).collect(),
            signature: signature.into(),
            description: None,
        }
    }

    /// The same tool with a description.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::ToolSpec;
    ///
    /// let tool = ToolSpec::new("send-email", ["opts"], "opts:map -> nil").with_description("Sends email notification");
    /// assert_eq!(tool.description.as_deref(), Some("Sends email notification"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// An input as the `data/` section lists it: `data/{name}  ; {type}, sample: {sample}`.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{DataEntry, Value};
///
/// let config = DataEntry::new("config", Value::map([("env", Value::from("prod"))])).without_sample();
/// assert!(!config.show_sample);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataEntry {
    /// The input's name, without `data/`.
    pub name: String,
    /// The input itself.
    pub value: Value,
    /// Whether the listing shows a sample (on by default; off for inputs the model should
    /// not see a piece of before asking).
    pub show_sample: bool,
}

impl DataEntry {
    /// An input, listed with a sample.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{DataEntry, Value};
    ///
    /// assert!(DataEntry::new("items", Value::list([])).show_sample);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(name: impl Into<String>, value: Value) -> Self {
        Self { name: name.into(), value, show_sample: true }
    }

    /// The same input, listed by type only.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{DataEntry, Value};
    ///
    /// assert!(!DataEntry::new("items", Value::list([])).without_sample().show_sample);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn without_sample(mut self) -> Self {
        self.show_sample = false;
        self
    }
}

/// Everything about a run that does not change from turn to turn: the static system prompt,
/// the mission, the namespaces and the turn budget.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{DataEntry, Run, ToolSpec, Value};
///
/// let run = Run::new("You write PTC-Lisp.", "Find well-reviewed products in stock")
///     .with_tools(vec![ToolSpec::new("search-reviews", ["query"], "query:string -> string")])
///     .with_data(vec![DataEntry::new("products", Value::list([]))]);
/// assert_eq!(run.max_turns, 5);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Run {
    /// The SYSTEM message: the language and its rules, the same every turn.
    pub system: String,
    /// The task, always the first line of the USER message.
    pub mission: String,
    /// The `tool/` namespace, in listing order.
    pub tools: Vec<ToolSpec>,
    /// The `data/` namespace, in listing order.
    pub data: Vec<DataEntry>,
    /// How many turns the run may take (default 5).
    pub max_turns: u32,
}

impl Run {
    /// A run with no tools, no data and five turns.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::Run;
    ///
    /// assert!(Run::new("system", "mission").tools.is_empty());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(system: impl Into<String>, mission: impl Into<String>) -> Self {
        Self {
            system: system.into(),
            mission: mission.into(),
            tools: Vec::new(),
            data: Vec::new(),
            max_turns: 5,
        }
    }

    /// The same run with these tools.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Run, ToolSpec};
    ///
    /// let run = Run::new("s", "m").with_tools(vec![ToolSpec::new("t", ["x"], "")]);
    /// assert_eq!(run.tools.len(), 1);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }

    /// The same run with these inputs.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{DataEntry, Run, Value};
    ///
    /// let run = Run::new("s", "m").with_data(vec![DataEntry::new("n", Value::from(1))]);
    /// assert_eq!(run.data.len(), 1);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_data(mut self, data: Vec<DataEntry>) -> Self {
        self.data = data;
        self
    }

    /// The same run with another turn budget.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::Run;
    ///
    /// assert_eq!(Run::new("s", "m").with_max_turns(10).max_turns, 10);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_max_turns(mut self, max_turns: u32) -> Self {
        self.max_turns = max_turns;
        self
    }
}
