//! Configuration: unknown keys, impossible combinations, defaults and precedence, both
//! formats, template errors at load.

use curator_loop::{
    Defaults, Error, FnStep, HistoryStrategy, Injection, LoopBuilder, LoopConfig, StepOutcome,
};

#[track_caller]
fn invalid(result: Result<impl std::fmt::Debug, Error>, key: &str) {
    match result {
        Err(Error::InvalidConfig { key: k, .. }) => assert_eq!(k, key),
        other => panic!("expected an invalid `{key}`, got {other:?}"),
    }
}

#[track_caller]
fn syntax_naming(result: Result<impl std::fmt::Debug, Error>, word: &str) {
    match result {
        Err(e @ Error::ConfigSyntax { .. }) => {
            // The message itself names it, not only its source.
            assert!(e.to_string().contains(word), "{e}");
            assert!(std::error::Error::source(&e).is_some());
        }
        other => panic!("expected a syntax error naming `{word}`, got {other:?}"),
    }
}

#[test]
fn unknown_keys_are_refused_in_both_formats_naming_the_key() {
    syntax_naming(LoopConfig::from_toml("conversaton = true"), "conversaton");
    syntax_naming(
        LoopConfig::from_json(r#"{"history_management": {"max_tokenz": 5}}"#),
        "max_tokenz",
    );
    syntax_naming(LoopConfig::from_toml("[steps.a]\nuse_histroy = true"), "use_histroy");
    syntax_naming(LoopConfig::from_toml("ai_turn_source = \"first\""), "first");
    syntax_naming(
        Defaults::from_toml("[conversation.history_management]\nstratgy = \"x\""),
        "stratgy",
    );
}

#[test]
fn impossible_combinations_are_refused_at_load_naming_the_key() {
    invalid(LoopConfig::from_toml("ai_turn_source = \"named_steps\""), "named_steps");
    invalid(LoopConfig::from_toml("user_turn_sources = [\"named_steps\"]"), "user_named_steps");
    invalid(
        LoopConfig::from_toml("[history_management]\nstrategy = \"summarize\""),
        "history_management.summarizer",
    );
    invalid(
        LoopConfig::from_json(r#"{"history_management": {"summarize_ratio": 1.5}}"#),
        "history_management.summarize_ratio",
    );
    invalid(
        LoopConfig::from_toml("[history_management]\nmax_tokens = 10"),
        "history_management.max_tokens",
    );
    invalid(
        Defaults::from_toml("[conversation.history_management]\nstrategy = \"summarize\""),
        "conversation.history_management.summarizer",
    );
}

#[test]
fn a_bad_template_is_reported_at_load() {
    let err = LoopConfig::from_toml("history_template = \"{% for t in history %}{{ t.role }}\"")
        .unwrap_err();
    assert!(matches!(err, Error::Template { .. }), "{err:?}");
    let err = LoopConfig::from_toml("history_template = \"{{ t.nothing }}\"").unwrap_err();
    assert!(matches!(err, Error::Template { .. }), "{err:?}");
}

#[test]
fn the_body_is_checked_against_the_configuration_when_built() {
    let step = || FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::text("x")));
    let config =
        LoopConfig::from_toml("ai_turn_source = \"named_steps\"\nnamed_steps = [\"nope\"]")
            .unwrap();
    invalid(LoopBuilder::new("l", config).step("a", step()).build(), "named_steps");
    let config = LoopConfig::from_toml("[steps.nope]\nuse_history = false").unwrap();
    invalid(LoopBuilder::new("l", config).step("a", step()).build(), "steps");
    invalid(LoopBuilder::new("l", LoopConfig::default()).build(), "body");
    invalid(
        LoopBuilder::new("l", LoopConfig::default()).step("a", step()).step("a", step()).build(),
        "body",
    );
    let config = LoopConfig::from_toml(
        "[history_management]\nstrategy = \"summarize\"\nsummarizer = \"gpt\"",
    )
    .unwrap();
    invalid(
        LoopBuilder::new("l", config).step("a", step()).build(),
        "history_management.summarizer",
    );
}

#[test]
fn loop_settings_override_defaults_and_explicit_falsy_values_are_kept() {
    let defaults = Defaults::from_toml(
        "[conversation.history_management]\nstrategy = \"truncate_turns\"\nmax_turns = 30\nmax_tokens = 9000\nsummarize_ratio = 0.4",
    )
    .unwrap();
    let config =
        LoopConfig::from_toml("[history_management]\nmax_turns = 0\nsummarize_ratio = 0.0")
            .unwrap();
    let effective = config.effective_history(&defaults).unwrap();
    assert_eq!(effective.strategy, Some(HistoryStrategy::TruncateTurns));
    assert_eq!(effective.max_turns, Some(0));
    assert_eq!(effective.summarize_ratio, Some(0.0));
    assert_eq!(effective.max_tokens, Some(9000));
    // A summarize strategy at the loop level may take its summarizer from the defaults, and
    // the combination is checked once laid together.
    let defaults =
        Defaults::from_toml("[conversation.history_management]\nsummarizer = \"extractive\"")
            .unwrap();
    let config = LoopConfig::from_toml("[history_management]\nstrategy = \"summarize\"");
    invalid(config, "history_management.summarizer"); // alone, it cannot work
    let config = LoopConfig::from_json(
        r#"{"history_management": {"strategy": "summarize", "summarizer": "extractive"}}"#,
    )
    .unwrap();
    assert!(config.effective_history(&defaults).is_ok());
}

