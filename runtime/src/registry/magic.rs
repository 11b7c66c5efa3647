//! What a file that should be a component is, told from its first bytes:
//! so that a native library built without `--target wasm32-wasip2`, or a
//! core module, gets a message that says what to do rather than a parser's
//! byte dump.

/// The WebAssembly magic number.
const WASM: &[u8] = b"\0asm";
/// The version word of a core module, and the layer word of a component.
const CORE_MODULE: [u8; 4] = [1, 0, 0, 0];
const COMPONENT: [u8; 4] = [0x0d, 0, 1, 0];

/// Why `bytes` are not a component, in words for a person; `None` when
/// they start like one (whether they are a valid one is wasmtime's call).
pub(crate) fn not_a_component(bytes: &[u8]) -> Option<String> {
    const BUILD: &str = "build it with `--target wasm32-wasip2`";
    if let Some(rest) = bytes.strip_prefix(WASM) {
        return match rest.get(..4) {
            Some(layer) if layer == COMPONENT => None,
            Some(version) if version == CORE_MODULE => Some(format!(
                "this is a core WebAssembly module, not a component; {BUILD} (wasm32-wasip1 builds modules), \
                 or wrap it with `wasm-tools component new`"
            )),
            _ => Some("a WebAssembly file of an unknown version or layer, not a component".to_owned()),
        };
    }
    let native = match bytes.get(..4) {
        Some([0x7f, b'E', b'L', b'F']) => Some("ELF shared library or executable"),
        Some([0xcf | 0xce, 0xfa, 0xed, 0xfe] | [0xca, 0xfe, 0xba, 0xbe]) => Some("Mach-O library or executable"),
        Some([b'M', b'Z', ..]) => Some("Windows DLL or executable"),
        _ => None,
    };
    Some(match native {
        Some(kind) => format!("it looks like a native {kind}, not a WebAssembly component; {BUILD}"),
        None => format!("it is not WebAssembly (no `\\0asm` magic number at its start); {BUILD}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_file_is_named() {
        assert_eq!(not_a_component(b"\0asm\x0d\0\x01\0rest"), None);
        let said = |bytes: &[u8]| not_a_component(bytes).unwrap();
        assert!(said(b"\0asm\x01\0\0\0").contains("core WebAssembly module"));
        assert!(said(b"\x7fELF\x02\x01").contains("native ELF shared library"));
        assert!(said(&[0xcf, 0xfa, 0xed, 0xfe, 7]).contains("Mach-O"));
        assert!(said(b"MZ\x90\0").contains("Windows"));
        assert!(said(b"hello").contains("magic number"));
        assert!(said(b"").contains("--target wasm32-wasip2"));
        assert!(said(b"\0asm\x02").contains("unknown version"));
    }
}
