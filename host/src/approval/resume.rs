//! [`ResumeSeal`]: what a paused turn becomes to be finished elsewhere —
//! a resume token — and the ledger that lets each token be used once.
//!
//! A token is `thr1.` and the base64url of a random 24-byte nonce and the
//! XChaCha20-Poly1305 sealing of: the format byte, a random 16-byte id,
//! the expiry (Unix milliseconds), the SHA-256 of what the token is bound
//! to (the door's request: an MCP call's tool and arguments, say) and the
//! turn itself. The key is derived from the host key (the `cache_key`
//! file, which authenticates the compiled cache), so every process with
//! that key file can open what another sealed; nobody without it can read
//! a token (a held result travels in one) or make one. Opening checks, in
//! order: the seal (a forged or altered token, or one of another key), the
//! expiry, the binding, then spends the id in the ledger — a file beside
//! the approvals memory file, shared as that one is by replicas, locked
//! with `flock` — so a token resumes one turn once.

use super::memory::{lock_file, write_durably};
use crate::registry::HostKey;
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a token starts with: the format's name and version.
const PREFIX: &str = "thr1.";
/// The format byte inside the seal.
const FORMAT: u8 = 1;
/// What the key is derived for: no other use of the host key shares it.
const KEY_CONTEXT: &str = "toolhost 2026-11 resume tokens";
/// Bound into every seal, so a ciphertext of another protocol under the
/// same derived key could never pass as a token.
const ASSOCIATED: &[u8] = b"toolhost resume token";
const NONCE_BYTES: usize = 24;
const ID_BYTES: usize = 16;
/// Format, id, expiry, binding digest.
const HEADER_BYTES: usize = 1 + ID_BYTES + 8 + 32;
/// The longest a token may live: a day.
pub const MAX_RESUME_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);
/// The most tokens the ledger holds as used at once (each until its
/// token expires); past it, a resume is refused until some expire.
pub const MAX_SPENT_TOKENS: usize = 100_000;
/// The largest token opened or made, in bytes: a held result travels in
/// one, so it is bounded as results are by default (1 MiB), with room for
/// the rest of the turn and the encoding.
pub const MAX_TOKEN_BYTES: usize = 4 << 20;

/// Why a token was not made or not accepted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The host key cannot be read or made.
    #[error("resume tokens need the host key: {0}")]
    NoKey(String),
    /// Not a token of any toolhost.
    #[error("the resume token is malformed: {0}")]
    Malformed(&'static str),
    /// The seal does not open: forged, altered, or sealed under another key.
    #[error("the resume token does not authenticate: it was forged, altered, or sealed under another host key")]
    Forged,
    /// Past its expiry.
    #[error("the resume token expired {} s ago: ask again", .0.as_secs())]
    Expired(Duration),
    /// Given for another request.
    #[error("the resume token was given for another request: {0}")]
    Mismatched(String),
    /// Already used to resume its turn.
    #[error("the resume token was already used: a paused turn is resumed once")]
    Replayed,
    /// Too large to make or to open.
    #[error("the resume token would be {0} bytes, more than {MAX_TOKEN_BYTES}")]
    TooLarge(usize),
    /// The ledger of used tokens cannot be read or written: refused, since
    /// a replay could not be told apart.
    #[error("cannot record the resume token as used in {}: {source}", path.display())]
    Ledger {
        /// The ledger file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The ledger is full of tokens that have not expired.
    #[error("{MAX_SPENT_TOKENS} resume tokens were used within their lifetime; wait for some to expire")]
    LedgerFull,
}

/// Seals paused turns into tokens and opens them, once each.
pub(crate) struct ResumeSeal {
    key_file: Option<PathBuf>,
    /// The derived key, read from `key_file` on first use.
    key: Mutex<Option<[u8; 32]>>,
    ledger: PathBuf,
}

impl std::fmt::Debug for ResumeSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeSeal").field("key_file", &self.key_file).field("ledger", &self.ledger).finish_non_exhaustive()
    }
}

impl ResumeSeal {
    /// Sealing under the key in `key_file` (made if missing), spending
    /// tokens in the ledger beside `memory_file`.
    pub(crate) fn new(key_file: Option<PathBuf>, memory_file: &Path) -> Self {
        ResumeSeal { key_file, key: Mutex::new(None), ledger: ledger_path(memory_file) }
    }

    /// The ledger of used tokens.
    #[cfg(test)]
    fn ledger(&self) -> &Path {
        &self.ledger
    }

    fn cipher(&self) -> Result<XChaCha20Poly1305, ResumeError> {
        let mut key = self.key.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = match *key {
            Some(key) => key,
            None => {
                let Some(file) = &self.key_file else {
                    return Err(ResumeError::NoKey("no key file is set (cache_key in toolhost.toml; HOME is not set)".into()));
                };
                let derived = HostKey::load_or_create(file).map_err(|e| ResumeError::NoKey(e.to_string()))?.derive(KEY_CONTEXT);
                *key.insert(derived)
            }
        };
        Ok(XChaCha20Poly1305::new(&key.into()))
    }

