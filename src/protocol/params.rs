//! A request's params, typed by its method: read once, as the message is
//! parsed ([`super::parse_message`]), into the fields the server acts on.
//! A handler matches a variant; it never looks a key up in a map.
//!
//! Each variant keeps what the code before it accepted: a field the
//! method needs is strict (a wrong type is `-32602` with serde's words),
//! and a field the protocol lets a client get wrong without failing the
//! request stays lenient (a retry's `inputResponses` that is not an
//! object asks again; a `requestState` that is not a string is a refused
//! state, `-32026`, like any other bad state).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::method::Method;
use crate::error::McpError;

/// A request's params, by what its method reads.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientRequest {
    /// `tools/call`, `prompts/get`, `tools/callSaga`: a named target.
    Call(CallParams),
    /// `resources/read`: a resource by its URI, a call like the others.
    Read(ReadParams),
    /// `resources/subscribe`, `resources/unsubscribe`, `skills/get`,
    /// `resources/directory/read`: a URI.
    Uri(UriParams),
    /// `tasks/get`, `tasks/update`, `tasks/cancel`.
    Task(TaskParams),
    /// `tools/resumeSaga`.
    ResumeSaga(ResumeSagaParams),
    /// `completion/complete`.
    Complete(Box<CompleteParams>),
    /// `subscriptions/listen`.
    Listen(ListenParams),
    /// `logging/setLevel`.
    SetLevel(SetLevelParams),
    /// `initialize`.
    Initialize(InitializeParams),
    /// `requests/getStatus` and `requests/resume` (the resumable-requests seed).
    Resumable(ResumableParams),
    /// A method whose params the server does not read (the lists, `ping`,
    /// `server/discover`, `skills/list`) or does not know.
    Bare,
    /// Params the method's shape refuses: `-32602` when it is served.
    Invalid(String),
}

/// A retry's sealed state, as sent.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// A string: a token to open.
    Token(String),
    /// Anything else: refused as a malformed state.
    Malformed,
}

/// `tools/call`, `prompts/get`, `tools/callSaga`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallParams {
    /// The tool or prompt.
    pub name: String,
    /// Its arguments (absent or `null`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// A retry's sealed state (MRTR).
    #[serde(
        default,
        deserialize_with = "state",
        serialize_with = "state_out",
        skip_serializing_if = "Option::is_none"
    )]
    pub request_state: Option<State>,
    /// A retry's answers (MRTR); one that is not an object is none.
    #[serde(
        default,
        deserialize_with = "lenient_object",
        skip_serializing_if = "Option::is_none"
    )]
    pub input_responses: Option<Map<String, Value>>,
}

/// `resources/read`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadParams {
    /// The resource.
    pub uri: String,
    /// A retry's sealed state.
    #[serde(default, deserialize_with = "state")]
    pub request_state: Option<State>,
    /// A retry's answers.
    #[serde(default, deserialize_with = "lenient_object")]
    pub input_responses: Option<Map<String, Value>>,
}

/// A method that names a URI and nothing else.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UriParams {
    /// The resource, skill or directory.
    pub uri: String,
}

/// `tasks/get`, `tasks/update`, `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskParams {
    /// The task.
    pub task_id: String,
    /// `tasks/update`'s answers, as sent (that method requires an object).
    #[serde(default)]
    pub input_responses: Option<Value>,
}

/// `tools/resumeSaga`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeSagaParams {
    /// The saga's sealed state.
    pub saga_token: String,
    /// `[{stepId, result | error}]`, as sent (read by the saga wire).
    #[serde(default)]
    pub completed_steps: Option<Value>,
}

/// `completion/complete`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CompleteParams {
    /// `{type: "ref/prompt", name}` or `{type: "ref/resource", uri}`.
    #[serde(rename = "ref")]
    pub reference: CompleteRef,
    /// The argument being completed.
    pub argument: CompleteArgument,
    /// The other arguments already given.
    #[serde(default)]
    pub context: Option<CompleteContext>,
}

/// What a completion is for.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CompleteRef {
    /// `ref/prompt` or `ref/resource`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The prompt (`ref/prompt`).
    #[serde(default)]
    pub name: Option<String>,
    /// The template (`ref/resource`).
    #[serde(default)]
    pub uri: Option<String>,
}

