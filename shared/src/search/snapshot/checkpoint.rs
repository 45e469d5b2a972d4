//! Checkpoints of a list snapshot: the rows of one organization's entities of one type and
//! the `byChange` position they are synced to, as bytes a cold process loads instead of
//! reading the whole index. It then applies the index's changes after that position, as a
//! warm process does on every call, so a snapshot loaded from a checkpoint is the one a full
//! read would build (`tests.rs` holds the two equal, deletes and tree moves included).
//!
//! Format 2: blocks, an index, a footer. Each block holds up to `block_entries` entries and
//! is checked by its SHA-256 in the index, so a loader can fetch blocks with parallel ranged
//! reads and decode them on every core, and refuses a torn or altered one. The index is
//! sealed by an HMAC-SHA256 under the deployment's [`CheckpointKey`] over the organization
//! and type it holds (format 1 had a plain hash): a checkpoint copied to another
//! organization's key, another type's, or written by anyone without the deployment's secret
//! is refused, so a process only ever trusts what its own deployment wrote for that list.
//!
//! ```text
//! block   := count entry*                       (count as LEB128)
//! entry   := flags id [pid] [vid] su tu ver name [family] values
//!            flags: 1 pid, 2 vid, 4 family; strings and values as LEB128 length + bytes;
//!            su, tu (ms) and family as i64 LE; ver as LEB128
//! index   := version(1) values(8: the packed values' layout fingerprint) synced(i64 LE)
//!            blocks(LEB128) (offset u64, len u64, sha256)* deletions(LEB128) (id, at i64 LE)*
//! footer  := index length (u32 LE) hmac(key, org 0x00 type 0x00 index) "CATCKPT2"
//! ```

use super::Rows;
use crate::domain::time::Timestamp;
use crate::search::entities::Entry;
use crate::search::packed::{put_len, put_str, Packed};
use crate::store::items::EntityKind;
use futures_util::future::BoxFuture;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The deployment's key for sealing checkpoints (derived from its cursor secret,
/// `http::cursor::CursorKey::derive`): only its processes can write one another trusts.
#[derive(Clone, Default)]
pub struct CheckpointKey([u8; 32]);

impl std::fmt::Debug for CheckpointKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckpointKey(..)")
    }
}

impl CheckpointKey {
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }
}

/// What one checkpoint is sealed with: the deployment's key and the list it holds.
#[derive(Clone, Copy)]
pub(crate) struct Seal<'a> {
    pub key: &'a CheckpointKey,
    pub org: &'a str,
    pub kind: EntityKind,
}

impl Seal<'_> {
    fn mac(&self, index: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key.0).expect("HMAC takes any key");
        mac.update(self.org.as_bytes());
        mac.update(&[0]);
        mac.update(self.kind.as_str().as_bytes());
        mac.update(&[0]);
        mac.update(index);
        mac
    }

    /// The tag of `index` in this list's checkpoint.
    pub(crate) fn tag(&self, index: &[u8]) -> [u8; 32] {
        self.mac(index).finalize().into_bytes().into()
    }

    /// Whether `tag` is this list's tag of `index` (compared in constant time).
    fn verify(&self, index: &[u8], tag: &[u8]) -> bool {
        self.mac(index).verify_slice(tag).is_ok()
    }
}

/// Where a checkpoint stands: the position its rows are synced to, and the start of the
/// full read of the index it descends from (a checkpoint built from another one and the
/// changes after it keeps that one's `full`). A serving process reloads only from a
/// checkpoint whose full read is newer than the one its own snapshot descends from: that is
/// what heals a change a delta could have missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub synced: Timestamp,
    pub full: Timestamp,
}

/// A checkpoint's bytes and the start of the full read it descends from.
pub type Fetched = (Vec<u8>, Timestamp);

/// Where checkpoints are kept (S3 as deployed, `imports/checkpoints.rs`): whole objects by
/// key. Errors are text: a checkpoint that cannot be read or written is only a slower start.
pub trait CheckpointStore: Send + Sync {
    /// The object at `key`, whole, with the start of the full read it descends from, or
    /// `None` when there is none.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Fetched>, String>>;
    /// Where the checkpoint at `key` stands (without reading it), or `None` when there is
    /// none.
    fn stamp<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Stamp>, String>>;
    /// Writes `bytes`, a checkpoint at `stamp`, at `key` unless the checkpoint there is
    /// synced to `stamp.synced` or later (atomically: a slower writer never replaces a newer
    /// checkpoint with an older one). Whether it wrote.
    fn put_newer<'a>(
        &'a self,
        key: &'a str,
        bytes: Vec<u8>,
        stamp: Stamp,
    ) -> BoxFuture<'a, Result<bool, String>>;
    /// Notes at `key` (a [`wanted_key`]) that a list needs a checkpoint built: the
    /// checkpoint builder finds the lists it keeps by their checkpoints and these notes.
    fn want<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// The object key of the checkpoint of `org`'s entities of `kind`, in format 2.