    /// `payload` sealed, bound to `binding`, for `lifetime` (at most
    /// [`MAX_RESUME_LIFETIME`]).
    pub(crate) fn seal(&self, payload: &[u8], binding: &[u8], lifetime: Duration) -> Result<String, ResumeError> {
        let cipher = self.cipher()?;
        let expires = now_ms().saturating_add(lifetime.min(MAX_RESUME_LIFETIME).as_millis() as u64);
        let mut id = [0; ID_BYTES];
        let mut nonce = [0; NONCE_BYTES];
        getrandom::fill(&mut id).and_then(|()| getrandom::fill(&mut nonce)).map_err(|e| ResumeError::NoKey(e.to_string()))?;
        let mut plain = Vec::with_capacity(HEADER_BYTES + payload.len());
        plain.push(FORMAT);
        plain.extend_from_slice(&id);
        plain.extend_from_slice(&expires.to_be_bytes());
        plain.extend_from_slice(&Sha256::digest(binding));
        plain.extend_from_slice(payload);
        let sealed = cipher
            .encrypt(&XNonce::from(nonce), Payload { msg: &plain, aad: ASSOCIATED })
            .map_err(|_| ResumeError::TooLarge(plain.len()))?;
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        let token = format!("{PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes));
        if token.len() > MAX_TOKEN_BYTES {
            return Err(ResumeError::TooLarge(token.len()));
        }
        Ok(token)
    }

    /// What `token` holds, when it opens under this host's key, has not
    /// expired and is bound to `binding`; [`Unsealed::spend`] then uses it
    /// up, once the caller found it can act on it.
    pub(crate) fn open(self: &Arc<Self>, token: &str, binding: &[u8]) -> Result<Unsealed, ResumeError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(ResumeError::TooLarge(token.len()));
        }
        let encoded = token.strip_prefix(PREFIX).ok_or(ResumeError::Malformed("it is not a toolhost resume token"))?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|_| ResumeError::Malformed("it is not base64url"))?;
        if bytes.len() < NONCE_BYTES {
            return Err(ResumeError::Malformed("it is too short"));
        }
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        let nonce: [u8; NONCE_BYTES] = nonce.try_into().expect("split at the nonce's length");
        let plain = self
            .cipher()?
            .decrypt(&XNonce::from(nonce), Payload { msg: sealed, aad: ASSOCIATED })
            .map_err(|_| ResumeError::Forged)?;
        // Authentic from here: only a holder of the key made it.
        if plain.len() < HEADER_BYTES || plain[0] != FORMAT {
            return Err(ResumeError::Malformed("it is of another format"));
        }
        let id: [u8; ID_BYTES] = plain[1..1 + ID_BYTES].try_into().expect("in the header");
        let expires = u64::from_be_bytes(plain[1 + ID_BYTES..1 + ID_BYTES + 8].try_into().expect("in the header"));
        let now = now_ms();
        if now >= expires {
            return Err(ResumeError::Expired(Duration::from_millis(now - expires)));
        }
        if plain[1 + ID_BYTES + 8..HEADER_BYTES] != Sha256::digest(binding)[..] {
            return Err(ResumeError::Mismatched("another tool, other arguments or another agent".into()));
        }
        Ok(Unsealed { seal: self.clone(), id, expires, payload: plain[HEADER_BYTES..].to_vec() })
    }

    /// Record `id` (its token valid until `expires`) as used, unless it
    /// was; entries of expired tokens are dropped on the way.
    fn spend(&self, id: &[u8; ID_BYTES], expires: u64, now: u64) -> Result<(), ResumeError> {
        let ledger_error = |source| ResumeError::Ledger { path: self.ledger.clone(), source };
        let _other_processes = lock_file(&self.ledger).map_err(ledger_error)?;
        let text = match crate::regular_file::read_regular_file(&self.ledger, MAX_SPENT_TOKENS as u64 * 64) {
            Ok(text) => String::from_utf8(text).map_err(|e| ledger_error(std::io::Error::other(e)))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(ledger_error(e)),
        };
        let id = hex::encode(id);
        let mut kept = String::with_capacity(text.len() + 64);
        let mut count = 0;
        for line in text.lines() {
            let Some((spent, until)) = line.split_once(' ') else { continue };
            if until.parse::<u64>().is_ok_and(|until| until > now) {
                if spent == id {
                    return Err(ResumeError::Replayed);
                }
                kept.push_str(line);
                kept.push('\n');
                count += 1;
            }
        }
        if count >= MAX_SPENT_TOKENS {
            return Err(ResumeError::LedgerFull);
        }
        kept.push_str(&format!("{id} {expires}\n"));
        write_durably(&self.ledger, kept.as_bytes()).map_err(ledger_error)
    }
}

