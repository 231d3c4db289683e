//! The HTML report of a replay: one self-contained page (inline CSS, SVG and a few lines of
//! script to sort the table; nothing fetched) that reads at a glance on a laptop and prints.
//!
//! The overview comes first: the totals, then a sortable table of the conversations (calls,
//! tokens full and sent, saved, evidence kept, the largest view, violations, what the calls
//! were billed with the prompt cache counted). Then, per
//! conversation, the token chart (axes, gridlines, the budget, values on hover) beside the
//! context map: one row per call, one column per message, each cell showing whether the
//! call's view kept the message, shortened it, replaced it by a summary or dropped it; and
//! the billed chart: each call's tokens sent uncached, written to the prompt cache and read
//! from it.

use std::fmt::Write as _;

use curator::strategies::StrategyConfig;

use crate::billed::{Rates, money};
use crate::evidence::Summary;
use crate::replayed::{Cell, Replayed, Totals, percent, saved};

/// The price used for the cost column when `--price` is not given: US dollars per million
/// input tokens.
pub(crate) const DEFAULT_PRICE: f64 = 3.0;

/// What the page needs besides the replays.
#[derive(Debug)]
pub(crate) struct Page<'a> {
    pub(crate) title: &'a str,
    pub(crate) pipeline: &'a StrategyConfig,
    /// US dollars per million input tokens.
    pub(crate) price: f64,
}

const FULL: &str = "#c62828";
const SENT: &str = "#1565c0";
const SENT_FILL: &str = "#bbdefb";
const CACHED: &str = "#43a047";
const WRITTEN: &str = "#fb8c00";

fn colour(cell: Cell) -> &'static str {
    match cell {
        Cell::Kept => "#2e7d32",
        Cell::Shortened => "#f9a825",
        Cell::Summarized => "#8e24aa",
        Cell::Dropped => "#e0e0e0",
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The first token budget of a pipeline, to draw on the charts.
fn budget(config: &StrategyConfig) -> Option<u64> {
    match config {
        StrategyConfig::TokenBudget { max_tokens, .. } => Some(*max_tokens),
        StrategyConfig::Compose { steps } => steps.iter().find_map(budget),
        StrategyConfig::Summarize { then: Some(then), .. } => budget(then),
        _ => None,
    }
}

/// A round step for `ticks` ticks up to `max`: 1, 2 or 5 times a power of ten.
fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(1.0);
    let power = 10f64.powf(raw.log10().floor());
    let fraction = raw / power;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}

/// `31.5k`, `1.2M`.
fn compact(n: f64) -> String {
    if n >= 1e6 {
        format!("{}M", trim(n / 1e6))
    } else if n >= 1e3 {
        format!("{}k", trim(n / 1e3))
    } else {
        format!("{n:.0}")
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_owned)
}

/// Thousands separated by thin spaces.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(c);
    }
    out
}

/// A round step for about `ticks` ticks up to `n`: 1, 2 or 5 times a power of ten.
fn int_step(n: usize, ticks: usize) -> usize {
    let mut power = 1;
    loop {
        for step in [power, 2 * power, 5 * power] {
            if n / step <= ticks {
                return step;
            }
        }
        power *= 10;
    }
}

/// The size of a chart and of its margins.
const W: f64 = 600.0;
const H: f64 = 260.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 40.0;

/// A chart's plot area: where the calls and the values fall.
struct Frame {
    n: usize,
    y_max: f64,
}

impl Frame {
    const PLOT_W: f64 = W - LEFT - RIGHT;
    const PLOT_H: f64 = H - TOP - BOTTOM;

    /// The middle of call `i`'s band.
    fn x(&self, i: usize) -> f64 {
        LEFT + (i as f64 + 0.5) * Self::PLOT_W / self.n as f64
    }

    /// The height of value `v`.
    fn y(&self, v: f64) -> f64 {
        TOP + Self::PLOT_H * (1.0 - v / self.y_max)
    }

    /// The width of a call's band.
    fn band(&self) -> f64 {
        Self::PLOT_W / self.n as f64
    }

