//! Model servers that misbehave on purpose, on loopback: each limit of an
//! `[llm.NAME]` profile against the server that would pass it. Each test
//! says the limit it hit by name, keeps what arrived before it, and holds
//! this process's memory growth under [`MEMORY_BOUND`]: each runs alone,
//! in a process of its own ([`alone`]).

use crate::support::{alone, read_request_head, within_memory};
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use toolhost::{
    CancellationToken, LlmClient, Message, OpenAiClient,
    llm::{ChatRequest, LlmError, LlmProfile, Reply, ReplyLimit},
};

/// The most a hostile server may make this process grow.
const MEMORY_BOUND: usize = 256 << 20;

/// A server on loopback answering every request with `respond`, after
/// reading the request's head; its `/v1` base URL.
async fn hostile<F, Fut>(respond: F) -> String
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::io::Result<()>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let respond = std::sync::Arc::new(respond);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let respond = respond.clone();
            tokio::spawn(async move {
                if read_request_head(&mut socket).await {
                    let _ = respond(socket).await;
                }
            });
        }
    });
    base_url
}

/// An SSE stream's head: it goes on until the connection closes.
const STREAM_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

fn chunk(delta: serde_json::Value) -> Vec<u8> {
    format!("data: {}\n\n", serde_json::json!({ "choices": [{ "index": 0, "delta": delta }] })).into_bytes()
}

fn profile(base_url: String) -> LlmProfile {
    let mut profile = LlmProfile::new(base_url, "hostile");
    profile.retry.retries = 0;
    profile
}

/// Ask once; the outcome, how long it took, and how much this process grew.
async fn ask(profile: LlmProfile) -> (Result<Reply, LlmError>, Duration, usize) {
    let client = OpenAiClient::new(profile).unwrap();
    let request = ChatRequest { messages: &[Message::user("hello")], tools: None };
    let started = Instant::now();
    let (cancel, mut on_delta) = (CancellationToken::new(), |_| {});
    let asked = tokio::time::timeout(Duration::from_secs(30), client.complete(&request, &mut on_delta, &cancel));
    let (outcome, grew) = within_memory(MEMORY_BOUND, asked).await.unwrap_or_else(|grew| panic!("grew {} MiB", grew >> 20));
    let outcome = outcome.expect("the client gave up within 30 s");
    (outcome, started.elapsed(), grew)
}

#[tokio::test]
async fn endless_reasoning_stops_at_the_reply_cap_keeping_what_came() {
    if !alone(module_path!(), "endless_reasoning_stops_at_the_reply_cap_keeping_what_came") {
        return;
    }
    let base_url = hostile(|mut socket| async move {
        socket.write_all(STREAM_HEAD).await?;
        let piece = chunk(serde_json::json!({ "reasoning_content": "hmm ".repeat(2048) }));
        loop {
            socket.write_all(&piece).await?;
        }
    })
    .await;
    let (outcome, _, _) = ask(profile(base_url)).await;
    let error = outcome.unwrap_err();
    assert!(error.to_string().contains("max_reply_bytes"), "{error}");
    assert!(error.partial().is_some_and(|p| p.reasoning.starts_with("hmm hmm")), "the reasoning that came is kept");
}

#[tokio::test]
async fn one_line_longer_than_the_line_limit_is_refused_before_it_is_parsed() {
    if !alone(module_path!(), "one_line_longer_than_the_line_limit_is_refused_before_it_is_parsed") {
        return;
    }
    // 20 MiB on one line: under the reply cap, over the line limit.
    let base_url = hostile(|mut socket| async move {
        socket.write_all(STREAM_HEAD).await?;
        socket.write_all(&chunk(serde_json::json!({ "content": "before " }))).await?;
        socket.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"").await?;
        let block = vec![b'x'; 64 << 10];
        for _ in 0..320 {
            socket.write_all(&block).await?;
        }
        socket.write_all(b"\"}}]}\n\ndata: [DONE]\n\n").await
    })
    .await;
    let before = crate::support::cpu_time();
    let (outcome, _, _) = ask(profile(base_url)).await;
    // Each byte scanned once: the SSE parser was given the growing line
    // piece by piece and rescanned it each time, minutes of a core.
    let used = crate::support::cpu_time() - before;
    assert!(used < std::time::Duration::from_secs(3), "{used:?} of processor time for one 8 MiB line");
    let error = outcome.unwrap_err();
    let LlmError::OverLimit { limit: ReplyLimit::Line(limit), partial } = &error else { panic!("{error:?}") };
    assert_eq!(*limit, toolhost::llm::DEFAULT_MAX_LINE_BYTES);
    assert_eq!(partial.content, "before ");
    assert!(error.to_string().contains("max_line_kib"), "{error}");
}

