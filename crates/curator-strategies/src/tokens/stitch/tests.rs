//! The stitched encoding against the encoder: runs of every kind, texts without runs, and random texts.

use proptest::prelude::*;

use super::*;

fn core(name: &str) -> &'static CoreBpe {
    match tiktoken::get_encoding(name) {
        Some(core) => core,
        None => panic!("encoding {name} is compiled in"),
    }
}

/// Stitches `text`, checks that it was stitched (not encoded whole) and that the tokens are
/// the encoder's.
fn assert_stitched(name: &str, text: &str) {
    let core = core(name);
    let mut tokens = Vec::new();
    assert!(stitch(core, text, &mut |part| tokens.extend_from_slice(part)), "{name}: not stitched");
    assert_eq!(tokens, core.encode(text), "{name}: tokens differ from the encoder's");
    assert_eq!(count(core, text), tokens.len());
}

#[test]
fn runs_of_every_kind_are_stitched_into_the_encoders_tokens() {
    for name in ["o200k_base", "cl100k_base"] {
        for unit in ["=", " ", "a", "Z", "ab", "=-", "-", "#", ".", "xyz"] {
            let run = unit.repeat(70_000 / unit.len());
            assert_stitched(name, &run);
            assert_stitched(name, &format!("The log says:\n{run}\nand then it ends."));
            assert_stitched(name, &format!("word{run}Word é 12345 {run}\n\n{run}"));
        }
    }
}

/// A run of slashes after punctuation and a line end is the tail of o200k's piece before it
/// (`[\r\n/]*`), not a piece of its own: counted as the encoder counts it.
#[test]
fn slashes_after_a_line_end_are_counted_as_the_encoder_counts_them() {
    for name in ["o200k_base", "cl100k_base"] {
        let core = core(name);
        for text in [
            format!("=\n{}= ", "/".repeat(65_533)),
            format!("=\n{}=", "/".repeat(70_001)),
            format!("x = 1;\n{}*", "/".repeat(70_001)),
            format!("=\n{}'ll", "/".repeat(70_000)),
            format!("=\n{}{}", "/".repeat(40_000), "=".repeat(40_000)),
        ] {
            assert_eq!(count(core, &text), core.count(&text), "{name}: {}", text.len());
            assert_eq!(encode(core, &text), core.encode(&text), "{name}");
        }
    }
}

/// Runs broken by characters of the same piece (a control character in punctuation, a tab
/// among spaces) are still stitched.
#[test]
fn runs_broken_by_characters_of_the_same_piece_are_stitched() {
    for name in ["o200k_base", "cl100k_base"] {
        for unit in ["=\u{1}", " \t", "-\u{7f}"] {
            let block = format!(
                "{}{}",
                unit.chars().next().map(String::from).unwrap_or_default().repeat(16_383),
                &unit[1..]
            );
            assert_stitched(name, &block.repeat(5));
        }
    }
}

#[test]
fn a_run_of_varied_punctuation_is_stitched() {
    let text: String = (0..70_000u32)
        .map(|i| char::from(b"!#$%&()*+,-.:;<=>?@[]^_{|}~\\"[(i * 7 % 29 % 28) as usize]))
        .collect();
    assert_stitched("o200k_base", &text);
}

#[test]
fn texts_without_long_runs_are_left_to_the_encoder() {
    let core = core("o200k_base");
    let prose = "The quick brown fox jumps over the lazy dog. ".repeat(5_000);
    assert!(!stitch(core, &prose, &mut |_| {}));
    assert_eq!(count(core, &prose), core.count(&prose));
    assert_eq!(encode(core, &prose), core.encode(&prose));
}

fn chunk() -> impl Strategy<Value = String> {
    prop_oneof![
        (
            prop::sample::select(vec![
                "=", " ", "a", "B", "ab", "-=", "é", "\n", "1", "\t", "/", "=\n/", " \t", "\u{1}",
                "'s", "\r\n",
            ]),
            1usize..60_000
        )
            .prop_map(|(unit, n)| unit.repeat(n)),
        "[a-zA-Z0-9 .,'!=/\t\r\n\u{1}\u{e9}\u{4e2d}\u{301}-]{0,200}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever the text, the count and the tokens are the encoder's.
    #[test]
    fn stitched_tokens_are_the_encoders(chunks in prop::collection::vec(chunk(), 1..8), cl in any::<bool>()) {
        let core = core(if cl { "cl100k_base" } else { "o200k_base" });
        let text = chunks.concat();
        prop_assert_eq!(encode(core, &text), core.encode(&text));
        prop_assert_eq!(count(core, &text), core.count(&text));
    }
}
