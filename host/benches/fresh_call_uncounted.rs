//! A fresh call with host memory not counted: the system allocator (see
//! `fresh_call/mod.rs`).

mod common;
mod fresh_call;

fn main() -> anyhow::Result<()> {
    fresh_call::run("uncounted")
}