/// The argument a completion is asked for.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CompleteArgument {
    /// Its name.
    pub name: String,
    /// What the user typed so far (anything but a string: nothing).
    #[serde(default, deserialize_with = "lenient_string")]
    pub value: Option<String>,
}

/// A completion's context.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CompleteContext {
    /// The other arguments already given.
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
}

/// `subscriptions/listen`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ListenParams {
    /// The notifications asked for.
    #[serde(default)]
    pub notifications: Option<Map<String, Value>>,
}

/// `logging/setLevel`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SetLevelParams {
    /// The lowest level to send.
    pub level: String,
}

/// `initialize` (both fields lenient: a session starts on the default).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The version the client asks for.
    #[serde(default, deserialize_with = "lenient_string")]
    pub protocol_version: Option<String>,
    /// The client's capabilities.
    #[serde(default)]
    pub capabilities: Option<Value>,
}

/// `requests/getStatus {requestId, resumeToken}` and `requests/resume
/// {resumeToken}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumableParams {
    /// The request asked about (`requests/getStatus`).
    #[serde(default)]
    pub request_id: Option<Value>,
    /// The token that proves the asker made it.
    #[serde(default, deserialize_with = "lenient_string")]
    pub resume_token: Option<String>,
}

impl ClientRequest {
    /// Reads `params` (with `_meta` already taken out) by `method`'s shape.
    pub fn read(method: Option<Method>, params: Map<String, Value>) -> Self {
        use Method::*;
        let Some(method) = method else {
            return Self::Bare;
        };
        match method {
            ToolsCall | PromptsGet | ToolsCallSaga => typed(params, Self::Call),
            ResourcesRead => typed(params, Self::Read),
            ResourcesSubscribe | ResourcesUnsubscribe | SkillsGet | ResourcesDirectoryRead => {
                typed(params, Self::Uri)
            }
            TasksGet | TasksUpdate | TasksCancel => typed(params, Self::Task),
            ToolsResumeSaga => typed(params, Self::ResumeSaga),
            CompletionComplete => typed(params, Self::Complete),
            SubscriptionsListen => typed(params, Self::Listen),
            LoggingSetLevel => typed(params, Self::SetLevel),
            Initialize => typed(params, Self::Initialize),
            RequestsGetStatus | RequestsResume => typed(params, Self::Resumable),
            Ping
            | ServerDiscover
            | ToolsList
            | PromptsList
            | ResourcesList
            | ResourcesTemplatesList
            | SkillsList => Self::Bare,
        }
    }

    /// The params refused, as the error a handler answers with.
    pub fn refused(&self) -> Option<McpError> {
        match self {
            Self::Invalid(why) => Some(McpError::invalid_params(format!("Invalid params: {why}"))),
            _ => None,
        }
    }

    /// The error a handler answers when these params are not its
    /// method's shape.
    pub fn unusable(&self) -> McpError {
        self.refused()
            .unwrap_or_else(|| McpError::invalid_params("Invalid params"))
    }

    /// The URI a `resources/subscribe`, `resources/unsubscribe`,
    /// `skills/get` or `resources/directory/read` names.
    pub fn uri(&self) -> Result<&str, McpError> {
        match self {
            Self::Uri(p) => Ok(&p.uri),
            other => Err(other.unusable()),
        }
    }

    /// The params of a named call (`tools/call`, `prompts/get`,
    /// `tools/callSaga`), or the error its request is answered with.
    pub fn as_call(&self) -> Result<&CallParams, McpError> {
        match self {
            Self::Call(p) => Ok(p),
            other => Err(other.unusable()),
        }
    }

    /// The value of the field `Mcp-Name` mirrors ([`Method::mirrored`]).
    pub fn mirrored(&self) -> Option<&str> {
        match self {
            Self::Call(p) => Some(&p.name),
            Self::Read(p) => Some(&p.uri),
            Self::Task(p) => Some(&p.task_id),
            _ => None,
        }
    }

    /// A retry's sealed state and answers, for the methods that run a call.
    pub fn retry(&self) -> (Option<&State>, Option<&Map<String, Value>>) {
        match self {
            Self::Call(p) => (p.request_state.as_ref(), p.input_responses.as_ref()),
            Self::Read(p) => (p.request_state.as_ref(), p.input_responses.as_ref()),
            _ => (None, None),
        }
    }
}

