//! [`Session`]: the MCP server's handler for one client (one stdio
//! connection, one HTTP session, or one stateless HTTP request).

use super::Shared;
use super::approver::ClientApprover;
use super::bounds::Busy;
use super::front::{AbortOnDrop, Front};
use super::resumable::{self, Round};
use super::tools::{call_result, mcp_tool};
use crate::approval::Approver;
use crate::approval::UnattendedApprover;
use crate::call::ToolCall;
use crate::outcome::{Status, ToolOutcome};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest, CustomResult, ErrorCode,
    Implementation, InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, SubscriptionFilter, ToolsCapability,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;

/// What the server tells a client about itself.
const INSTRUCTIONS: &str = "Tools run by toolhost, each call in a fresh WebAssembly sandbox with fuel, time and memory \
     limits. A tool's annotations say its permission level: calls of moderate and sensitive tools may be asked of the \
     user, or denied by the host's policy.";

/// How long a client may take `tools/list` as fresh (2026-07-28's
/// `ttlMs`): a reload may change the list at any moment, and a listener
/// is told at once.
const TOOLS_LIST_TTL_MS: u64 = 10_000;

/// The JSON-RPC error for a request refused while the server is busy: a
/// server error (JSON-RPC reserves -32000 to -32099 for them), not the
/// request's fault.
const SERVER_BUSY: ErrorCode = ErrorCode(-32000);

/// The handler for one client.
#[derive(Clone)]
pub(super) struct Session {
    shared: Arc<Shared>,
    /// Whether the client can be asked anything back: false on a
    /// stateless HTTP server, where nothing carries an answer back.
    can_ask: bool,
    /// The thread a stdio client is served on, where its calls run but
    /// those made at once; `None` where rmcp's task runs each call.
    front: Option<Front>,
    /// Whether the client has initialized, and whether it has been
    /// remembered to be told when the tools change: each once, whatever
    /// it sends again (every `notifications/initialized` added it to the
    /// list once more, without end).
    initialized: Arc<AtomicBool>,
    remembered: Arc<AtomicBool>,
}

impl Session {
    pub(super) fn new(shared: Arc<Shared>, can_ask: bool) -> Self {
        Session { shared, can_ask, front: None, initialized: Arc::default(), remembered: Arc::default() }
    }

    /// The session of a client served on `front`'s thread.
    pub(super) fn on(front: Front, shared: Arc<Shared>) -> Self {
        Session { front: Some(front), ..Session::new(shared, true) }
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> InitializeResult {
        let mut capabilities = ServerCapabilities::builder().enable_tools().build();
        // Only a client the server keeps (stdio, an HTTP session) is told
        // when the tools change.
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(self.can_ask);
        capabilities.tools = Some(tools);
        InitializeResult::new(capabilities)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")).with_title("toolhost"))
            .with_instructions(INSTRUCTIONS)
    }

    /// Every revision up to 2026-07-28, on one endpoint: the handshake
    /// era asks its user through elicitation requests of the server's; the
    /// 2026-07-28 revision, which has none, through `input_required`.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    /// `subscriptions/listen` (2026-07-28): a client may listen for the
    /// tools changing, where the server tells anyone: not on a stateless
    /// HTTP server, which keeps nobody (its `tools.listChanged` is false in
    /// both eras).
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        self.can_ask.then(|| requested.supported_by(&self.get_info().capabilities))
    }