/// An authentic, unexpired token, not yet spent.
#[derive(Debug)]
pub(crate) struct Unsealed {
    seal: Arc<ResumeSeal>,
    id: [u8; ID_BYTES],
    expires: u64,
    /// What was sealed.
    pub(crate) payload: Vec<u8>,
}

impl Unsealed {
    /// Record the token as used, unless it was: a token resumes once. The
    /// ledger is a locked file: call this off the async threads.
    pub(crate) fn spend(&self) -> Result<(), ResumeError> {
        self.seal.spend(&self.id, self.expires, now_ms())
    }
}

/// The ledger beside the approvals memory file `memory_file`.
fn ledger_path(memory_file: &Path) -> PathBuf {
    let mut name = memory_file.file_name().map_or_else(|| "toolhost.approvals.json".into(), ToOwned::to_owned);
    name.push(".resumed");
    memory_file.with_file_name(name)
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal_in(dir: &Path) -> Arc<ResumeSeal> {
        Arc::new(ResumeSeal::new(Some(dir.join("key")), &dir.join("approvals.json")))
    }

    #[test]
    fn a_token_opens_once_with_its_binding_and_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let seal = seal_in(dir.path());
        let token = seal.seal(b"the turn", b"tools/call write_file {}", Duration::from_secs(60)).unwrap();
        assert!(token.starts_with(PREFIX) && !token.contains("the turn"), "sealed, not readable: {token}");
        // Another process with the same key file opens it.
        let replica = seal_in(dir.path());
        let mismatched = replica.open(&token, b"tools/call write_file {\"path\":\"x\"}").unwrap_err();
        assert!(matches!(mismatched, ResumeError::Mismatched(_)), "{mismatched}");
        let opened = replica.open(&token, b"tools/call write_file {}").unwrap();
        assert_eq!(opened.payload, b"the turn");
        opened.spend().unwrap();
        let again = seal.open(&token, b"tools/call write_file {}").unwrap();
        assert!(matches!(again.spend(), Err(ResumeError::Replayed)), "used once");

        let other = tempfile::tempdir().unwrap();
        let foreign = seal_in(other.path());
        assert!(matches!(foreign.open(&token, b"tools/call write_file {}"), Err(ResumeError::Forged)), "another key");
    }

    #[test]
    fn forged_altered_expired_and_malformed_tokens_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let seal = seal_in(dir.path());
        let token = seal.seal(b"turn", b"b", Duration::from_secs(60)).unwrap();
        // One character changed anywhere in the seal.
        let mut altered = token.clone().into_bytes();
        let at = altered.len() - 5;
        altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert!(matches!(seal.open(&altered, b"b"), Err(ResumeError::Forged)));
        assert!(matches!(seal.open("thr1.not base64!", b"b"), Err(ResumeError::Malformed(_))));
        assert!(matches!(seal.open("session-42", b"b"), Err(ResumeError::Malformed(_))));
        assert!(matches!(seal.open("thr1.AAAA", b"b"), Err(ResumeError::Malformed(_))));
        let huge = format!("{PREFIX}{}", "A".repeat(MAX_TOKEN_BYTES));
        assert!(matches!(seal.open(&huge, b"b"), Err(ResumeError::TooLarge(_))));
        let expired = seal.seal(b"turn", b"b", Duration::ZERO).unwrap();
        let refused = seal.open(&expired, b"b").unwrap_err();
        assert!(matches!(refused, ResumeError::Expired(_)), "{refused}");
        assert!(refused.to_string().contains("expired"), "{refused}");
        assert!(!seal.ledger().exists(), "nothing refused was spent");
    }

    #[test]
    fn without_a_key_file_nothing_is_sealed() {
        let dir = tempfile::tempdir().unwrap();
        let seal = ResumeSeal::new(None, &dir.path().join("approvals.json"));
        let refused = seal.seal(b"turn", b"b", Duration::from_secs(1)).unwrap_err();
        assert!(refused.to_string().contains("cache_key"), "{refused}");
    }

    #[test]
    fn the_ledger_forgets_expired_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let seal = seal_in(dir.path());
        let now = now_ms();
        seal.spend(&[1; ID_BYTES], now + 1, now).unwrap();
        seal.spend(&[2; ID_BYTES], now + 60_000, now).unwrap();
        assert!(matches!(seal.spend(&[2; ID_BYTES], now + 60_000, now), Err(ResumeError::Replayed)));
        seal.spend(&[3; ID_BYTES], now + 60_000, now + 10).unwrap();
        let ledger = std::fs::read_to_string(seal.ledger()).unwrap();
        assert_eq!(ledger.lines().count(), 2, "the expired entry is gone: {ledger}");
    }
}
