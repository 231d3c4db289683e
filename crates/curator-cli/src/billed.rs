//! What each call of a replay is billed with the prompt cache counted, under OpenAI's rule
//! and Anthropic's (breakpoints as curator places them), for the curated view and for
//! sending the whole history.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use anyhow::Result;
use curator::client::Usage;
use curator::model::Message;
use curator::strategies::bill::{Biller, Block, CacheRule, CallBill, Prices, Request, RequestEnd};
use curator::strategies::{MessageRef, RelevanceBudget, TokenCounter, View};
use serde_json::Value;

/// A call's bill under each rule.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub(crate) struct Bills {
    pub(crate) openai: CallBill,
    pub(crate) anthropic: CallBill,
}

impl Bills {
    pub(crate) fn plus(self, other: Bills) -> Bills {
        Bills {
            openai: self.openai.plus(other.openai),
            anthropic: self.anthropic.plus(other.anthropic),
        }
    }
}

/// The prices of `model` (`--model`), when one is named.
pub(crate) fn prices_of(model: Option<&str>) -> Result<Option<Prices>> {
    model
        .map(|model| Prices::for_model(model).map_err(|e| anyhow::anyhow!("--model: {e}")))
        .transpose()
}

/// The prices a replay's bills are priced at: a model's (`--model`), or, with none, an
/// input price of 1 per million tokens and the usual cache rates (a read at 0.1x, a write
/// at 1.25x), so that costs compare as multiples of the input price.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub(crate) struct Rates {
    pub(crate) prices: Prices,
}

impl Rates {
    /// The rates of `model`, or the usual ones at an input price of 1.
    pub(crate) fn of(model: Option<&str>) -> Result<Rates> {
        match model {
            Some(model) => Prices::for_model(model)
                .map(|prices| Rates { prices })
                .map_err(|e| anyhow::anyhow!("--model: {e}")),
            None => Ok(Rates::at(1.0)),
        }
    }

    /// The usual cache rates at `input` US dollars per million input tokens.
    pub(crate) fn at(input: f64) -> Rates {
        Rates { prices: Prices::new(input, 0.0) }
    }

    /// The input price of a bill (output left out: curation does not change it).
    pub(crate) fn input_price(&self, bill: &CallBill) -> f64 {
        self.prices.price(&CallBill { output_tokens: 0, ..*bill })
    }
}

/// What a set of calls cost under one rule, curated and sending everything.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub(crate) struct Cost {
    /// Input price of the curated views, in US dollars.
    pub(crate) curated: f64,
    /// Input price of sending the whole history each call.
    pub(crate) everything: f64,
    /// `curated / everything` (1 when nothing was billed).
    pub(crate) ratio: f64,
}

/// What a set of calls cost under each rule.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub(crate) struct Costs {
    pub(crate) openai: Cost,
    pub(crate) anthropic: Cost,
    pub(crate) prices: Prices,
}

impl Rates {
    /// The costs of bills summed over calls.
    pub(crate) fn costs(&self, curated: &Bills, everything: &Bills) -> Costs {
        let cost = |c: &CallBill, e: &CallBill| {
            let (curated, everything) = (self.input_price(c), self.input_price(e));
            let ratio = if everything > 0.0 { curated / everything } else { 1.0 };
            Cost { curated, everything, ratio }
        };
        Costs {
            openai: cost(&curated.openai, &everything.openai),
            anthropic: cost(&curated.anthropic, &everything.anthropic),
            prices: self.prices,
        }
    }
}

/// A price in US dollars (or in multiples of the input price per million tokens).
pub(crate) fn money(dollars: f64) -> String {
    if dollars >= 100.0 { format!("${dollars:.0}") } else { format!("${dollars:.2}") }
}

/// Recorded usage in one line: the calls, their input (with the part read from and written
/// to the prompt cache), their output, and, at a model's prices, what they were billed.
pub(crate) fn usage_line(calls: usize, usage: &Usage, prices: Option<&Prices>) -> String {
    let mut line = format!(
        "{}: {} in ({} cached, {} written), {} out",
        crate::output::plural(calls, "call", "calls"),
        thousands(usage.input_tokens),
        thousands(usage.cache_read_tokens),
        thousands(usage.cache_write_tokens),
        thousands(usage.output_tokens)
    );
    if let Some(prices) = prices {
        let dollars = prices.price(&usage.bill());
        let _ = write!(
            line,
            ", {}",
            if dollars >= 1.0 { money(dollars) } else { format!("${dollars:.4}") }
        );
    }
    line
}

/// A count with its thousands apart: `12,345`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// One side's caches: what a provider holds for the requests sent so far.
#[derive(Debug)]
struct Side {
    openai: Biller,
    anthropic: Biller,
    /// Where the side's last request ended.
    previous: Option<RequestEnd>,
}

impl Side {
    fn new() -> Self {
        Side {
            openai: Biller::new(CacheRule::openai()),
            anthropic: Biller::new(CacheRule::anthropic()),
            previous: None,
        }
    }

