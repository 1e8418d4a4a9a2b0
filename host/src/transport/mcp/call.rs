//! One `tools/call` of the core's to the MCP server, as rmcp's `call_tool` makes it but
//! with its progress token known: while it waits, the server's progress for that token
//! is the call's ([`Tokens`]); dropped before its answer (the core cancelled it), it
//! sends `notifications/cancelled`.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The core's call id of each `tools/call` waiting, by its progress token.
#[derive(Clone, Default)]
pub(super) struct Tokens(Arc<Mutex<HashMap<ProgressToken, String>>>);

impl Tokens {
    /// The call whose progress token is `token`, if it still waits.
    pub(super) fn call_of(&self, token: &ProgressToken) -> Option<String> {
        self.0.lock().unwrap().get(token).cloned()
    }
}

/// Calls the tool of `params` for the core's call `id`.
pub(super) async fn call(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    tokens: &Tokens,
    id: &str,
) -> Result<CallToolResult, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    let mut waiting = Waiting {
        peer,
        tokens,
        token: handle.progress_token.clone(),
        request: Some(handle.id.clone()),
    };
    tokens
        .0
        .lock()
        .unwrap()
        .insert(waiting.token.clone(), id.to_string());
    let answer = handle.await_response().await;
    waiting.request = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(result),
        // A result without `content` (rmcp reads `{}` as empty).
        ServerResult::EmptyResult(_) => Ok(CallToolResult::success(Vec::new())),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A `tools/call` waiting: forgets its token when it ends, and cancels the request if
/// it ends unanswered.
struct Waiting<'a> {
    peer: &'a Peer<RoleClient>,
    tokens: &'a Tokens,
    token: ProgressToken,
    /// Set until the answer came.
    request: Option<RequestId>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.tokens.0.lock().unwrap().remove(&self.token);
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
