//! The upstream metrics of the catalogue (`lro_upstream_*`), recorded
//! through the `metrics` facade.

use std::{
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

use lro_core::metric::{self, UpstreamErrorCode, UpstreamExit, UpstreamMethod};
use metrics::{counter, gauge, histogram};

/// The label of a forwarded request's method.
pub(crate) fn method_label(method: &str) -> UpstreamMethod {
    match method {
        "initialize" => UpstreamMethod::Initialize,
        "tools/call" => UpstreamMethod::ToolsCall,
        "tools/list" => UpstreamMethod::ToolsList,
        "resources/list" | "resources/templates/list" | "resources/read" => {
            UpstreamMethod::Resources
        }
        "prompts/list" | "prompts/get" => UpstreamMethod::Prompts,
        "sampling/createMessage" | "elicitation/create" | "roots/list" => {
            UpstreamMethod::ClientRequest
        }
        _ => UpstreamMethod::Other,
    }
}

pub(crate) fn request_done(method: UpstreamMethod, took: Duration) {
    histogram!(metric::UPSTREAM_REQUEST_DURATION_SECONDS, "method" => method.as_str())
        .record(took.as_secs_f64());
}

pub(crate) fn request_failed(method: UpstreamMethod, code: UpstreamErrorCode) {
    counter!(metric::UPSTREAM_ERRORS_TOTAL, "method" => method.as_str(), "code" => code.as_str())
        .increment(1);
}

/// Upstream sessions open in this process, for the `up` gauge.
static OPEN: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn session_opened(restart: bool) {
    OPEN.fetch_add(1, Ordering::Relaxed);
    gauge!(metric::UPSTREAM_UP).set(1.0);
    gauge!(metric::UPSTREAM_SESSIONS).increment(1.0);
    if restart {
        counter!(metric::UPSTREAM_RESTARTS_TOTAL).increment(1);
    }
}

pub(crate) fn session_closed() {
    OPEN.fetch_sub(1, Ordering::Relaxed);
    gauge!(metric::UPSTREAM_SESSIONS).decrement(1.0);
}

pub(crate) fn connect_failed() {
    gauge!(metric::UPSTREAM_UP).set(0.0);
}

/// A session ended. A loss takes `up` to 0 only when it was the last open
/// session: behind `--http`, one child's crash says nothing of the others.
pub(crate) fn upstream_exit(reason: UpstreamExit) {
    counter!(metric::UPSTREAM_EXITS_TOTAL, "reason" => reason.as_str()).increment(1);
    // The lost session is still counted open when its loss is reported.
    if reason != UpstreamExit::Shutdown && OPEN.load(Ordering::Relaxed) <= 1 {
        gauge!(metric::UPSTREAM_UP).set(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_map_to_the_closed_set() {
        assert_eq!(method_label("tools/call"), UpstreamMethod::ToolsCall);
        assert_eq!(
            method_label("resources/templates/list"),
            UpstreamMethod::Resources
        );
        assert_eq!(
            method_label("elicitation/create"),
            UpstreamMethod::ClientRequest
        );
        assert_eq!(method_label("x/custom"), UpstreamMethod::Other);
    }
}