#[tokio::test]
async fn one_call_with_endless_arguments_is_refused_at_the_argument_limit() {
    if !alone(module_path!(), "one_call_with_endless_arguments_is_refused_at_the_argument_limit") {
        return;
    }
    let base_url = hostile(|mut socket| async move {
        socket.write_all(STREAM_HEAD).await?;
        let first = serde_json::json!({ "tool_calls": [{ "index": 0, "id": "a", "function": { "name": "write", "arguments": "{\"text\":\"" } }] });
        socket.write_all(&chunk(first)).await?;
        let piece = chunk(serde_json::json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "y".repeat(8192) } }] }));
        loop {
            socket.write_all(&piece).await?;
        }
    })
    .await;
    let mut profile = profile(base_url);
    profile.max_call_argument_bytes = 1 << 20;
    let (outcome, _, _) = ask(profile).await;
    let error = outcome.unwrap_err();
    let LlmError::OverLimit { limit: ReplyLimit::CallArguments(limit), partial } = &error else { panic!("{error:?}") };
    assert_eq!(*limit, 1 << 20);
    assert_eq!(partial.tool_calls[0].name, "write", "the call as far as it came is kept");
    assert!(partial.tool_calls[0].arguments.len() <= 1 << 20);
    assert!(error.to_string().contains("max_call_argument_kib"), "{error}");
}

#[tokio::test]
async fn a_reply_of_many_calls_keeps_the_limit_and_one_more_and_counts_the_rest() {
    if !alone(module_path!(), "a_reply_of_many_calls_keeps_the_limit_and_one_more_and_counts_the_rest") {
        return;
    }
    let base_url = hostile(|mut socket| async move {
        socket.write_all(STREAM_HEAD).await?;
        for index in 0..20_000 {
            let call = serde_json::json!({ "tool_calls": [{ "index": index, "id": format!("c{index}"), "function": { "name": "now", "arguments": "" } }] });
            socket.write_all(&chunk(call)).await?;
            let piece = serde_json::json!({ "tool_calls": [{ "index": index, "function": { "arguments": "{}" } }] });
            socket.write_all(&chunk(piece)).await?;
        }
        socket.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n").await
    })
    .await;
    let mut profile = profile(base_url);
    profile.max_calls_per_reply = 10;
    let (outcome, _, _) = ask(profile).await;
    let reply = outcome.unwrap();
    assert_eq!(reply.tool_calls.len(), 11, "the limit and the one after, to be answered");
    assert!(reply.tool_calls.iter().all(|c| c.arguments == "{}"), "{:?}", reply.tool_calls);
    assert_eq!(reply.calls_not_kept, 20_000 - 11);
}

#[tokio::test]
async fn an_endless_error_body_is_read_only_as_far_as_its_excerpt() {
    if !alone(module_path!(), "an_endless_error_body_is_read_only_as_far_as_its_excerpt") {
        return;
    }
    let base_url = hostile(|mut socket| async move {
        socket.write_all(b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\nthe server broke: ").await?;
        let block = vec![b'z'; 64 << 10];
        loop {
            socket.write_all(&block).await?;
        }
    })
    .await;
    let (outcome, took, _) = ask(profile(base_url)).await;
    let error = outcome.unwrap_err();
    let LlmError::Status { status: 500, body } = &error else { panic!("{error:?}") };
    assert!(body.starts_with("the server broke: zzz") && body.len() < 1024, "{} bytes", body.len());
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn a_server_trickling_empty_chunks_cannot_extend_the_request_past_its_deadline() {
    if !alone(module_path!(), "a_server_trickling_empty_chunks_cannot_extend_the_request_past_its_deadline") {
        return;
    }
    let base_url = hostile(|mut socket| async move {
        socket.write_all(STREAM_HEAD).await?;
        socket.write_all(&chunk(serde_json::json!({ "content": "thinking" }))).await?;
        loop {
            // Each keeps the idle timeout from firing.
            socket.write_all(&chunk(serde_json::json!({}))).await?;
            socket.write_all(b": still here\n\n").await?;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let mut profile = profile(base_url);
    profile.idle_timeout = Duration::from_secs(1);
    profile.request_timeout = Duration::from_millis(1500);
    let (outcome, took, _) = ask(profile).await;
    let error = outcome.unwrap_err();
    let LlmError::OverLimit { limit: ReplyLimit::Deadline(_), partial } = &error else { panic!("{error:?}") };
    assert_eq!(partial.content, "thinking");
    assert!(error.to_string().contains("1500 ms (request_timeout_ms)"), "{error}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}
