#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolhost_fuzz::parse(toolhost_protocol::ProtocolId::XmlTag, data));
