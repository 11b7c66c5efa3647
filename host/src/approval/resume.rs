//! [`ResumeSeal`]: what a paused turn becomes to be finished elsewhere —
//! a resume token — and the ledger that lets each token be used once.
//!
//! A token is `thr1.` and the base64url of a random 24-byte nonce and the
//! XChaCha20-Poly1305 sealing of: the format byte, a random 16-byte id,
//! the expiry (Unix milliseconds), the ledger's instance id, the SHA-256 of
//! what the token is bound to (the door's request: an MCP call's tool and
//! arguments, say) and the turn itself. The key is derived from the host
//! key (the `cache_key` file, which authenticates the compiled cache), so
//! every process with that key file can open what another sealed; nobody
//! without it can read a token (a held result travels in one) or make one.
//! Opening checks, in order: the seal (a forged or altered token, or one of
//! another key), the expiry, the binding; spending it then checks the
//! ledger — a file beside the approvals memory file, shared as that one is
//! by replicas, locked with `flock` — so a token resumes one turn once.
//!
//! The ledger's first line names its instance, a random id made with the
//! file: a token is spent only in the ledger it was sealed for, so two
//! deployments sharing a key (the user's default one) cannot each resume
//! the same token, and a deleted ledger makes every token given out before
//! it unusable rather than usable again. Each used id is appended with its
//! token's expiry and kept [`LEDGER_GRACE`] past it, so a replica whose
//! clock runs behind cannot accept a token another already forgot.

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
/// Bytes of the seal's authentication tag.
const TAG_BYTES: usize = 16;
const ID_BYTES: usize = 16;
/// Bytes of a ledger's instance id.
const INSTANCE_BYTES: usize = 16;
/// Format, id, expiry, instance, binding digest.
const HEADER_BYTES: usize = 1 + ID_BYTES + 8 + INSTANCE_BYTES + 32;
/// What a ledger's first line starts with, before its instance id.
const LEDGER_HEAD: &str = "toolhost resume ledger 1 ";
/// How long past its token's expiry a used id is kept: clocks of replicas
/// may disagree by this much.
pub const LEDGER_GRACE: Duration = Duration::from_secs(300);
/// The longest a token may live: a day.
pub const MAX_RESUME_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);
/// The most tokens the ledger holds as used at once (each until its
/// token expires); past it, a resume is refused until some expire.
pub const MAX_SPENT_TOKENS: usize = 100_000;
/// The largest the ledger can grow: its head, up to [`MAX_SPENT_TOKENS`]
/// live entries and at most as many past their grace (it is rewritten
/// without those once they are the most of it), each at most 54 bytes (an
/// id of 32 hex digits, a space, a time of up to 20 digits, a line break).
/// A bound of the live ones alone let a ledger that spends went on
/// growing past what it would read, and every resume failed from then on.
const MAX_LEDGER_BYTES: u64 = (2 * MAX_SPENT_TOKENS as u64 + 1) * 64;
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

    /// The length of the token sealing a payload of `payload` bytes gives.
    pub(crate) fn token_len(payload: usize) -> usize {
        let sealed = NONCE_BYTES + HEADER_BYTES + payload + TAG_BYTES;
        PREFIX.len() + (sealed * 4).div_ceil(3)
    }

    /// `payload` sealed, bound to `binding`, for `lifetime` (at most
    /// [`MAX_RESUME_LIFETIME`]).
    /// Reads the key and the ledger's instance (making them if missing):
    /// call it off the async threads.
    pub(crate) fn seal(&self, payload: &[u8], binding: &[u8], lifetime: Duration) -> Result<String, ResumeError> {
        let cipher = self.cipher()?;
        let instance = self.instance()?;
        let expires = now_ms().saturating_add(lifetime.min(MAX_RESUME_LIFETIME).as_millis() as u64);
        let mut id = [0; ID_BYTES];
        let mut nonce = [0; NONCE_BYTES];
        getrandom::fill(&mut id).and_then(|()| getrandom::fill(&mut nonce)).map_err(|e| ResumeError::NoKey(e.to_string()))?;
        let mut plain = Vec::with_capacity(HEADER_BYTES + payload.len());
        plain.push(FORMAT);
        plain.extend_from_slice(&id);
        plain.extend_from_slice(&expires.to_be_bytes());
        plain.extend_from_slice(&instance);
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
        let (id, rest) = plain[1..].split_at(ID_BYTES);
        let (expires, rest) = rest.split_at(8);
        let (instance, rest) = rest.split_at(INSTANCE_BYTES);
        let (bound, payload) = rest.split_at(32);
        let expires = u64::from_be_bytes(expires.try_into().expect("in the header"));
        let now = now_ms();
        if now >= expires {
            return Err(ResumeError::Expired(Duration::from_millis(now - expires)));
        }
        if *bound != Sha256::digest(binding)[..] {
            return Err(ResumeError::Mismatched("another tool, other arguments or another agent".into()));
        }
        Ok(Unsealed {
            seal: self.clone(),
            id: id.try_into().expect("in the header"),
            expires,
            instance: instance.try_into().expect("in the header"),
            payload: payload.to_vec(),
        })
    }

    /// The ledger's instance id, the ledger made first (under its lock) if
    /// there is none.
    fn instance(&self) -> Result<[u8; INSTANCE_BYTES], ResumeError> {
        if let Some(instance) = self.read_instance()? {
            return Ok(instance);
        }
        let _other_processes = lock_file(&self.ledger).map_err(|source| self.ledger_error(source))?;
        match self.read_instance()? {
            Some(instance) => Ok(instance),
            None => self.new_ledger(),
        }
    }

    /// The instance id on the ledger's first line; `None` when there is no
    /// ledger yet.
    fn read_instance(&self) -> Result<Option<[u8; INSTANCE_BYTES]>, ResumeError> {
        use std::io::{BufRead, Read};
        let file = match crate::regular_file::open_regular_file(&self.ledger) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.ledger_error(e)),
        };
        let mut head = String::new();
        std::io::BufReader::new(file.take(256)).read_line(&mut head).map_err(|e| self.ledger_error(e))?;
        parse_head(&head).map(Some).ok_or_else(|| self.ledger_error(std::io::Error::other("its first line is not a ledger's")))
    }

    /// A new, empty ledger with a new instance id; its lock held.
    fn new_ledger(&self) -> Result<[u8; INSTANCE_BYTES], ResumeError> {
        let mut instance = [0; INSTANCE_BYTES];
        getrandom::fill(&mut instance).map_err(|e| self.ledger_error(std::io::Error::other(e)))?;
        write_durably(&self.ledger, format!("{LEDGER_HEAD}{}\n", hex::encode(instance)).as_bytes())
            .map_err(|e| self.ledger_error(e))?;
        Ok(instance)
    }

    fn ledger_error(&self, source: std::io::Error) -> ResumeError {
        ResumeError::Ledger { path: self.ledger.clone(), source }
    }

    /// Record `id` (its token valid until `expires`, sealed for the ledger
    /// `instance`) as used, unless it was. The id is appended; the file is
    /// rewritten without the entries past their grace only once they are
    /// the most of it.
    fn spend(&self, id: &[u8; ID_BYTES], expires: u64, instance: &[u8; INSTANCE_BYTES], now: u64) -> Result<(), ResumeError> {
        use std::io::Write;
        let _other_processes = lock_file(&self.ledger).map_err(|e| self.ledger_error(e))?;
        let text = match crate::regular_file::read_regular_file(&self.ledger, MAX_LEDGER_BYTES) {
            Ok(text) => String::from_utf8(text).map_err(|e| self.ledger_error(std::io::Error::other(e)))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(self.ledger_error(e)),
        };
        let mut lines = text.lines();
        if lines.next().and_then(parse_head).is_none_or(|head| head != *instance) {
            return Err(ResumeError::Mismatched(
                "it was given out for another ledger of used tokens (another deployment, or one whose ledger was deleted since)"
                    .into(),
            ));
        }
        let id = hex::encode(id);
        let grace = LEDGER_GRACE.as_millis() as u64;
        let (mut live, mut past) = (Vec::new(), 0usize);
        for line in lines {
            let Some((spent, until)) = line.split_once(' ') else { continue };
            if until.parse::<u64>().is_ok_and(|until| until.saturating_add(grace) > now) {
                if spent == id {
                    return Err(ResumeError::Replayed);
                }
                live.push(line);
            } else {
                past += 1;
            }
        }
        if live.len() >= MAX_SPENT_TOKENS {
            return Err(ResumeError::LedgerFull);
        }
        let entry = format!("{id} {expires}\n");
        if past > live.len() {
            let head = text.lines().next().unwrap_or_default();
            let mut kept = String::with_capacity(head.len() + 1 + (live.len() + 1) * 50);
            for line in std::iter::once(head).chain(live) {
                kept.push_str(line);
                kept.push('\n');
            }
            kept.push_str(&entry);
            return write_durably(&self.ledger, kept.as_bytes()).map_err(|e| self.ledger_error(e));
        }
        let mut file = std::fs::OpenOptions::new().append(true).open(&self.ledger).map_err(|e| self.ledger_error(e))?;
        file.write_all(entry.as_bytes()).and_then(|()| file.sync_data()).map_err(|e| self.ledger_error(e))
    }
}

