#![no_main]

//! The lenient JSON reader: where it reads JSON that strict JSON also
//! reads, it reads the same value; its offsets stay inside the text.

use toolhost_protocol::lenient_json::{parse as lenient_json, parse_prefix as lenient_json_prefix};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match lenient_json_prefix(&text) {
        Ok((_, used, repairs)) => {
            assert!(used <= text.len() && text.is_char_boundary(used), "used {used} of {}", text.len());
            assert!(repairs.iter().all(|r| r.offset <= text.len()));
        }
        Err(error) => assert!(error.offset <= text.len(), "error at {} of {}", error.offset, text.len()),
    }
    if let (Ok((lenient, repairs)), Ok(strict)) = (lenient_json(&text), serde_json::from_str::<serde_json::Value>(&text)) {
        assert_eq!(lenient, strict, "strict JSON read differently");
        assert!(repairs.is_empty(), "strict JSON repaired: {repairs:?}");
    }
});
