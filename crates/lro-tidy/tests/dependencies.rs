//! The dependency rules of ARCHITECTURE.md, checked on `cargo metadata`.
//!
//! Rules apply to normal (non-dev, non-build) dependencies, followed
//! transitively: a crate that reaches tokio through a helper crate still
//! depends on tokio.

use std::{
    collections::{BTreeMap, BTreeSet},
    process::Command,
};

use serde_json::Value;

/// Workspace member name -> every package it reaches through normal
/// dependencies.
struct Graph {
    members: BTreeSet<String>,
    reach: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn load() -> Self {
        let out = Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1", "--offline"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata runs");
        assert!(
            out.status.success(),
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
        let name_of: BTreeMap<&str, &str> = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
            .collect();
        let members: BTreeSet<String> = meta["workspace_members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| name_of[id.as_str().unwrap()].to_owned())
            .collect();
        // Direct normal dependencies by package id.
        let mut direct: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for node in meta["resolve"]["nodes"].as_array().unwrap() {
            let deps = node["deps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|k| k["kind"].is_null())
                })
                .map(|d| d["pkg"].as_str().unwrap())
                .collect();
            direct.insert(node["id"].as_str().unwrap(), deps);
        }
        let mut reach = BTreeMap::new();
        for (id, name) in &name_of {
            if !members.contains(*name) {
                continue;
            }
            let mut seen = BTreeSet::new();
            let mut stack = vec![*id];
            while let Some(at) = stack.pop() {
                for dep in direct.get(at).into_iter().flatten() {
                    if seen.insert(*dep) {
                        stack.push(dep);
                    }
                }
            }
            reach.insert(
                (*name).to_owned(),
                seen.iter().map(|id| name_of[id].to_owned()).collect(),
            );
        }
        Self { members, reach }
    }

    fn reaches(&self, from: &str, to: &str) -> bool {
        self.reach[from].contains(to)
    }
}

/// The library crates: every `lro-*` member except the binary crate, the
/// telemetry installer and the host wiring over it. New crates (proxy,
/// audit, context) fall under it by name.
fn libraries(graph: &Graph) -> Vec<&str> {
    graph
        .members
        .iter()
        .map(String::as_str)
        .filter(|m| {
            m.starts_with("lro-")
                && !["lro-cli", "lro-telemetry", "lro-host", "lro-tidy"].contains(m)
        })
        .collect()
}

#[test]
fn lro_core_knows_nothing_of_runtimes_mcp_or_http() {
    let graph = Graph::load();
    // Nor of the file system's handles: files are lro-store's (the source
    // rule is `pure_core.rs`).
    for forbidden in [
        "tokio",
        "rmcp",
        "hyper",
        "axum",
        "cap-std",
        "cap-fs-ext",
        "rustix",
    ] {
        assert!(
            !graph.reaches("lro-core", forbidden),
            "lro-core depends on {forbidden}"
        );
    }
    // The check sees real edges.
    assert!(graph.reaches("lro-core", "serde_json"));
    assert!(graph.reaches("lro-tower", "rmcp"));
}

#[test]
fn extraction_and_cleanup_know_nothing_of_mcp() {
    let graph = Graph::load();
    for krate in ["lro-extract", "lro-scheduler"] {
        assert!(!graph.reaches(krate, "rmcp"), "{krate} depends on rmcp");
    }
}

#[test]
fn the_proxy_has_no_offload_path_of_its_own() {
    let graph = Graph::load();
    // Offloading is the layer's job: the proxy only forwards, and the CLI
    // wraps it with `LroLayer`.
    for krate in ["lro-tower", "lro-extract", "lro-scheduler"] {
        assert!(
            !graph.reaches("lro-proxy", krate),
            "lro-proxy depends on {krate}"
        );
    }
    assert!(graph.reaches("lro-proxy", "rmcp"));
    assert!(graph.reaches("lro-cli", "lro-proxy") && graph.reaches("lro-cli", "lro-tower"));
}

