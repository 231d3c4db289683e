//! The message budget: the coalesced USER message cut down to its size in characters, every
//! cut said where it was made and how much it took.

use std::fmt::Write as _;
use std::ops::Range;

/// What one section of the USER message lists, and from which end the budget cuts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SectionKind {
    /// `tool/`: cut from the end, so that the first tools (and the cache) stay.
    Tool,
    /// `data/`: cut from the end.
    Data,
    /// `user/`: cut from the oldest definitions, so that the newest stay.
    User,
    /// The tool calls: cut from the oldest.
    ToolCalls,
    /// The output: cut from the oldest println calls.
    Output,
}

impl SectionKind {
    /// Whether the budget cuts the oldest entries (the front) rather than the last ones.
    const fn cuts_front(self) -> bool {
        matches!(self, Self::User | Self::ToolCalls | Self::Output)
    }

    /// The line that stands for `cut` entries of the section, `kept` being left.
    fn marker(self, cut: usize, kept: usize, into: &mut String) {
        let (prefix, one, many) = match self {
            Self::Tool => (";;", "tool", "tools"),
            Self::Data => (";;", "input", "inputs"),
            Self::User => (";;", "definition", "definitions"),
            // The history lines all start with `;   `, the marker too.
            Self::ToolCalls => (";  ", "tool call", "tool calls"),
            Self::Output => (";;", "println call", "println calls"),
        };
        let which = match (kept, self.cuts_front()) {
            (0, _) => "",
            (_, true) => " earlier",
            (_, false) => " more",
        };
        let noun = if cut == 1 { one } else { many };
        let _ = writeln!(into, "{prefix} ... {cut}{which} {noun} cut to fit the message budget");
    }
}

/// The pieces of a rendered USER message, as byte ranges of its text, for the budget to cut.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    /// The mission, always first; a line break follows it.
    pub(crate) mission: Range<usize>,
    pub(crate) sections: Vec<Section>,
    /// The failed attempt, from the blank line before its `---` to the line break after the
    /// closing one.
    pub(crate) failure: Option<Range<usize>>,
    /// The blank line and `Turns left: N`, always last.
    pub(crate) tail: Range<usize>,
}

/// One section: its header (with the blank line before it) and its entries, each a whole
/// number of lines.
#[derive(Debug)]
pub(crate) struct Section {
    pub(crate) kind: SectionKind,
    pub(crate) header: Range<usize>,
    pub(crate) entries: Vec<Range<usize>>,
}

/// Writes `text` whole if it has at most `max` characters, else its beginning and its end
/// around a marker saying how many characters were cut, `max` characters in all (or the
/// marker alone, when `max` leaves no room beside it).
pub(crate) fn write_capped(out: &mut String, text: &str, max: usize) {
    // Bytes bound characters from above: most texts need no counting.
    if text.len() <= max {
        out.push_str(text);
        return;
    }
    let chars = text.chars().count();
    if chars <= max {
        out.push_str(text);
        return;
    }
    let keep = max.saturating_sub(marker_len(chars));
    let head = keep - keep / 2;
    let tail = keep / 2;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(index, _)| index);
    let tail_start = if tail == 0 {
        text.len()
    } else {
        text.char_indices().rev().nth(tail - 1).map_or(0, |(index, _)| index)
    };
    out.push_str(&text[..head_end]);
    let _ = write!(out, "[... {} characters cut ...]", chars - head - tail);
    out.push_str(&text[tail_start..]);
}

/// The length of the marker [`write_capped`] writes, at most: its count is below `chars`.
fn marker_len(chars: usize) -> usize {
    "[...  characters cut ...]".len() + decimal_len(chars)
}

fn decimal_len(mut n: usize) -> usize {
    let mut digits = 1;
    while n >= 10 {
        n /= 10;
        digits += 1;
    }
    digits
}

/// How a section is cut: its entries `from..to` are kept.
struct SectionPlan {
    kind: SectionKind,
    header: usize,
    /// `prefix[i]`: the characters of the first `i` entries.
    prefix: Vec<usize>,
    from: usize,
    to: usize,
}

impl SectionPlan {
    fn count(&self) -> usize {
        self.prefix.len() - 1
    }

    fn kept(&self) -> usize {
        self.to - self.from
    }

    fn marker(&self) -> Option<String> {
        let cut = self.count() - self.kept();
        (cut > 0).then(|| {
            let mut marker = String::new();
            self.kind.marker(cut, self.kept(), &mut marker);
            marker
        })
    }

    fn chars(&self) -> usize {
        let marker = self.marker().map_or(0, |marker| marker.chars().count());
        self.header + self.prefix[self.to] - self.prefix[self.from] + marker
    }

    /// Cuts one more entry, from the section's end; false when none is left above `floor`.
    fn cut_one(&mut self, floor: usize) -> bool {
        if self.kept() <= floor {
            return false;
        }
        if self.kind.cuts_front() {
            self.from += 1;
        } else {
            self.to -= 1;
        }
        true
    }
}

/// What the budget keeps of a message.
struct Plan {
    /// The mission's characters, and how many of them are kept (with the marker).
    mission: usize,
    mission_kept: usize,
    sections: Vec<SectionPlan>,
    /// The failed attempt's characters, and whether it is kept.
    failure: Option<(usize, bool)>,
    tail: usize,
}

/// The line that stands for a failed attempt the budget cut.
fn failure_marker(chars: usize) -> String {
    format!("\n;; ... the failed attempt ({chars} characters) was cut to fit the message budget\n")
}

