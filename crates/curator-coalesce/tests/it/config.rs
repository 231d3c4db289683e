//! `compression: false | true | Strategy | {Strategy, options}` as configuration.

use curator_coalesce::{
    CompressionConfig, ConfiguredStrategy, Error, SingleUserCoalesced, StrategyName,
};

#[track_caller]
fn parse(json: &str) -> Result<CompressionConfig, String> {
    serde_json::from_str(json).map_err(|error| error.to_string())
}

#[test]
fn every_form_of_the_spec_parses_and_builds() {
    assert_eq!(parse("false"), Ok(CompressionConfig::Enabled(false)));
    assert_eq!(CompressionConfig::default(), CompressionConfig::Enabled(false));
    assert_eq!(
        parse("false").map(|config| config.build().name().into_owned()),
        Ok("uncompressed".to_owned())
    );
    assert_eq!(
        parse("true").map(|config| config.build().name().into_owned()),
        Ok("single_user_coalesced".to_owned())
    );
    assert_eq!(
        parse(r#""single_user_coalesced""#),
        Ok(CompressionConfig::Named(StrategyName::SingleUserCoalesced))
    );
    assert_eq!(
        parse(
            r#"{"strategy": "single_user_coalesced", "println_limit": 10, "tool_call_limit": 15}"#
        ),
        Ok(CompressionConfig::Configured(ConfiguredStrategy::SingleUserCoalesced(
            SingleUserCoalesced::default().with_println_limit(10).with_tool_call_limit(15)
        )))
    );
    assert_eq!(
        parse(r#"{"strategy": "single_user_coalesced", "println_limit": 10}"#),
        Ok(CompressionConfig::Configured(ConfiguredStrategy::SingleUserCoalesced(
            SingleUserCoalesced::default().with_println_limit(10)
        )))
    );
    assert_eq!(
        parse(r#"{"strategy": "uncompressed"}"#).map(|config| config.build().name().into_owned()),
        Ok("uncompressed".to_owned())
    );
}

#[test]
fn the_message_budget_is_an_option_checked_when_read() {
    assert_eq!(
        parse(r#"{"strategy": "single_user_coalesced", "max_chars": 20000}"#),
        Ok(CompressionConfig::Configured(ConfiguredStrategy::SingleUserCoalesced(
            SingleUserCoalesced::default().with_max_chars(20_000).unwrap()
        )))
    );
    let error = parse(r#"{"strategy": "single_user_coalesced", "max_chars": 10}"#).unwrap_err();
    assert!(
        error.contains("a message budget of 10 characters is below the minimum of 1000"),
        "{error}"
    );
    let error = SingleUserCoalesced::default().with_max_chars(999).unwrap_err();
    assert!(matches!(error, Error::BudgetTooSmall { max_chars: 999, minimum: 1000 }), "{error:?}");
    assert_eq!(SingleUserCoalesced::default().max_chars(), SingleUserCoalesced::DEFAULT_MAX_CHARS);
}

#[test]
fn configurations_round_trip() {
    for json in [
        "true",
        r#""uncompressed""#,
        r#"{"strategy":"single_user_coalesced","println_limit":3,"tool_call_limit":4}"#,
        r#"{"strategy":"single_user_coalesced","println_limit":15,"tool_call_limit":20,"max_chars":8000}"#,
    ] {
        let config = parse(json).unwrap();
        assert_eq!(serde_json::to_string(&config).unwrap(), json);
    }
}

#[test]
fn bad_configuration_names_what_is_wrong() {
    let error = parse(r#""single_user""#).unwrap_err();
    assert!(error.contains("unknown variant `single_user`"), "{error}");
    let error = parse(r#"{"strategy": "single_user_coalesced", "printlnlimit": 3}"#).unwrap_err();
    assert!(error.contains("unknown field `printlnlimit`"), "{error}");
    let error = parse("3").unwrap_err();
    assert!(error.contains("false, true, a strategy name"), "{error}");
}