    /// Opens the chart's `svg` (labelled `label`) and draws its gridlines and axes for `n`
    /// calls and values up to `top_value`, `what` naming the values.
    fn draw(svg: &mut String, n: usize, top_value: f64, label: &str, what: &str) -> Frame {
        let step = nice_step(top_value, 5.0);
        let frame = Frame { n: n.max(1), y_max: (top_value / step).ceil() * step };
        let n = frame.n;
        let (plot_w, plot_h) = (Self::PLOT_W, Self::PLOT_H);
        let _ = writeln!(
            svg,
            r#"<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{label}">"#,
            label = escape(label)
        );
        // Gridlines and the y axis labels.
        let mut v = 0.0;
        while v <= frame.y_max + 0.5 {
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{x2}" y2="{yy:.1}" stroke="#e6e6e6"/><text x="{lx}" y="{ty:.1}" class="tick" text-anchor="end">{label}</text>"##,
                yy = frame.y(v),
                x2 = W - RIGHT,
                lx = LEFT - 6.0,
                ty = frame.y(v) + 4.0,
                label = compact(v)
            );
            v += step;
        }
        // The x axis: call numbers at a round step.
        let x_step = int_step(n, 8);
        let mut k = x_step;
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{b}" x2="{r}" y2="{b}" stroke="#555"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{b}" stroke="#555"/>"##,
            b = TOP + plot_h,
            r = W - RIGHT
        );
        let _ = writeln!(
            svg,
            r#"<text x="{tx:.1}" y="{ty:.1}" class="tick" text-anchor="middle">1</text>"#,
            tx = frame.x(0),
            ty = TOP + plot_h + 16.0
        );
        while k <= n {
            let _ = writeln!(
                svg,
                r##"<line x1="{xx:.1}" y1="{b}" x2="{xx:.1}" y2="{b2}" stroke="#555"/><text x="{xx:.1}" y="{ty:.1}" class="tick" text-anchor="middle">{k}</text>"##,
                xx = frame.x(k - 1),
                b = TOP + plot_h,
                b2 = TOP + plot_h + 4.0,
                ty = TOP + plot_h + 16.0
            );
            k += x_step;
        }
        let _ = writeln!(
            svg,
            r#"<text x="{cx}" y="{by}" class="axis" text-anchor="middle">call</text><text x="14" y="{my}" class="axis" text-anchor="middle" transform="rotate(-90 14 {my})">{what}</text>"#,
            cx = LEFT + plot_w / 2.0,
            by = H - 4.0,
            my = TOP + plot_h / 2.0
        );
        frame
    }
}

