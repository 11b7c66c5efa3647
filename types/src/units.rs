//! Numbers, sizes and durations the way limits are reported: `1 000 000`,
//! `64 MiB`, `30 s`.

use std::time::Duration;

/// `1000000000` as `1 000 000 000`, the way limits are reported.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// Bytes in the largest whole binary unit, e.g. `64 MiB`, `1536 KiB`.
pub fn human_bytes(bytes: usize) -> String {
    const UNITS: [(&str, usize); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{} {unit}", bytes / size);
        }
    }
    format!("{bytes} bytes")
}

/// A duration the way a person reads a limit: `30 s`, `250 ms`.
pub fn human_duration(duration: Duration) -> String {
    if duration.subsec_millis() == 0 && duration.as_secs() > 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_reported_readably() {
        assert_eq!(grouped(1_000_000_000), "1 000 000 000");
        assert_eq!(grouped(12_345), "12 345");
        assert_eq!(grouped(999), "999");
        assert_eq!(human_bytes(64 << 20), "64 MiB");
        assert_eq!(human_bytes(1536 << 10), "1536 KiB");
        assert_eq!(human_bytes(1000), "1000 bytes");
        assert_eq!(human_duration(Duration::from_secs(30)), "30 s");
        assert_eq!(human_duration(Duration::from_millis(250)), "250 ms");
    }
}
