//! The limits wasmtime 48 reports only in words: its errors for them are
//! plain messages or private types. Every other failure is classified
//! from the host's own records (the limiter's refusals, trap codes, the
//! host-work counters, error types). Each message read here has a test
//! that makes wasmtime say it, so an upgrade that rewords one fails there
//! rather than misnaming a limit: `too_few_instances_is_named`
//! (`tests/all/limits.rs`),
//! `one_host_call_cannot_take_more_than_its_share_of_host_memory_at_once`
//! and `random_bytes_are_capped_per_request` (`tests/all/host_limits.rs`).

/// A limit that a wasmtime error names in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LimitInWords {
    /// The store's core-instance count (`Limits::instances`): "resource
    /// limit exceeded: instance count too high at 33". Memories and
    /// tables are counted by the host before a call (`pool_share`).
    Instances,
    /// One host call handed more than the store's host-call budget: "too
    /// much data is being copied between the host and the guest".
    HostCall,
    /// A request for more random bytes than WASI's cap: "requested len
    /// 2097152 exceeds limit 1048576".
    RandomBytes,
}

/// The limit `error` names, if it names one of [`LimitInWords`].
pub(crate) fn limit_named_in(error: &wasmtime::Error) -> Option<LimitInWords> {
    error.chain().find_map(|cause| {
        let text = cause.to_string();
        if text.starts_with("resource limit exceeded: instance count") {
            Some(LimitInWords::Instances)
        } else if text.starts_with("too much data is being copied between the host and the guest") {
            Some(LimitInWords::HostCall)
        } else if text.starts_with("requested len ") && text.contains(" exceeds limit ") {
            Some(LimitInWords::RandomBytes)
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_read_anywhere_in_the_chain_and_nothing_else_is_a_limit() {
        let wrapped = wasmtime::Error::msg("resource limit exceeded: instance count too high at 33").context("instantiating");
        assert_eq!(limit_named_in(&wrapped), Some(LimitInWords::Instances));
        let plugin_said = wasmtime::Error::msg("the plugin says: resource limit exceeded: instance count");
        assert_eq!(limit_named_in(&plugin_said), None, "only a message that starts so is wasmtime's");
        assert_eq!(limit_named_in(&wasmtime::Error::msg("requested len 9 exceeds limit 8")), Some(LimitInWords::RandomBytes));
    }
}