pub fn key(org: &str, kind: EntityKind) -> String {
    format!("{PREFIX}{org}/{}/{VERSION}", kind.as_str())
}

/// The object key of the note that `org`'s list of `kind` wants a checkpoint.
pub fn wanted_key(org: &str, kind: EntityKind) -> String {
    format!("{PREFIX}{org}/{}/{WANTED}", kind.as_str())
}

/// Where checkpoints and notes live.
pub const PREFIX: &str = "checkpoints/";
const WANTED: &str = "wanted";
const FAILED: &str = "failed-";

/// The object key of the note that the last `failures` builds of `org`'s list of `kind`
/// failed in a row (the checkpoint builder's backoff: the count is in the key, so listing
/// the bucket tells it without a read).
pub fn failed_key(org: &str, kind: EntityKind, failures: u32) -> String {
    format!("{PREFIX}{org}/{}/{FAILED}{failures}", kind.as_str())
}

/// The list and the count of a failure note's object key ([`failed_key`]).
pub fn failure_of(object_key: &str) -> Option<(String, EntityKind, u32)> {
    let mut parts = object_key.strip_prefix(PREFIX)?.split('/');
    let (org, kind, last) = (parts.next()?, parts.next()?, parts.next()?);
    let failures = last.strip_prefix(FAILED)?.parse().ok()?;
    let kind = EntityKind::parse(kind)?;
    (parts.next().is_none() && !org.is_empty()).then(|| (org.to_string(), kind, failures))
}

/// The list an object key under [`PREFIX`] is about (its checkpoint in this format, or a
/// note that it wants one).
pub fn list_of(object_key: &str) -> Option<(String, EntityKind)> {
    let mut parts = object_key.strip_prefix(PREFIX)?.split('/');
    let (org, kind, last) = (parts.next()?, parts.next()?, parts.next()?);
    let current = last == WANTED || last == VERSION.to_string();
    let kind = EntityKind::parse(kind)?;
    (parts.next().is_none() && current && !org.is_empty()).then(|| (org.to_string(), kind))
}

/// Entries per block of the checkpoints a process writes.
pub(crate) const BLOCK_ENTRIES: usize = 16_384;

const MAGIC: &[u8; 8] = b"CATCKPT2";
const VERSION: u8 = 2;
/// Bytes of the footer: the index's length and the magic.
pub(crate) const FOOTER: usize = 4 + 32 + 8;

const PID: u8 = 1;
const VID: u8 = 2;
const FAMILY: u8 = 4;

/// Why a checkpoint cannot be used (the loader then reads the index in full).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unusable(pub String);

fn unusable(what: impl Into<String>) -> Unusable {
    Unusable(what.into())
}

/// Where one block lies in the checkpoint, and its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    pub offset: u64,
    pub len: u64,
    hash: [u8; 32],
}

/// A checkpoint's index: its position, its blocks and the deletions it remembers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Layout {
    pub synced: Timestamp,
    pub blocks: Vec<Block>,
    deleted: Vec<(String, Timestamp)>,
}

fn put_entry(out: &mut Vec<u8>, e: &Entry) {
    let mut flags = 0;
    if e.pid.is_some() {
        flags |= PID;
    }
    if e.vid.is_some() {
        flags |= VID;
    }
    if e.family_id.is_some() {
        flags |= FAMILY;
    }
    out.push(flags);
    put_str(out, &e.id);
    for parent in [&e.pid, &e.vid].into_iter().flatten() {
        put_str(out, parent);
    }
    out.extend_from_slice(&e.self_updated_at.millis().to_le_bytes());
    out.extend_from_slice(&e.updated_at.millis().to_le_bytes());
    put_len(out, e.ver as usize);
    put_str(out, e.name());
    if let Some(f) = e.family_id {
        out.extend_from_slice(&f.to_le_bytes());
    }
    let values = e.packed.values().as_bytes();
    put_len(out, values.len());
    out.extend_from_slice(values);
}

/// A checkpoint being written: blocks as they come (a writer may take them from a snapshot
/// block by block, letting go of it in between), then the index and the footer.
pub(crate) struct Encoder {
    out: Vec<u8>,
    blocks: Vec<(u64, u64, [u8; 32])>,
}

