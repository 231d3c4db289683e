//! How OpenAI and Anthropic bill a request's input against the earlier requests of a
//! conversation: tokens read from the prompt cache, written to it, and uncached.

use std::collections::HashSet;

use super::Request;
use crate::fx::FxBuild;

/// How long an Anthropic cache write lives (and so what it costs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Ttl {
    /// Five minutes: a write costs 1.25x the input price.
    #[default]
    FiveMinutes,
    /// One hour: a write costs 2x the input price.
    OneHour,
}

/// A provider's prompt-cache rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheRule {
    /// OpenAI's automatic cache: the longest prefix a request shares with an earlier one of
    /// the conversation is read from the cache once it reaches `min_tokens` (1,024),
    /// counted in steps of `step` (128) tokens; nothing is billed for writing.
    OpenAi {
        /// The shortest prefix cached.
        min_tokens: u64,
        /// The granularity of what is cached.
        step: u64,
    },
    /// Anthropic's breakpoints: a request reads the longest prefix an earlier request wrote
    /// at a breakpoint, found at its own breakpoints or up to `lookback` content blocks
    /// before each; it writes the prefix up to its last breakpoint that is at least
    /// `min_tokens` long, less what it read. At most `max_breakpoints` count.
    Anthropic {
        /// The shortest prefix cached (1,024 for most models; 2,048 or 4,096 for some).
        min_tokens: u64,
        /// Content blocks looked back from each breakpoint (20).
        lookback: u32,
        /// Breakpoints a request may carry (4); later ones are not counted.
        max_breakpoints: usize,
        /// How long writes live.
        ttl: Ttl,
    },
}

impl CacheRule {
    /// OpenAI's rule on current models: 1,024 tokens at least, 128-token steps.
    pub const fn openai() -> Self {
        CacheRule::OpenAi { min_tokens: 1_024, step: 128 }
    }

    /// Anthropic's rule: 1,024 tokens at least, a 20-block lookback, four breakpoints,
    /// five-minute writes.
    pub const fn anthropic() -> Self {
        CacheRule::Anthropic {
            min_tokens: 1_024,
            lookback: 20,
            max_breakpoints: 4,
            ttl: Ttl::FiveMinutes,
        }
    }

    /// The same rule with a different minimum cacheable prefix.
    #[must_use]
    pub const fn with_min_tokens(self, tokens: u64) -> Self {
        match self {
            CacheRule::OpenAi { step, .. } => CacheRule::OpenAi { min_tokens: tokens, step },
            CacheRule::Anthropic { lookback, max_breakpoints, ttl, .. } => {
                CacheRule::Anthropic { min_tokens: tokens, lookback, max_breakpoints, ttl }
            }
        }
    }
}

/// What one request's input (and output) is billed as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CallBill {
    /// Every input token, cached or not.
    pub input_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: u64,
    /// How long the writes live.
    pub ttl: Ttl,
    /// Output tokens.
    pub output_tokens: u64,
}

impl CallBill {
    /// Input tokens billed at the plain input price: neither read nor written.
    pub fn uncached_tokens(&self) -> u64 {
        self.input_tokens.saturating_sub(self.cache_read_tokens + self.cache_write_tokens)
    }

    /// The sum of two bills (their TTL is this one's).
    #[must_use]
    pub fn plus(self, other: CallBill) -> CallBill {
        CallBill {
            input_tokens: self.input_tokens + other.input_tokens,
            cache_read_tokens: self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens + other.cache_write_tokens,
            ttl: self.ttl,
            output_tokens: self.output_tokens + other.output_tokens,
        }
    }
}

/// The prompt cache of one conversation, as a provider keeps it: bills each request of the
/// conversation, in order, against the ones before it. Entries never expire (the calls of
/// an agent loop follow each other within the cache's lifetime).
///
/// # Examples
///
/// Two OpenAI requests, the second the first plus 300 tokens: it reads the first's 2,000
/// tokens, rounded down to 128-token steps.
///
/// ```
/// use curator::strategies::bill::{Biller, Block, CacheRule, Request};
///
/// let block = |key, tokens| Block { key, tokens, parts: 1 };
/// let mut first = Request::new();
/// first.push(block(1, 2_000));
/// let mut second = first.clone();
/// second.push(block(2, 300));
/// let mut biller = Biller::new(CacheRule::openai());
/// assert_eq!(biller.bill(&first).cache_read_tokens, 0);
/// let bill = biller.bill(&second);
/// assert_eq!((bill.input_tokens, bill.cache_read_tokens), (2_300, 1_920));
/// ```
#[derive(Clone, Debug)]
pub struct Biller {
    rule: CacheRule,
    /// Hashes of the prefixes in the cache.
    cached: HashSet<u64, FxBuild>,
}

impl Biller {
    /// An empty cache under `rule`.
    pub fn new(rule: CacheRule) -> Self {
        Biller { rule, cached: HashSet::default() }
    }