impl Plan {
    fn new(text: &str, layout: &Layout) -> Self {
        let count = |range: &Range<usize>| text[range.clone()].chars().count();
        let sections = layout
            .sections
            .iter()
            .map(|section| {
                let mut prefix = Vec::with_capacity(section.entries.len() + 1);
                prefix.push(0);
                let mut sum = 0;
                for entry in &section.entries {
                    sum += count(entry);
                    prefix.push(sum);
                }
                SectionPlan {
                    kind: section.kind,
                    header: count(&section.header),
                    to: section.entries.len(),
                    from: 0,
                    prefix,
                }
            })
            .collect();
        let mission = count(&layout.mission);
        Self {
            mission,
            mission_kept: mission,
            sections,
            failure: layout.failure.as_ref().map(|range| (count(range), true)),
            tail: count(&layout.tail),
        }
    }

    fn total(&self) -> usize {
        let failure = match self.failure {
            Some((chars, true)) => chars,
            Some((chars, false)) => failure_marker(chars).chars().count(),
            None => 0,
        };
        // The line break after the mission.
        self.mission_kept
            + 1
            + self.sections.iter().map(SectionPlan::chars).sum::<usize>()
            + failure
            + self.tail
    }

    /// Cuts entries of the sections of `kind`, down to `floor` kept, until the message fits.
    fn cut(&mut self, kind: SectionKind, floor: usize, max: usize) {
        for index in 0..self.sections.len() {
            if self.sections[index].kind != kind {
                continue;
            }
            while self.total() > max && self.sections[index].cut_one(floor) {}
        }
    }

    /// Cuts the middle of the mission until the message fits, keeping at least `floor`
    /// characters of it (marker included).
    fn cut_mission(&mut self, floor: usize, max: usize) {
        let total = self.total();
        if total <= max {
            return;
        }
        let wanted = self.mission_kept.saturating_sub(total - max);
        self.mission_kept = wanted.max(floor.min(self.mission_kept));
    }

    fn assemble(&self, text: &str, layout: &Layout) -> String {
        let mut out = String::with_capacity(self.total() + 16);
        let mission = &text[layout.mission.clone()];
        if self.mission_kept < self.mission {
            write_capped(&mut out, mission, self.mission_kept);
        } else {
            out.push_str(mission);
        }
        out.push('\n');
        for (plan, section) in self.sections.iter().zip(&layout.sections) {
            out.push_str(&text[section.header.clone()]);
            let marker = plan.marker();
            if plan.kind.cuts_front()
                && let Some(marker) = &marker
            {
                out.push_str(marker);
            }
            for entry in &section.entries[plan.from..plan.to] {
                out.push_str(&text[entry.clone()]);
            }
            if !plan.kind.cuts_front()
                && let Some(marker) = &marker
            {
                out.push_str(marker);
            }
        }
        match (self.failure, &layout.failure) {
            (Some((_, true)), Some(range)) => out.push_str(&text[range.clone()]),
            (Some((chars, false)), _) => out.push_str(&failure_marker(chars)),
            _ => {}
        }
        out.push_str(&text[layout.tail.clone()]);
        out
    }
}

/// The message within `max` characters: `text` itself when it fits, else `text` with whole
/// entries cut, in this order, until it does:
///
/// 1. the oldest println calls, down to the newest one;
/// 2. the oldest tool calls, down to the newest one;
/// 3. the `user/` definitions, oldest first;
/// 4. the `data/` inputs, then the `tool/` tools, from the last;
/// 5. the newest println call and the newest tool call;
/// 6. the middle of the mission, down to half the budget;
/// 7. the failed attempt (the mission taking back what it leaves);
/// 8. the middle of the mission, as far as needed.
///
/// Every cut leaves a marker with its count; the headers and `Turns left` always stay.
/// `max` must leave room for the headers, the markers and `Turns left` (the minimum budget
/// does).
pub(crate) fn fit(text: String, layout: &Layout, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut plan = Plan::new(&text, layout);
    if plan.total() <= max {
        return text;
    }
    plan.cut(SectionKind::Output, 1, max);
    plan.cut(SectionKind::ToolCalls, 1, max);
    plan.cut(SectionKind::User, 0, max);
    plan.cut(SectionKind::Data, 0, max);
    plan.cut(SectionKind::Tool, 0, max);
    plan.cut(SectionKind::Output, 0, max);
    plan.cut(SectionKind::ToolCalls, 0, max);
    plan.cut_mission(max / 2, max);
    if plan.total() > max
        && let Some((_, kept)) = &mut plan.failure
    {
        *kept = false;
        // What the failed attempt leaves goes back to the mission.
        plan.mission_kept = plan.mission;
    }
    plan.cut_mission(0, max);
    plan.assemble(&text, layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn capped(text: &str, max: usize) -> String {
        let mut out = String::new();
        write_capped(&mut out, text, max);
        assert!(out.chars().count() <= max.max(marker_len(text.chars().count())), "{out}");
        out
    }

    #[test]
    fn a_capped_text_keeps_its_beginning_and_its_end() {
        assert_eq!(capped("short", 5), "short");
        let text = format!("BEGIN{}END", "é".repeat(1000));
        let out = capped(&text, 60);
        assert!(out.starts_with("BEGINéé"), "{out}");
        assert!(out.ends_with("éEND"), "{out}");
        assert!(out.contains("[... 977 characters cut ...]"), "{out}");
        assert_eq!(capped(&text, 0), "[... 1008 characters cut ...]");
    }

    #[test]
    fn markers_count_and_name_what_was_cut() {
        let mut out = String::new();
        SectionKind::Output.marker(3, 1, &mut out);
        SectionKind::Tool.marker(1, 2, &mut out);
        SectionKind::ToolCalls.marker(2, 0, &mut out);
        assert_eq!(
            out,
            ";; ... 3 earlier println calls cut to fit the message budget\n\
             ;; ... 1 more tool cut to fit the message budget\n\
             ;   ... 2 tool calls cut to fit the message budget\n"
        );
    }
}
