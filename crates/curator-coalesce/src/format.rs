//! Clojure-like printing of values, bounded so that one large value cannot flood a prompt.

use std::fmt::Write as _;

use crate::value::Value;

/// The marker that stands for whatever a limit cut: the rest of a string (inside its
/// quotes: `"Customer Review..."`), or the items of a collection, followed by how many
/// (`[1 2 3 ... 4 more]`).
pub const ELLIPSIS: &str = "...";

/// How much of a value [`to_clojure`] prints.
///
/// - `items` bounds every collection, at every depth: the items past it are replaced by
///   `... N more`.
/// - `chars` bounds every string and keyword, counted in characters (never splitting one);
///   the rest is replaced by `...`.
/// - `depth` bounds nesting: a collection nested deeper than `depth` levels (the value
///   itself being level 1) prints as `[... N more]`, its items counted, not shown.
/// - `len` bounds the whole printout, in bytes of UTF-8 (as many characters for ASCII
///   text): once it is reached, no further item starts and strings are cut; the collections
///   still open close with their `... N more` markers, a few characters each.
/// - `hide_private` leaves out the entries of maps whose key starts with `_` (keyword or
///   string), the convention for values a program may use but the model must not see; the
///   map says how many it hides: `{:user "bob", ... 1 private key hidden}`.
///
/// `None` means no bound. Printing never recurses, so no bound is needed for safety: a value
/// 100,000 levels deep prints under [`Limits::UNLIMITED`] too.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{Limits, Value, to_clojure};
///
/// let numbers = Value::list((1..=5).map(Value::from));
/// assert_eq!(to_clojure(&numbers, Limits::new(Some(2), None)), "[1 2 ... 3 more]");
/// let nested = Value::list([Value::list([Value::list([Value::from(1), Value::from(2)])])]);
/// assert_eq!(to_clojure(&nested, Limits::UNLIMITED.with_depth(Some(2))), "[[[... 2 more]]]");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Limits {
    /// The most items printed per collection.
    pub items: Option<usize>,
    /// The most characters printed per string or keyword.
    pub chars: Option<usize>,
    /// The most levels of nested collections printed with their items.
    pub depth: Option<usize>,
    /// The most bytes printed before no further item starts.
    pub len: Option<usize>,
    /// Whether map entries with a `_` key are left out (and counted).
    pub hide_private: bool,
}

impl Limits {
    /// No bound at all, private keys shown: the full view of a debugging trace.
    pub const UNLIMITED: Self = Self::new(None, None);
    /// Samples in the `data/` and `user/` sections: 3 items, 80 characters, 3 levels, 400
    /// bytes, private keys hidden.
    pub const SAMPLE: Self =
        Self::new(Some(3), Some(80)).with_depth(Some(3)).with_len(Some(400)).with_private_hidden();
    /// Arguments in the tool-call history: 3 items, 60 characters, 3 levels, 300 bytes,
    /// private keys hidden.
    pub const TOOL_ARGS: Self =
        Self::new(Some(3), Some(60)).with_depth(Some(3)).with_len(Some(300)).with_private_hidden();

    /// Limits on items per collection and characters per string, with no bound on depth or
    /// length and private keys shown.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::Limits;
    ///
    /// let sample = Limits::new(Some(3), Some(80)).with_depth(Some(3)).with_len(Some(400));
    /// assert_eq!(sample.with_private_hidden(), Limits::SAMPLE);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn new(items: Option<usize>, chars: Option<usize>) -> Self {
        Self { items, chars, depth: None, len: None, hide_private: false }
    }

    /// The same limits with a bound on nesting.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Limits, Value, to_clojure};
    ///
    /// let grid = Value::list([Value::list([Value::from(1), Value::from(2)])]);
    /// assert_eq!(to_clojure(&grid, Limits::UNLIMITED.with_depth(Some(1))), "[[... 2 more]]");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn with_depth(mut self, depth: Option<usize>) -> Self {
        self.depth = depth;
        self
    }

    /// The same limits with a bound on the whole printout, in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Limits, Value, to_clojure};
    ///
    /// let words = Value::list(["alpha", "beta", "gamma"].map(Value::from));
    /// assert_eq!(to_clojure(&words, Limits::UNLIMITED.with_len(Some(10))), r#"["alpha" "b..." ... 1 more]"#);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn with_len(mut self, len: Option<usize>) -> Self {
        self.len = len;
        self
    }

    /// The same limits, leaving out map entries whose key starts with `_`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Limits, Value, to_clojure};
    ///
    /// let user = Value::map([("name", Value::from("bob")), ("_password", Value::from("hunter2"))]);
    /// let shown = to_clojure(&user, Limits::UNLIMITED.with_private_hidden());
    /// assert_eq!(shown, r#"{:name "bob", ... 1 private key hidden}"#);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn with_private_hidden(mut self) -> Self {
        self.hide_private = true;
        self
    }
}

