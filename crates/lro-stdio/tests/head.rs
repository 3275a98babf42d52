//! `head_of` against serde_json and rmcp on generated JSON-RPC messages:
//! whole, it reads the `id` rmcp reads and sees the `method`; cut at any
//! byte, it reads that id or none, never another; broken, it never panics.

#[path = "../../lro-core/tests/support/json.rs"]
mod json;

use json::Json;
use lro_stdio::line::{Head, head_of};
use proptest::prelude::*;
use rmcp::model::RequestId;
use serde_json::{Map, Value};

/// A message: `jsonrpc`, maybe an `id` of any spelling, maybe a `method`,
/// maybe `params`, other members, in any order.
fn message() -> impl Strategy<Value = Json> {
    let id = prop_oneof![
        4 => json::number(),
        3 => json::string_literal(),
        1 => prop::sample::select(vec!["null", "true", "[1]", "{}"]).prop_map(str::to_owned),
    ];
    (
        prop::option::of(id),
        prop::option::of(json::string_literal()),
        prop::option::of(json::value()),
        prop::collection::vec((json::key(), json::value()), 0..4),
    )
        .prop_flat_map(|(id, method, params, extra)| {
            let mut members = vec![("\"jsonrpc\"".to_owned(), Json::Scalar("\"2.0\"".into()))];
            members.extend(id.map(|id| ("\"id\"".to_owned(), Json::Scalar(id))));
            members.extend(method.map(|m| ("\"method\"".to_owned(), Json::Scalar(m))));
            members.extend(params.map(|p| ("\"params\"".to_owned(), p)));
            // One id at most: which of two a reader takes is no rule.
            members.extend(
                extra.into_iter().filter(|(k, _)| {
                    serde_json::from_str::<String>(k).ok().as_deref() != Some("id")
                }),
            );
            Just(members).prop_shuffle().prop_map(Json::Object)
        })
}

/// What serde_json and rmcp read in a whole message: its id (when rmcp
/// takes it for one), whether it has a method, whether it has an id member.
fn expected(text: &str) -> Option<(Option<RequestId>, bool, bool)> {
    let map: Map<String, Value> = serde_json::from_str(text).ok()?;
    let id = map
        .get("id")
        .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    Some((id, map.contains_key("method"), map.contains_key("id")))
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_whole_message_gives_the_id_rmcp_reads(m in message(), ws in any::<u64>()) {
        let text = m.render(ws);
        // serde_json refuses a number out of f64's range as a value.
        let Some((id, method, has_id)) = expected(&text) else {
            return Ok(());
        };
        let head = head_of(text.as_bytes());
        prop_assert_eq!(&head.id, &id, "{}", text);
        // Reading stops at an id that is none (`null`), as the old reader
        // did: a message with one is answered, not taken for a notification.
        if id.is_some() || !has_id {
            prop_assert_eq!(head.method, method, "{}", text);
        }
    }

    #[test]
    fn a_cut_message_gives_its_id_or_none(m in message(), ws in any::<u64>()) {
        let text = m.render(ws);
        let Some((id, method, _)) = expected(&text) else {
            return Ok(());
        };
        let b = text.as_bytes();
        for cut in (0..=b.len()).step_by((b.len() / 60).max(1)) {
            let Head { id: got, method: seen } = head_of(&b[..cut]);
            prop_assert!(got.is_none() || got == id, "cut at {}: {:?} in {}", cut, got, text);
            prop_assert!(!seen || method, "cut at {}: a method in {}", cut, text);
        }
    }

    #[test]
    fn a_broken_message_never_panics(m in message(), ws in any::<u64>(), breaks in json::breaks()) {
        let _ = head_of(&json::broken(m.render(ws).as_bytes(), &breaks));
    }
}
