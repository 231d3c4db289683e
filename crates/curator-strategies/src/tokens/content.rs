//! What non-text content costs: images by the provider's published rules, documents,
//! thinking blocks and other parts by documented estimates.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
#[cfg(test)]
use curator_model::ProviderFields;
use curator_model::{Format, ImageSource, Part};
use serde_json::Value;

use crate::map::stable_hash;

/// Whose published image rules a counter applies.
///
/// | rules | image of known size | size unknown (a URL) |
/// |---|---|---|
/// | `OpenAi` | `detail: "low"`: 85. Otherwise (`high`, `auto` or none): scaled to fit 2048×2048, then so that the shortest side is at most 768 px; 85 + 170 per 512 px tile | low: 85; otherwise the most any image can cost, 1,445 (8 tiles) |
/// | `Anthropic` | scaled so that the long edge is at most 1,568 px; width × height / 750, at most 1,600 | 1,600 |
///
/// The size of an inline (base64) image is read from its header without decoding the
/// picture; the size of an image given by URL is unknown unless the caller supplies it
/// ([`ContentRules::with_image_size`]).
///
/// # Examples
///
/// ```
/// use curator::strategies::ImageRules;
///
/// assert_eq!(ImageRules::OpenAi.image_tokens(Some((1024, 1024)), false), 765);
/// assert_eq!(ImageRules::OpenAi.image_tokens(Some((1024, 1024)), true), 85);
/// assert_eq!(ImageRules::OpenAi.image_tokens(None, false), 1_445);
/// assert_eq!(ImageRules::Anthropic.image_tokens(Some((1000, 1000)), false), 1_334);
/// assert_eq!(ImageRules::Anthropic.image_tokens(Some((200, 200)), false), 54);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ImageRules {
    /// OpenAI's rules for GPT-4o and later (`detail` low, high or auto).
    #[default]
    OpenAi,
    /// Anthropic's rules for Claude.
    Anthropic,
}

/// The most a high- or auto-detail image costs under OpenAI's rules: 8 tiles.
const OPENAI_MAX: u64 = 85 + 170 * 8;
/// Anthropic's cap: larger images are scaled down until they cost about this much.
const ANTHROPIC_MAX: u64 = 1_600;
/// Estimated tokens per page of a PDF document (the upper end of Anthropic's published
/// 1,500 to 3,000 tokens a page, since a budget must be a bound).
pub(crate) const PDF_PAGE_TOKENS: u64 = 3_000;

impl ImageRules {
    /// Tokens of one image of `size` (width, height in pixels; `None` when unknown), at low
    /// detail when `low_detail` (OpenAI only).
    pub fn image_tokens(self, size: Option<(u32, u32)>, low_detail: bool) -> u64 {
        match self {
            ImageRules::OpenAi if low_detail => 85,
            ImageRules::OpenAi => size.map_or(OPENAI_MAX, |(w, h)| openai_tiles(w, h) * 170 + 85),
            ImageRules::Anthropic => size.map_or(ANTHROPIC_MAX, |(w, h)| anthropic_tokens(w, h)),
        }
    }
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "pixel sizes of real images, scaled down"
)]
fn openai_tiles(width: u32, height: u32) -> u64 {
    let (mut w, mut h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let fit = (2048.0 / w.max(h)).min(1.0);
    (w, h) = (w * fit, h * fit);
    let shortest = (768.0 / w.min(h)).min(1.0);
    (w, h) = (w * shortest, h * shortest);
    ((w / 512.0).ceil() as u64).max(1) * ((h / 512.0).ceil() as u64).max(1)
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "pixel sizes of real images, scaled down"
)]
fn anthropic_tokens(width: u32, height: u32) -> u64 {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let fit = (1568.0 / w.max(h)).min(1.0);
    let tokens = ((w * fit) * (h * fit) / 750.0).ceil() as u64;
    tokens.clamp(1, ANTHROPIC_MAX)
}

/// How a counter prices what is not text: the image rules, and image sizes the caller knows
/// for images given by URL.
///
/// # Examples
///
/// ```
/// use curator::model::{ImageSource, Message, Part, Content};
/// use curator::strategies::{CharEstimate, ContentRules, ImageRules, TokenCounter};
///
/// let url = "https://example.com/chart.png";
/// let message = Message::user(Content::Parts(vec![Part::image(ImageSource::from_url(url))]));
/// let unknown = CharEstimate::default();
/// let known = CharEstimate::default()
///     .with_content_rules(ContentRules::new(ImageRules::OpenAi).with_image_size(url, 512, 512));
/// // An image of unknown size costs the most it could; a known one what it does.
/// assert_eq!(unknown.count_message(&message) - known.count_message(&message), 1_445 - 255);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentRules {
    images: ImageRules,
    sizes: Arc<BTreeMap<String, (u32, u32)>>,
    /// [`cache_key`](ContentRules::cache_key), kept up to date by every constructor.
    key: u64,
}

impl Default for ContentRules {
    fn default() -> Self {
        Self::new(ImageRules::default())
    }
}