/// Whether a name is private by the `_` convention: the model may see that it exists, never
/// what it holds.
pub(crate) fn is_private(name: &str) -> bool {
    name.starts_with('_')
}

fn is_private_key(key: &Value) -> bool {
    match key {
        Value::Keyword(name) | Value::String(name) => is_private(name),
        _ => false,
    }
}

/// Print a value in Clojure syntax, within `limits`.
///
/// `nil`, `true`, `42`, `3.14`, `"text"`, `:keyword`, `[1 2 3]` for lists and vectors,
/// `#{1 2}` for sets, `{:name "Laptop", :price 1200}` for maps (entries separated by
/// `", "`, as Clojure prints them), and `#fn[x y]` for functions. What a limit cuts is
/// marked: `[1 2 3 ... 4 more]`, `"Customer Review..."`, `{:id 1, ... 1 private key hidden}`.
/// Strings escape quotes, backslashes and control characters (`\n`, `\t`, `\u0007`), so a
/// printed value is always one line.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{Limits, Value, to_clojure};
///
/// let review = Value::from("Customer Review Summary for Electronics");
/// assert_eq!(to_clojure(&review, Limits::new(None, Some(15))), r#""Customer Review...""#);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_clojure(value: &Value, limits: Limits) -> String {
    let mut out = String::new();
    Printer::new().write(&mut out, value, limits);
    out
}

/// One piece of work of the [`Printer`].
enum Frame<'a> {
    /// A value to print, inside collections `depth` levels deep.
    Value(&'a Value, usize),
    /// The space between a map key and its value.
    KeySpace,
    /// A list, vector or set being printed, at level `depth`.
    Items { items: std::slice::Iter<'a, Value>, depth: usize, shown: usize, close: &'static str },
    /// A map being printed, at level `depth`.
    Entries {
        entries: std::slice::Iter<'a, (Value, Value)>,
        depth: usize,
        shown: usize,
        hidden: usize,
    },
}

/// Prints values with a stack of frames instead of recursion; the stack is kept between
/// values, so that a message printing many samples allocates it once.
pub(crate) struct Printer<'a> {
    stack: Vec<Frame<'a>>,
}

impl<'a> Printer<'a> {
    pub(crate) const fn new() -> Self {
        Self { stack: Vec::new() }
    }

    /// Appends `value` to `out`, within `limits` (its `len` counted from where it starts).
    pub(crate) fn write(&mut self, out: &mut String, value: &'a Value, limits: Limits) {
        let start = out.len();
        let mut state = State { out, limits, start };
        self.stack.clear();
        state.open(value, 0, &mut self.stack);
        while let Some(frame) = self.stack.pop() {
            match frame {
                Frame::Value(value, depth) => state.open(value, depth, &mut self.stack),
                Frame::KeySpace => state.out.push(' '),
                Frame::Items { mut items, depth, shown, close } => {
                    let next = if state.room_for(shown) { items.next() } else { None };
                    if let Some(item) = next {
                        if shown > 0 {
                            state.out.push(' ');
                        }
                        self.stack.push(Frame::Items { items, depth, shown: shown + 1, close });
                        self.stack.push(Frame::Value(item, depth));
                    } else {
                        state.close(shown, items.len(), 0, " ", close);
                    }
                }
                Frame::Entries { mut entries, depth, shown, mut hidden } => {
                    let mut next = None;
                    if state.room_for(shown) {
                        for entry in entries.by_ref() {
                            if limits.hide_private && is_private_key(&entry.0) {
                                hidden += 1;
                            } else {
                                next = Some(entry);
                                break;
                            }
                        }
                    }
                    if let Some((key, value)) = next {
                        if shown > 0 {
                            state.out.push_str(", ");
                        }
                        self.stack.push(Frame::Entries {
                            entries,
                            depth,
                            shown: shown + 1,
                            hidden,
                        });
                        self.stack.push(Frame::Value(value, depth));
                        self.stack.push(Frame::KeySpace);
                        self.stack.push(Frame::Value(key, depth));
                    } else {
                        let (more, private) = state.count_rest(entries.as_slice());
                        state.close(shown, more, hidden + private, ", ", "}");
                    }
                }
            }
        }
    }
}

