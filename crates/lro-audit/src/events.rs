//! Where the spec's events are observed: the server's stderr, where the
//! event name may be written in any case style (`OffloadWriteFailed`,
//! `offload_write_failed`, `offload-write-failed`), or a Prometheus
//! endpoint, where a counter series naming the event grows.

use std::{collections::BTreeMap, sync::LazyLock, time::Duration};

use regex::Regex;

/// One of the spec's two observability events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// `OffloadWriteFailed`: a write failed and the result was truncated.
    WriteFailed,
    /// `OffloadFileExpired`: cleanup deleted an expired file.
    FileExpired,
}

impl Event {
    /// The spec's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::WriteFailed => "OffloadWriteFailed",
            Self::FileExpired => "OffloadFileExpired",
        }
    }

    /// Word stems a metric series of this event carries in its name or
    /// labels, after [`squash`]: `lro_offload_write_failures_total` and
    /// `…{event="offload_file_expired"}` both count.
    fn stems(self) -> [&'static str; 2] {
        match self {
            Self::WriteFailed => ["write", "fail"],
            Self::FileExpired => ["expire", "file"],
        }
    }
}

/// Lowercase letters and digits only: every case style of a name becomes
/// the same word (`OffloadWriteFailed`, `offload_write_failed` →
/// `offloadwritefailed`).
fn squash(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// ANSI colour sequences, which log formatters put between words.
static ANSI: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\x1b\[[0-9;]*[A-Za-z]").expect("valid"));

/// The stderr line that names `event`, if any.
pub(crate) fn in_stderr(stderr: &str, event: Event) -> Option<String> {
    let word = squash(event.name());
    stderr
        .lines()
        .map(|l| ANSI.replace_all(l, "").into_owned())
        .find(|l| squash(l).contains(&word))
}

/// The samples of a Prometheus text exposition: series (name and labels,
/// as written) to value.
pub(crate) type Samples = BTreeMap<String, f64>;

/// Scrapes `url`; `None` when it cannot be read.
pub(crate) async fn scrape(url: &str) -> Option<Samples> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .ok()?;
    let text = client.get(url).send().await.ok()?.text().await.ok()?;
    Some(parse(&text))
}

fn parse(text: &str) -> Samples {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            // The value follows the series: after the labels' `}` if any.
            let split = l.rfind('}').map_or_else(|| l.find(' '), |i| Some(i + 1))?;
            let (series, rest) = l.split_at(split);
            let value = rest.split_whitespace().next()?.parse().ok()?;
            Some((series.trim().to_owned(), value))
        })
        .collect()
}

/// The series naming `event` whose value grew from `before` to `after`.
pub(crate) fn in_metrics(before: &Samples, after: &Samples, event: Event) -> Option<String> {
    let stems = event.stems();
    after.iter().find_map(|(series, &value)| {
        let name = squash(series);
        let grew = value > before.get(series).copied().unwrap_or(0.0);
        (grew && stems.iter().all(|s| name.contains(s))).then(|| format!("{series} {value}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_in_any_case_style() {
        let log =
            "INFO start\n\x1b[33mWARN\x1b[0m \x1b[3mevent\x1b[0m=offload_write_failed tool=x\n";
        assert!(
            in_stderr(log, Event::WriteFailed)
                .unwrap()
                .contains("offload_write_failed")
        );
        assert!(in_stderr("OffloadFileExpired path=/x", Event::FileExpired).is_some());
        assert!(in_stderr("offload-file-expired", Event::FileExpired).is_some());
        assert!(in_stderr("offload written", Event::WriteFailed).is_none());
    }

    #[test]
    fn metrics_must_grow() {
        let before = parse("# HELP x\nlro_offload_write_failures_total{tool=\"a\"} 0\n");
        let after =
            parse("lro_offload_write_failures_total{tool=\"a\"} 1\nlro_files_expired_total 3\n");
        assert!(in_metrics(&before, &after, Event::WriteFailed).is_some());
        // A series absent before counts from zero.
        assert!(in_metrics(&before, &after, Event::FileExpired).is_some());
        assert!(in_metrics(&after, &after, Event::WriteFailed).is_none());
    }
}