    /// Tell the listener each time its tools may have changed (a reload,
    /// the agent's settings), until it stops listening or the server stops.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // An open subscription holds a stream and a task: it takes a place
        // among the client's subscriptions, so none opens them without end.
        // (rmcp has acknowledged it by now: the refusal is its final answer.)
        let _place = match self.shared.in_flight.listen(&client_key(context.request_context(), false)) {
            Ok(place) => place,
            Err(Busy(why)) => return Err(ErrorData::new(SERVER_BUSY, why, None)),
        };
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        let mut changes = self.shared.tool_changes();
        loop {
            tokio::select! {
                changed = changes.next() => if changed.is_none() { return Ok(()) },
                () = context.cancelled() => return Ok(()),
            }
            match tokio::time::timeout(super::NOTIFY_WITHIN, context.sink().notify_tool_list_changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::debug!("telling an MCP listener its tools changed failed: {error}");
                    return Ok(());
                }
                Err(_) => {
                    tracing::debug!("an MCP listener took no notice of its tools changing within {:?}", super::NOTIFY_WITHIN)
                }
            }
        }
    }

    /// Once a session: a second `initialize` is refused (rmcp's default
    /// took it, and with it any version the client named, even one it
    /// does not know, which then decided the session's era). The version
    /// the session keeps is the one negotiated.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.initialized.swap(true, Ordering::SeqCst) {
            return Err(ErrorData::invalid_request("the client is already initialized: `initialize` is sent once", None));
        }
        let result = self.negotiate_initialize(&request)?;
        let mut negotiated = request;
        negotiated.protocol_version = result.protocol_version.clone();
        context.peer.set_peer_info(negotiated);
        Ok(result)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.can_ask && !self.remembered.swap(true, Ordering::SeqCst) {
            self.shared.remember_peer(context.peer);
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The whole list comes in one page, so no cursor was ever given out.
        if let Some(cursor) = request.and_then(|request| request.cursor) {
            return Err(ErrorData::invalid_params(format!("unknown cursor `{cursor}`: the tool list has one page"), None));
        }
        let catalog = self.shared.pipeline.executor().registry().catalog();
        let tools = catalog
            .tools()
            .filter(|(_, spec)| self.shared.offers(spec))
            .map(|(plugin, spec)| mcp_tool(spec, &plugin.label()))
            .collect();
        // Private: the list is this server's policy for its clients; fresh
        // for a while only, since a reload may change it (a listener is told).
        Ok(ListToolsResult::with_all_items(tools).with_ttl_ms(TOOLS_LIST_TTL_MS).with_cache_scope(CacheScope::Private))
    }

    /// A request rmcp could not read as the method it names. For a method
    /// this server serves, its params are wrong: `-32602`, saying how
    /// (rmcp answered "method not found").
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // Params that read here once the message is a map (a member given
        // twice is then given once) were not read so by rmcp.
        const UNREAD: &str = "they could not be read (a member given twice?)";
        let why = match request.method.as_str() {
            "tools/call" => match request.params_as::<CallToolRequestParams>() {
                Ok(Some(_)) => Some(UNREAD.to_owned()),
                Ok(None) => Some("params with a `name` are required".to_owned()),
                Err(error) => Some(error.to_string()),
            },
            "tools/list" => {
                Some(request.params_as::<PaginatedRequestParams>().err().map_or(UNREAD.to_owned(), |e| e.to_string()))
            }
            _ => None,
        };
        match why {
            Some(why) => Err(ErrorData::invalid_params(format!("invalid params for {}: {why}", request.method), None)),
            None => Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method, None)),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Boxed: the call's future is some 5 KiB, and rmcp's task for the
        // request and tokio's spawning and finishing of it each copied it
        // whole.
        let Some(front) = &self.front else { return Box::pin(self.call(request, context)).await };
        let session = self.clone();
        match front.run(Box::pin(async move { session.call(request, context).await })).await {
            Some(answer) => answer,
            None => Err(ErrorData::internal_error("the server is shutting down: the call was stopped", None)),
        }
    }
}