    /// The rule.
    pub fn rule(&self) -> CacheRule {
        self.rule
    }

    /// Bills `request`, then keeps what it leaves in the cache.
    pub fn bill(&mut self, request: &Request) -> CallBill {
        let prefix = request.prefixes();
        let input_tokens = request.tokens();
        match self.rule {
            CacheRule::OpenAi { min_tokens, step } => {
                // Every prefix of an earlier request is in the cache, so the prefixes of this
                // one that are form an unbroken run from the first: the first miss is found
                // by halving, and only the prefixes from it on are new (a request that grows
                // by appends is billed in the time of what was appended).
                let first_miss = prefix.partition_point(|p| self.cached.contains(&p.hash));
                let shared = first_miss.checked_sub(1).map_or(0, |i| prefix[i].tokens);
                let read =
                    if shared >= min_tokens { shared / step.max(1) * step.max(1) } else { 0 };
                self.cached.extend(prefix[first_miss..].iter().map(|p| p.hash));
                CallBill { input_tokens, cache_read_tokens: read, ..CallBill::default() }
            }
            CacheRule::Anthropic { min_tokens, lookback, max_breakpoints, ttl } => {
                let marks: Vec<usize> = request
                    .breakpoints()
                    .iter()
                    .copied()
                    .filter(|&b| b < prefix.len())
                    .take(max_breakpoints)
                    .collect();
                let mut read = 0;
                for &mark in &marks {
                    let at = prefix[mark].parts;
                    let hit = (0..=mark)
                        .rev()
                        .take_while(|&i| at - prefix[i].parts <= u64::from(lookback))
                        .find(|&i| self.cached.contains(&prefix[i].hash));
                    if let Some(i) = hit {
                        read = read.max(prefix[i].tokens);
                    }
                }
                let written: Vec<usize> =
                    marks.iter().copied().filter(|&m| prefix[m].tokens >= min_tokens).collect();
                let write = written.last().map_or(0, |&m| prefix[m].tokens.saturating_sub(read));
                self.cached.extend(written.iter().map(|&m| prefix[m].hash));
                CallBill {
                    input_tokens,
                    cache_read_tokens: read,
                    cache_write_tokens: write,
                    ttl,
                    output_tokens: 0,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bill::Block;

    fn request(tokens: &[u64]) -> Request {
        let mut r = Request::new();
        for (i, &t) in tokens.iter().enumerate() {
            r.push(Block { key: i as u64 + 1, tokens: t, parts: 1 });
        }
        r
    }

    #[track_caller]
    fn check(rule: CacheRule, calls: &[(Request, (u64, u64))]) {
        let mut biller = Biller::new(rule);
        for (n, (request, (read, write))) in calls.iter().enumerate() {
            let bill = biller.bill(request);
            assert_eq!(
                (bill.cache_read_tokens, bill.cache_write_tokens),
                (*read, *write),
                "call {n}"
            );
            assert_eq!(bill.input_tokens, request.tokens());
        }
    }

    #[test]
    fn openai_reads_the_shared_prefix_from_1024_tokens_in_128_token_steps() {
        check(
            CacheRule::openai(),
            &[
                (request(&[1_000]), (0, 0)),
                // 1,000 shared: under the minimum.
                (request(&[1_000, 500]), (0, 0)),
                // 1,500 shared: 1,408 in steps of 128.
                (request(&[1_000, 500, 10]), (1_408, 0)),
                // Exactly 1,024 shared, counted whole.
                (request(&[1_024]), (1_024, 0)),
            ],
        );
        // A changed block ends the shared prefix, whatever follows.
        let mut changed = request(&[2_000, 500]);
        changed = {
            let mut r = Request::new();
            r.push(changed.blocks()[0]);
            r.push(Block { key: 99, tokens: 500, parts: 1 });
            r.push(Block { key: 2, tokens: 500, parts: 1 });
            r
        };
        check(CacheRule::openai(), &[(request(&[2_000, 500]), (0, 0)), (changed, (1_920, 0))]);
    }

    #[test]
    fn anthropic_writes_to_the_last_breakpoint_and_reads_back_within_the_lookback() {
        let rule = CacheRule::anthropic();
        let first = request(&[1_500, 100]).with_breakpoint(1);
        let second = request(&[1_500, 100, 200]).with_breakpoint(2);
        let third = request(&[1_500, 100, 200, 300]);
        check(
            rule,
            &[
                (first.clone(), (0, 1_600)),
                (second.clone(), (1_600, 200)),
                // No breakpoint: nothing read or written.
                (third, (0, 0)),
            ],
        );
        // Under the minimum: nothing written, so nothing to read.
        let short = request(&[500, 100]).with_breakpoint(1);
        check(rule, &[(short.clone(), (0, 0)), (short, (0, 0))]);
        // Anthropic's minimum for some models is larger.
        check(rule.with_min_tokens(2_048), &[(first.clone(), (0, 0)), (second.clone(), (0, 0))]);
    }

    #[test]
    fn the_lookback_is_20_blocks_and_a_second_breakpoint_reaches_further() {
        let rule = CacheRule::anthropic();
        let tokens: Vec<u64> = std::iter::once(2_000).chain(std::iter::repeat_n(10, 30)).collect();
        let first = request(&tokens[..2]).with_breakpoint(1);
        // 20 blocks after the write: found.
        let near = request(&tokens[..22]).with_breakpoint(21);
        check(rule, &[(first.clone(), (0, 2_010)), (near, (2_010, 200))]);
        // 21 blocks after: not found from the newest breakpoint alone...
        let far = request(&tokens[..23]).with_breakpoint(22);
        check(rule, &[(first.clone(), (0, 2_010)), (far.clone(), (0, 2_220))]);
        // ...but a breakpoint on the head's block still reads the head.
        let headed = far.with_breakpoint(0);
        let first_headed = first.with_breakpoint(0);
        check(rule, &[(first_headed, (0, 2_010)), (headed, (2_000, 220))]);
    }

    #[test]
    fn breakpoints_past_the_limit_are_not_counted() {
        let rule = CacheRule::anthropic();
        let mut five = request(&[1_100, 10, 10, 10, 10]);
        for b in 0..5 {
            five = five.with_breakpoint(b);
        }
        // The fifth breakpoint (on block 4) does not count: the write ends at block 3.
        check(rule, &[(five, (0, 1_130))]);
    }

    #[test]
    fn one_hour_writes_are_marked() {
        let rule = CacheRule::Anthropic {
            min_tokens: 1_024,
            lookback: 20,
            max_breakpoints: 4,
            ttl: Ttl::OneHour,
        };
        let bill = Biller::new(rule).bill(&request(&[2_000]).with_breakpoint(0));
        assert_eq!((bill.cache_write_tokens, bill.ttl), (2_000, Ttl::OneHour));
        assert_eq!(bill.uncached_tokens(), 0);
    }

    /// A request grown in place (sending everything: the last request plus what was
    /// appended, its breakpoints set again) is billed as the same requests built anew.
    #[test]
    fn a_request_grown_in_place_bills_as_one_built_anew() {
        for rule in [CacheRule::openai(), CacheRule::anthropic()] {
            let (mut grown, mut fresh) = (Biller::new(rule), Biller::new(rule));
            let mut in_place = Request::new();
            let mut previous_end = None;
            let mut previous: Option<Request> = None;
            let sizes: Vec<u64> = (0..60).map(|i| 100 + (i * 37) % 900).collect();
            for (n, &tokens) in sizes.iter().enumerate() {
                in_place.push(Block { key: n as u64 + 1, tokens, parts: 1 });
                in_place.set_curator_breakpoints(previous_end);
                previous_end = in_place.end();
                let built = request(&sizes[..=n]).with_curator_breakpoints(previous.as_ref());
                assert_eq!(in_place.breakpoints(), built.breakpoints(), "{n}");
                assert_eq!(grown.bill(&in_place), fresh.bill(&built), "{rule:?} call {n}");
                previous = Some(built);
            }
        }
    }

    /// Tools pushed first (as a replay or a biller builds a request) open the head: the
    /// head's breakpoint is on the task, and a compaction that changes everything after the
    /// head reads the head back under Anthropic's rule.
    #[test]
    fn tools_pushed_first_keep_the_head_breakpoint_that_a_compaction_reads_back() {
        let counter = crate::CharEstimate::default();
        let tools = Block::of_tools(
            &serde_json::json!([{"name": "t", "description": "x".repeat(6_000)}]),
            &counter,
        );
        let build = |messages: &[curator_model::Message]| {
            let mut request = Request::new();
            request.push(tools);
            for message in messages {
                if crate::RelevanceBudget::is_note(message) {
                    request.mark_boundary();
                }
                request.push_message(Block::of_message(message, &counter), message.role());
            }
            request
        };
        let head = [curator_model::Message::system("s"), curator_model::Message::user("task")];
        let mut first =
            build(&[head[0].clone(), head[1].clone(), curator_model::Message::assistant("a")]);
        first.set_curator_breakpoints(None);
        assert_eq!(first.breakpoints(), [2, 3]);
        let note = curator_model::Message::user(
            "[curator left out 1 earlier message to fit the context.]",
        );
        let mut compacted =
            build(&[head[0].clone(), head[1].clone(), note, curator_model::Message::user("b")]);
        compacted.set_curator_breakpoints(first.end());
        let mut biller = Biller::new(CacheRule::anthropic());
        biller.bill(&first);
        let bill = biller.bill(&compacted);
        assert_eq!(bill.cache_read_tokens, compacted.prefixes()[2].tokens);
    }
}