/// The instance id a ledger's first line names.
fn parse_head(line: &str) -> Option<[u8; INSTANCE_BYTES]> {
    let hex_id = line.trim_end().strip_prefix(LEDGER_HEAD)?;
    hex::decode(hex_id).ok()?.try_into().ok()
}

/// An authentic, unexpired token, not yet spent.
#[derive(Debug)]
pub(crate) struct Unsealed {
    seal: Arc<ResumeSeal>,
    id: [u8; ID_BYTES],
    expires: u64,
    instance: [u8; INSTANCE_BYTES],
    /// What was sealed.
    pub(crate) payload: Vec<u8>,
}

impl Unsealed {
    /// Record the token as used, unless it was: a token resumes once. The
    /// ledger is a locked file: call this off the async threads.
    pub(crate) fn spend(&self) -> Result<(), ResumeError> {
        self.seal.spend(&self.id, self.expires, &self.instance, now_ms())
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
        assert_eq!(token.len(), ResumeSeal::token_len(b"the turn".len()), "the length is known before sealing");
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
        let ledger = std::fs::read_to_string(seal.ledger()).unwrap();
        assert_eq!(ledger.lines().count(), 1, "its head only: nothing refused was spent: {ledger}");
    }

    #[test]
    fn without_a_key_file_nothing_is_sealed() {
        let dir = tempfile::tempdir().unwrap();
        let seal = ResumeSeal::new(None, &dir.path().join("approvals.json"));
        let refused = seal.seal(b"turn", b"b", Duration::from_secs(1)).unwrap_err();
        assert!(refused.to_string().contains("cache_key"), "{refused}");
    }

