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

#[test]
fn a_run_of_varied_punctuation_is_stitched() {
    let text: String = (0..70_000u32)
        .map(|i| char::from(b"!#$%&()*+,-./:;<=>?@[]^_{|}~"[(i * 7 % 29 % 28) as usize]))
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
            prop::sample::select(vec!["=", " ", "a", "B", "ab", "-=", "é", "\n", "1", "\t"]),
            1usize..60_000
        )
            .prop_map(|(unit, n)| unit.repeat(n)),
        "[a-zA-Z0-9 .,'!=\n\u{e9}\u{4e2d}-]{0,200}",
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