#[test]
fn the_auditor_shares_no_judgement_with_what_it_judges() {
    let graph = Graph::load();
    // `lro audit` must judge other implementations: it may not reach the
    // project's offload path, extraction engine, cleanup or proxy. It takes
    // the spec's names and the wire's from lro-core, never a judgement.
    for krate in [
        "lro-tower",
        "lro-extract",
        "lro-scheduler",
        "lro-telemetry",
        "lro-proxy",
    ] {
        assert!(
            !graph.reaches("lro-audit", krate),
            "lro-audit depends on {krate}"
        );
    }
    assert!(graph.reaches("lro-cli", "lro-audit"));
}

#[test]
fn context_offload_knows_nothing_about_transports() {
    let graph = Graph::load();
    // The library takes messages and returns messages: the HTTP service and
    // the MCP tools are fronts over it.
    for krate in ["rmcp", "axum"] {
        assert!(
            !graph.reaches("lro-context", krate),
            "lro-context depends on {krate}"
        );
    }
    // The ReMe HTTP service is a front of its own: it speaks HTTP, not MCP.
    assert!(
        !graph.reaches("lro-context-http", "rmcp"),
        "lro-context-http depends on rmcp"
    );
    assert!(graph.reaches("lro-context-http", "axum"));
}

#[test]
fn the_http_faces_share_no_mcp() {
    let graph = Graph::load();
    // lro-http guards and serves HTTP for the MCP faces and the context
    // service alike: it knows requests, not MCP messages.
    assert!(
        !graph.reaches("lro-http", "rmcp"),
        "lro-http depends on rmcp"
    );
    assert!(graph.reaches("lro-http", "hyper"));
    for face in ["lro-proxy", "lro-context-http", "memory-server"] {
        assert!(graph.reaches(face, "lro-http"), "{face} has its own guard");
    }
}

#[test]
fn only_binaries_and_examples_install_exporters() {
    let graph = Graph::load();
    let libs = libraries(&graph);
    assert!(
        libs.contains(&"lro-core") && libs.contains(&"lro-tower"),
        "{libs:?}"
    );
    for lib in &libs {
        assert!(
            !graph.reaches(lib, "lro-telemetry"),
            "{lib} depends on lro-telemetry"
        );
        assert!(
            !graph.reaches(lib, "metrics-exporter-prometheus"),
            "{lib} installs an exporter"
        );
    }
    assert!(graph.reaches("memory-server", "lro-telemetry"));
}

#[test]
fn tidy_depends_on_no_workspace_crate() {
    let graph = Graph::load();
    let ours: Vec<&String> = graph.reach["lro-tidy"]
        .iter()
        .filter(|d| graph.members.contains(*d))
        .collect();
    assert!(ours.is_empty(), "{ours:?}");
}

#[test]
fn both_hosts_share_one_wiring_and_the_proxy_stays_out_of_it() {
    let graph = Graph::load();
    // `lro proxy` and the memory-server install telemetry, start cleanup and
    // shut down through lro-host; libraries never reach it (it installs an
    // exporter, checked above), and the one face it serves, stdio, is
    // lro-stdio's, so it needs neither the proxy nor rmcp's transports.
    for host in ["lro-cli", "memory-server"] {
        assert!(graph.reaches(host, "lro-host"), "{host} has its own wiring");
    }
    assert!(
        !graph.reaches("lro-host", "lro-proxy"),
        "lro-host depends on lro-proxy"
    );
}

#[test]
fn every_stdio_face_reads_its_client_through_one_transport() {
    let graph = Graph::load();
    // A line that is not JSON, or is over the cap, gets the same JSON-RPC
    // error from `lro proxy` and from every server lro-host serves: the
    // transport is lro-stdio's. It is a leaf, so the proxy can use it without
    // reaching the offload path, and lro-host without reaching the proxy.
    for face in ["lro-proxy", "lro-host"] {
        assert!(
            graph.reaches(face, "lro-stdio"),
            "{face} has its own stdio transport"
        );
    }
    let ours: Vec<&String> = graph.reach["lro-stdio"]
        .iter()
        .filter(|d| graph.members.contains(*d))
        .collect();
    assert!(ours.is_empty(), "lro-stdio depends on {ours:?}");
    assert!(graph.reaches("lro-stdio", "rmcp"));
}

