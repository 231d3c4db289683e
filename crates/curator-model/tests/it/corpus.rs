//! Every corpus conversation round-trips through both formats.

use curator_model::formats::{anthropic, openai};
use curator_model::validate;
use curator_testkit::{corpus, projection};

#[test]
fn corpus_round_trips_through_openai_and_anthropic() {
    let Some(conversations) = corpus::load() else { return };
    let mut messages_checked = 0;
    for c in &conversations {
        let here = format!("{} {}", c.file, c.id);
        let messages = openai::to_messages(&c.messages).unwrap_or_else(|e| panic!("{here}: {e}"));
        messages_checked += messages.len();

        // OpenAI -> model -> OpenAI gives equal JSON.
        let back = openai::from_messages(&messages).unwrap_or_else(|e| panic!("{here}: {e}"));
        assert_eq!(back, c.messages, "{here}: OpenAI round trip changed the JSON");

        // OpenAI -> model -> Anthropic -> model gives the same neutral messages.
        let request = anthropic::from_messages(&messages).unwrap_or_else(|e| panic!("{here}: {e}"));
        let again =
            anthropic::to_messages(&request.to_value()).unwrap_or_else(|e| panic!("{here}: {e}"));
        assert_eq!(
            projection::project_merged(&again),
            projection::project_merged(&messages),
            "{here}: Anthropic round trip changed the messages"
        );

        // Real transcripts are accepted by both providers' rules.
        validate::openai(&messages).unwrap_or_else(|v| panic!("{here}: {v}"));
        validate::anthropic(&messages).unwrap_or_else(|v| panic!("{here}: {v}"));
    }
    eprintln!("checked {} corpus conversations ({messages_checked} messages)", conversations.len());
    assert!(messages_checked > 0);
}
