//! toolhost
pub mod manifest;
pub mod sandbox;
