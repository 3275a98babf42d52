//! The tool listing as the layer presents it: the inner handler's tools,
//! their output schemas relaxed to admit a descriptor, plus the layer's own
//! tools (`lro_extract`, the context tools) unless the inner handler has
//! tools of the same names, which then shadow the layer's; or, when the
//! layer's own tools win (`LroLayer::own_tools_win`, as `lro proxy` sets
//! it), the inner handler's tools of those names are hidden instead.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use rmcp::model::{JsonObject, ListToolsResult, Tool};

#[cfg(feature = "context")]
use super::context;
use super::{extract, shared::Shared};

/// Whether the inner handler lists a tool of the layer's own name.
///
/// A tool list can change (`tools/list_changed`, a reconnected upstream), so
/// every listing is observed. A page that has the tool shadows at once: the
/// server's own tool must win from the first call. Only the last page of a
/// listing in which no page had the tool lifts the shadow.
#[derive(Debug, Default)]
struct Shadow {
    on: AtomicBool,
    /// An earlier page of the listing being read had the tool.
    pending: AtomicBool,
}

impl Shadow {
    /// Records one page of a listing; true when this page starts a shadow.
    fn observe(&self, first_page: bool, last_page: bool, here: bool) -> bool {
        let seen = here || (!first_page && self.pending.load(Ordering::Relaxed));
        self.pending.store(seen && !last_page, Ordering::Relaxed);
        if seen {
            !self.on.swap(true, Ordering::Relaxed)
        } else {
            if last_page {
                self.on.store(false, Ordering::Relaxed);
            }
            false
        }
    }

    fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }
}

/// What the layer has learned from the inner handler's listings.
#[derive(Debug, Default)]
pub(super) struct Listing {
    /// The inner handler lists a tool named `lro_extract` (a proxied
    /// upstream may): that tool wins, and ours is neither listed nor called.
    shadowed: Shadow,
    /// The inner handler's tools have been listed to the end once (or could
    /// not be), so `shadowed` is known.
    listed: AtomicBool,
    /// The inner handler lists a tool named like one of the context tools:
    /// it serves them all, and the layer lists none.
    #[cfg(feature = "context")]
    context_shadowed: Shadow,
    /// Per inner tool seen in a listing (or by `get_tool`), whether it
    /// declares an `outputSchema`: only such a tool's descriptor goes out
    /// as `structuredContent` too.
    outputs: Mutex<HashMap<String, bool>>,
}

impl Listing {
    /// Whether a listing has been read to its end, or given up on.
    pub(super) fn listed(&self) -> bool {
        self.listed.load(Ordering::Relaxed)
    }

    /// Gives up learning: the inner handler could not list its tools.
    pub(super) fn give_up(&self) {
        self.listed.store(true, Ordering::Relaxed);
    }

    /// Notes whether the inner handler's `tool` declares an output schema.
    pub(super) fn note(&self, tool: &Tool) {
        self.outputs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tool.name.to_string(), tool.output_schema.is_some());
    }

    /// Whether the inner handler's `tool` has been seen, in a listing or
    /// by `get_tool`.
    pub(super) fn knows(&self, tool: &str) -> bool {
        let outputs = self.outputs.lock().unwrap_or_else(|e| e.into_inner());
        outputs.contains_key(tool)
    }

    /// Whether the inner handler's `tool` declares an output schema; a tool
    /// never seen does not (its descriptor goes out as text only).
    pub(super) fn declares_output(&self, tool: &str) -> bool {
        let outputs = self.outputs.lock().unwrap_or_else(|e| e.into_inner());
        outputs.get(tool).copied().unwrap_or(false)
    }

    /// Whether the inner handler has its own `lro_extract`.
    pub(super) fn is_shadowed(&self) -> bool {
        self.shadowed.is_on()
    }

    /// Whether `name` is one of the layer's own tools' names that the
    /// inner handler may not serve: the layer's tools win, so the inner
    /// handler's tool of that name is neither listed nor called.
    pub(super) fn hides(shared: &Shared, name: &str) -> bool {
        if !shared.own_tools_win {
            return false;
        }
        #[cfg(feature = "context")]
        if context::CONTEXT_TOOLS.contains(&name) {
            return true;
        }
        name == extract::EXTRACT_TOOL
    }

    /// Whether `lro_extract` is ours to serve.
    pub(super) fn extracts(&self, shared: &Shared) -> bool {
        shared.extractor.is_some() && !self.is_shadowed()
    }

    /// The context engine, when `tool` is one of its tools and the server has
    /// none of that name.
    #[cfg(feature = "context")]
    pub(super) fn context_tool<'s>(
        &self,
        shared: &'s Shared,
        tool: &str,
    ) -> Option<&'s lro_context::ContextOffloader> {
        let ours = context::CONTEXT_TOOLS.contains(&tool) && !self.context_shadowed.is_on();
        shared.context.as_ref().filter(|_| ours)
    }

    /// The layer's own tool named `name`, when it serves one.
    pub(super) fn own_tool(&self, shared: &Shared, name: &str) -> Option<Tool> {
        if name == extract::EXTRACT_TOOL && self.extracts(shared) {
            return Some(extract::tool(shared));
        }
        #[cfg(feature = "context")]
        if self.context_tool(shared, name).is_some() {
            return context::tools().into_iter().find(|t| t.name == name);
        }
        None
    }

    /// The inner handler's `tool`, its output schema relaxed when the layer
    /// may offload its results.
    pub(super) fn relaxed(shared: &Shared, mut tool: Tool) -> Tool {
        if let Some(schema) = &tool.output_schema
            && shared.enabled_for(&tool.name)
        {
            tool.output_schema = Some(Arc::new(relax_output_schema(schema)));
        }
        tool
    }

    /// Adds the layer's tools to the inner handler's listing, unless it has
    /// its own of the same names. `first_page` says the request had no cursor.
    pub(super) fn patch(
        &self,
        shared: &Shared,
        mut list: ListToolsResult,
        first_page: bool,
    ) -> ListToolsResult {
        let last_page = list.next_cursor.is_none();
        // Hidden, so never a shadow: the layer's own tools answer.
        list.tools.retain(|t| !Self::hides(shared, &t.name));
        for tool in &list.tools {
            self.note(tool);
        }
        let has = |names: &[&str]| list.tools.iter().any(|t| names.contains(&t.name.as_ref()));
        if shared.extractor.is_some()
            && self
                .shadowed
                .observe(first_page, last_page, has(&[extract::EXTRACT_TOOL]))
        {
            // Never a silent shadow: say so when one starts, on the log (stderr
            // in `lro proxy`).
            tracing::warn!(
                "the server has its own `{}` tool: it is listed and called instead of the LRO \
                 extraction tool, and descriptors point at the jq recipes",
                extract::EXTRACT_TOOL
            );
        }
        #[cfg(feature = "context")]
        if shared.context.is_some()
            && self
                .context_shadowed
                .observe(first_page, last_page, has(&context::CONTEXT_TOOLS))
        {
            tracing::warn!(
                "the server has its own context tools: they are listed and called instead of LRO's"
            );
        }
        // The extraction and context tools are added once, on the last page.
        if last_page {
            self.listed.store(true, Ordering::Relaxed);
            if self.extracts(shared) {
                list.tools.push(extract::tool(shared));
            }
            #[cfg(feature = "context")]
            if shared.context.is_some() && !self.context_shadowed.is_on() {
                list.tools.extend(context::tools());
                lro_core::metric::register_context_zeroed();
            }
        }
        list.tools = list
            .tools
            .into_iter()
            .map(|tool| {
                lro_core::metric::register_tool(&tool.name);
                Self::relaxed(shared, tool)
            })
            .collect();
        list
    }
}