impl Session {
    /// `tools/call`, wherever it runs.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The version is one the server supports: negotiated, or checked
        // by rmcp where a 2026-07-28 request names it.
        let modern = context.protocol_version().is_some_and(|version| !version.has_initialize());
        // Only a handshake-era request on a server that keeps sessions came
        // through one that rmcp checked; elsewhere the header is the
        // client's word.
        let _place = match self.shared.in_flight.enter(&client_key(&context, self.can_ask && !modern)) {
            Ok(place) => place,
            Err(Busy(why)) => return Ok(CallToolResult::error(vec![ContentBlock::text(why)]).into()),
        };
        let id = format!("mcp-{}", context.id);
        let mut turn = self.shared.turn();
        // A `notifications/cancelled` for this request, or over HTTP its
        // connection closing, cancels the call, whether it waits for
        // approval (every approver's question is withdrawn) or runs.
        turn.cancel = context.ct.child_token();
        let _gone = client_gone(&context).map(|gone| {
            let cancel = turn.cancel.clone();
            AbortOnDrop(tokio::spawn(async move {
                gone.cancelled().await;
                cancel.cancel();
            }))
        });
        let answers_forms = context
            .client_capabilities()
            .and_then(|capabilities| capabilities.elicitation)
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
        let result = if modern && answers_forms && self.shared.approver_for.is_none() {
            match resumable::call_round(&self.shared, &turn, &id, request).await? {
                Round::Done(result) => result,
                Round::Asks(questions) => return Ok(questions.into()),
            }
        } else {
            let call = ToolCall::with_map(&id, request.name.as_ref(), request.arguments.unwrap_or_default());
            let approver: Arc<dyn Approver> = match &self.shared.approver_for {
                Some(approver_for) => {
                    // Name and version, as the client introduced itself:
                    // two clients of one name are told apart by it.
                    let client = context.client_info().map(|info| match info.version.trim() {
                        "" => info.name,
                        version => format!("{} {version}", info.name),
                    });
                    approver_for(client.as_deref().unwrap_or("an MCP client"))
                }
                // A 2026-07-28 client cannot be sent a question: one that
                // answers no forms leaves the call to `[mcp] unattended`.
                None => Arc::new(ClientApprover::new(
                    (self.can_ask && !modern).then(|| context.peer.clone()),
                    UnattendedApprover::for_mcp(self.shared.config.unattended),
                    self.shared.config.approval_timeout,
                )),
            };
            self.shared.pipeline.with_approver(approver).run(&turn, vec![call]).await
        };
        let outcome = &result.outcomes[0];
        if refused_as_unknown(outcome) {
            return Err(ErrorData::invalid_params(outcome.output.clone(), None));
        }
        Ok(call_result(outcome).into())
    }
}

/// Whom a call counts against for `[mcp] max_calls_per_client`: its
/// session, where it `came_through_session` (one rmcp checked exists),
/// else over HTTP its address, else (stdio) the one client.
fn client_key(context: &RequestContext<RoleServer>, came_through_session: bool) -> String {
    let Some(parts) = context.extensions.get::<axum::http::request::Parts>() else { return "stdio".to_owned() };
    if let Some(session) = parts.headers.get("mcp-session-id").and_then(|id| id.to_str().ok()).filter(|_| came_through_session) {
        return format!("session {session}");
    }
    match parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>() {
        Some(axum::extract::ConnectInfo(address)) => format!("address {}", address.ip()),
        None => "http".to_owned(),
    }
}
/// Cancelled when the response to the request that carries it is dropped
/// unfinished: the client closed the connection (or, its call done, the
/// response was sent, when it no longer matters).
#[derive(Clone)]
pub(super) struct ClientGone(pub(super) CancellationToken);

/// Cancelled when the HTTP connection that carried the call closes.
fn client_gone(context: &RequestContext<RoleServer>) -> Option<CancellationToken> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    parts.extensions.get::<ClientGone>().map(|gone| gone.0.clone())
}

/// Whether the server refused the call for naming a tool it does not
/// offer: the client's mistake, which MCP answers with a protocol error
/// (its message names the closest tools). A plugin that ran and answered
/// `unknown-tool` itself gave the model a result to read, as any tool error.
fn refused_as_unknown(outcome: &ToolOutcome) -> bool {
    outcome.status == Status::NotFound && outcome.failure.as_ref().is_none_or(|failure| failure.plugin.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_tool_the_server_does_not_offer_is_a_protocol_error() {
        let refused = ToolOutcome::without_running("1", "ghost", Status::NotFound, "no tool named `ghost`".into());
        assert!(refused_as_unknown(&refused));
        let answered = refused.clone().of_plugin("hostile", "1.0.0");
        assert!(!refused_as_unknown(&answered), "the plugin ran and answered unknown-tool");
        let failed = ToolOutcome::without_running("1", "calc", Status::Error, "boom".into());
        assert!(!refused_as_unknown(&failed));
    }
}
