//! A model's prices per million tokens (input, cache reads and writes, output), from the
//! maintained `genai-prices` data or given.

use genai_prices::{Calculator, PriceRequest, Usage, UsageKey};

use super::{CallBill, Ttl};
use crate::{Error, Result};

const MILLION: f64 = 1_000_000.0;

/// US dollars per million tokens of each kind a provider bills.
///
/// # Examples
///
/// ```
/// use curator::strategies::bill::{CallBill, Prices};
///
/// let prices = Prices::for_model("gpt-4o")?;
/// assert!(prices.cache_read < prices.input);
/// let bill = CallBill { input_tokens: 1_000_000, cache_read_tokens: 1_000_000, ..CallBill::default() };
/// assert!((prices.price(&bill) - prices.cache_read).abs() < 1e-9);
///
/// let mine = Prices::new(2.0, 8.0);
/// assert_eq!((mine.cache_read, mine.cache_write), (0.2, 2.5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct Prices {
    /// Uncached input.
    pub input: f64,
    /// Input read from the cache.
    pub cache_read: f64,
    /// Input written to the cache for five minutes.
    pub cache_write: f64,
    /// Input written to the cache for an hour.
    pub cache_write_1h: f64,
    /// Output.
    pub output: f64,
}

impl Prices {
    /// Prices of `input` and `output` per million tokens, with the usual cache rates: a
    /// read at 0.1x the input price, a write at 1.25x (2x for an hour).
    pub fn new(input: f64, output: f64) -> Self {
        Prices {
            input,
            cache_read: input * 0.1,
            cache_write: input * 1.25,
            cache_write_1h: input * 2.0,
            output,
        }
    }

    /// The same prices with the cache's read and (five-minute) write rates given.
    #[must_use]
    pub fn with_cache(mut self, read: f64, write: f64) -> Self {
        self.cache_read = read;
        self.cache_write = write;
        self
    }

    /// The prices of `model` (as providers name it: `gpt-4o`, `claude-sonnet-4-5`) today,
    /// from the `genai-prices` data bundled with this release. A rate the data does not
    /// give for the model (a cache rate of a model without a cache) is the usual one (see
    /// [`new`](Self::new)).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownModel`] when the data has no price for `model`.
    pub fn for_model(model: &str) -> Result<Self> {
        let calculator = Calculator::bundled();
        let rate = |usage: &[(UsageKey, f64)]| -> Result<f64> {
            let usage: Usage = usage.iter().cloned().collect();
            let price = calculator.calculate(&PriceRequest::new(model, &usage)).map_err(|e| {
                Error::UnknownModel { model: model.to_owned(), reason: e.to_string() }
            })?;
            Ok(price.input_price + price.output_price)
        };
        let input = rate(&[(UsageKey::INPUT_TOKENS, MILLION)])?;
        let output = rate(&[(UsageKey::OUTPUT_TOKENS, MILLION)])?;
        let usual = Prices::new(input, output);
        let or_usual = |key: UsageKey, usual: f64| {
            rate(&[(UsageKey::INPUT_TOKENS, MILLION), (key, MILLION)]).unwrap_or(usual)
        };
        Ok(Prices {
            cache_read: or_usual(UsageKey::CACHE_READ_TOKENS, usual.cache_read),
            cache_write: or_usual(UsageKey::CACHE_WRITE_TOKENS, usual.cache_write),
            ..usual
        })
    }

    /// The context window of `model` (as providers name it) in tokens, from the
    /// `genai-prices` data bundled with this release: the most a request to it may hold,
    /// its reply included.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::strategies::bill::Prices;
    ///
    /// assert_eq!(Prices::context_window("gpt-4o")?, 128_000);
    /// assert!(Prices::context_window("no-such-model").is_err());
    /// # Ok::<(), curator::strategies::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::UnknownModel`] when the data does not know `model` or gives no window for it.
    pub fn context_window(model: &str) -> Result<u64> {
        let calculator = Calculator::bundled();
        let unknown = |reason: String| Error::UnknownModel { model: model.to_owned(), reason };
        let usage: Usage = [(UsageKey::INPUT_TOKENS, 1.0)].into_iter().collect();
        let found = calculator
            .calculate(&PriceRequest::new(model, &usage))
            .map_err(|e| unknown(e.to_string()))?;
        let provider = calculator
            .find_provider(Some(&found.provider_id), None)
            .map_err(|e| unknown(e.to_string()))?;
        provider
            .into_iter()
            .flat_map(genai_prices::ProviderInfo::models)
            .find(|m| m.id() == found.model_id)
            .and_then(genai_prices::ModelInfo::context_window)
            .ok_or_else(|| {
                unknown(format!(
                    "the price data gives no context window for `{}` ({})",
                    found.model_id, found.provider_id
                ))
            })
    }

    /// What `bill` costs, in US dollars.
    pub fn price(&self, bill: &CallBill) -> f64 {
        let write = match bill.ttl {
            Ttl::OneHour => self.cache_write_1h,
            _ => self.cache_write,
        };
        #[expect(clippy::cast_precision_loss, reason = "token counts are far below 2^52")]
        let sum = bill.uncached_tokens() as f64 * self.input
            + bill.cache_read_tokens as f64 * self.cache_read
            + bill.cache_write_tokens as f64 * write
            + bill.output_tokens as f64 * self.output;
        sum / MILLION
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_data_prices_openai_and_anthropic_caches() {
        let gpt = Prices::for_model("gpt-4o").unwrap();
        assert!(gpt.input > 0.0 && gpt.output > gpt.input);
        assert!((gpt.cache_read / gpt.input - 0.5).abs() < 0.01, "{gpt:?}");
        let claude = Prices::for_model("claude-sonnet-4-5").unwrap();
        assert!((claude.cache_read / claude.input - 0.1).abs() < 0.01, "{claude:?}");
        assert!((claude.cache_write / claude.input - 1.25).abs() < 0.01, "{claude:?}");
        let err = Prices::for_model("no-such-model-anywhere").unwrap_err();
        assert!(err.to_string().contains("no-such-model-anywhere"), "{err}");
    }

    #[test]
    fn a_bill_is_priced_by_kind() {
        let prices = Prices::new(3.0, 15.0);
        let bill = CallBill {
            input_tokens: 4_000_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 1_000_000,
            ttl: Ttl::FiveMinutes,
            output_tokens: 1_000_000,
        };
        // 1M uncached at 3, 2M read at 0.3, 1M written at 3.75, 1M out at 15.
        assert!((prices.price(&bill) - (3.0 + 0.6 + 3.75 + 15.0)).abs() < 1e-9);
        let hour = CallBill { ttl: Ttl::OneHour, ..bill };
        assert!((prices.price(&hour) - (3.0 + 0.6 + 6.0 + 15.0)).abs() < 1e-9);
    }
}
