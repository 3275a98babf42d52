//! Which MCP wire a request is on, and the translation between the two
//! where the client and the upstream differ.
//!
//! MCP 2026-07-28 removed `initialize` and sessions: every request carries
//! its protocol version, client info and client capabilities in `_meta`,
//! under `io.modelcontextprotocol/` keys, and every result carries
//! `resultType`. Earlier revisions (2025-11-25 and before) carry them once,
//! in `initialize`. The proxy decides per request ([`Wire::of`]): one stdio
//! face or one `/mcp` endpoint serves both.

use rmcp::model::{RequestMetaObject, ResultType, ServerResult};
use serde_json::Value;

/// The prefix of the keys MCP 2026-07-28 reserves in a request's `_meta`.
const RESERVED: &str = "io.modelcontextprotocol/";

/// The `_meta` key of the client's capabilities.
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The `_meta` key of the protocol version.
const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The two MCP wires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// 2025-11-25 and before: `initialize`, then a session.
    Legacy,
    /// 2026-07-28 and after: sessionless, the context in every `_meta`.
    Modern,
}

impl Wire {
    /// The wire a request is on: modern when its `_meta` names a version
    /// that has no `initialize`. rmcp has already refused a request whose
    /// `_meta` is incomplete or names an unknown version.
    pub(crate) fn of(meta: &RequestMetaObject) -> Self {
        match meta.protocol_version() {
            Some(version) if !version.has_initialize() => Wire::Modern,
            _ => Wire::Legacy,
        }
    }
}

/// The client's `_meta`, as the upstream must see it on `upstream`'s wire.
///
/// - To a legacy upstream, the reserved keys go: they would tell rmcp's HTTP
///   client to send a 2026 `MCP-Protocol-Version` inside a 2025 session,
///   which servers reject (with an id-less error, once a hang).
/// - To a modern upstream, the protocol version goes (rmcp stamps the one
///   the upstream agreed), and the client's info and capabilities stay, with
///   the proxy flag added, so the upstream judges what the real client can
///   do.
///
/// Every other key (`progressToken`, `traceparent`, …) passes unchanged.
pub(crate) fn meta_for(mut meta: RequestMetaObject, upstream: Wire) -> RequestMetaObject {
    match upstream {
        Wire::Legacy => meta.retain(|key, _| !key.starts_with(RESERVED)),
        Wire::Modern => {
            meta.remove(PROTOCOL_VERSION);
            lro_core::proxy_flag::mark_proxy_meta(&mut meta);
            if let Some(caps) = meta
                .get_mut(CLIENT_CAPABILITIES)
                .and_then(Value::as_object_mut)
            {
                let extensions = caps
                    .entry("extensions")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(extensions) = extensions.as_object_mut() {
                    extensions.insert(
                        lro_core::proxy_flag::PROXY_EXTENSION.to_owned(),
                        Value::Object(lro_core::proxy_flag::proxy_settings()),
                    );
                }
            }
        }
    }
    meta
}

/// `result` with `resultType: "complete"` where it has none. A legacy
/// upstream sends none, and a 2026 client requires it; rmcp takes it off
/// again for a legacy client.
pub(crate) fn stamp_result_type(result: &mut ServerResult) {
    let result_type = match result {
        ServerResult::CompleteResult(r) => &mut r.result_type,
        ServerResult::GetPromptResult(r) => &mut r.result_type,
        ServerResult::ListPromptsResult(r) => &mut r.result_type,
        ServerResult::ListResourcesResult(r) => &mut r.result_type,
        ServerResult::ListResourceTemplatesResult(r) => &mut r.result_type,
        ServerResult::ReadResourceResult(r) => &mut r.result_type,
        ServerResult::ListToolsResult(r) => &mut r.result_type,
        ServerResult::CallToolResult(r) => &mut r.result_type,
        ServerResult::ListSkillsResult(r) => &mut r.result_type,
        ServerResult::GetSkillResult(r) => &mut r.result_type,
        _ => return,
    };
    result_type.get_or_insert(ResultType::COMPLETE);
}

#[cfg(test)]
mod tests {
    use rmcp::model::{
        CallToolResult, ClientCapabilities, Implementation, ListToolsResult, ProtocolVersion,
    };
    use serde_json::json;

    use super::*;

    fn modern_meta() -> RequestMetaObject {
        let mut meta = RequestMetaObject::with_client_context(
            ProtocolVersion::V_2026_07_28,
            Implementation::new("client", "1"),
            ClientCapabilities::default(),
        );
        meta.insert("traceparent".into(), json!("00-ab-cd-01"));
        meta.set_progress_token(rmcp::model::ProgressToken(
            rmcp::model::NumberOrString::Number(7),
        ));
        meta
    }

    #[test]
    fn the_version_in_meta_decides_the_wire() {
        assert_eq!(Wire::of(&modern_meta()), Wire::Modern);
        assert_eq!(Wire::of(&RequestMetaObject::new()), Wire::Legacy);
        let mut old = RequestMetaObject::new();
        old.set_protocol_version(ProtocolVersion::V_2025_11_25);
        assert_eq!(Wire::of(&old), Wire::Legacy);
    }

    #[test]
    fn a_legacy_upstream_gets_no_reserved_key_and_everything_else() {
        let meta = meta_for(modern_meta(), Wire::Legacy);
        assert!(meta.keys().all(|k| !k.starts_with(RESERVED)), "{meta:?}");
        assert_eq!(meta["traceparent"], "00-ab-cd-01");
        assert!(meta.get_progress_token().is_some());
    }

    #[test]
    fn a_modern_upstream_gets_the_clients_context_flagged_as_proxied() {
        let meta = meta_for(modern_meta(), Wire::Modern);
        assert!(meta.get(PROTOCOL_VERSION).is_none(), "rmcp stamps its own");
        assert_eq!(
            meta[lro_core::proxy_flag::META_CLIENT_INFO]["name"],
            "client"
        );
        assert_eq!(meta[lro_core::proxy_flag::META_CLIENT_INFO]["proxy"], true);
        assert_eq!(
            meta[CLIENT_CAPABILITIES]["extensions"][lro_core::proxy_flag::PROXY_EXTENSION]["proxy"],
            true
        );
        assert_eq!(meta["traceparent"], "00-ab-cd-01");
    }

    #[test]
    fn result_type_is_stamped_where_missing_and_kept_where_set() {
        // As a legacy upstream sends it: no `resultType`.
        let tools: ListToolsResult = serde_json::from_value(json!({"tools": []})).unwrap();
        assert_eq!(tools.result_type, None);
        let mut tools = ServerResult::ListToolsResult(tools);
        stamp_result_type(&mut tools);
        let ServerResult::ListToolsResult(tools) = tools else {
            unreachable!()
        };
        assert_eq!(tools.result_type, Some(ResultType::COMPLETE));
        let mut call = ServerResult::CallToolResult(CallToolResult::success(vec![]));
        stamp_result_type(&mut call);
        assert_eq!(
            serde_json::to_value(&call).unwrap()["resultType"],
            "complete"
        );
    }
}
