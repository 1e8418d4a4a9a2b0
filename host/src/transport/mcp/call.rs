//! One `tools/call` of the core's to the MCP server, as rmcp's `call_tool` makes it but
//! with the core's call id as its progress token (rmcp gives every request one of its
//! own: the id rides in [`CALL_KEY`] of `_meta`, and the wire, [`with_call_token`], puts
//! it in place as the request goes out, so the server's progress names the call before
//! any answer can come); dropped before its answer (the core cancelled it), it sends
//! `notifications/cancelled`.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, GetMeta as _, NumberOrString, ProgressToken, RequestId, RequestMetaObject,
    ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError, TxJsonRpcMessage};
use serde_json::Value;

/// The `_meta` key that carries the core's call id from [`call`] to the wire.
const CALL_KEY: &str = "zot/call";

/// Calls the tool of `params` for the core's call `id`.
pub(super) async fn call(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    id: &str,
) -> Result<CallToolResult, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let mut meta = RequestMetaObject::new();
    meta.0
         .0
        .insert(CALL_KEY.into(), Value::String(id.to_string()));
    let options = PeerRequestOptions::no_options().with_meta(meta);
    let handle = peer.send_request_with_option(request, options).await?;
    let mut waiting = Waiting {
        peer,
        request: Some(handle.id.clone()),
    };
    let answer = handle.await_response().await;
    waiting.request = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(result),
        // A result without `content` (rmcp reads `{}` as empty).
        ServerResult::EmptyResult(_) => Ok(CallToolResult::success(Vec::new())),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// `message` as it goes to the server: a `tools/call` of [`call`] with the core's call
/// id as its progress token, in place of rmcp's, and without [`CALL_KEY`].
pub(super) fn with_call_token(
    mut message: TxJsonRpcMessage<RoleClient>,
) -> TxJsonRpcMessage<RoleClient> {
    if let rmcp::model::JsonRpcMessage::Request(request) = &mut message {
        if matches!(request.request, ClientRequest::CallToolRequest(_)) {
            let meta = request.request.get_meta_mut();
            if let Some(Value::String(id)) = meta.0 .0.remove(CALL_KEY) {
                meta.set_progress_token(ProgressToken(NumberOrString::String(id.into())));
            }
        }
    }
    message
}

/// The call of the core's id in a progress token of [`with_call_token`]'s.
pub(super) fn call_of(token: &ProgressToken) -> Option<&str> {
    match &token.0 {
        NumberOrString::String(id) => Some(id),
        NumberOrString::Number(_) => None,
    }
}

/// A `tools/call` waiting: cancels the request if it ends unanswered.
struct Waiting<'a> {
    peer: &'a Peer<RoleClient>,
    /// Set until the answer came.
    request: Option<RequestId>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let Some(request) = self.request.take() else {
            return;
        };
        let peer = self.peer.clone();
        let cancel = CancelledNotificationParam::new(
            Some(request),
            Some("the host cancelled the call".into()),
        );
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { peer.notify_cancelled(cancel).await });
        }
    }
}
