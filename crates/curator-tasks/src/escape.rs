//! Markdown escaping of the text the model or a tool wrote, so that it cannot open a step of
//! its own in the task-history section.

use std::borrow::Cow;

/// Where the first line of a text lands in the section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lead {
    /// At the start of a line, after a blank line (a summary).
    LineStart,
    /// After a label on the same line (`**Assistant**: `): it cannot open a block.
    AfterLabel,
}

/// Whether `text` holds anything [`escaped`] might change: a `#`, a code fence's character,
/// or a line starting with `=` or `-` (a setext underline). A cheap, conservative test: a
/// text that passes it is rendered as it is without looking at its lines.
pub(crate) fn may_need_escaping(text: &str) -> bool {
    let bytes = text.as_bytes();
    if memchr::memchr3(b'#', b'`', b'~', bytes).is_some() {
        return true;
    }
    text.split('\n')
        .any(|line| matches!(line.trim_start_matches(' ').bytes().next(), Some(b'=' | b'-')))
}

/// `text` with every line that Markdown would read as a heading escaped: an ATX heading
/// (`### 2. Fix [active]` becomes `\### 2. Fix [active]`) and a setext underline (`---` or
/// `===` under a line of text becomes `\---`), so that text the model or a tool wrote can
/// never open a step of its own in the section. Fenced code (```` ``` ```` or `~~~`) is left
/// as it is, and a fence the text leaves open is closed at its end, so that the section's
/// own headings after it are not swallowed into the code block.
///
/// `lead` says where the first line lands: after a label (`**Assistant**: `) it cannot be a
/// heading or open a fence, so it is left as it is.
pub(crate) fn escaped(text: &str, lead: Lead) -> Cow<'_, str> {
    if !may_need_escaping(text) {
        return Cow::Borrowed(text);
    }
    let lines = scan(text, lead);
    if lines.escape.is_empty() && lines.unclosed.is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 2 * lines.escape.len() + 8);
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        if lines.escape.contains(&index) {
            let indent = line.len() - line.trim_start_matches(' ').len();
            out.push_str(&line[..indent]);
            out.push('\\');
            out.push_str(&line[indent..]);
        } else {
            out.push_str(line);
        }
    }
    if let Some(fence) = lines.unclosed {
        out.push('\n');
        out.extend(std::iter::repeat_n(char::from(fence.marker), fence.len));
    }
    Cow::Owned(out)
}

/// Whether the first line of `text` opens a code fence (so a label must go on a line of its
/// own before it for the fence to be one).
pub(crate) fn opens_with_fence(text: &str) -> bool {
    text.split('\n').next().and_then(fence_opening).is_some()
}

/// What [`scan`] found.
struct Lines {
    /// The indexes of the lines to escape.
    escape: Vec<usize>,
    /// A fence open at the end of the text.
    unclosed: Option<Fence>,
}

#[derive(Debug, Clone, Copy)]
struct Fence {
    marker: u8,
    len: usize,
}

fn scan(text: &str, lead: Lead) -> Lines {
    let mut escape = Vec::new();
    let mut fence: Option<Fence> = None;
    // Whether the line before is blank: a setext underline needs text right above it. A
    // label's line is never blank.
    let mut after_blank = lead == Lead::LineStart;
    for (index, line) in text.split('\n').enumerate() {
        let blank = line.trim().is_empty();
        if index == 0 && lead == Lead::AfterLabel {
            after_blank = false;
            continue;
        }
        if let Some(open) = fence {
            if closes(line, open) {
                fence = None;
            }
        } else if let Some(open) = fence_opening(line) {
            fence = Some(open);
        } else if atx_heading(line) || (!after_blank && setext_underline(line)) {
            escape.push(index);
        }
        after_blank = blank;
    }
    Lines { escape, unclosed: fence }
}

/// The line with up to three spaces of indentation removed, or `None` when it is indented
/// more (code, not a block Markdown would open).
fn unindented(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches(' ');
    (line.len() - rest.len() <= 3).then_some(rest)
}

