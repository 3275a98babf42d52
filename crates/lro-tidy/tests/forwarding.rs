//! Guards both forwarding lists against rmcp's `ServerHandler` trait, which
//! gains methods from release to release: a method left out falls back to
//! the trait default without anyone deciding so.
//!
//! - the layer, `LroService<H>` (`crates/lro-tower/src/lro/forward.rs`), forwards
//!   every method;
//! - the proxy, `Proxy` (`crates/lro-proxy/src/forward.rs`), forwards every
//!   method or lists it in [`NOT_FORWARDED`] with the reason.
//!
//! Re-run on every rmcp upgrade (it runs in CI).

use std::{collections::BTreeSet, path::PathBuf, process::Command};

/// The trait methods the proxy's `Proxy` leaves to rmcp's default, and why.
const NOT_FORWARDED: [(&str, &str); 4] = [
    (
        "negotiate_initialize",
        "a helper of the default `initialize`; the proxy's `initialize` answers \
         with the upstream's own answer, and `supported_protocol_versions` pins \
         the version the upstream agreed",
    ),
    (
        "get_tool",
        "a synchronous lookup for the HTTP face's `Mcp-Param-*` header check; \
         the proxy holds no tool list without asking the upstream, and the \
         default (`None`) skips the check",
    ),
    (
        "on_initialized",
        "the proxy's own client sends `notifications/initialized` to the \
         upstream when the upstream session opens; passing the client's on \
         would send it twice",
    ),
    (
        "on_cancelled",
        "rmcp cancels the request's token itself, and `relay::forward` passes \
         that on as `notifications/cancelled` with the id of the forwarded \
         request; the client's notification names an id the upstream never saw",
    ),
];

/// The names of the functions declared in `src`, one a line.
fn fn_names(src: &str) -> BTreeSet<&str> {
    src.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            line.strip_prefix("async fn ")
                .or_else(|| line.strip_prefix("fn "))
        })
        .filter_map(|rest| rest.split(['(', '<']).next())
        .map(str::trim)
        .collect()
}

/// A file of the repository.
fn repo_file(path: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The methods of rmcp's `ServerHandler`, read from its
/// `src/handler/server.rs`, found through `cargo metadata`.
fn server_handler_methods() -> BTreeSet<String> {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata failed");
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let manifest = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "rmcp")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("rmcp is a dependency");
    let path = PathBuf::from(manifest).with_file_name("src/handler/server.rs");
    let rmcp =
        std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    // rmcp declares the trait's methods in a macro, just before the trait.
    let start = rmcp
        .find("macro_rules! server_handler_methods")
        .expect("rmcp defines the trait methods in a macro");
    let end = start
        + rmcp[start..]
            .find("pub trait ServerHandler")
            .expect("the trait follows the macro");
    let methods: BTreeSet<String> = fn_names(&rmcp[start..end])
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert!(methods.len() > 25, "parsed {methods:?}");
    methods
}

/// The methods of the `impl` that starts with `header` in `src`.
fn implemented<'a>(src: &'a str, header: &str) -> BTreeSet<&'a str> {
    let at = src.find(header).unwrap_or_else(|| panic!("no `{header}`"));
    fn_names(&src[at..])
}

#[test]
fn the_layer_forwards_every_server_handler_method() {
    let ours = repo_file("crates/lro-tower/src/lro/forward.rs");
    let forwarded = implemented(
        &ours,
        "impl<H: ServerHandler> ServerHandler for LroService<H>",
    );
    let missing: Vec<_> = server_handler_methods()
        .into_iter()
        .filter(|m| !forwarded.contains(m.as_str()))
        .collect();
    assert!(missing.is_empty(), "not forwarded: {missing:?}");
}

#[test]
fn the_proxy_forwards_every_server_handler_method_or_says_why_not() {
    let trait_methods = server_handler_methods();
    let trait_methods: BTreeSet<&str> = trait_methods.iter().map(String::as_str).collect();
    let ours = repo_file("crates/lro-proxy/src/forward.rs");
    let forwarded = implemented(&ours, "impl ServerHandler for Proxy");
    let listed: BTreeSet<&str> = NOT_FORWARDED.iter().map(|(name, _)| *name).collect();

    let undecided: Vec<_> = trait_methods
        .iter()
        .filter(|m| !forwarded.contains(*m) && !listed.contains(*m))
        .collect();
    assert!(
        undecided.is_empty(),
        "neither forwarded nor listed in NOT_FORWARDED: {undecided:?}"
    );
    let stale: Vec<_> = listed.difference(&trait_methods).collect();
    assert!(stale.is_empty(), "listed but not in the trait: {stale:?}");
    let both: Vec<_> = listed.intersection(&forwarded).collect();
    assert!(both.is_empty(), "listed but forwarded: {both:?}");
}

#[test]
fn the_name_reader_reads_declarations_only() {
    let names =
        fn_names("    async fn a(&self) {}\n    fn b<T>(x: T)\n    // fn c()\n    let fn_d = 1;\n");
    assert_eq!(names, BTreeSet::from(["a", "b"]));
}