/// The token chart of one conversation: tokens per call, full history (red line) and sent
/// (blue, filled), with axes, gridlines, the budget and a tooltip per call.
fn chart(replay: &Replayed, budget: Option<u64>) -> String {
    let calls = &replay.calls;
    let top_value = calls
        .iter()
        .map(|c| c.full_tokens.max(c.sent_tokens))
        .chain(budget.filter(|b| calls.iter().any(|c| c.full_tokens >= *b)))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let mut svg = String::new();
    let label = format!("tokens per call of {}", replay.id);
    let frame = Frame::draw(&mut svg, calls.len(), top_value, &label, "tokens per call");
    let (x, y) = (|i| frame.x(i), |v| frame.y(v));
    let (plot_h, y_max) = (Frame::PLOT_H, frame.y_max);
    if let Some(b) = budget.filter(|b| (*b as f64) <= y_max) {
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{r}" y2="{yy:.1}" stroke="#555" stroke-dasharray="5 4"/><text x="{tx}" y="{ty:.1}" class="tick" text-anchor="end">budget {label}</text>"##,
            yy = y(b as f64),
            r = W - RIGHT,
            tx = W - RIGHT - 4.0,
            ty = y(b as f64) - 5.0,
            label = compact(b as f64)
        );
    }
    if !calls.is_empty() {
        let points = |pick: &dyn Fn(usize) -> u64| -> String {
            (0..calls.len())
                .map(|i| format!("{:.1},{:.1}", x(i), y(pick(i) as f64)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let sent = points(&|i| calls[i].sent_tokens);
        let _ = writeln!(
            svg,
            r#"<polygon fill="{SENT_FILL}" points="{x0:.1},{b:.1} {sent} {x1:.1},{b:.1}"/>"#,
            x0 = x(0),
            x1 = x(calls.len() - 1),
            b = TOP + plot_h
        );
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{SENT}" stroke-width="2" points="{sent}"/>"#
        );
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{FULL}" stroke-width="2" stroke-dasharray="6 3" points="{}"/>"#,
            points(&|i| calls[i].full_tokens)
        );
    }
    // One hover band per call, with its values.
    let band = frame.band();
    for (i, c) in calls.iter().enumerate() {
        let _ = writeln!(
            svg,
            r#"<rect class="hover" x="{:.1}" y="{TOP}" width="{band:.2}" height="{plot_h}"><title>call {}: {} tokens of history, {} sent ({:.1}% saved); {} → {} messages; evidence kept {}</title></rect>"#,
            x(i) - band / 2.0,
            i + 1,
            c.full_tokens,
            c.sent_tokens,
            saved(c.full_tokens, c.sent_tokens),
            c.full_messages,
            c.sent_messages,
            percent(c.evidence.share())
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// The billed chart of one conversation: each call's view under Anthropic's rule
/// (breakpoints as curator places them) as a bar of its uncached tokens (blue), the tokens
/// written to the cache (orange) and those read from it (green); a tooltip per call with
/// both rules and what sending the whole history would have been.
fn billed_chart(replay: &Replayed) -> String {
    let calls = &replay.calls;
    let top_value =
        calls.iter().map(|c| c.billed.anthropic.input_tokens).max().unwrap_or(1).max(1) as f64;
    let mut svg = String::new();
    let label = format!("billed tokens per call of {}", replay.id);
    let frame = Frame::draw(&mut svg, calls.len(), top_value, &label, "tokens per call");
    let band = frame.band();
    let width = (band * 0.8).max(0.5);
    for (i, c) in calls.iter().enumerate() {
        let bill = &c.billed.anthropic;
        let mut base = 0.0;
        for (tokens, fill) in [
            (bill.uncached_tokens(), SENT),
            (bill.cache_write_tokens, WRITTEN),
            (bill.cache_read_tokens, CACHED),
        ] {
            if tokens == 0 {
                continue;
            }
            let top = base + tokens as f64;
            let _ = writeln!(
                svg,
                r#"<rect x="{:.2}" y="{:.1}" width="{width:.2}" height="{:.1}" fill="{fill}"/>"#,
                frame.x(i) - width / 2.0,
                frame.y(top),
                frame.y(base) - frame.y(top)
            );
            base = top;
        }
    }
    for (i, c) in calls.iter().enumerate() {
        let (a, o) = (&c.billed.anthropic, &c.billed.openai);
        let _ = writeln!(
            svg,
            r#"<rect class="hover" x="{:.1}" y="{TOP}" width="{band:.2}" height="{h}"><title>call {}: Anthropic's rule {} uncached, {} written, {} read from the cache; OpenAI's rule {} uncached, {} read; sending everything {} tokens ({} read, Anthropic)</title></rect>"#,
            frame.x(i) - band / 2.0,
            i + 1,
            a.uncached_tokens(),
            a.cache_write_tokens,
            a.cache_read_tokens,
            o.uncached_tokens(),
            o.cache_read_tokens,
            c.everything.anthropic.input_tokens,
            c.everything.anthropic.cache_read_tokens,
            h = Frame::PLOT_H,
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// The context map: one row per call, one column per message of the history.
fn context_map(replay: &Replayed) -> String {
    let Some(rows) = &replay.map else { return String::new() };
    let width = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let height = rows.len().max(1);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg class="map" viewBox="0 0 {width} {height}" preserveAspectRatio="none" shape-rendering="crispEdges" role="img" aria-label="context map of {id}"><rect width="{width}" height="{height}" fill="#fafafa"/>"##,
        id = escape(&replay.id)
    );
    for (call, row) in rows.iter().enumerate() {
        let count = |cell| row.iter().filter(|c| **c == cell).count();
        let _ = write!(
            svg,
            "<g><title>call {}: of {} messages, {} kept, {} shortened or rewritten, {} in a summary, {} dropped</title>",
            call + 1,
            row.len(),
            count(Cell::Kept),
            count(Cell::Shortened),
            count(Cell::Summarized),
            count(Cell::Dropped)
        );
        let mut start = 0;
        while start < row.len() {
            let cell = row[start];
            let end = row[start..].iter().position(|c| *c != cell).map_or(row.len(), |k| start + k);
            let _ = write!(
                svg,
                r#"<rect x="{start}" y="{call}" width="{}" height="1" fill="{}"/>"#,
                end - start,
                colour(cell)
            );
            start = end;
        }
        svg.push_str("</g>\n");
    }
    svg.push_str("</svg>\n");
    svg
}

fn legend() -> String {
    let mut out = String::from(r#"<p class="legend">"#);
    let _ = write!(
        out,
        r#"<span class="key"><i style="background:{FULL}"></i>full history</span><span class="key"><i style="background:{SENT}"></i>sent after curation</span><span class="sep"></span>"#
    );
    for cell in Cell::ALL {
        let _ = write!(
            out,
            r#"<span class="key"><i style="background:{}"></i>{}</span>"#,
            colour(cell),
            cell.label()
        );
    }
    out.push_str("</p>\n");
    out
}

const STYLE: &str = r#"
:root { --ink: #1d1d1f; --muted: #5f6368; --line: #dadce0; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); margin: 0; background: #fff; }
main { max-width: 1320px; margin: 0 auto; padding: 20px 28px 40px; }
h1 { font-size: 22px; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 17px; margin: 0 0 2px; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
code { font-size: 12px; overflow-wrap: anywhere; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 10px; margin: 14px 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.card b { display: block; font-size: 22px; font-variant-numeric: tabular-nums; }
.card span { color: var(--muted); font-size: 12px; }
.card.good b { color: #2e7d32; }
table { border-collapse: collapse; width: 100%; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #f5f5f7; position: sticky; top: 0; cursor: pointer; user-select: none; font-weight: 600; }
th:first-child, td:first-child, th.text, td.text { text-align: left; }
td:first-child { max-width: 300px; overflow: hidden; text-overflow: ellipsis; }
td.text { max-width: 200px; overflow: hidden; text-overflow: ellipsis; }
th[aria-sort="ascending"]::after { content: " ▲"; }
th[aria-sort="descending"]::after { content: " ▼"; }
tr.bad td { background: #fdecea; }
.overview { max-height: 480px; overflow: auto; border: 1px solid var(--line); border-radius: 8px; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 10px 0; font-size: 13px; }
.legend i { display: inline-block; width: 14px; height: 10px; margin-right: 5px; border-radius: 2px; vertical-align: baseline; }
.legend .sep { width: 18px; }
section.conversation { border-top: 1px solid var(--line); padding-top: 16px; margin-top: 18px; break-inside: avoid; }
.figures { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 18px; align-items: start; }
figure { margin: 0; }
figcaption { font-size: 12px; color: var(--muted); margin-bottom: 4px; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart .tick { font-size: 11px; fill: var(--muted); }
svg.chart .axis { font-size: 12px; fill: var(--ink); }
svg.chart rect.hover { fill: #000; fill-opacity: 0; }
svg.chart rect.hover:hover { fill-opacity: 0.06; }
svg.map { width: 100%; height: 232px; display: block; border: 1px solid var(--line); }
svg.map g:hover rect { opacity: 0.75; }
.axes { display: flex; justify-content: space-between; font-size: 11px; color: var(--muted); }
@media (max-width: 980px) { .figures { grid-template-columns: 1fr; } }
@media print {
  main { max-width: none; padding: 0; }
  .overview { max-height: none; overflow: visible; border: 0; }
  th { position: static; }
  th[aria-sort]::after { content: ""; }
  section.conversation { break-inside: avoid; page-break-inside: avoid; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"#;

const SCRIPT: &str = r#"
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.querySelectorAll("th");
  heads.forEach(function (th, column) {
    th.addEventListener("click", function () {
      var descending = th.getAttribute("aria-sort") !== "descending";
      heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].getAttribute("data-v"), y = b.cells[column].getAttribute("data-v");
        var nx = parseFloat(x), ny = parseFloat(y);
        var order = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
        return descending ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"#;

/// The whole page.
#[expect(clippy::too_many_lines, reason = "the page's template, in the order it is read")]
pub(crate) fn html(page: &Page<'_>, replays: &[Replayed]) -> String {
    let totals = Totals::of(replays.iter().flat_map(|r| &r.calls));
    let evidence = Summary::of(replays.iter().flat_map(|r| r.calls.iter().map(|c| c.evidence)));
    let violations: usize = replays.iter().map(|r| r.violations).sum();
    let budget = budget(page.pipeline);
    let rates = Rates::at(page.price);
    let costs = rates.costs(&totals.billed, &totals.everything);
    let pipeline = serde_json::to_string(page.pipeline).unwrap_or_default();
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{STYLE}</style></head><body><main>
<h1>{title}</h1>
<p class="muted">Pipeline: <code>{pipeline}</code></p>
<div class="cards" id="totals">
<div class="card"><b>{conversations}</b><span>conversations, {calls} provider calls</span></div>
<div class="card"><b>{full}</b><span>tokens of full history over all calls</span></div>
<div class="card"><b>{sent}</b><span>tokens sent after curation</span></div>
<div class="card"><b>{saved:.1}%</b><span>tokens saved</span></div>
<div class="card good"><b>{ratio_openai:.2}x</b><span>billed input of sending everything, prompt cache counted ({cost_full} → {cost_sent} at ${price}/M input tokens, OpenAI's cache rule; {ratio_anthropic:.2}x under Anthropic's)</span></div>
<div class="card good"><b>{evidence_mean}</b><span>evidence kept on average; {evidence_decile} in the worst decile of calls</span></div>
<div class="card"><b>{violations}</b><span>views a provider would refuse</span></div>
</div>
"#,
        title = escape(page.title),
        pipeline = escape(&pipeline),
        conversations = replays.len(),
        calls = totals.calls,
        full = grouped(totals.full_tokens),
        sent = grouped(totals.sent_tokens),
        saved = totals.saved(),
        ratio_openai = costs.openai.ratio,
        ratio_anthropic = costs.anthropic.ratio,
        cost_full = money(costs.openai.everything),
        cost_sent = money(costs.openai.curated),
        price = trim(page.price),
        evidence_mean = percent(evidence.mean),
        evidence_decile = percent(evidence.worst_decile),
    );
    out.push_str(r#"<div class="overview"><table class="sortable" id="overview"><thead><tr><th class="text">conversation</th><th class="text">file</th><th>calls</th><th>tokens full</th><th>tokens sent</th><th>saved</th><th>evidence kept</th><th>worst call</th><th>largest view</th><th>violations</th><th>billed</th></tr></thead><tbody>"#);
    out.push('\n');
    for (n, replay) in replays.iter().enumerate() {
        let t = Totals::of(&replay.calls);
        let file = replay.file.rsplit('/').next().unwrap_or(&replay.file);
        let _ = writeln!(
            out,
            r##"<tr{bad}><td data-v="{id}"><a href="#c{n}">{id}</a></td><td class="text" data-v="{file}">{file}</td><td data-v="{calls}">{calls}</td><td data-v="{full}">{full_s}</td><td data-v="{sent}">{sent_s}</td><td data-v="{saved:.3}">{saved:.1}%</td><td data-v="{ev}">{ev_s}</td><td data-v="{worst}">{worst_s}</td><td data-v="{largest}">{largest_s}</td><td data-v="{violations}">{violations}</td><td data-v="{billed}">{cost}</td></tr>"##,
            bad = if replay.violations > 0 { r#" class="bad""# } else { "" },
            id = escape(&replay.id),
            file = escape(file),
            calls = t.calls,
            full = t.full_tokens,
            full_s = grouped(t.full_tokens),
            sent = t.sent_tokens,
            sent_s = grouped(t.sent_tokens),
            saved = t.saved(),
            ev = replay.evidence.mean.unwrap_or(2.0),
            ev_s = percent(replay.evidence.mean),
            worst = replay.evidence.worst.unwrap_or(2.0),
            worst_s = percent(replay.evidence.worst),
            largest = t.largest_view,
            largest_s = grouped(t.largest_view),
            violations = replay.violations,
            billed = rates.input_price(&t.billed.openai),
            cost = money(rates.input_price(&t.billed.openai)),
        );
    }
    out.push_str("</tbody></table></div>\n");
    let _ = writeln!(
        out,
        r#"<p class="muted">Click a column to sort. Tokens are summed over the calls of a conversation; the largest view is the most tokens one call sent; evidence kept is the share of the distinctive terms the model's next reply used (that occur earlier in the conversation) that the view still held, averaged over the calls that needed any (see docs/cli.md).</p>"#
    );
    out.push_str(&legend());
    for (n, replay) in replays.iter().enumerate() {
        let t = Totals::of(&replay.calls);
        let width =
            replay.map.as_ref().and_then(|rows| rows.iter().map(Vec::len).max()).unwrap_or(0);
        let _ = write!(
            out,
            r#"<section class="conversation" id="c{n}"><h2>{id}</h2><p class="muted">{file} · {calls} calls · {full} → {sent} tokens, <b>{saved:.1}% saved</b> · evidence kept {ev} (worst call {worst}){violation}</p>
<div class="figures"><figure><figcaption>Tokens per call: full history (dashed red) and sent (blue); hover for values.</figcaption>
{chart}</figure><figure><figcaption>Context map: a row per call (first at the top), a column per message ({width} messages); hover a row for its counts.</figcaption>
{map}<div class="axes"><span>message 1</span><span>message {width} →</span></div></figure><figure><figcaption>Billed input per call, Anthropic's rule: tokens of the view sent uncached (blue), written to the prompt cache (orange), read from it (green; billed at a tenth); hover for both rules and for sending everything.</figcaption>
{billed}</figure></div></section>
"#,
            id = escape(&replay.id),
            file = escape(&replay.file),
            calls = t.calls,
            full = grouped(t.full_tokens),
            sent = grouped(t.sent_tokens),
            saved = t.saved(),
            ev = percent(replay.evidence.mean),
            worst = percent(replay.evidence.worst),
            violation = replay.violation.as_ref().map_or_else(String::new, |(call, problem)| {
                format!(" · <b>violation</b> at call {call}: {}", escape(problem))
            }),
            chart = chart(replay, budget),
            map = context_map(replay),
            billed = billed_chart(replay),
        );
    }
    let _ = writeln!(out, "</main><script>{SCRIPT}</script></body></html>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_labels_are_round() {
        assert_eq!(nice_step(32_000.0, 5.0).to_string(), "10000");
        assert_eq!(nice_step(9.0, 4.0).to_string(), "5");
        assert_eq!(int_step(9, 8), 2);
        assert_eq!(int_step(112, 8), 20);
        assert_eq!(int_step(3, 8), 1);
        assert_eq!(compact(32_000.0), "32k");
        assert_eq!(compact(1_250_000.0), "1.2M");
        assert_eq!(compact(700.0), "700");
        assert_eq!(grouped(12_255_319), "12\u{2009}255\u{2009}319");
    }

    #[test]
    fn the_billed_chart_stacks_uncached_written_and_read_tokens_per_call() {
        use crate::billed::Bills;
        use crate::evidence::Score;
        use crate::replayed::Call;
        use curator::strategies::bill::CallBill;

        let bill = |input, read, write| CallBill {
            input_tokens: input,
            cache_read_tokens: read,
            cache_write_tokens: write,
            ..CallBill::default()
        };
        let call = |anthropic: CallBill| Call {
            message: 0,
            full_messages: 2,
            sent_messages: 2,
            full_tokens: anthropic.input_tokens,
            sent_tokens: anthropic.input_tokens,
            curation_us: 0.0,
            evidence: Score::NotNeeded,
            verbatim: Score::NotNeeded,
            billed: Bills { openai: anthropic, anthropic },
            everything: Bills::default(),
        };
        // The first call writes its 2,000 tokens; the second reads them and sends 200 more.
        let calls = vec![call(bill(2_000, 0, 2_000)), call(bill(2_200, 2_000, 0))];
        let replay = Replayed {
            file: "f".into(),
            id: "c".into(),
            calls,
            violations: 0,
            violation: None,
            evidence: Summary::of([]),
            verbatim: Summary::of([]),
            tools_tokens: 0,
            refused: Vec::new(),
            map: None,
        };
        let svg = billed_chart(&replay);
        // Values up to 2,500 (the round step above 2,200) over the plot's 206 pixels.
        let px = |tokens: f64| format!("height=\"{:.1}\" fill=", tokens / 2_500.0 * Frame::PLOT_H);
        assert!(svg.contains(&format!("{}\"{WRITTEN}\"", px(2_000.0))), "{svg}");
        assert!(svg.contains(&format!("{}\"{CACHED}\"", px(2_000.0))), "{svg}");
        assert!(svg.contains(&format!("{}\"{SENT}\"", px(200.0))), "{svg}");
        assert_eq!(svg.matches("<rect x=").count(), 3, "no bar for what is zero");
        assert!(
            svg.contains("call 2: Anthropic's rule 200 uncached, 0 written, 2000 read"),
            "{svg}"
        );
    }
}
