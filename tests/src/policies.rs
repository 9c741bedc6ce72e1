//! Distinct valid policy components, for tests that swap revisions.

use nomos_continue::policy::BUILTIN_POLICY_WASM;

/// The built-in policy with a custom section named `tag` appended: a new
/// revision (another hash) that behaves exactly like the built-in one and
/// passes the same vetting. Different tags give different revisions.
pub fn variant(tag: &str) -> Vec<u8> {
    let mut body = leb128(tag.len());
    body.extend_from_slice(tag.as_bytes());
    let mut bytes = BUILTIN_POLICY_WASM.to_vec();
    bytes.push(0); // custom section id
    bytes.extend(leb128(body.len()));
    bytes.extend(body);
    bytes
}

/// Unsigned LEB128, the integer encoding of WebAssembly section headers.
fn leb128(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::leb128;

    #[test]
    fn leb128_encodes_small_and_multi_byte_values() {
        assert_eq!(leb128(0), [0]);
        assert_eq!(leb128(127), [0x7f]);
        assert_eq!(leb128(128), [0x80, 0x01]);
        assert_eq!(leb128(624_485), [0xe5, 0x8e, 0x26]);
    }
}