#[test]
fn the_offload_store_sits_beside_the_core_below_every_face() {
    let graph = Graph::load();
    // lro-store holds results (the offload directory through its
    // PrivateDir, or a bucket): it may use lro-core, lro-core never uses it,
    // and it knows nothing of the layer, the proxy, the CLI or MCP.
    assert!(graph.reaches("lro-store", "lro-core"));
    assert!(graph.reaches("lro-store", "object_store"));
    assert!(
        !graph.reaches("lro-core", "lro-store"),
        "lro-core depends on lro-store"
    );
    for krate in ["lro-tower", "lro-proxy", "lro-cli", "rmcp"] {
        assert!(
            !graph.reaches("lro-store", krate),
            "lro-store depends on {krate}"
        );
    }
}

#[test]
fn client_configuration_editing_is_a_leaf_without_mcp() {
    let graph = Graph::load();
    // `lro install` edits files of other programs: it knows their formats,
    // not MCP, and no crate of the offload path depends on it.
    let ours: Vec<&String> = graph.reach["lro-install"]
        .iter()
        .filter(|d| graph.members.contains(*d))
        .collect();
    assert!(ours.is_empty(), "lro-install depends on {ours:?}");
    assert!(!graph.reaches("lro-install", "rmcp"));
    assert!(graph.reaches("lro-cli", "lro-install"));
}

#[test]
fn a_plain_layer_builds_no_s3_or_http_client() {
    // `cargo add lro-tower` without features: the shared store's S3 client
    // (object_store, reqwest, rustls over aws-lc) and the context tools'
    // summariser come only with the `store` and `context` features.
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            "wrap-your-server",
            "-e",
            "normal",
        ])
        .args(["--prefix", "none", "--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = tree.lines().filter_map(|l| l.split(' ').next()).collect();
    assert!(names.contains(&"lro-tower"), "{tree}");
    for heavy in [
        "object_store",
        "reqwest",
        "aws-lc-rs",
        "hyper",
        "lro-context",
    ] {
        assert!(!names.contains(&heavy), "wrap-your-server builds {heavy}");
    }
}

#[test]
fn the_memory_corpus_is_data_only_and_only_the_demo_uses_it() {
    let graph = Graph::load();
    // The demo's memories are test and demo data: lro-corpus reaches no
    // workspace crate but lro-core (for `Detail`) and no runtime or MCP, and
    // no crate but the memory-server depends on it (lro-extract's tests and
    // benches and lro-tower's benches take it as a dev-dependency, which this
    // graph leaves out).
    let ours: Vec<&String> = graph.reach["lro-corpus"]
        .iter()
        .filter(|d| graph.members.contains(*d))
        .collect();
    assert_eq!(ours, ["lro-core"], "lro-corpus depends on {ours:?}");
    for forbidden in ["tokio", "rmcp"] {
        assert!(
            !graph.reaches("lro-corpus", forbidden),
            "lro-corpus depends on {forbidden}"
        );
    }
    for member in &graph.members {
        if member != "memory-server" && member != "lro-corpus" {
            assert!(
                !graph.reaches(member, "lro-corpus"),
                "{member} depends on lro-corpus"
            );
        }
    }
    assert!(graph.reaches("memory-server", "lro-corpus"));
}

#[test]
fn the_upstream_description_is_a_leaf_the_proxy_and_the_auditor_share() {
    let graph = Graph::load();
    // What `lro proxy` forwards to and `lro audit` judges is one type: a
    // command or a URL, data only. It reaches no workspace crate, runtime or
    // MCP, so sharing it shares no judgement.
    let ours: Vec<&String> = graph.reach["lro-upstream"]
        .iter()
        .filter(|d| graph.members.contains(*d))
        .collect();
    assert!(ours.is_empty(), "lro-upstream depends on {ours:?}");
    for forbidden in ["tokio", "rmcp"] {
        assert!(
            !graph.reaches("lro-upstream", forbidden),
            "lro-upstream depends on {forbidden}"
        );
    }
    for user in ["lro-proxy", "lro-audit"] {
        assert!(graph.reaches(user, "lro-upstream"), "{user}");
    }
}
