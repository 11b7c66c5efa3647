//! [`JsonBody`]: a request's JSON body, as axum's `Json` reads it (its
//! content type, its size limit, its rejections), but with each lone
//! surrogate escaped in it (`"\ud83d"`, which JavaScript's
//! `JSON.stringify` writes for a string cut inside an emoji) read as
//! U+FFFD ([`json_text`]): serde refuses them, and a message pasted into
//! the chat, or a reply into the workbench, was refused whole. A body not
//! sent in time is `408`, as over MCP (axum answered `400`).

use crate::http_server::{Unread, why_unread};
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use std::borrow::Cow;
use toolhost_support::json_text;

/// A JSON body read as a `T`.
pub(super) struct JsonBody<T>(pub(super) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let (parts, body) = request.into_parts();
        let bytes = match Bytes::from_request(Request::from_parts(parts.clone(), body), state).await {
            Ok(bytes) => bytes,
            Err(unread) if why_unread(&unread) == Unread::TooSlow => {
                return Err((StatusCode::REQUEST_TIMEOUT, "the request's body was not sent in time\n").into_response());
            }
            Err(unread) => return Err(unread.into_response()),
        };
        let bytes = match json_text::lone_surrogates_replaced(&bytes) {
            Cow::Borrowed(_) => bytes,
            Cow::Owned(replaced) => Bytes::from(replaced),
        };
        let Json(value) = Json::<T>::from_request(Request::from_parts(parts, Body::from(bytes)), state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(JsonBody(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(content_type: &str, body: &'static str) -> Request {
        Request::builder().method("POST").uri("/").header("content-type", content_type).body(Body::from(body)).unwrap()
    }

    async fn read(content_type: &str, body: &'static str) -> Result<String, StatusCode> {
        match JsonBody::<String>::from_request(request(content_type, body), &()).await {
            Ok(JsonBody(text)) => Ok(text),
            Err(refused) => Err(refused.status()),
        }
    }

    #[tokio::test]
    async fn a_lone_surrogate_reads_as_a_replacement_character_and_the_rest_as_axum_reads_it() {
        assert_eq!(read("application/json", r#""cut \ud83d here""#).await, Ok("cut \u{fffd} here".to_owned()));
        assert_eq!(read("application/json", r#""a pair \ud83d\ude00""#).await, Ok("a pair \u{1f600}".to_owned()));
        // What axum's `Json` refuses is refused alike.
        for (content_type, body) in [("text/plain", r#""x""#), ("application/json", "{"), ("application/json", "7")] {
            let axum = Json::<String>::from_request(request(content_type, body), &()).await;
            let refused = axum.err().map(|rejection| rejection.into_response().status()).expect("axum refuses it");
            assert_eq!(read(content_type, body).await, Err(refused), "{content_type} {body}");
        }
    }

    #[tokio::test]
    async fn a_body_not_sent_in_time_is_a_timeout_and_one_that_fails_otherwise_as_axum_says() {
        let failing = |kind| {
            let body =
                Body::from_stream(futures::stream::once(async move { Err::<Bytes, _>(std::io::Error::new(kind, "the body")) }));
            Request::builder().method("POST").uri("/").header("content-type", "application/json").body(body).unwrap()
        };
        let refused = |refusal: Option<Response>| refusal.map(|response| response.status());
        let slow = JsonBody::<String>::from_request(failing(std::io::ErrorKind::TimedOut), &()).await;
        assert_eq!(refused(slow.err()), Some(StatusCode::REQUEST_TIMEOUT));
        let reset = JsonBody::<String>::from_request(failing(std::io::ErrorKind::ConnectionReset), &()).await;
        let axum = Json::<String>::from_request(failing(std::io::ErrorKind::ConnectionReset), &()).await;
        assert_eq!(refused(reset.err()), refused(axum.err().map(IntoResponse::into_response)));
    }
}
