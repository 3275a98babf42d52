//! Which MCP wire the auditor speaks to its target, and which one it got.
//!
//! MCP 2026-07-28 has no `initialize`: a client starts with
//! `server/discover` and every request carries the protocol version, client
//! info and capabilities in its `_meta`. Servers of 2025-11-25 and before
//! answer `server/discover` with an error and start with `initialize`. By
//! default the auditor asks for 2026-07-28 and falls back (rmcp's
//! `ClientLifecycleMode::Auto`), so each target is judged over the newest
//! wire it speaks; the report names that wire.

use std::{fmt, str::FromStr};

use rmcp::{model::ProtocolVersion, service::ClientLifecycleMode};
use serde::Serialize;

/// The wire the auditor asks its target for.
///
/// ```
/// use lro_audit::WireMode;
///
/// assert_eq!("2026-07-28".parse::<WireMode>().unwrap(), WireMode::Modern);
/// assert_eq!(WireMode::default().as_str(), "auto");
/// assert!("2024".parse::<WireMode>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WireMode {
    /// `server/discover` at 2026-07-28, and `initialize` at 2025-11-25
    /// when the server answers it as a legacy server does.
    #[default]
    Auto,
    /// 2026-07-28 only: a server that does not speak it is unreachable.
    Modern,
    /// `initialize` only, at 2025-11-25.
    Legacy,
}

impl WireMode {
    /// All modes, as the command line names them.
    pub const ALL: [WireMode; 3] = [WireMode::Auto, WireMode::Modern, WireMode::Legacy];

    /// The name: `auto`, `2026-07-28` or `legacy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Modern => "2026-07-28",
            Self::Legacy => "legacy",
        }
    }

    /// rmcp's lifecycle for this mode.
    pub(crate) fn lifecycle(self) -> ClientLifecycleMode {
        let modern = vec![ProtocolVersion::V_2026_07_28];
        match self {
            Self::Auto => ClientLifecycleMode::Auto {
                preferred_versions: modern,
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            },
            Self::Modern => ClientLifecycleMode::Discover {
                preferred_versions: modern,
            },
            Self::Legacy => ClientLifecycleMode::Initialize,
        }
    }
}

impl fmt::Display for WireMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no [`WireMode`].
#[derive(Debug, thiserror::Error)]
#[error("unknown wire {0:?}: expected auto, 2026-07-28 or legacy")]
pub struct UnknownWire(String);

impl FromStr for WireMode {
    type Err = UnknownWire;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownWire(s.to_owned()))
    }
}

/// The wire an audit spoke: what it asked for and what the target agreed
/// to in the first session (every session is opened the same way).
///
/// In JSON: `{"asked": "auto", "protocol_version": "2026-07-28",
/// "lifecycle": "server/discover"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Wire {
    /// The [`WireMode`] asked for.
    pub asked: &'static str,
    /// The protocol version the session agreed on.
    pub protocol_version: String,
    /// How the session began: `server/discover` (2026-07-28 and later) or
    /// `initialize`.
    pub lifecycle: &'static str,
}

impl Wire {
    /// The wire of a session opened in `asked` that agreed on `version`.
    pub fn new(asked: WireMode, version: &ProtocolVersion) -> Self {
        Self {
            asked: asked.as_str(),
            protocol_version: version.to_string(),
            lifecycle: if version.has_initialize() {
                "initialize"
            } else {
                "server/discover"
            },
        }
    }
}

impl fmt::Display for Wire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MCP {} ({}; --wire {})",
            self.protocol_version, self.lifecycle, self.asked
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wire_names_its_lifecycle_by_its_version() {
        let modern = Wire::new(WireMode::Auto, &ProtocolVersion::V_2026_07_28);
        assert_eq!(
            modern.to_string(),
            "MCP 2026-07-28 (server/discover; --wire auto)"
        );
        let legacy = Wire::new(WireMode::Auto, &ProtocolVersion::V_2025_11_25);
        assert_eq!(legacy.lifecycle, "initialize");
        assert_eq!(
            serde_json::to_value(&legacy).unwrap(),
            serde_json::json!({"asked": "auto", "protocol_version": "2025-11-25", "lifecycle": "initialize"})
        );
        for mode in WireMode::ALL {
            assert_eq!(mode.as_str().parse::<WireMode>().unwrap(), mode);
        }
    }
}