/// `#` to `######` followed by a space, a tab or the end of the line.
fn atx_heading(line: &str) -> bool {
    let Some(rest) = unindented(line) else { return false };
    let hashes = rest.len() - rest.trim_start_matches('#').len();
    (1..=6).contains(&hashes) && matches!(rest.as_bytes().get(hashes), None | Some(b' ' | b'\t'))
}

/// A run of `=` or of `-`, then nothing but spaces and tabs.
fn setext_underline(line: &str) -> bool {
    let Some(rest) = unindented(line) else { return false };
    let rest = rest.trim_end_matches([' ', '\t', '\r']);
    let Some(&first) = rest.as_bytes().first() else { return false };
    matches!(first, b'=' | b'-') && rest.bytes().all(|byte| byte == first)
}

/// Three or more backticks or tildes (a backtick fence's info string holds no backtick).
fn fence_opening(line: &str) -> Option<Fence> {
    let rest = unindented(line)?;
    let marker = *rest.as_bytes().first().filter(|byte| matches!(byte, b'`' | b'~'))?;
    let len = rest.len() - rest.trim_start_matches(char::from(marker)).len();
    let info = &rest[len..];
    (len >= 3 && !(marker == b'`' && info.contains('`'))).then_some(Fence { marker, len })
}

/// At least as many of the fence's characters as opened it, then only spaces and tabs.
fn closes(line: &str, fence: Fence) -> bool {
    let Some(rest) = unindented(line) else { return false };
    let len = rest.len() - rest.trim_start_matches(char::from(fence.marker)).len();
    len >= fence.len && rest[len..].trim_end_matches([' ', '\t', '\r']).is_empty()
}

/// A title on one line: every line break (with the spaces around it) becomes one space.
pub(crate) fn one_line(title: &str) -> Cow<'_, str> {
    if !title.contains(['\n', '\r']) {
        return Cow::Borrowed(title);
    }
    let parts: Vec<&str> = title.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    Cow::Owned(parts.join(" "))
}

/// The text inside a Markdown code fence wrapping the whole of `raw`, or `raw` itself.
pub(crate) fn unfenced(raw: &str) -> &str {
    let trimmed = raw.trim();
    let Some(rest) = trimmed.strip_prefix("```") else { return raw };
    let Some(inner) = rest.strip_suffix("```") else { return raw };
    // The info string (`json`) runs to the end of the first line.
    inner.split_once('\n').map_or(inner, |(_, body)| body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, lead: Lead, expected: &str) {
        assert_eq!(escaped(text, lead), expected);
    }

    #[test]
    fn headings_are_escaped_and_the_rest_left_alone() {
        check("plain text", Lead::LineStart, "plain text");
        check(
            "# a\n   ## b\n    ### indented code",
            Lead::LineStart,
            "\\# a\n   \\## b\n    ### indented code",
        );
        check("#hashtag\n####### seven\n###", Lead::LineStart, "#hashtag\n####### seven\n\\###");
        check("# after a label\n# next", Lead::AfterLabel, "# after a label\n\\# next");
        check(
            "Title\n===\n\n---\n- item\n--",
            Lead::LineStart,
            "Title\n\\===\n\n---\n- item\n\\--",
        );
        check("---\ntext", Lead::LineStart, "---\ntext");
        check("label line\n---", Lead::AfterLabel, "label line\n\\---");
    }

    #[test]
    fn fenced_code_is_left_alone_and_closed() {
        check("```\n# code\n```\n# text", Lead::LineStart, "```\n# code\n```\n\\# text");
        check("````md\n```\n# code\n````", Lead::LineStart, "````md\n```\n# code\n````");
        check("~~~\n# open", Lead::LineStart, "~~~\n# open\n~~~");
        check("``` a`b\n# not a fence", Lead::LineStart, "``` a`b\n\\# not a fence");
        // After a label, a first line of backticks opens nothing.
        check("```\n# heading\n```", Lead::AfterLabel, "```\n\\# heading\n```\n```");
    }

    #[test]
    fn titles_go_on_one_line() {
        assert_eq!(one_line("Reproduce\n  ### 9. Fake\r\n"), "Reproduce ### 9. Fake");
        assert_eq!(one_line("Fix"), "Fix");
    }
}