impl Encoder {
    pub(crate) fn new() -> Self {
        Self {
            out: Vec::new(),
            blocks: Vec::new(),
        }
    }

    /// Adds a block of entries (in identifier order, after those of earlier blocks).
    pub(crate) fn block<'e>(&mut self, entries: impl ExactSizeIterator<Item = &'e Entry>) {
        let start = self.out.len();
        put_len(&mut self.out, entries.len());
        for e in entries {
            put_entry(&mut self.out, e);
        }
        let hash: [u8; 32] = Sha256::digest(&self.out[start..]).into();
        self.blocks
            .push((start as u64, (self.out.len() - start) as u64, hash));
    }

    /// The checkpoint: the blocks so far, synced to `synced`, remembering `deleted`, sealed
    /// with `seal`.
    pub(crate) fn finish<'d>(
        self,
        synced: Timestamp,
        deleted: impl ExactSizeIterator<Item = (&'d String, &'d Timestamp)>,
        seal: Seal<'_>,
    ) -> Vec<u8> {
        let Self { mut out, blocks } = self;
        let index_start = out.len();
        out.push(VERSION);
        out.extend_from_slice(&crate::search::packed::layout_fingerprint());
        out.extend_from_slice(&synced.millis().to_le_bytes());
        put_len(&mut out, blocks.len());
        for (offset, len, hash) in &blocks {
            out.extend_from_slice(&offset.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(hash);
        }
        put_len(&mut out, deleted.len());
        for (id, at) in deleted {
            put_str(&mut out, id);
            out.extend_from_slice(&at.millis().to_le_bytes());
        }
        let index_len = (out.len() - index_start) as u32;
        let tag = seal.tag(&out[index_start..]);
        out.extend_from_slice(&index_len.to_le_bytes());
        out.extend_from_slice(&tag);
        out.extend_from_slice(MAGIC);
        out
    }
}

/// The seal of the unit tests' checkpoints: organization `o`'s products, a zero key.
#[cfg(test)]
pub(crate) fn test_seal() -> Seal<'static> {
    static KEY: CheckpointKey = CheckpointKey([0; 32]);
    Seal {
        key: &KEY,
        org: "o",
        kind: EntityKind::Product,
    }
}

/// The checkpoint of `rows`, synced to `synced`, in blocks of `block_entries` entries,
/// sealed with [`test_seal`].
#[cfg(test)]
pub(crate) fn encode(rows: &Rows, synced: Timestamp, block_entries: usize) -> Vec<u8> {
    let mut encoder = Encoder::new();
    let entries: Vec<&Entry> = rows.entries.values().collect();
    for chunk in entries.chunks(block_entries.max(1)) {
        encoder.block(chunk.iter().copied());
    }
    encoder.finish(synced, rows.deleted.iter(), test_seal())
}

/// Reads what [`encode`] wrote, refusing anything short or malformed.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Unusable> {
        if n > self.0.len() {
            return Err(unusable("truncated"));
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(taken)
    }

    fn byte(&mut self) -> Result<u8, Unusable> {
        Ok(self.take(1)?[0])
    }

    fn len(&mut self) -> Result<usize, Unusable> {
        let mut n = 0usize;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= ((b & 0x7f) as usize) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(unusable("a length runs over 64 bits"))
    }

    fn i64(&mut self) -> Result<i64, Unusable> {
        Ok(i64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn u64(&mut self) -> Result<u64, Unusable> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn str(&mut self) -> Result<&'a str, Unusable> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).map_err(|_| unusable("a string is not UTF-8"))
    }
}