/// What one [`Printer::write`] call prints into, and within what.
struct State<'o> {
    out: &'o mut String,
    limits: Limits,
    /// Where the value starts in `out`: `limits.len` counts from here.
    start: usize,
}

impl State<'_> {
    /// Bytes left under `limits.len`, or `None` without the bound.
    fn room(&self) -> Option<usize> {
        self.limits.len.map(|len| len.saturating_sub(self.out.len() - self.start))
    }

    /// Whether a collection that printed `shown` items may start another one.
    fn room_for(&self, shown: usize) -> bool {
        self.limits.items.is_none_or(|limit| shown < limit) && self.room() != Some(0)
    }

    /// The entries of a map left unprinted: how many are shown as more, and how many are
    /// private (hidden, when private keys are).
    fn count_rest(&self, rest: &[(Value, Value)]) -> (usize, usize) {
        if !self.limits.hide_private {
            return (rest.len(), 0);
        }
        let private = rest.iter().filter(|(key, _)| is_private_key(key)).count();
        (rest.len() - private, private)
    }

    /// Prints a scalar, or the opening of a collection (pushing the frame that prints the
    /// rest), inside collections `depth` levels deep.
    fn open<'a>(&mut self, value: &'a Value, depth: usize, stack: &mut Vec<Frame<'a>>) {
        match value {
            Value::Nil => self.out.push_str("nil"),
            Value::Boolean(flag) => self.out.push_str(if *flag { "true" } else { "false" }),
            Value::Integer(number) => {
                let _ = write!(self.out, "{number}");
            }
            Value::Float(number) => write_float(self.out, *number),
            Value::String(text) => {
                let room = self.room();
                write_string(self.out, text, self.limits.chars, room);
            }
            Value::Keyword(name) => {
                self.out.push(':');
                let room = self.room();
                write_escaped(self.out, name, false, self.limits.chars, room);
            }
            Value::List(items) | Value::Vector(items) => {
                self.open_items(items, "[", "]", depth, stack);
            }
            Value::Set(items) => self.open_items(items, "#{", "}", depth, stack),
            Value::Map(entries) => {
                self.out.push('{');
                if self.limits.depth.is_some_and(|limit| depth >= limit) && !entries.is_empty() {
                    let (more, private) = self.count_rest(entries);
                    self.close(0, more, private, ", ", "}");
                } else {
                    stack.push(Frame::Entries {
                        entries: entries.iter(),
                        depth: depth + 1,
                        shown: 0,
                        hidden: 0,
                    });
                }
            }
            Value::Function(function) => {
                self.out.push_str("#fn[");
                for (index, param) in function.params().iter().enumerate() {
                    if index > 0 {
                        self.out.push(' ');
                    }
                    write_escaped(self.out, param, false, None, None);
                }
                self.out.push(']');
            }
        }
    }

    fn open_items<'a>(
        &mut self,
        items: &'a [Value],
        open: &'static str,
        close: &'static str,
        depth: usize,
        stack: &mut Vec<Frame<'a>>,
    ) {
        self.out.push_str(open);
        if self.limits.depth.is_some_and(|limit| depth >= limit) && !items.is_empty() {
            self.close(0, items.len(), 0, " ", close);
        } else {
            stack.push(Frame::Items { items: items.iter(), depth: depth + 1, shown: 0, close });
        }
    }

    /// Closes a collection that printed `shown` items, saying how many more there were and
    /// how many private entries it hid: `... 3 more`, `... 1 private key hidden`.
    fn close(&mut self, shown: usize, more: usize, hidden: usize, separator: &str, close: &str) {
        if more > 0 || hidden > 0 {
            if shown > 0 {
                self.out.push_str(separator);
            }
            self.out.push_str(ELLIPSIS);
            if more > 0 {
                let _ = write!(self.out, " {more} more");
            }
            if hidden > 0 {
                let keys = if hidden == 1 { "key" } else { "keys" };
                let comma = if more > 0 { "," } else { "" };
                let _ = write!(self.out, "{comma} {hidden} private {keys} hidden");
            }
        }
        self.out.push_str(close);
    }
}

