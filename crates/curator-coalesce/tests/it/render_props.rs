//! Properties of the coalesced USER message that hold for every run and every turn list.

use curator_coalesce::{Compression, SingleUserCoalesced, Turn, Uncompressed};
use proptest::prelude::*;

use crate::arb::{arb_run, arb_turns};

/// The lines of the section that starts with `header`, up to the next blank line.
fn section<'a>(text: &'a str, header: &str) -> Option<Vec<&'a str>> {
    let start = text.find(&format!("\n{header}\n"))? + header.len() + 2;
    Some(text[start..].split("\n\n").next().unwrap_or_default().lines().collect())
}

proptest! {
    #[test]
    fn the_coalesced_message_keeps_its_shape(
        run in arb_run(),
        turns in arb_turns(),
        println_limit in 0usize..5,
        tool_call_limit in 0usize..5,
    ) {
        let compression = SingleUserCoalesced::default()
            .with_println_limit(println_limit)
            .with_tool_call_limit(tool_call_limit);
        let text = compression.user_message(&run, &turns);
        prop_assert_eq!(&text, &compression.user_message(&run, &turns), "deterministic");
        let mission = run.mission.trim_end_matches(['\n', '\r']);
        prop_assert!(text.starts_with(&format!("{mission}\n")), "the mission comes first, without trailing line breaks");
        let turns_left = u64::from(run.max_turns).saturating_sub(turns.len() as u64);
        prop_assert!(text.ends_with(&format!("\n\nTurns left: {turns_left}")), "turns left comes last");

        let total = turns.iter().map(|turn| turn.tool_calls().len()).sum::<usize>();
        match section(&text, ";; Tool calls made:") {
            Some(calls) => {
                // The calls past the limit are counted in a marker line, never dropped unsaid.
                let hidden = total - total.min(tool_call_limit);
                let listed = if hidden > 0 {
                    let noun = if hidden == 1 { "tool call" } else { "tool calls" };
                    prop_assert_eq!(
                        calls[0].to_owned(),
                        format!(";   ... {hidden} earlier {noun} not shown (tool_call_limit {tool_call_limit})")
                    );
                    &calls[1..]
                } else {
                    &calls[..]
                };
                prop_assert_eq!(listed.len(), total.min(tool_call_limit));
                prop_assert!(calls.iter().all(|line| line.starts_with(";   ")));
            }
            None => prop_assert!(total == 0 || tool_call_limit == 0, "{} calls made but none listed", total),
        }
        let prints: Vec<&String> = turns.iter().filter(|turn| turn.success()).flat_map(Turn::prints).collect();
        let shown: Vec<&String> = prints[prints.len().saturating_sub(println_limit)..].to_vec();
        let output = shown.iter().map(|print| print.as_str()).collect::<Vec<_>>().join("\n");
        if shown.is_empty() {
            prop_assert!(!text.contains("\n;; Output:\n"), "no output header without output");
        } else {
            let hidden = prints.len() - shown.len();
            let marker = match hidden {
                0 => String::new(),
                1 => format!(";; ... 1 earlier println call not shown (println_limit {println_limit})\n"),
                n => format!(";; ... {n} earlier println calls not shown (println_limit {println_limit})\n"),
            };
            prop_assert!(
                text.contains(&format!("\n;; Output:\n{marker}{output}\n\n")),
                "output is the last {} println calls, the others counted", println_limit
            );
        }

        let failing = turns.last().is_some_and(|turn| !turn.success());
        prop_assert_eq!(text.contains("\nYour previous attempt:\n"), failing, "errors shown only while failing");
        prop_assert!(text.matches("\nYour previous attempt:\n").count() <= 1);
    }

    #[test]
    fn uncompressed_has_one_pair_per_turn(run in arb_run(), turns in arb_turns()) {
        let messages = Uncompressed.to_messages(&run, &turns);
        prop_assert_eq!(messages.len(), 2 + 2 * turns.len());
        for (turn, pair) in turns.iter().zip(messages[2..].chunks(2)) {
            prop_assert_eq!(pair[0].text(), turn.program());
        }
    }
}
