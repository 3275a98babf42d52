//! Names this project puts on the MCP wire: the proxy flag.
//!
//! An LRO proxy offloads results itself, so a server must hand it full
//! results inline. It says so twice in `initialize`: in the spec's form,
//! `clientInfo.proxy: true`, and as the client capability extension
//! [`PROXY_EXTENSION`] with `{"proxy": true}`, which a typed MCP library that
//! drops unknown `clientInfo` keys (rmcp does) can still read. The layer
//! reads the flag, the proxy sends it, the auditor checks it: all three take
//! the names from here.
//!
//! ```
//! use lro_core::wire::{PROXY_EXTENSION, is_proxy_settings, mark_proxy_client_info, proxy_settings};
//!
//! let mut params = serde_json::json!({"clientInfo": {"name": "c", "version": "1"}});
//! mark_proxy_client_info(&mut params);
//! assert_eq!(params["clientInfo"]["proxy"], true);
//! assert_eq!(PROXY_EXTENSION, "io.atlatl/lro");
//! assert!(is_proxy_settings(&proxy_settings()));
//! ```

use serde_json::{Map, Value};

/// Key of the client capability extension that marks an LRO proxy:
/// `capabilities.extensions["io.atlatl/lro"] = {"proxy": true}`.
pub const PROXY_EXTENSION: &str = "io.atlatl/lro";

/// The settings object of the [`PROXY_EXTENSION`] capability: `{"proxy": true}`.
pub fn proxy_settings() -> Map<String, Value> {
    Map::from_iter([("proxy".to_owned(), Value::Bool(true))])
}

/// Whether a [`PROXY_EXTENSION`] settings object declares a proxy.
pub fn is_proxy_settings(settings: &Map<String, Value>) -> bool {
    settings
        .get("proxy")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Adds the spec's form of the flag, `clientInfo.proxy: true`, to
/// `initialize` params. Params without a `clientInfo` object are left as
/// they are: there is no client to mark.
pub fn mark_proxy_client_info(params: &mut Value) {
    if let Some(info) = params.get_mut("clientInfo").and_then(Value::as_object_mut) {
        info.insert("proxy".to_owned(), Value::Bool(true));
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
