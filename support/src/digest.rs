//! Content digests: what pins, remembered approvals and audit records
//! name a component or a text by.

use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes`, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
