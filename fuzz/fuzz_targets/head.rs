//! `lro_stdio::line::head_of` on any bytes: on a JSON object it reads the
//! `id` rmcp reads and sees the `method`; cut at any byte it reads that id
//! or none.

#![no_main]

use libfuzzer_sys::fuzz_target;
use lro_core::records::scan::Members;
use lro_stdio::line::head_of;
use rmcp::model::RequestId;

fuzz_target!(|data: &[u8]| {
    let full = head_of(data);
    let Ok(Members(members)) = serde_json::from_slice::<Members<'_>>(data) else {
        return;
    };
    let ids: Vec<_> = members.iter().filter(|(k, _)| k == "id").collect();
    // Which of two ids a reader takes is no rule.
    if ids.len() > 1 {
        return;
    }
    let id = ids
        .first()
        .and_then(|(_, v)| serde_json::from_str::<RequestId>(v.get()).ok());
    assert_eq!(full.id, id, "id");
    if id.is_some() || ids.is_empty() {
        assert_eq!(
            full.method,
            members.iter().any(|(k, _)| k == "method"),
            "method"
        );
    }
    // Every byte of a short message, about 512 cuts of a long one.
    for cut in (0..data.len()).step_by((data.len() / 512).max(1)) {
        let head = head_of(&data[..cut]);
        assert!(head.id.is_none() || head.id == id, "cut at {cut}");
    }
});