    /// Bills `request` (its breakpoints set as curator's requests carry them).
    fn bill(&mut self, request: &mut Request) -> Bills {
        request.set_curator_breakpoints(self.previous);
        let bills =
            Bills { openai: self.openai.bill(request), anthropic: self.anthropic.bill(request) };
        self.previous = request.end();
        bills
    }
}

/// Bills one conversation's calls as it is replayed.
pub(crate) struct Meter {
    counter: Arc<dyn TokenCounter>,
    tools: Option<Block>,
    /// The block of each history message, by position.
    blocks: Vec<(Block, curator::model::Role)>,
    /// The whole history as one request (the tools, then every message), grown as messages
    /// are pushed: sending everything is billed in the time of what was appended.
    everything: Request,
    /// Blocks of changed copies, by the copy (kept alive so that its address stays its own).
    copies: HashMap<usize, (Arc<Message>, Block)>,
    sent: Side,
    full: Side,
}

impl std::fmt::Debug for Meter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meter").field("messages", &self.blocks.len()).finish_non_exhaustive()
    }
}

impl Meter {
    /// A meter for a conversation sent with `tools` (or none), counted by `counter`.
    pub(crate) fn new(counter: Arc<dyn TokenCounter>, tools: Option<&Value>) -> Self {
        let tools = tools.map(|t| Block::of_tools(t, &*counter));
        let mut everything = Request::new();
        if let Some(tools) = tools {
            everything.push(tools);
        }
        Meter {
            counter,
            tools,
            blocks: Vec::new(),
            everything,
            copies: HashMap::new(),
            sent: Side::new(),
            full: Side::new(),
        }
    }

    /// Adds the next message of the history.
    pub(crate) fn push(&mut self, message: &Message) {
        let block = Block::of_message(message, &*self.counter);
        self.everything.push_message(block, message.role());
        self.blocks.push((block, message.role()));
    }

    fn request(&self) -> Request {
        let mut request = Request::new();
        if let Some(tools) = self.tools {
            request.push(tools);
        }
        request
    }

    /// Bills a call that sent `view` (of the messages pushed so far), and the same call
    /// sending the whole history: (curated, everything).
    pub(crate) fn call(&mut self, view: &View<'_>) -> (Bills, Bills) {
        let mut sent = self.request();
        for entry in view.iter() {
            let role = entry.message.role();
            let block = match (&entry.message, entry.pos) {
                (MessageRef::Borrowed(_), Some(pos)) if pos < self.blocks.len() => {
                    self.blocks[pos].0
                }
                (MessageRef::Shared(copy), _) => {
                    let key = Arc::as_ptr(copy) as usize;
                    let counter = &*self.counter;
                    self.copies
                        .entry(key)
                        .or_insert_with(|| (Arc::clone(copy), Block::of_message(copy, counter)))
                        .1
                }
                (MessageRef::Borrowed(message), _) => Block::of_message(message, &*self.counter),
            };
            if RelevanceBudget::is_note(&entry.message) {
                sent.mark_boundary();
            }
            sent.push_message(block, role);
        }
        (self.sent.bill(&mut sent), self.full.bill(&mut self.everything))
    }
}

#[cfg(test)]
mod tests {
    use curator::strategies::{CharEstimate, History};

    use super::*;

    #[test]
    fn costs_are_priced_by_kind_and_compared_with_sending_everything() {
        let bill = CallBill {
            input_tokens: 2_000_000,
            cache_read_tokens: 1_000_000,
            ..CallBill::default()
        };
        let all = CallBill { input_tokens: 2_000_000, ..CallBill::default() };
        let rates = Rates::at(3.0);
        // 1M uncached at $3, 1M read at $0.30.
        assert_eq!(money(rates.input_price(&bill)), "$3.30");
        assert_eq!(money(6.0), "$6.00");
        let bills = |b: CallBill| Bills { openai: b, anthropic: b };
        let costs = rates.costs(&bills(bill), &bills(all));
        assert!((costs.openai.ratio - 3.3 / 6.0).abs() < 1e-9);
        assert!((costs.anthropic.everything - 6.0).abs() < 1e-9);
    }

    #[test]
    fn sending_everything_reads_the_previous_call_back_from_the_cache() {
        let counter: Arc<dyn TokenCounter> = Arc::new(CharEstimate::default());
        let mut meter = Meter::new(Arc::clone(&counter), None);
        let mut history = History::new();
        let mut reads = Vec::new();
        for message in [
            Message::system("You are an agent. ".repeat(400)),
            Message::user("Fix it."),
            Message::assistant("Looking."),
            Message::user("Go on."),
        ] {
            meter.push(&message);
            history.push(message);
            let (sent, full) = meter.call(&View::full(&history));
            assert_eq!(sent.openai, full.openai);
            reads.push((full.openai.cache_read_tokens, full.anthropic.cache_read_tokens));
        }
        assert_eq!(reads[0], (0, 0));
        // From the second call on, the system message (over 1,024 tokens) is read back.
        assert!(reads[1..].iter().all(|&(o, a)| o >= 1_024 && a >= 1_024), "{reads:?}");
    }
}