/// An output schema that also admits the offload descriptor, so clients that
/// validate structured content accept an offloaded result.
///
/// The schema's definitions (`$defs`, `definitions`), `$schema` and `$id`
/// move to the new root: references such as pydantic's `#/$defs/Item`
/// resolve from the root of their resource, which the upstream's schema no
/// longer is (and with its `$id` left inside, it would be a resource of its
/// own, without the definitions).
fn relax_output_schema(schema: &JsonObject) -> JsonObject {
    const HOISTED: [&str; 4] = ["$schema", "$id", "$defs", "definitions"];
    let mut upstream = schema.clone();
    let mut relaxed = JsonObject::new();
    for key in HOISTED {
        if let Some(value) = upstream.remove(key) {
            relaxed.insert(key.to_owned(), value);
        }
    }
    relaxed.insert("type".to_owned(), "object".into());
    relaxed.insert(
        "anyOf".to_owned(),
        serde_json::json!([
            upstream,
            {
                "type": "object",
                "required": ["offloaded", "file_path"],
                "properties": {
                    "offloaded": {"const": true},
                    "file_path": {"type": "string"}
                }
            }
        ]),
    );
    relaxed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_move_to_the_root_their_references_name() {
        let schema = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://example.invalid/result",
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
            "$defs": {"Item": {"type": "object"}},
            "definitions": {"Old": {"type": "string"}}
        });
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        let relaxed = relax_output_schema(&schema);
        let keys: Vec<_> = relaxed.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["$schema", "$id", "$defs", "definitions", "type", "anyOf"]
        );
        assert_eq!(
            relaxed["$defs"],
            serde_json::json!({"Item": {"type": "object"}})
        );
        let upstream = &relaxed["anyOf"][0];
        assert!(
            ["$id", "$defs", "definitions"]
                .iter()
                .all(|k| upstream.get(k).is_none())
        );
        assert_eq!(upstream["properties"], schema["properties"]);
    }

    #[test]
    fn only_tools_seen_with_an_output_schema_declare_one() {
        let listing = Listing::default();
        let tool = |name: &str, schema: bool| {
            let mut t = Tool::new(name.to_owned(), "d", Arc::new(JsonObject::new()));
            if schema {
                t.output_schema = Some(Arc::new(JsonObject::new()));
            }
            t
        };
        listing.note(&tool("typed", true));
        listing.note(&tool("plain", false));
        assert!(listing.declares_output("typed"));
        assert!(!listing.declares_output("plain"));
        assert!(!listing.declares_output("unseen"));
        assert!(listing.knows("plain") && !listing.knows("unseen"));
        // A listing that drops the schema is believed.
        listing.note(&tool("typed", false));
        assert!(!listing.declares_output("typed"));
    }

    #[test]
    fn a_shadow_starts_on_any_page_and_ends_on_the_last_page_of_a_listing_without_the_tool() {
        let shadow = Shadow::default();
        // Pages: (first, last, has the tool).
        assert!(!shadow.observe(true, false, false) && !shadow.is_on());
        assert!(shadow.observe(false, true, true), "a later page shadows");
        assert!(
            !shadow.observe(true, true, true),
            "already on: no new start"
        );
        // A two-page listing without the tool lifts it on its last page only.
        assert!(!shadow.observe(true, false, false));
        assert!(shadow.is_on());
        assert!(!shadow.observe(false, true, false));
        assert!(!shadow.is_on());
        // The tool on page one of three keeps the shadow through the last page.
        assert!(shadow.observe(true, false, true));
        shadow.observe(false, false, false);
        shadow.observe(false, true, false);
        assert!(shadow.is_on());
        // A single-page listing without the tool lifts it.
        shadow.observe(true, true, false);
        assert!(!shadow.is_on());
    }
}