/// `params` read into `T`, or the reason it cannot be.
// Not inlined: `read` is one arm per method, and each shape's reader
// inlined into it (by LLVM, then by wasm-opt, which inlines a function with
// one caller whatever its size unless a worker limits it, as the
// quickstart's Cargo.toml does) made one 16 KB function, which V8 compiles
// whole on an isolate's first request, whichever method that request is.
#[inline(never)]
fn typed<T: serde::de::DeserializeOwned>(
    params: Map<String, Value>,
    wrap: fn(T) -> ClientRequest,
) -> ClientRequest {
    match crate::json::from_value(Value::Object(params)) {
        Ok(p) => wrap(p),
        Err(e) => ClientRequest::Invalid(e.to_string()),
    }
}

impl State {
    /// A state as sent (`null`: none).
    pub fn read(v: &Value) -> Option<Self> {
        match v {
            Value::Null => None,
            Value::String(s) => Some(Self::Token(s.clone())),
            _ => Some(Self::Malformed),
        }
    }
}

fn state<'de, D: Deserializer<'de>>(d: D) -> Result<Option<State>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(State::Token(s)),
        v => State::read(&v),
    })
}

fn state_out<S: serde::Serializer>(state: &Option<State>, s: S) -> Result<S::Ok, S::Error> {
    match state {
        Some(State::Token(t)) => s.serialize_str(t),
        _ => s.serialize_none(),
    }
}

fn lenient_object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Map<String, Value>>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Object(m) => Some(m),
        _ => None,
    })
}

fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(method: Method, params: Value) -> ClientRequest {
        let Value::Object(m) = params else { panic!() };
        ClientRequest::read(Some(method), m)
    }

    #[test]
    fn a_call_reads_its_fields_and_keeps_the_lenient_ones_lenient() {
        let ClientRequest::Call(p) = read(
            Method::ToolsCall,
            json!({"name": "add", "arguments": {"a": 1}, "requestState": 7, "inputResponses": "x"}),
        ) else {
            panic!("a call")
        };
        assert_eq!(p.name, "add");
        assert_eq!(p.arguments, json!({"a": 1}).as_object().cloned());
        assert_eq!(p.request_state, Some(State::Malformed));
        assert_eq!(p.input_responses, None, "not an object: no answers");
        let r = read(Method::ToolsCall, json!({"name": "add", "arguments": null}));
        assert!(matches!(
            r,
            ClientRequest::Call(CallParams {
                arguments: None,
                ..
            })
        ));
    }

    #[test]
    fn a_wrong_shape_is_refused_with_its_reason() {
        for (m, p) in [
            (Method::ToolsCall, json!({})),
            (Method::ToolsCall, json!({"name": 3})),
            (Method::ToolsCall, json!({"name": "a", "arguments": [1]})),
            (Method::ResourcesRead, json!({"uri": null})),
            (Method::TasksGet, json!({"taskId": {}})),
            (
                Method::CompletionComplete,
                json!({"ref": {"type": "ref/prompt"}}),
            ),
        ] {
            let r = read(m, p.clone());
            let e = r.refused().unwrap_or_else(|| panic!("{m} {p} refused"));
            assert_eq!(e.kind, crate::error::ErrorKind::InvalidParams);
            assert!(e.message.starts_with("Invalid params: "), "{}", e.message);
        }
        assert_eq!(
            read(Method::ToolsList, json!({"cursor": 5})),
            ClientRequest::Bare
        );
    }

    #[test]
    fn the_mirrored_field_is_read_from_the_typed_params() {
        assert_eq!(
            read(Method::TasksCancel, json!({"taskId": "t1"})).mirrored(),
            Some("t1")
        );
        assert_eq!(
            read(Method::ResourcesRead, json!({"uri": "x://y"})).mirrored(),
            Some("x://y")
        );
        assert_eq!(read(Method::ToolsList, json!({})).mirrored(), None);
    }

    #[test]
    fn a_call_writes_back_what_it_read() {
        let params = json!({"name": "t", "arguments": {"q": [1]}, "requestState": "s"});
        let ClientRequest::Call(p) = read(Method::ToolsCall, params.clone()) else {
            panic!()
        };
        assert_eq!(serde_json::to_value(&p).unwrap_or_default(), params);
    }
}
