//! Encoding long texts part by part, so that a long run of one kind of character (a line of
//! `=`, a block of spaces, a word of a million letters) costs time linear in its length.
//!
//! The encoder merges each pre-token's bytes with a heap: a run of megabytes that is one
//! pre-token costs seconds. Byte-pair encoding can be stitched instead. The tokens of a text
//! from any of its tokens on are the encoding of the rest of the text, and two encodings that
//! hold the same token over the same bytes join into the encoding of their union (the
//! corollaries of github/rust-gems' `bpe`). So a text is cut inside its long runs into parts
//! that overlap; each part is encoded alone; consecutive parts are joined at a token they
//! both hold over the same bytes. A run's parts repeat, so each distinct part is encoded
//! once. When two parts hold no token in common, the text is encoded whole: the result is
//! always the encoder's own.

use std::collections::HashMap;

use tiktoken::CoreBpe;

/// Runs shorter than this are left to the encoder.
const RUN_MIN: usize = 16 * 1024;
/// Bytes a part reaches past its cut into the next part.
const OVERLAP: usize = 1024;
/// Distance kept between a cut and its run's ends: the first and last bytes of a run may
/// belong to the pre-tokens around it.
const EDGE: usize = 2 * OVERLAP + 64;
/// Bytes from a part's start to its cut (a multiple of every run token's length, so that a
/// run's parts are the same text).
const SPAN: usize = 32 * 1024;

/// The tokens of `text`, as `core.encode(text)` gives them.
pub(super) fn encode(core: &CoreBpe, text: &str) -> Vec<u32> {
    let mut tokens = Vec::new();
    if !stitch(core, text, &mut |part| tokens.extend_from_slice(part)) {
        return core.encode(text);
    }
    tokens
}

/// How many tokens `text` is, as `core.count(text)` says.
pub(super) fn count(core: &CoreBpe, text: &str) -> usize {
    let mut count = 0;
    if !stitch(core, text, &mut |part| count += part.len()) {
        return core.count(text);
    }
    count
}

/// One part's encoding and the byte spans of its first and last tokens.
struct Part {
    tokens: Vec<u32>,
    /// `(index, start, end)` of the tokens starting in the part's first `2 * OVERLAP`
    /// bytes, offsets from the part's start.
    front: Vec<(usize, usize, usize)>,
    /// The same for the tokens starting in its last `2 * OVERLAP` bytes.
    back: Vec<(usize, usize, usize)>,
}

impl Part {
    fn new(core: &CoreBpe, text: &str) -> Self {
        let tokens = core.encode(text);
        let length = |token: u32| core.decode(&[token]).len();
        let mut front = Vec::new();
        let mut at = 0;
        for (index, &token) in tokens.iter().enumerate() {
            if at >= 2 * OVERLAP {
                break;
            }
            let end = at + length(token);
            front.push((index, at, end));
            at = end;
        }
        let mut back = Vec::new();
        let mut at = text.len();
        for (index, &token) in tokens.iter().enumerate().rev() {
            if at + 2 * OVERLAP <= text.len() {
                break;
            }
            let start = at.saturating_sub(length(token));
            back.push((index, start, at));
            at = start;
        }
        back.reverse();
        Self { tokens, front, back }
    }
}

/// Emits the tokens of `text` in order, or returns `false` having emitted nothing when
/// `text` has no long run or two of its parts cannot be joined.
fn stitch(core: &CoreBpe, text: &str, emit: &mut dyn FnMut(&[u32])) -> bool {
    let runs = runs(text.as_bytes());
    if runs.is_empty() {
        return false;
    }
    let mut parts: Vec<Part> = Vec::new();
    let mut known: HashMap<&str, usize> = HashMap::new();
    // The parts joined so far: each with its start and the range of its tokens that are
    // the text's (from the token it shares with the part before, to the one it shares with
    // the part after).
    let mut joined: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut start = 0;
    loop {
        let cut = next_cut(&runs, start + SPAN).filter(|cut| cut + OVERLAP < text.len());
        let end = cut.map_or(text.len(), |cut| cut + OVERLAP);
        let slice = &text[start..end];
        let part = *known.entry(slice).or_insert_with(|| {
            parts.push(Part::new(core, slice));
            parts.len() - 1
        });
        let first = match joined.last_mut() {
            None => 0,
            Some((before, before_start, before_first, before_last)) => {
                let Some((last, first)) = join(&parts[*before], *before_start, &parts[part], start)
                else {
                    return false;
                };
                if last < *before_first {
                    return false;
                }
                *before_last = last;
                first
            }
        };
        joined.push((part, start, first, parts[part].tokens.len()));
        let Some(cut) = cut else { break };
        // The next part starts where a token of this one starts, at or before the cut.
        let next = parts[part].back.iter().rev().find(|&&(index, at, _)| {
            index > first && start + at <= cut && start + at + OVERLAP >= cut
        });
        let Some(&(_, at, _)) = next else { return false };
        start += at;
    }
    for &(part, _, first, last) in &joined {
        emit(&parts[part].tokens[first..last]);
    }
    true
}

/// The first token `before` (starting at byte `before_start`) and `after` (at
/// `after_start`) hold over the same bytes: its index in each.
fn join(
    before: &Part,
    before_start: usize,
    after: &Part,
    after_start: usize,
) -> Option<(usize, usize)> {
    before.back.iter().find_map(|&(index, start, end)| {
        let (start, end) = (before_start + start, before_start + end);
        let start_in_after = start.checked_sub(after_start)?;
        after
            .front
            .iter()
            .find(|&&(_, s, e)| s == start_in_after && e == end - after_start)
            .map(|&(after_index, _, _)| (index, after_index))
    })
}

/// The first position at or after `from` that lies at least [`EDGE`] bytes inside a run.
fn next_cut(runs: &[(usize, usize)], from: usize) -> Option<usize> {
    runs.iter().find_map(|&(start, end)| {
        let cut = from.max(start + EDGE);
        (cut + EDGE <= end).then_some(cut)
    })
}

/// The runs of at least [`RUN_MIN`] bytes of one kind of ASCII character: blanks (spaces,
/// tabs, vertical tabs and form feeds, not line ends), lowercase letters, capital letters,
/// or punctuation and control characters. Each is one pre-token for the encodings' patterns,
/// whatever surrounds it, away from its ends. A slash ends a run: o200k's pattern gives the
/// slashes after punctuation and a line end to that piece's tail (`[\r\n/]*`), so a run
/// of slashes may belong to the piece before it.
fn runs(bytes: &[u8]) -> Vec<(usize, usize)> {
    fn kind(byte: u8) -> Option<u8> {
        match byte {
            b' ' | b'\t' | 0x0b | 0x0c => Some(0),
            b'a'..=b'z' => Some(1),
            b'A'..=b'Z' => Some(2),
            b'/' => None,
            0x00..=0x08 | 0x0e..=0x1b | 0x7f => Some(3),
            _ if byte.is_ascii_punctuation() => Some(3),
            _ => None,
        }
    }
    let mut runs = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let Some(of) = kind(bytes[start]) else {
            start += 1;
            continue;
        };
        let length = bytes[start..].iter().take_while(|&&b| kind(b) == Some(of)).count();
        if length >= RUN_MIN {
            runs.push((start, start + length));
        }
        start += length;
    }
    runs
}

#[cfg(test)]
mod tests;
