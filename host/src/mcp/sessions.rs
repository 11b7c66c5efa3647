//! [`BoundedSessions`]: rmcp's in-memory sessions, at most so many at once,
//! so that clients opening sessions without end cannot exhaust the host.

use crate::log_throttle::warn_throttled;
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use std::time::Duration;

/// How long a session may go without a message before it is closed.
const IDLE_LIMIT: Duration = Duration::from_secs(300);

/// How long a session may go without a message: rmcp counts only
/// messages, so a call waiting for its user's answer (up to
/// `approval_timeout`; the question and its answer are messages) or
/// running (up to `call_timeout`) must fit, or its session would close
/// under it.
pub(super) fn session_idle_limit(approval_timeout: Duration, call_timeout: Duration) -> Duration {
    IDLE_LIMIT.max(approval_timeout.max(call_timeout).saturating_add(Duration::from_secs(60)))
}

/// [`LocalSessionManager`], refusing a new session while `max` are open.
pub(super) struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    /// Held while a session is counted and created, so that clients
    /// opening sessions at once cannot pass the limit together.
    creating: tokio::sync::Mutex<()>,
}

impl BoundedSessions {
    pub(super) fn new(max: usize, idle_limit: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle_limit);
        BoundedSessions { inner, max, creating: tokio::sync::Mutex::new(()) }
    }

    /// Whether every place is taken: a new session would be refused.
    pub(super) async fn full(&self) -> Option<SessionError> {
        (self.inner.sessions.read().await.len() >= self.max).then_some(SessionError::Full(self.max))
    }
}

/// Why a session request failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum SessionError {
    /// Every place is taken.
    #[error("the server keeps at most {0} MCP sessions at once ([mcp] max_sessions); close one or wait for one to expire")]
    Full(usize),
    /// What the session store said.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

impl SessionManager for BoundedSessions {
    type Error = SessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _creating = self.creating.lock().await;
        if let Some(full) = self.full().await {
            warn_throttled!("refused an MCP session: {} are open", self.max);
            return Err(full);
        }
        Ok(self.inner.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_outlives_a_question_and_the_call_after_it() {
        assert_eq!(session_idle_limit(Duration::from_secs(10), Duration::from_secs(30)), IDLE_LIMIT);
        let (asked, running) = (Duration::from_secs(600), Duration::from_secs(120));
        assert!(session_idle_limit(asked, running) > asked);
        assert!(session_idle_limit(running, asked) > asked);
    }
}
