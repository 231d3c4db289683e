//! The HTML report of a replay: one self-contained page, an inline SVG chart per
//! conversation (tokens per call, full history vs sent), and the table. No external assets.

use std::fmt::Write as _;

use crate::replayed::{Call, Replayed, Totals, saved};

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A line chart of full vs sent tokens per call.
fn chart(replay: &Replayed) -> String {
    const W: f64 = 640.0;
    const H: f64 = 180.0;
    const PAD: f64 = 40.0;
    let calls = &replay.calls;
    let max =
        calls.iter().map(|c| c.full_tokens.max(c.sent_tokens)).max().unwrap_or(1).max(1) as f64;
    let x = |i: usize| {
        PAD + if calls.len() > 1 {
            i as f64 * (W - 2.0 * PAD) / (calls.len() - 1) as f64
        } else {
            (W - 2.0 * PAD) / 2.0
        }
    };
    let y = |v: u64| H - PAD + -(v as f64 / max) * (H - 2.0 * PAD);
    let line = |pick: &dyn Fn(&Call) -> u64| {
        calls
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:.1},{:.1}", x(i), y(pick(c))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="tokens per call for {id}">
<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>
<line x1="{PAD}" y1="{b}" x2="{r}" y2="{b}" stroke="#888"/><line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{b}" stroke="#888"/>
<text x="{PAD}" y="{t}" font-size="11" fill="#444">{max:.0} tokens</text>
<text x="{r}" y="{lb}" font-size="11" fill="#444" text-anchor="end">call {n}</text>
<polyline fill="none" stroke="#d9534f" stroke-width="2" points="{full}"/>
<polyline fill="none" stroke="#2e7d32" stroke-width="2" points="{sent}"/>
</svg>"##,
        id = escape(&replay.id),
        b = H - PAD,
        r = W - PAD,
        t = PAD - 8.0,
        lb = H - PAD + 16.0,
        n = calls.len(),
        full = line(&|c| c.full_tokens),
        sent = line(&|c| c.sent_tokens),
    );
    svg
}

/// The whole page.
pub(crate) fn html(title: &str, pipeline: &str, replays: &[Replayed]) -> String {
    let totals = Totals::of(replays.iter().flat_map(|r| &r.calls));
    let mut page = String::new();
    let _ = write!(
        page,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #222; }}
h1 {{ overflow-wrap: anywhere; }}
table {{ border-collapse: collapse; margin: 1rem 0; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
.legend span {{ display: inline-block; width: 1em; height: 0.4em; margin: 0 0.3em 0.1em 1em; }}
section {{ margin-bottom: 1.5rem; }}
</style></head><body>
<h1>{title}</h1>
<p>Pipeline: <code>{pipeline}</code></p>
<p>{calls} provider calls over {conversations} conversations: {full} tokens of history, {sent} sent, <strong>{saved:.1}% saved</strong>; curation took {mean:.1} µs per call on average.</p>
<p class="legend"><span style="background:#d9534f"></span>full history <span style="background:#2e7d32"></span>sent after curation</p>
"#,
        title = escape(title),
        pipeline = escape(pipeline),
        calls = totals.calls,
        conversations = replays.len(),
        full = totals.full_tokens,
        sent = totals.sent_tokens,
        saved = totals.saved(),
        mean = if totals.calls == 0 { 0.0 } else { totals.curation_us / totals.calls as f64 },
    );
    for replay in replays {
        let t = Totals::of(&replay.calls);
        let _ = write!(
            page,
            "<section><h2>{}</h2><p>{} calls, {:.1}% of tokens saved</p>\n{}\n",
            escape(&replay.id),
            t.calls,
            t.saved(),
            chart(replay)
        );
        page.push_str("<table><tr><th>call</th><th>messages full → sent</th><th>tokens full → sent</th><th>saved</th><th>curation µs</th></tr>\n");
        for (n, c) in replay.calls.iter().enumerate() {
            let _ = writeln!(
                page,
                "<tr><td>{}</td><td>{} → {}</td><td>{} → {}</td><td>{:.1}%</td><td>{:.1}</td></tr>",
                n + 1,
                c.full_messages,
                c.sent_messages,
                c.full_tokens,
                c.sent_tokens,
                saved(c.full_tokens, c.sent_tokens),
                c.curation_us
            );
        }
        page.push_str("</table></section>\n");
    }
    page.push_str("</body></html>\n");
    page
}