    #[test]
    fn the_ledger_keeps_ids_past_expiry_by_its_grace_then_forgets_them() {
        let dir = tempfile::tempdir().unwrap();
        let seal = seal_in(dir.path());
        let instance = seal.instance().unwrap();
        let (now, grace) = (now_ms(), LEDGER_GRACE.as_millis() as u64);
        seal.spend(&[1; ID_BYTES], now + 1, &instance, now).unwrap();
        seal.spend(&[2; ID_BYTES], now + 60_000, &instance, now).unwrap();
        assert!(matches!(seal.spend(&[2; ID_BYTES], now + 60_000, &instance, now), Err(ResumeError::Replayed)));
        let later = now + 1 + grace - 1;
        assert!(matches!(seal.spend(&[1; ID_BYTES], now + 1, &instance, later), Err(ResumeError::Replayed)), "within the grace");
        // Past the grace of both, the next spend rewrites the ledger without them.
        let much_later = now + 60_000 + grace + 1;
        seal.spend(&[3; ID_BYTES], much_later + 60_000, &instance, much_later).unwrap();
        let ledger = std::fs::read_to_string(seal.ledger()).unwrap();
        assert_eq!(ledger.lines().count(), 2, "the head and the new entry: {ledger}");
        assert!(ledger.starts_with(LEDGER_HEAD), "{ledger}");
        let other = [9; INSTANCE_BYTES];
        let refused = seal.spend(&[4; ID_BYTES], much_later + 60_000, &other, much_later).unwrap_err();
        assert!(matches!(refused, ResumeError::Mismatched(_)), "another ledger's token: {refused}");
    }

    #[test]
    fn a_ledger_as_large_as_spending_makes_it_is_read() {
        // Live entries up to the most, and as many past their grace: the
        // largest ledger that spends append to without rewriting it.
        let dir = tempfile::tempdir().unwrap();
        let seal = seal_in(dir.path());
        let instance = seal.instance().unwrap();
        let mut ledger = std::fs::read_to_string(seal.ledger()).unwrap();
        for n in 0..(MAX_SPENT_TOKENS as u64 - 1) {
            ledger.push_str(&format!("{:032x} {}\n{:032x} 0\n", n, u64::MAX, n + (1 << 40)));
        }
        assert!(ledger.len() as u64 > (MAX_SPENT_TOKENS as u64 + 1) * 64, "past the bound that was");
        std::fs::write(seal.ledger(), ledger).unwrap();
        let now = now_ms();
        seal.spend(&[7; ID_BYTES], now + 60_000, &instance, now).unwrap();
        assert!(matches!(seal.spend(&[7; ID_BYTES], now + 60_000, &instance, now), Err(ResumeError::Replayed)));
        assert!(matches!(seal.spend(&[8; ID_BYTES], now + 60_000, &instance, now), Err(ResumeError::LedgerFull)));
    }

    #[test]
    fn a_token_given_out_before_its_ledger_was_deleted_is_not_usable_again() {
        let dir = tempfile::tempdir().unwrap();
        let seal = seal_in(dir.path());
        let token = seal.seal(b"turn", b"b", Duration::from_secs(60)).unwrap();
        seal.open(&token, b"b").unwrap().spend().unwrap();
        std::fs::remove_file(seal.ledger()).unwrap();
        let refused = seal.open(&token, b"b").unwrap().spend().unwrap_err();
        assert!(matches!(refused, ResumeError::Mismatched(_)), "{refused}");
    }
}
