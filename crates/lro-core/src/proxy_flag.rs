//! The proxy flag: the names this project puts on the MCP wire for it, and
//! the marking of a request with it.
//!
//! An LRO proxy offloads results itself, so a server must hand it full
//! results inline. It says so twice in `initialize`: in the spec's form,
//! `clientInfo.proxy: true`, and as the client capability extension
//! [`PROXY_EXTENSION`] with `{"proxy": true}`, which a typed MCP library that
//! drops unknown `clientInfo` keys (rmcp does) can still read. The layer
//! reads the flag, the proxy sends it, the auditor checks it: all three take
//! the names from here.
//!
//! A 2026-07-28 request carries its client info in `_meta`, under
//! [`META_CLIENT_INFO`], and is marked there ([`mark_proxy_meta`]).
//!
//! ```
//! use lro_core::proxy_flag::{
//!     META_CLIENT_INFO, PROXY_EXTENSION, is_proxy_settings, mark_proxy_client_info,
//!     mark_proxy_meta, proxy_settings,
//! };
//!
//! let mut params = serde_json::json!({"clientInfo": {"name": "c", "version": "1"}});
//! mark_proxy_client_info(&mut params);
//! assert_eq!(params["clientInfo"]["proxy"], true);
//! let mut meta = serde_json::json!({META_CLIENT_INFO: {"name": "c", "version": "1"}});
//! mark_proxy_meta(meta.as_object_mut().unwrap());
//! assert_eq!(meta[META_CLIENT_INFO]["proxy"], true);
//! assert_eq!(PROXY_EXTENSION, "io.atlatl/lro");
//! assert!(is_proxy_settings(&proxy_settings()));
//! ```

use serde_json::{Map, Value};

/// Key of the client capability extension that marks an LRO proxy:
/// `capabilities.extensions["io.atlatl/lro"] = {"proxy": true}`.
pub const PROXY_EXTENSION: &str = "io.atlatl/lro";

/// The `_meta` key of a 2026-07-28 request's client info (the spec's; rmcp
/// keeps its own private).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// The key that says "proxy", in client info and in the extension's
/// settings alike.
const PROXY: &str = "proxy";

/// The settings object of the [`PROXY_EXTENSION`] capability: `{"proxy": true}`.
pub fn proxy_settings() -> Map<String, Value> {
    Map::from_iter([(PROXY.to_owned(), Value::Bool(true))])
}

/// Whether a [`PROXY_EXTENSION`] settings object declares a proxy.
pub fn is_proxy_settings(settings: &Map<String, Value>) -> bool {
    settings
        .get(PROXY)
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Adds the spec's form of the flag, `clientInfo.proxy: true`, to
/// `initialize` params. Params without a `clientInfo` object are left as
/// they are: there is no client to mark.
pub fn mark_proxy_client_info(params: &mut Value) {
    if let Some(info) = params.get_mut("clientInfo").and_then(Value::as_object_mut) {
        info.insert(PROXY.to_owned(), Value::Bool(true));
    }
}

/// Adds `proxy: true` to the client info a request's `_meta` carries under
/// [`META_CLIENT_INFO`]; a `_meta` without one is left as it is.
pub fn mark_proxy_meta(meta: &mut Map<String, Value>) {
    if let Some(info) = meta
        .get_mut(META_CLIENT_INFO)
        .and_then(Value::as_object_mut)
    {
        info.insert(PROXY.to_owned(), Value::Bool(true));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_without_client_info_stay_as_they_are() {
        let mut params = serde_json::json!({"capabilities": {}});
        mark_proxy_client_info(&mut params);
        assert_eq!(params, serde_json::json!({"capabilities": {}}));
    }

    #[test]
    fn only_a_true_proxy_key_declares_a_proxy() {
        assert!(is_proxy_settings(&proxy_settings()));
        let off = Map::from_iter([("proxy".to_owned(), Value::Bool(false))]);
        assert!(!is_proxy_settings(&off));
        assert!(!is_proxy_settings(&Map::new()));
    }
}