fn write_float(out: &mut String, number: f64) {
    if number.is_nan() {
        out.push_str("##NaN");
    } else if number.is_infinite() {
        out.push_str(if number > 0.0 { "##Inf" } else { "##-Inf" });
    } else {
        // Display gives the shortest text that reads back as the same float, so 1.1 + 2.2
        // shows its real value without padding; a whole float keeps its `.0` to stay a float.
        let start = out.len();
        let _ = write!(out, "{number}");
        if !out[start..].contains('.') {
            out.push_str(".0");
        }
    }
}

/// Writes `text` as a Clojure string literal on one line: quoted, with quotes, backslashes
/// and control characters escaped, cut after `chars` characters or once `room` bytes are
/// written (the cut marked by [`ELLIPSIS`] inside the quotes).
pub(crate) fn write_string(
    out: &mut String,
    text: &str,
    chars: Option<usize>,
    room: Option<usize>,
) {
    out.push('"');
    write_escaped(out, text, true, chars, room);
    out.push('"');
}

/// Writes `text` with every character that could end a line escaped (and quotes and
/// backslashes too when `quoted`), so that untrusted text stays on the line it is printed
/// on; cut as [`write_string`] cuts. Returns whether it cut.
pub(crate) fn write_escaped(
    out: &mut String,
    text: &str,
    quoted: bool,
    chars: Option<usize>,
    room: Option<usize>,
) -> bool {
    let start = out.len();
    for (count, ch) in text.chars().enumerate() {
        if chars.is_some_and(|limit| count >= limit)
            || room.is_some_and(|room| out.len() - start >= room)
        {
            out.push_str(ELLIPSIS);
            return true;
        }
        match ch {
            '"' if quoted => out.push_str("\\\""),
            '\\' if quoted => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Other control characters and the Unicode line and paragraph separators, which
            // some readers (and tokenizers) take for line breaks.
            other if other.is_control() || other == '\u{2028}' || other == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(other));
            }
            other => out.push(other),
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Function;

    #[track_caller]
    fn check(value: &Value, limits: Limits, expected: &str) {
        assert_eq!(to_clojure(value, limits), expected);
    }

    #[test]
    fn scalars() {
        check(&Value::Nil, Limits::UNLIMITED, "nil");
        check(&Value::from(false), Limits::UNLIMITED, "false");
        check(&Value::from(-7), Limits::UNLIMITED, "-7");
        check(&Value::from(2.75), Limits::UNLIMITED, "2.75");
        check(&Value::from(2.0), Limits::UNLIMITED, "2.0");
        check(&Value::from(1.1 + 2.2), Limits::UNLIMITED, "3.3000000000000003");
        check(&Value::from(f64::NAN), Limits::UNLIMITED, "##NaN");
        check(&Value::from(f64::NEG_INFINITY), Limits::UNLIMITED, "##-Inf");
        check(&Value::keyword("active"), Limits::UNLIMITED, ":active");
        check(&Value::from("say \"hi\"\n"), Limits::UNLIMITED, r#""say \"hi\"\n""#);
    }

    #[test]
    fn collections_and_functions() {
        let nested =
            Value::list([Value::map([("a", Value::from(1))]), Value::map([("b", Value::from(2))])]);
        check(&nested, Limits::UNLIMITED, "[{:a 1} {:b 2}]");
        check(&Value::Set(vec![Value::from(1), Value::from(2)]), Limits::UNLIMITED, "#{1 2}");
        check(&Value::map::<&str>([]), Limits::UNLIMITED, "{}");
        check(&Value::Function(Function::new("f", ["x", "y"])), Limits::UNLIMITED, "#fn[x y]");
    }

    #[test]
    fn limits_apply_at_every_depth() {
        let inner = Value::list((1..=5).map(Value::from));
        let outer = Value::list([inner.clone(), inner.clone(), inner.clone(), inner]);
        check(&outer, Limits::new(Some(2), None), "[[1 2 ... 3 more] [1 2 ... 3 more] ... 2 more]");
        let map = Value::map([("a", Value::from("abcdef")), ("b", Value::Nil), ("c", Value::Nil)]);
        check(&map, Limits::new(Some(1), Some(3)), r#"{:a "abc...", ... 2 more}"#);
        check(&Value::list([Value::Nil]), Limits::new(Some(0), None), "[... 1 more]");
        check(&Value::keyword("abcdef"), Limits::new(None, Some(3)), ":abc...");
    }

    #[test]
    fn depth_collapses_deep_collections_into_a_count() {
        let deep = Value::list([Value::map([("a", Value::Set(vec![Value::Nil; 2]))])]);
        check(&deep, Limits::UNLIMITED.with_depth(Some(0)), "[... 1 more]");
        check(&deep, Limits::UNLIMITED.with_depth(Some(1)), "[{... 1 more}]");
        check(&deep, Limits::UNLIMITED.with_depth(Some(2)), "[{:a #{... 2 more}}]");
        check(&deep, Limits::UNLIMITED.with_depth(Some(3)), "[{:a #{nil nil}}]");
        // Empty collections have nothing to count.
        check(&Value::list([Value::list([])]), Limits::UNLIMITED.with_depth(Some(1)), "[[]]");
    }

    #[test]
    fn the_whole_printout_stops_at_its_length() {
        let rows = Value::list((0..100).map(|n| Value::map([("id", Value::from(n))])));
        let printed = to_clojure(&rows, Limits::UNLIMITED.with_len(Some(40)));
        assert_eq!(printed, "[{:id 0} {:id 1} {:id 2} {:id 3} {:id 4} ... 95 more]");
        let text = Value::from("x".repeat(1000));
        assert_eq!(to_clojure(&text, Limits::UNLIMITED.with_len(Some(5))), r#""xxxxx...""#);
    }

    #[test]
    fn private_keys_are_left_out_and_counted() {
        let hide = Limits::UNLIMITED.with_private_hidden();
        let secret = Value::Map(vec![
            (Value::keyword("_token"), Value::from("t")),
            (Value::from("_first name"), Value::from("x")),
            (Value::keyword("id"), Value::from(1)),
            (Value::keyword("name_"), Value::from("n")),
        ]);
        check(&secret, hide, r#"{:id 1, :name_ "n", ... 2 private keys hidden}"#);
        check(&secret, hide.with_depth(Some(0)), "{... 2 more, 2 private keys hidden}");
        check(
            &secret,
            Limits::new(Some(1), None).with_private_hidden(),
            "{:id 1, ... 1 more, 2 private keys hidden}",
        );
        let only = Value::map([("_a", Value::Nil)]);
        check(&only, hide, "{... 1 private key hidden}");
        check(&only, Limits::UNLIMITED, "{:_a nil}");
        // Strings and keywords elsewhere are data, not keys.
        check(&Value::list([Value::keyword("_a")]), hide, "[:_a]");
    }

    #[test]
    fn nothing_printed_can_break_a_line() {
        let text = "a\nb\"c\u{7}\u{2028}\r\t";
        check(&Value::from(text), Limits::UNLIMITED, r#""a\nb\"c\u0007\u2028\r\t""#);
        check(&Value::keyword("a\nb"), Limits::UNLIMITED, r":a\nb");
        check(&Value::Function(Function::new("f", ["x\ny"])), Limits::UNLIMITED, r"#fn[x\ny]");
    }

    #[test]
    fn a_value_100_000_levels_deep_prints_without_recursion() {
        let mut deep = Value::Nil;
        for _ in 0..100_000 {
            deep = Value::map([("a", deep)]);
        }
        let printed = to_clojure(&deep, Limits::UNLIMITED);
        assert_eq!(printed.len(), 100_000 * 5 + 3);
        assert!(printed.starts_with("{:a {:a {:a "));
        assert_eq!(to_clojure(&deep, Limits::SAMPLE), "{:a {:a {:a {... 1 more}}}}");
    }

    #[test]
    fn strings_are_cut_by_characters_not_bytes() {
        check(&Value::from("héllo wörld"), Limits::new(None, Some(7)), r#""héllo w...""#);
        check(&Value::from("exact"), Limits::new(None, Some(5)), r#""exact""#);
    }
}
