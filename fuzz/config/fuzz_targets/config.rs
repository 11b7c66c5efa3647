#![no_main]

//! `toolhost.toml`: any text is a policy or an error, never a panic.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = toolhost::Policy::parse(&text, std::path::Path::new("/fuzz/toolhost.toml"));
});
