//! A fresh call with host memory counted (see `fresh_call/mod.rs`).

mod common;
mod fresh_call;

toolhost::count_host_memory!();

fn main() -> anyhow::Result<()> {
    fresh_call::run("counted")
}