impl ContentRules {
    /// Rules with these image rules and no known sizes.
    pub fn new(images: ImageRules) -> Self {
        let mut rules = Self { images, sizes: Arc::default(), key: 0 };
        rules.key = rules.compute_key();
        rules
    }

    /// Declares the pixel size of the image at `url`, so that it is counted by its size
    /// rather than at the most an image can cost.
    #[must_use]
    pub fn with_image_size(mut self, url: impl Into<String>, width: u32, height: u32) -> Self {
        Arc::make_mut(&mut self.sizes).insert(url.into(), (width, height));
        self.key = self.compute_key();
        self
    }

    /// The image rules.
    pub fn images(&self) -> ImageRules {
        self.images
    }

    /// A key that changes whenever the rules count differently, for token caches.
    /// A key that differs between rules that count differently; O(1).
    pub(crate) fn cache_key(&self) -> u64 {
        self.key
    }

    fn compute_key(&self) -> u64 {
        let mut parts: Vec<Vec<u8>> =
            vec![b"content".to_vec(), format!("{:?}", self.images).into_bytes()];
        for (url, (w, h)) in self.sizes.iter() {
            parts.push(url.clone().into_bytes());
            parts.push(format!("{w}x{h}").into_bytes());
        }
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        stable_hash(&refs)
    }

    /// Tokens of a non-text part; `count_text` counts the text the part carries.
    pub(crate) fn part_tokens(&self, part: &Part, count_text: &dyn Fn(&str) -> u64) -> u64 {
        match part {
            Part::Text { text, .. } => count_text(text),
            Part::Image { source, extra } => {
                let low = extra
                    .as_ref()
                    .and_then(|e| e.fields_for(Format::OpenAi))
                    .and_then(|f| f.get("detail"))
                    .and_then(Value::as_str)
                    == Some("low");
                self.images.image_tokens(self.image_size(source), low)
            }
            Part::Raw { value, .. } => self.raw_tokens(value, count_text),
            // Parts added later count by their JSON text, an over-estimate that keeps the
            // budget a bound.
            other => serde_json::to_string(other).map_or(0, |text| count_text(&text)),
        }
    }

    fn image_size(&self, source: &ImageSource) -> Option<(u32, u32)> {
        match source {
            ImageSource::Url { url } => self.sizes.get(url).copied(),
            ImageSource::Base64 { data, .. } => base64_image_size(data),
        }
    }

    /// Parts curator keeps verbatim: Anthropic documents, thinking and image blocks,
    /// OpenAI files and audio, and anything else.
    fn raw_tokens(&self, value: &Value, count_text: &dyn Fn(&str) -> u64) -> u64 {
        let kind = value.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "thinking" => text_field(value, "thinking", count_text),
            // Encrypted reasoning: about four bytes of data to a token.
            "redacted_thinking" => string_len(value, "data").div_ceil(4),
            "document" => self.document_tokens(value, count_text),
            "image" => {
                let source = value.get("source");
                let size = match source.and_then(|s| s.get("type")).and_then(Value::as_str) {
                    Some("base64") => source
                        .and_then(|s| s.get("data"))
                        .and_then(Value::as_str)
                        .and_then(base64_image_size),
                    Some("url") => source
                        .and_then(|s| s.get("url"))
                        .and_then(Value::as_str)
                        .and_then(|url| self.sizes.get(url).copied()),
                    _ => None,
                };
                self.images.image_tokens(size, false)
            }
            // OpenAI audio: about 10 tokens a second; 16 kHz 16-bit audio is 32,000 bytes a
            // second, so one token per 3,200 bytes of audio, 4,267 of base64.
            "input_audio" => {
                value.get("input_audio").map_or(0, |a| string_len(a, "data")).div_ceil(4_267).max(1)
            }
            "file" => value
                .get("file")
                .and_then(|f| f.get("file_data"))
                .and_then(Value::as_str)
                .map_or(PDF_PAGE_TOKENS, pdf_tokens),
            _ => serde_json::to_string(value).map_or(0, |text| count_text(&text)),
        }
    }

    fn document_tokens(&self, value: &Value, count_text: &dyn Fn(&str) -> u64) -> u64 {
        let mut n =
            text_field(value, "title", count_text) + text_field(value, "context", count_text);
        let source = value.get("source");
        n += match source.and_then(|s| s.get("type")).and_then(Value::as_str) {
            Some("text") => source.map_or(0, |s| text_field(s, "data", count_text)),
            Some("base64") => source
                .and_then(|s| s.get("data"))
                .and_then(Value::as_str)
                .map_or(PDF_PAGE_TOKENS, pdf_tokens),
            Some("content") => match source.and_then(|s| s.get("content")) {
                Some(Value::String(text)) => count_text(text),
                Some(Value::Array(blocks)) => {
                    blocks.iter().map(|block| self.raw_tokens(block, count_text)).sum()
                }
                _ => 0,
            },
            Some("text_block") | None => 0,
            // A URL or a file id: the page count is unknown; one page is assumed.
            Some(_) => PDF_PAGE_TOKENS,
        };
        n
    }
}

