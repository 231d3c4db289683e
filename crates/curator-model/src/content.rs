//! Message content: plain text or a list of parts (text, images, anything else).

use std::borrow::Cow;

use serde_json::Value;

use crate::ProviderFields;

/// The content of a message.
///
/// Providers accept either one string or an array of typed parts. Both are kept as given,
/// so a message converts back to exactly what it was read from.
///
/// # Examples
///
/// ```
/// use curator::model::{Content, Part};
///
/// let text = Content::from("hello");
/// assert_eq!(text.text(), "hello");
///
/// let parts = Content::Parts(vec![Part::text("a"), Part::text("b")]);
/// assert_eq!(parts.text(), "a\nb");
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Content {
    /// One string.
    Text(String),
    /// An array of parts.
    Parts(Vec<Part>),
}

impl Content {
    /// The text of the content: the string itself, or the text parts joined by newlines
    /// (parts that are not text contribute nothing).
    ///
    /// Borrows when the content is one string or holds a single text part.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Content, Part};
    /// assert_eq!(Content::from("hi").text(), "hi");
    /// assert_eq!(Content::Parts(vec![Part::text("a"), Part::text("b")]).text(), "a\nb");
    /// ```
    #[inline]
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Content::Text(s) => Cow::Borrowed(s),
            Content::Parts(parts) => parts_text(parts),
        }
    }

    /// Number of characters (Unicode scalar values) of text, without building the joined text.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Content;
    /// assert_eq!(Content::from("héllo").text_chars(), 5);
    /// ```
    pub fn text_chars(&self) -> usize {
        match self {
            Content::Text(s) => s.chars().count(),
            Content::Parts(parts) => {
                let mut n = 0;
                let mut count = 0usize;
                for t in parts.iter().filter_map(Part::as_text) {
                    n += t.chars().count();
                    count += 1;
                }
                n + count.saturating_sub(1)
            }
        }
    }

    /// Whether there is no text and no other part.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Content, Part};
    /// assert!(Content::from("").is_empty());
    /// assert!(Content::Parts(vec![Part::text("")]).is_empty());
    /// assert!(!Content::from("x").is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        match self {
            Content::Text(s) => s.is_empty(),
            Content::Parts(parts) => parts.iter().all(|p| p.as_text().is_some_and(str::is_empty)),
        }
    }

    /// Whether any part is something other than text (an image, a document, …).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Content, ImageSource, Part};
    /// let with_image = Content::Parts(vec![Part::image(ImageSource::from_url("https://x/a.png"))]);
    /// assert!(with_image.has_non_text_parts());
    /// assert!(!Content::from("x").has_non_text_parts());
    /// ```
    pub fn has_non_text_parts(&self) -> bool {
        matches!(self, Content::Parts(parts) if parts.iter().any(|p| p.as_text().is_none()))
    }
}

// Written by hand rather than derived as an untagged enum: the derived version buffers every
// string before trying each variant, which doubled the cost of reading large records.
impl<'de> serde::Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Content;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content parts")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(v.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(v))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Content, A::Error> {
                let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(part) = seq.next_element()? {
                    parts.push(part);
                }
                Ok(Content::Parts(parts))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_owned())
    }
}

/// One part of a multi-part content.
///
/// # Examples
///
/// ```
/// use curator::model::{ImageSource, Part};
///
/// let image = Part::image(ImageSource::Url { url: "https://example.com/cat.png".into() });
/// assert!(image.as_text().is_none());
/// assert_eq!(Part::text("hi").as_text(), Some("hi"));
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
#[non_exhaustive]
pub enum Part {
    /// Text, with any provider fields of the part (such as `cache_control`).
    Text {
        /// The text.
        text: String,
        /// Fields of the part that curator does not model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extra: Option<ProviderFields>,
    },
    /// An image, by URL or inline data.
    Image {
        /// Where the image comes from.
        source: ImageSource,
        /// Fields of the part that curator does not model (OpenAI's `detail`, say).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extra: Option<ProviderFields>,
    },
    /// Any other part (audio, files, documents, thinking blocks, …), kept verbatim in the
    /// shape of the format it was read from.
    Raw {
        /// The format the part was read from.
        format: crate::Format,
        /// The part as it was read.
        value: Value,
    },
}

impl Part {
    /// A text part.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Part;
    /// assert_eq!(Part::text("hi").as_text(), Some("hi"));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into(), extra: None }
    }

    /// An image part.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{ImageSource, Part};
    /// let part = Part::image(ImageSource::from_url("https://x/a.png"));
    /// assert!(part.as_text().is_none());
    /// ```
    pub fn image(source: ImageSource) -> Self {
        Part::Image { source, extra: None }
    }

    /// The text of a text part.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Part;
    /// assert_eq!(Part::text("t").as_text(), Some("t"));
    /// ```
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Part::Text { text, .. } => Some(text),
            _ => None,
        }
    }
}

/// Where an image comes from.
///
/// # Examples
///
/// ```
/// use curator::model::ImageSource;
///
/// let inline = ImageSource::Base64 { media_type: "image/png".into(), data: "iVBOR".into() };
/// assert_eq!(inline.to_url(), "data:image/png;base64,iVBOR");
/// assert_eq!(ImageSource::from_url("data:image/png;base64,iVBOR"), inline);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum ImageSource {
    /// An image on the web.
    Url {
        /// The address.
        url: String,
    },
    /// Inline base64 data.
    Base64 {
        /// The media type, such as `image/png`.
        media_type: String,
        /// The base64 text.
        data: String,
    },
}

impl ImageSource {
    /// Reads a URL, recognising `data:<type>;base64,<data>` URLs as inline data.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::ImageSource;
    /// assert_eq!(ImageSource::from_url("https://x/a.png"), ImageSource::Url { url: "https://x/a.png".into() });
    /// ```
    pub fn from_url(url: &str) -> Self {
        if let Some(rest) = url.strip_prefix("data:")
            && let Some((media_type, data)) = rest.split_once(";base64,")
        {
            return ImageSource::Base64 {
                media_type: media_type.to_owned(),
                data: data.to_owned(),
            };
        }
        ImageSource::Url { url: url.to_owned() }
    }

    /// The source as one URL (inline data as a `data:` URL).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::ImageSource;
    /// let inline = ImageSource::Base64 { media_type: "image/gif".into(), data: "R0lG".into() };
    /// assert_eq!(inline.to_url(), "data:image/gif;base64,R0lG");
    /// ```
    pub fn to_url(&self) -> String {
        match self {
            ImageSource::Url { url } => url.clone(),
            ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        }
    }
}

/// The text parts of `parts`, joined with newlines (borrowed when there is at most one).
fn parts_text(parts: &[Part]) -> Cow<'_, str> {
    let mut texts = parts.iter().filter_map(Part::as_text);
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(first), None) => Cow::Borrowed(first),
        (Some(first), Some(second)) => {
            let mut joined = String::with_capacity(first.len() + second.len() + 1);
            joined.push_str(first);
            joined.push('\n');
            joined.push_str(second);
            for t in texts {
                joined.push('\n');
                joined.push_str(t);
            }
            Cow::Owned(joined)
        }
    }
}
