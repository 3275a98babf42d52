//! Helpers shared by the telemetry tests.

#![allow(dead_code, unreachable_pub)]

use std::{path::PathBuf, time::Duration};

use lro_core::event::Offloaded;

/// The offload both exporters are checked against: 120 records of
/// `recall_memories`, 48 000 bytes, 5 000 tokens replaced by 600, written in
/// 3 ms.
pub fn sample_offloaded() -> Offloaded {
    let path = PathBuf::from("/tmp/atlatl-recall-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl");
    Offloaded::new("recall_memories", "recall", path)
        .records(120)
        .bytes(48_000)
        .estimated_tokens(5_000)
        .descriptor_tokens(600)
        .write_duration(Duration::from_millis(3))
}
