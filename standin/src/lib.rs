//! A scripted stand-in for an OpenAI-compatible model server: a real HTTP
//! server speaking `/v1/chat/completions` with SSE streaming, answering
//! each request with the next scripted [`Response`] and recording every
//! request, so tests can say what the model was sent.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use toolhost_standin::{Response, StandIn};
//! let model = StandIn::start([Response::text("Hello!")]).await?;
//! println!("point a client at {}", model.base_url());
//! # Ok(()) }
//! ```
//!
//! It stands in for the model only: everything else in the tests is real.

mod script;
mod server;

pub use script::{CallStyle, Frame, NativeCall, Reply, Response};
pub use server::{Recorded, StandIn};
