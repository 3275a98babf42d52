//! Guards the forwarding list: every method of rmcp's `ServerHandler` trait
//! must be implemented by `Lro<H>`. A method left out would silently fall
//! back to the trait default. Re-run on every rmcp upgrade (it runs in CI).

use std::{collections::BTreeSet, path::PathBuf, process::Command};

fn fn_names(src: &str) -> BTreeSet<String> {
    src.lines()
        .map(str::trim_start)
        .filter_map(|l| {
            l.strip_prefix("async fn ")
                .or_else(|| l.strip_prefix("fn "))
        })
        .filter_map(|rest| rest.split(['(', '<']).next())
        .map(|name| name.trim().to_owned())
        .collect()
}

fn rmcp_server_rs() -> PathBuf {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success());
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rmcp = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "rmcp")
        .expect("rmcp is a dependency");
    PathBuf::from(rmcp["manifest_path"].as_str().unwrap())
        .parent()
        .unwrap()
        .join("src/handler/server.rs")
}

#[test]
fn every_server_handler_method_is_forwarded() {
    let rmcp_src = std::fs::read_to_string(rmcp_server_rs()).unwrap();
    let start = rmcp_src
        .find("macro_rules! server_handler_methods")
        .expect("rmcp defines the trait methods in a macro");
    let end = rmcp_src[start..]
        .find("pub trait ServerHandler")
        .expect("trait follows the macro")
        + start;
    let trait_methods = fn_names(&rmcp_src[start..end]);
    assert!(trait_methods.len() > 25, "parsed {trait_methods:?}");

    let ours = include_str!("../src/lro/service.rs");
    let impl_start = ours
        .find("impl<H: ServerHandler> ServerHandler for Lro<H>")
        .unwrap();
    let implemented = fn_names(&ours[impl_start..]);
    let missing: Vec<_> = trait_methods.difference(&implemented).collect();
    assert!(missing.is_empty(), "not forwarded: {missing:?}");
}