/// The index of a checkpoint of `total` bytes from its last bytes (`tail`, at least the
/// footer and the index: a loader reads the tail first, then the blocks), refused unless
/// `seal` is the one it was written with.
pub(crate) fn layout(tail: &[u8], total: u64, seal: Seal<'_>) -> Result<Layout, Unusable> {
    if tail.len() < FOOTER || &tail[tail.len() - 8..] != MAGIC {
        return Err(unusable("no checkpoint footer"));
    }
    let footer = &tail[tail.len() - FOOTER..];
    let index_len = u32::from_le_bytes(footer[..4].try_into().expect("4 bytes")) as usize;
    let Some(index_start) = (tail.len() - FOOTER).checked_sub(index_len) else {
        return Err(unusable("the index is not within the bytes read"));
    };
    let Some(blocks_end) = total.checked_sub((index_len + FOOTER) as u64) else {
        return Err(unusable("the index is longer than the checkpoint"));
    };
    let index = &tail[index_start..tail.len() - FOOTER];
    if !seal.verify(index, &footer[4..36]) {
        return Err(unusable(
            "not sealed by this deployment for this organization and type",
        ));
    }
    let mut r = Reader(index);
    if r.byte()? != VERSION {
        return Err(unusable("another format version"));
    }
    if r.take(8)? != crate::search::packed::layout_fingerprint() {
        return Err(unusable("values packed in another layout"));
    }
    let synced = Timestamp::from_millis(r.i64()?);
    let count = r.len()?;
    // every block takes 48 bytes of the index: no more can be there
    let mut blocks = Vec::with_capacity(count.min(r.0.len() / 48));
    for _ in 0..count {
        let (offset, len) = (r.u64()?, r.u64()?);
        let hash = r.take(32)?.try_into().expect("32 bytes");
        if offset.checked_add(len).is_none_or(|end| end > blocks_end) {
            return Err(unusable("a block lies outside the checkpoint"));
        }
        blocks.push(Block { offset, len, hash });
    }
    let deletions = r.len()?;
    let mut deleted = Vec::with_capacity(deletions.min(r.0.len() / 9));
    for _ in 0..deletions {
        let id = r.str()?.to_string();
        deleted.push((id, Timestamp::from_millis(r.i64()?)));
    }
    Ok(Layout {
        synced,
        blocks,
        deleted,
    })
}

/// `s` as the string `last` holds when equal (one allocation for the parent its children
/// name one after the other in identifier order), else a new one kept in `last`.
fn shared_parent(last: &mut Option<Arc<str>>, s: &str) -> Arc<str> {
    match last {
        Some(a) if **a == *s => a.clone(),
        _ => last.insert(Arc::from(s)).clone(),
    }
}

/// Adds the rows of one block to `rows`, after checking the block against its hash. (Blocks
/// go into one `Rows` each thread: merging maps block by block would copy them every time.)
/// The SKUs of a variant and the variants of a product share their parents' identifiers.
pub(crate) fn decode_block(block: &Block, bytes: &[u8], rows: &mut Rows) -> Result<(), Unusable> {
    if bytes.len() as u64 != block.len || Sha256::digest(bytes).as_slice() != block.hash {
        return Err(unusable("a block does not match its hash"));
    }
    let mut r = Reader(bytes);
    let (mut last_pid, mut last_vid) = (None, None);
    for _ in 0..r.len()? {
        let flags = r.byte()?;
        let id: Arc<str> = r.str()?.into();
        let pid = (flags & PID != 0)
            .then(|| r.str().map(|s| shared_parent(&mut last_pid, s)))
            .transpose()?;
        let vid = (flags & VID != 0)
            .then(|| r.str().map(|s| shared_parent(&mut last_vid, s)))
            .transpose()?;
        let self_updated_at = Timestamp::from_millis(r.i64()?);
        let updated_at = Timestamp::from_millis(r.i64()?);
        let ver = r.len()? as u64;
        let name = r.str()?;
        let family_id = (flags & FAMILY != 0).then(|| r.i64()).transpose()?;
        let n = r.len()?;
        let packed = Packed::from_parts(name, r.take(n)?);
        let entry = Entry {
            id,
            pid,
            vid,
            self_updated_at,
            updated_at,
            ver,
            family_id,
            packed,
        };
        rows.bytes += entry.weight();
        if let Some(old) = rows.entries.insert(entry) {
            rows.bytes -= old.weight();
        }
    }
    Ok(())
}

/// The rows of a whole checkpoint sealed with `seal` and the position they are synced to,
/// its blocks decoded on `threads` threads.
pub(crate) fn decode(
    bytes: &[u8],
    threads: usize,
    seal: Seal<'_>,
) -> Result<(Rows, Timestamp), Unusable> {
    let layout = layout(bytes, bytes.len() as u64, seal)?;
    let per_thread = layout.blocks.len().div_ceil(threads.max(1)).max(1);
    let parts: Vec<Result<Rows, Unusable>> = std::thread::scope(|scope| {
        let handles: Vec<_> = layout
            .blocks
            .chunks(per_thread)
            .map(|blocks| {
                scope.spawn(move || {
                    let mut rows = Rows::default();
                    for b in blocks {
                        let range = b.offset as usize..(b.offset + b.len) as usize;
                        decode_block(b, &bytes[range], &mut rows)?;
                    }
                    Ok(rows)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(unusable("a decoder panicked")))
            })
            .collect()
    });
    let mut rows = Rows::default();
    for part in parts {
        rows.absorb(part?);
    }
    rows.deleted.extend(layout.deleted);
    Ok((rows, layout.synced))
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
mod tests;
