//! Helpers shared by the telemetry tests.

#![allow(dead_code, unreachable_pub)]

use std::{path::PathBuf, time::Duration};

use lro_core::event::Offloaded;

/// The offload both exporters are checked against: 120 records of
/// `recall_memories`, 48 000 bytes, 5 000 tokens replaced by 600, written in
/// 3 ms.
pub fn sample_offloaded() -> Offloaded {
    let path = PathBuf::from("/tmp/atlatl-recall-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl");
    let mut offloaded = Offloaded::new("recall_memories", "recall", path);
    offloaded.records = 120;
    offloaded.bytes = 48_000;
    offloaded.estimated_tokens = 5_000;
    offloaded.descriptor_tokens = 600;
    offloaded.write_duration = Duration::from_millis(3);
    offloaded
}