fn text_field(value: &Value, field: &str, count_text: &dyn Fn(&str) -> u64) -> u64 {
    value.get(field).and_then(Value::as_str).map_or(0, count_text)
}

fn string_len(value: &Value, field: &str) -> u64 {
    value.get(field).and_then(Value::as_str).map_or(0, |s| s.len() as u64)
}

/// The pixel size of a base64 image, read from the first bytes of its header (more only
/// when the format needs it, as JPEG can); `None` when it cannot be read.
fn base64_image_size(data: &str) -> Option<(u32, u32)> {
    let data = data.trim_start();
    // Decode growing prefixes (a multiple of 4 characters): most headers are in the first
    // few hundred bytes; a JPEG's frame header can come after large metadata.
    let mut take = 1_024;
    loop {
        let end = take.min(data.len()) / 4 * 4;
        let bytes = base64::engine::general_purpose::STANDARD.decode(&data[..end]).ok()?;
        if let Ok(size) = imagesize::blob_size(&bytes) {
            return Some((
                u32::try_from(size.width).unwrap_or(u32::MAX),
                u32::try_from(size.height).unwrap_or(u32::MAX),
            ));
        }
        if end >= data.len() / 4 * 4 {
            return None;
        }
        take *= 8;
    }
}

/// Tokens of a base64 PDF: its pages (counted from the page objects) times
/// [`PDF_PAGE_TOKENS`]; one page when they cannot be counted.
fn pdf_tokens(data: &str) -> u64 {
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data.trim()) else {
        return PDF_PAGE_TOKENS;
    };
    let mut pages = 0;
    for pattern in [&b"/Type /Page"[..], &b"/Type/Page"[..]] {
        let mut rest = &bytes[..];
        while let Some(at) = find(rest, pattern) {
            let after = rest.get(at + pattern.len()).copied();
            // `/Pages` is the page tree, not a page.
            if after != Some(b's') {
                pages += 1;
            }
            rest = &rest[at + pattern.len()..];
        }
    }
    u64::max(pages, 1) * PDF_PAGE_TOKENS
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(rules: ImageRules, size: (u32, u32), expected: u64) {
        assert_eq!(rules.image_tokens(Some(size), false), expected, "{size:?}");
    }

    #[test]
    fn openai_tiles_follow_the_published_examples() {
        // 1024×1024 → 768×768 → 4 tiles → 765 tokens.
        check(ImageRules::OpenAi, (1024, 1024), 765);
        // 2048×4096 → 1024×2048 → 768×1536 → 6 tiles → 1,105 tokens.
        check(ImageRules::OpenAi, (2048, 4096), 1_105);
        // Small images are not scaled up: one tile.
        check(ImageRules::OpenAi, (200, 100), 255);
        // Nothing costs more than 8 tiles.
        for size in [(768, 2048), (10_000, 10), (4096, 4096), (1, 1)] {
            assert!(ImageRules::OpenAi.image_tokens(Some(size), false) <= OPENAI_MAX);
        }
    }

    #[test]
    fn anthropic_scales_the_long_edge_and_caps() {
        check(ImageRules::Anthropic, (1000, 1000), 1_334);
        check(ImageRules::Anthropic, (1092, 1092), 1_590);
        check(ImageRules::Anthropic, (8000, 8000), 1_600);
        check(ImageRules::Anthropic, (1568, 100), 210);
    }

    #[test]
    fn a_png_header_gives_the_size_without_decoding_the_picture() {
        // A 1×1 PNG, then one whose header says 3000×2000 with no picture after it.
        let tiny = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
        assert_eq!(base64_image_size(tiny), Some((1, 1)));
        let mut header = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        header.extend(3000u32.to_be_bytes());
        header.extend(2000u32.to_be_bytes());
        header.extend([8, 6, 0, 0, 0]);
        let big = base64::engine::general_purpose::STANDARD.encode(&header);
        assert_eq!(base64_image_size(&big), Some((3000, 2000)));
        assert_eq!(base64_image_size("not base64 at all!"), None);
    }

    #[test]
    fn pdf_pages_are_counted_from_page_objects() {
        let pdf = b"%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] >>\n2 0 obj << /Type /Page >>\n3 0 obj <</Type/Page>>\n";
        let data = base64::engine::general_purpose::STANDARD.encode(pdf);
        assert_eq!(pdf_tokens(&data), 2 * PDF_PAGE_TOKENS);
        assert_eq!(pdf_tokens("%%%"), PDF_PAGE_TOKENS);
    }

    #[test]
    fn detail_is_read_from_openai_fields() {
        let mut fields = serde_json::Map::new();
        fields.insert("detail".into(), Value::String("low".into()));
        let source = ImageSource::from_url("https://x/a.png");
        let low = Part::Image {
            source: source.clone(),
            extra: ProviderFields::non_empty(Format::OpenAi, fields),
        };
        let rules = ContentRules::default();
        let count = |text: &str| text.len() as u64;
        assert_eq!(rules.part_tokens(&low, &count), 85);
        assert_eq!(rules.part_tokens(&Part::image(source), &count), OPENAI_MAX);
    }
}
