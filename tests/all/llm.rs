//! The model client against a real socket and the stand-in server: what
//! its errors say and keep, and the cap on a streamed reply.

use std::error::Error;
use std::time::Duration;
use toolhost::{
    CancellationToken, LlmClient, Message, OpenAiClient,
    llm::{ChatRequest, LlmError, LlmProfile, Reply},
};
use toolhost_standin::{Frame, Response, StandIn};

fn no_retries(base_url: String) -> LlmProfile {
    let mut profile = LlmProfile::new(base_url, "scripted");
    profile.retry.retries = 0;
    profile.idle_timeout = Duration::from_secs(5);
    profile
}

async fn ask(profile: LlmProfile) -> Result<Reply, LlmError> {
    let request = ChatRequest { messages: &[Message::user("hello")], tools: None };
    OpenAiClient::new(profile).unwrap().complete(&request, &mut |_| {}, &CancellationToken::new()).await
}

#[tokio::test]
async fn a_refused_connection_says_so_names_the_url_once_and_keeps_its_source() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let error = ask(no_retries(base_url.clone())).await.unwrap_err();
    assert!(matches!(error, LlmError::Connect { .. }), "{error:?}");
    let said = toolhost_support::error_chain::error_chain(&error);
    assert!(said.to_lowercase().contains("connection refused"), "{said}");
    assert_eq!(said.matches(&base_url).count(), 1, "{said}");
    assert!(error.source().is_some(), "the HTTP client's error is kept as the source");
}

#[tokio::test]
async fn a_reply_streaming_past_the_cap_is_refused_naming_the_cap_and_keeps_what_arrived() {
    const CAP: usize = 64 << 10;
    let long = "many words ".repeat(30_000);
    // One line that never ends: no newline for the SSE parser to stop at.
    let endless = Response::Stream(vec![Frame::Raw(format!("data: {}", "x".repeat(4 * CAP)))]);
    let model = StandIn::start([Response::text(long), endless, Response::text("short and sweet")]).await.unwrap();
    let mut profile = no_retries(model.base_url());
    profile.max_reply_bytes = CAP;

    let error = ask(profile.clone()).await.unwrap_err();
    let LlmError::TooLarge { limit, partial } = &error else { panic!("{error:?}") };
    assert_eq!(*limit, CAP);
    assert!(!partial.content.is_empty() && partial.content.len() < CAP, "{} bytes kept", partial.content.len());
    assert!(error.to_string().contains("size limit of 65536 bytes (max_reply_bytes)"), "{error}");

    let error = ask(profile.clone()).await.unwrap_err();
    assert!(matches!(error, LlmError::TooLarge { limit: CAP, .. }), "{error:?}");

    let reply = ask(profile).await.unwrap();
    assert_eq!(reply.content, "short and sweet");
}
