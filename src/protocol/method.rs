//! Every method a client may send, named once: its wire name, the body
//! field its `Mcp-Name` header mirrors, the era that has it, and where a
//! Worker serves it. A request's method is read into a [`Method`] when the
//! message is parsed ([`super::Request::kind`]); the code after that
//! matches on the enum, never on the string.

/// A client-to-server method this server knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `initialize` (2025-11-25 sessions).
    Initialize,
    /// `ping` (2025-11-25 sessions).
    Ping,
    /// `server/discover` (2026-07-28).
    ServerDiscover,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `tools/callSaga` (the saga seed).
    ToolsCallSaga,
    /// `tools/resumeSaga` (the saga seed).
    ToolsResumeSaga,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourcesTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `resources/subscribe` (2025-11-25 sessions).
    ResourcesSubscribe,
    /// `resources/unsubscribe` (2025-11-25 sessions).
    ResourcesUnsubscribe,
    /// `resources/directory/read` (the skills extension).
    ResourcesDirectoryRead,
    /// `completion/complete`.
    CompletionComplete,
    /// `logging/setLevel` (2025-11-25 sessions).
    LoggingSetLevel,
    /// `subscriptions/listen` (2026-07-28).
    SubscriptionsListen,
    /// `tasks/get` (the tasks extension).
    TasksGet,
    /// `tasks/update` (the tasks extension).
    TasksUpdate,
    /// `tasks/cancel` (the tasks extension).
    TasksCancel,
    /// `skills/list` (the skills extension).
    SkillsList,
    /// `skills/get` (the skills extension).
    SkillsGet,
    /// `requests/getStatus` (the resumable-requests seed, sessions).
    RequestsGetStatus,
    /// `requests/resume` (the resumable-requests seed, sessions).
    RequestsResume,
}

/// Which protocol era has a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// Both 2025-11-25 sessions and 2026-07-28 requests.
    Both,
    /// 2025-11-25 sessions only: 2026-07-28 removed it.
    Session,
    /// 2026-07-28 only (or a seed wire beside it): a session does not serve it.
    Modern,
    /// A seed served on sessions only (resumable requests); 2026-07-28
    /// never had it.
    SessionSeed,
}

/// Where the Worker sends a request of a method that names no session
/// (a session's requests all go to its object).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home {
    /// Served in the stateless Worker.
    Worker,
    /// In a durable call's object when its tool is durable, else the Worker.
    Call,
    /// In the task's object its `taskId` names.
    Task,
    /// In a listen hub.
    Hub,
    /// In a new session's object (`initialize` without 2026 `_meta`).
    Session,
}

use Method::*;

/// Each method with its wire name: the one place a name is written.
const NAMES: [(Method, &str); 25] = [
    (Initialize, "initialize"),
    (Ping, "ping"),
    (ServerDiscover, "server/discover"),
    (ToolsList, "tools/list"),
    (ToolsCall, "tools/call"),
    (ToolsCallSaga, "tools/callSaga"),
    (ToolsResumeSaga, "tools/resumeSaga"),
    (PromptsList, "prompts/list"),
    (PromptsGet, "prompts/get"),
    (ResourcesList, "resources/list"),
    (ResourcesTemplatesList, "resources/templates/list"),
    (ResourcesRead, "resources/read"),
    (ResourcesSubscribe, "resources/subscribe"),
    (ResourcesUnsubscribe, "resources/unsubscribe"),
    (ResourcesDirectoryRead, "resources/directory/read"),
    (CompletionComplete, "completion/complete"),
    (LoggingSetLevel, "logging/setLevel"),
    (SubscriptionsListen, "subscriptions/listen"),
    (TasksGet, "tasks/get"),
    (TasksUpdate, "tasks/update"),
    (TasksCancel, "tasks/cancel"),
    (SkillsList, "skills/list"),
    (SkillsGet, "skills/get"),
    (RequestsGetStatus, "requests/getStatus"),
    (RequestsResume, "requests/resume"),
];

impl Method {
    /// The method named `name`, if this server knows it.
    pub fn parse(name: &str) -> Option<Self> {
        NAMES.iter().find(|(_, n)| *n == name).map(|(m, _)| *m)
    }

    /// Its name on the wire.
    pub fn name(self) -> &'static str {
        // Every variant is in the table (a test holds it to that).
        NAMES
            .iter()
            .find(|(m, _)| *m == self)
            .map_or("", |(_, n)| n)
    }

    /// The params field `Mcp-Name` mirrors (2026-07-28), if any.
    pub fn mirrored(self) -> Option<&'static str> {
        match self {
            ToolsCall | PromptsGet => Some("name"),
            ResourcesRead => Some("uri"),
            TasksGet | TasksUpdate | TasksCancel => Some("taskId"),
            _ => None,
        }
    }

    /// Which era has it.
    pub fn era(self) -> Era {
        match self {
            Initialize | Ping | LoggingSetLevel | ResourcesSubscribe | ResourcesUnsubscribe => {
                Era::Session
            }
            RequestsGetStatus | RequestsResume => Era::SessionSeed,
            ServerDiscover | SubscriptionsListen | ToolsCallSaga | ToolsResumeSaga => Era::Modern,
            _ => Era::Both,
        }
    }

    /// Where a request of it that names no session is served.
    pub fn home(self) -> Home {
        match self {
            ToolsCall | ToolsCallSaga | ToolsResumeSaga => Home::Call,
            TasksGet | TasksUpdate | TasksCancel => Home::Task,
            SubscriptionsListen => Home::Hub,
            Initialize => Home::Session,
            _ => Home::Worker,
        }
    }

    /// A call of something the server offers: a tool, a prompt, a resource
    /// (each runs as a call that may pause).
    pub fn is_call(self) -> bool {
        matches!(self, ToolsCall | PromptsGet | ResourcesRead)
    }

    /// One of the saga seed's two methods.
    pub fn is_saga(self) -> bool {
        matches!(self, ToolsCallSaga | ToolsResumeSaga)
    }

    /// One of the tasks extension's methods.
    pub fn is_task(self) -> bool {
        self.home() == Home::Task
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_has_one_name_that_reads_back() {
        for (m, name) in NAMES {
            assert_eq!(m.name(), name);
            assert_eq!(Method::parse(name), Some(m));
            assert_eq!(NAMES.iter().filter(|(_, n)| *n == name).count(), 1);
        }
        assert_eq!(Method::parse("tools/unknown"), None);
        assert_eq!(Method::parse("Tools/Call"), None, "names are exact");
    }

    #[test]
    fn what_each_method_says_of_itself() {
        assert_eq!(ToolsCall.mirrored(), Some("name"));
        assert_eq!(ResourcesRead.mirrored(), Some("uri"));
        assert_eq!(TasksCancel.mirrored(), Some("taskId"));
        assert_eq!(ToolsList.mirrored(), None);
        assert_eq!(Ping.era(), Era::Session);
        assert_eq!(ServerDiscover.era(), Era::Modern);
        assert_eq!(ToolsCall.era(), Era::Both);
        assert!(TasksGet.is_task() && !ToolsCall.is_task());
        assert!(ToolsResumeSaga.is_saga() && ResourcesRead.is_call());
        assert_eq!(SubscriptionsListen.home(), Home::Hub);
        assert_eq!(ToolsCall.to_string(), "tools/call");
    }
}
