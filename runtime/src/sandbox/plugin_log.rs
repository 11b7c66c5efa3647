//! What a plugin may write into the host's log through `host.log`.
//!
//! Each record costs [`LOG_RECORD_COST`] bytes plus its length from the
//! call's budget of [`LOG_BYTES_PER_CALL`], and a call writes at most
//! [`LOG_RECORDS_PER_CALL`] records, so `log("")` in a loop is not free.
//! Control characters are escaped, so a message cannot forge host log
//! lines. What is dropped is counted and reported once.

use crate::printable::printable;
use std::borrow::Cow;

/// Bytes of `host.log` records one call may write into the host's log.
pub const LOG_BYTES_PER_CALL: usize = 64 << 10;
/// What one record costs beyond its message: a log line's own overhead.
pub const LOG_RECORD_COST: usize = 64;
/// Records one call may write.
pub const LOG_RECORDS_PER_CALL: usize = 256;

/// One call's remaining log budget.
pub(crate) struct LogBudget {
    bytes: usize,
    records: usize,
    dropped: usize,
}

impl LogBudget {
    pub(crate) fn new() -> Self {
        LogBudget { bytes: LOG_BYTES_PER_CALL, records: LOG_RECORDS_PER_CALL, dropped: 0 }
    }

    /// The message as it may be logged, cut to the budget, or `None` once
    /// the budget is spent; the first refusal is itself logged.
    pub(crate) fn admit<'m>(&mut self, plugin: &str, message: &'m str) -> Option<Cow<'m, str>> {
        if self.records == 0 || self.bytes <= LOG_RECORD_COST {
            if self.dropped == 0 {
                tracing::warn!(
                    plugin,
                    "log budget for this call is spent ({LOG_RECORDS_PER_CALL} records or {LOG_BYTES_PER_CALL} bytes); \
                     further records are dropped"
                );
            }
            self.dropped += 1;
            return None;
        }
        self.records -= 1;
        self.bytes -= LOG_RECORD_COST;
        let cut = message.floor_char_boundary(self.bytes);
        self.bytes -= cut;
        Some(printable(&message[..cut]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_records_still_cost_and_the_count_is_capped() {
        let mut budget = LogBudget::new();
        let admitted = (0..10_000).filter(|_| budget.admit("p", "").is_some()).count();
        assert_eq!(admitted, LOG_RECORDS_PER_CALL);
    }

    #[test]
    fn bytes_are_capped_and_control_characters_escaped() {
        let mut budget = LogBudget::new();
        let big = "x".repeat(LOG_BYTES_PER_CALL);
        let first = budget.admit("p", &big).unwrap();
        assert_eq!(first.len(), LOG_BYTES_PER_CALL - LOG_RECORD_COST);
        assert!(budget.admit("p", "more").is_none());
        let mut fresh = LogBudget::new();
        assert_eq!(fresh.admit("p", "a\nINFO forged").unwrap(), "a\\nINFO forged");
    }
}
