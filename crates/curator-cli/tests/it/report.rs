//! The HTML report, rendered in a real browser (Debian's `chromium`, which `.ci/run`
//! installs): the screenshot must show the overview and a context map, not a blank page.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::{curator, text, write};

/// Two conversations of varied tool outputs, long enough that a small budget drops and a
/// truncator shortens.
fn conversations() -> String {
    (0..2).fold(String::new(), |mut out, c| {
        let mut messages = vec![
            json!({"role": "system", "content": "You are an agent."}),
            json!({"role": "user", "content": "Fix the bug in src/parser.rs."}),
        ];
        for i in 0..30 {
            let id = format!("call_{i}");
            let output: String = (0..60 + 40 * (i % 3)).map(|k| format!("src/mod_{i}.rs:{k}: fn handler_{i}_{k}() -> u32 {{ {} }}\n", k * 7919 % 1000)).collect::<Vec<_>>().concat();
            messages.push(json!({"role": "assistant", "content": format!("Looking at handler_{}_3 next.", i.max(1) - 1), "tool_calls": [{"id": id, "type": "function", "function": {"name": "read_file", "arguments": json!({"path": format!("src/mod_{i}.rs")}).to_string()}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": output}));
        }
        messages.push(json!({"role": "assistant", "content": "Fixed handler_29_3 in src/mod_29.rs."}));
        out.push_str(&json!({"id": format!("conversation-{c}"), "messages": Value::Array(messages)}).to_string());
        out.push('\n');
        out
    })
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| Command::new("which").arg(b).output().is_ok_and(|o| o.status.success()))
}

/// Renders `page` at `width` x `height` and returns the RGB(A) pixels and the channel count.
fn screenshot(
    browser: &str,
    page: &Path,
    width: u32,
    height: u32,
    dir: &Path,
) -> (Vec<u8>, usize, usize) {
    let shot = dir.join("shot.png");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            &format!("--user-data-dir={}", dir.join("profile").display()),
            &format!("--window-size={width},{height}"),
            &format!("--screenshot={}", shot.display()),
            &format!("file://{}", page.display()),
        ])
        .output()
        .unwrap();
    assert!(shot.exists(), "no screenshot: {}", text(&out.stderr));
    if let Some(keep) = std::env::var_os("CURATOR_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    pixels.truncate(info.buffer_size());
    (pixels, info.color_type.samples(), info.width as usize)
}

#[test]
fn the_report_shows_the_overview_and_a_context_map_in_a_browser() {
    let Some(browser) = chromium() else {
        // CI installs Chromium (.ci/run): there, its absence is a failure, not a skip.
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but no Chromium installed");
        eprintln!("skipping: no Chromium installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "convs.jsonl", &conversations());
    let report = dir.path().join("report.html");
    let out = curator(&[
        "replay",
        file.to_str().unwrap(),
        "--truncate-tools",
        "1500",
        "--max-tokens",
        "6000",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (pixels, channels, width) = screenshot(browser, &report, 1366, 1000, dir.path());
    let height = pixels.len() / channels / width;
    let near = |p: &[u8], (r, g, b): (u8, u8, u8), tolerance: u8| {
        p[0].abs_diff(r) <= tolerance
            && p[1].abs_diff(g) <= tolerance
            && p[2].abs_diff(b) <= tolerance
    };
    // Pixels of a colour in a band of rows (top..bottom) and columns (left..right).
    let count =
        |colour, tolerance, (top, bottom): (usize, usize), (left, right): (usize, usize)| {
            (top..bottom.min(height))
                .flat_map(|y| (left..right.min(width)).map(move |x| (y * width + x) * channels))
                .filter(|&i| near(&pixels[i..i + 3], colour, tolerance))
                .count()
        };
    let page = (0, height);
    let left_half = (0, width / 2);
    let right_half = (width / 2, width);
    // Not a blank page: most pixels white, but not all.
    let white = count((255, 255, 255), 2, page, (0, width));
    assert!(white < width * height * 97 / 100, "a blank page: {white} white pixels");
    // The overview first: the green "saved" and "evidence kept" figures in the top 300 rows.
    let overview_green = count((0x2e, 0x7d, 0x32), 30, (0, 300), (0, width));
    assert!(overview_green > 150, "no overview figures at the top: {overview_green}");
    // The chart on the left: the blue sent line and its fill, the dashed red full history.
    let blue = count((0x15, 0x65, 0xc0), 40, page, left_half);
    let area = count((0xbb, 0xde, 0xfb), 12, page, left_half);
    let red = count((0xc6, 0x28, 0x28), 40, page, left_half);
    assert!(blue > 300 && area > 5_000 && red > 150, "chart: {blue} blue, {area} fill, {red} red");
    // The context map on the right: solid blocks of kept (green), dropped (grey) and
    // shortened (amber) cells.
    let kept = count((0x2e, 0x7d, 0x32), 6, (300, height), right_half);
    let dropped = count((0xe0, 0xe0, 0xe0), 3, (300, height), right_half);
    let shortened = count((0xf9, 0xa8, 0x25), 6, (300, height), right_half);
    assert!(
        kept > 10_000 && dropped > 10_000 && shortened > 1_000,
        "context map: {kept} kept, {dropped} dropped, {shortened} shortened"
    );
}
