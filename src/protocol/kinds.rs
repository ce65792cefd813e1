//! Small closed sets of names the protocol uses: log levels and the lists a
//! server can announce changes of. Enums, so a typo is a compile error.

use serde::{Deserialize, Serialize};

/// A log level (RFC 5424 severities, as `logging/setLevel` names them),
/// least severe first, so levels compare by severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// The level's wire name (`"info"` …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    /// Reads a wire name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        crate::json::from_value(serde_json::Value::String(name.to_string())).ok()
    }
}

/// A list whose changes clients can subscribe to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
}

impl ListKind {
    /// The list's wire name (`"tools"` …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Prompts => "prompts",
            Self::Resources => "resources",
        }
    }

    /// The `notifications/<kind>/list_changed` method.
    pub fn notification_method(self) -> String {
        format!("notifications/{}/list_changed", self.as_str())
    }

    /// The kind a `notifications/<kind>/list_changed` method names.
    pub fn from_notification(method: &str) -> Option<Self> {
        let kind = method
            .strip_prefix("notifications/")?
            .strip_suffix("/list_changed")?;
        crate::json::from_value(serde_json::Value::String(kind.to_string())).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_compare_by_severity_and_round_trip_their_names() {
        assert!(LogLevel::Debug < LogLevel::Warning);
        assert_eq!(LogLevel::parse("critical"), Some(LogLevel::Critical));
        assert_eq!(LogLevel::parse("loud"), None);
        assert_eq!(LogLevel::Notice.as_str(), "notice");
    }

    #[test]
    fn list_kinds_map_to_and_from_their_notifications() {
        let m = ListKind::Prompts.notification_method();
        assert_eq!(m, "notifications/prompts/list_changed");
        assert_eq!(ListKind::from_notification(&m), Some(ListKind::Prompts));
        assert_eq!(
            ListKind::from_notification("notifications/x/list_changed"),
            None
        );
    }
}
