//! Properties of printing that hold for every value.

use curator_coalesce::{ELLIPSIS, Limits, Value, to_clojure};

use crate::arb::arb_value;
use proptest::prelude::*;

fn arb_limits() -> impl Strategy<Value = Limits> {
    (prop::option::of(0usize..6), prop::option::of(0usize..50))
        .prop_map(|(items, chars)| Limits::new(items, chars))
}

proptest! {
    #[test]
    fn printing_is_deterministic_and_marks_cut_collections(value in arb_value(), limits in arb_limits()) {
        let printed = to_clojure(&value, limits);
        prop_assert_eq!(&printed, &to_clojure(&value, limits));
        if let Some(len) = value.len() {
            prop_assert!(printed.contains(ELLIPSIS) || limits.items.is_none_or(|items| items >= len));
        }
    }

    #[test]
    fn strings_never_exceed_their_limit(text in ".{0,200}", limit in 0usize..100) {
        let printed = to_clojure(&Value::from(text.as_str()), Limits::new(None, Some(limit)));
        // `\u0007`: a control character escaped takes six characters.
        let escaped_max = limit * 6 + ELLIPSIS.len() + 2;
        prop_assert!(printed.chars().count() <= escaped_max);
        prop_assert_eq!(printed.ends_with(&format!("{ELLIPSIS}\"")), text.chars().count() > limit);
    }

    #[test]
    fn collections_show_at_most_their_limit(len in 0usize..30, limit in 0usize..10) {
        let list = Value::list((0..len).map(|n| Value::from(i64::try_from(n).unwrap_or(0))));
        let printed = to_clojure(&list, Limits::new(Some(limit), None));
        let inside = printed.trim_matches(['[', ']']);
        let (items, marker) = inside.split_once(ELLIPSIS).unwrap_or((inside, ""));
        let shown = items.split(' ').filter(|item| !item.is_empty()).count();
        prop_assert_eq!(shown, len.min(limit));
        // What the limit cuts is counted: `... 3 more`.
        let more = len.saturating_sub(limit);
        prop_assert_eq!(marker.to_owned(), if more > 0 { format!(" {more} more") } else { String::new() });
    }
}