#[test]
fn toml_and_json_read_the_same_configuration() {
    let toml = LoopConfig::from_toml(
        r#"
conversation = true
ai_turn_source = "named_steps"
named_steps = ["clarify", "finalize"]
user_turn_sources = ["hitl"]
max_iterations = 12
[history_management]
strategy = "summarize"
summarizer = "extractive"
summarize_ratio = 0.4
max_turns = 10
[steps.extract]
use_history = false
[redact]
sent = true
"#,
    )
    .unwrap();
    let json = LoopConfig::from_json(&serde_json::to_string(&toml).unwrap()).unwrap();
    assert_eq!(json, toml);
}

#[test]
fn the_toml_examples_of_the_guide_load() {
    let guide = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/conversation-loop.md"),
    )
    .unwrap();
    let blocks: Vec<&str> =
        guide.split("```toml\n").skip(1).map(|rest| rest.split("\n```").next().unwrap()).collect();
    assert_eq!(blocks.len(), 2);
    let defaults = Defaults::from_toml(blocks[0]).unwrap();
    assert_eq!(defaults.history_management.max_tokens, Some(2000));
    let config = LoopConfig::from_toml(blocks[1]).unwrap();
    assert_eq!(config.effective_history(&defaults).unwrap().max_tokens, Some(1200));
    assert!(config.redact.sent);
}

#[test]
fn the_specifications_own_names_and_template_form_are_accepted() {
    // The specification's example, as JSON: `summarizer_agent`, `init.history.start_with`
    // and a Handlebars `{{#each}}` template.
    let config = LoopConfig::from_json(
        r#"{
            "conversation": true,
            "history_management": {"strategy": "summarize", "max_tokens": 4096, "summarizer_agent": "extractive", "summarize_ratio": 0.5},
            "init": {"history": {"start_with": {"from_initial_input": true, "prefix": "User: "}}},
            "history_template": "{{#each history}}\n{{ this.role }}: {{ this.content }}\n{{/each}}"
        }"#,
    )
    .unwrap();
    assert_eq!(config.history_management.summarizer.as_deref(), Some("extractive"));
    assert_eq!(config.init.prefix.as_deref(), Some("User: "));
    assert!(config.init.from_initial_input);
    let template =
        curator_loop::HistoryTemplate::new(config.history_template.as_deref().unwrap()).unwrap();
    let text = template
        .render(&[
            curator_loop::ConversationTurn::user("hi"),
            curator_loop::ConversationTurn::assistant("hello"),
        ])
        .unwrap();
    assert_eq!(text, "\nuser: hi\n\nassistant: hello\n");
    // Bare names inside the block, the index and conditions translate too.
    let template = curator_loop::HistoryTemplate::new(
        "{{#each history}}{{@index}} {{#if this.content}}{{role}}={{content}}{{else}}-{{/if}};{{/each}}",
    )
    .unwrap();
    assert_eq!(template.render(&[curator_loop::ConversationTurn::user("a")]).unwrap(), "0 user=a;");
    // Block parameters name the turn.
    let template = curator_loop::HistoryTemplate::new(
        "{{#each history as |turn|}}{{@index}}:{{ turn.role }}={{ turn.content }};{{/each}}",
    )
    .unwrap();
    let turns =
        [curator_loop::ConversationTurn::user("a"), curator_loop::ConversationTurn::assistant("b")];
    assert_eq!(template.render(&turns).unwrap(), "0:user=a;1:assistant=b;");
    // Both spellings of one key at once is an error naming them.
    let err =
        LoopConfig::from_toml("[init]\nprefix = \"a\"\n[init.history.start_with]\nprefix = \"b\"")
            .unwrap_err();
    assert!(err.to_string().contains("init.history.start_with.prefix"), "{err}");
    let err = LoopConfig::from_toml("[init.history.start_with]\nprefx = \"a\"").unwrap_err();
    assert!(err.to_string().contains("prefx"), "{err}");
}

#[test]
fn the_budget_defaults_to_half_the_models_context_window() {
    let config = LoopConfig::from_toml(
        "conversation = true\n[history_management]\nstrategy = \"truncate_tokens\"\nmodel = \"gpt-4o\"",
    )
    .unwrap();
    let effective = config.effective_history(&Defaults::default()).unwrap();
    assert_eq!(effective.max_tokens, Some(64_000));
    // A budget given wins over the window.
    let config = LoopConfig::from_toml(
        "conversation = true\n[history_management]\nmodel = \"gpt-4o\"\nmax_tokens = 2000",
    )
    .unwrap();
    assert_eq!(config.effective_history(&Defaults::default()).unwrap().max_tokens, Some(2_000));
    // The application's defaults may name the model.
    let defaults =
        Defaults::from_toml("[conversation.history_management]\nmodel = \"claude-sonnet-4-5\"")
            .unwrap();
    let window = curator_strategies::bill::Prices::context_window("claude-sonnet-4-5").unwrap();
    let config = LoopConfig::from_toml("conversation = true").unwrap();
    assert_eq!(config.effective_history(&defaults).unwrap().max_tokens, Some(window / 2));
    // A model the price data does not know is refused, naming the key, at build.
    let config = LoopConfig::from_toml(
        "conversation = true\n[history_management]\nmodel = \"no-such-model\"",
    )
    .unwrap();
    let err = LoopBuilder::new("l", config)
        .step("agent", FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::text("ok"))))
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidConfig { key, .. } if key == "history_management.model"),
        "{err}"
    );
    assert!(err.to_string().contains("no-such-model"), "{err}");
}
