//! The name and values of one entity packed into one byte buffer, as the list snapshot holds
//! them: one allocation per entity instead of a string and a map of strings, read in place
//! without copying (`Packed`: the name, then the values).
//!
//! Layout, lengths as LEB128: per attribute `key`, then the length of its body, then the body:
//! the type's index in `AttributeType::ALL`, a flags byte (multi, has a definition), the
//! definition, then each value as a flags byte (has a locale, has a channel), the locale, the
//! channel and the raw value.

use crate::domain::attributes::AttributeType;
use crate::domain::values::StoredValues;

/// What the packed bytes mean: this layout's version and the order of the attribute types
/// it indexes. Stored bytes (a checkpoint's) are read only under the same fingerprint.
pub(crate) fn layout_fingerprint() -> [u8; 8] {
    use sha2::{Digest, Sha256};
    let names: Vec<&str> = AttributeType::ALL.iter().map(|t| t.as_str()).collect();
    let digest = Sha256::digest(format!("packed-values/1:{}", names.join(",")));
    digest[..8].try_into().expect("8 bytes")
}

/// An entity's values alone, packed (see the module's layout): what tests build entities
/// from; a snapshot keeps `Packed`.
#[cfg(test)]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackedValues(Box<[u8]>);

const MULTI: u8 = 1;
const DEFINITION: u8 = 2;
const LOCALE: u8 = 1;
const CHANNEL: u8 = 2;

pub(crate) fn put_len(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// Reads what `pack` wrote; a buffer only `pack` makes is always whole, and a short one
/// reads as empty rather than failing.
#[derive(Clone, Copy)]
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn byte(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        *first
    }

    fn len(&mut self) -> usize {
        let mut n = 0usize;
        for shift in (0..64).step_by(7) {
            let b = self.byte();
            n |= ((b & 0x7f) as usize) << shift;
            if b & 0x80 == 0 {
                break;
            }
        }
        n
    }

    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (taken, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        taken
    }

    fn str(&mut self) -> &'a str {
        let n = self.len();
        std::str::from_utf8(self.bytes(n)).unwrap_or_default()
    }
}

/// One attribute of a packed entity.
#[derive(Debug, Clone, Copy)]
pub struct Attr<'a> {
    pub key: &'a str,
    pub attr_type: AttributeType,
    pub is_multi: bool,
    pub definition: Option<&'a str>,
    values: &'a [u8],
}

/// One scoped raw value of an attribute (a JSON array string when multi).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Value<'a> {
    pub locale: Option<&'a str>,
    pub channel: Option<&'a str>,
    pub value: &'a str,
}

impl<'a> Attr<'a> {
    pub fn values(&self) -> impl Iterator<Item = Value<'a>> + 'a {
        let mut r = Reader(self.values);
        std::iter::from_fn(move || {
            if r.is_empty() {
                return None;
            }
            let flags = r.byte();
            let locale = (flags & LOCALE != 0).then(|| r.str());
            let channel = (flags & CHANNEL != 0).then(|| r.str());
            Some(Value {
                locale,
                channel,
                value: r.str(),
            })
        })
    }
}

/// Appends `vals` in the module's layout to `out`.
fn pack_into(out: &mut Vec<u8>, vals: &StoredValues) {
    let mut body = Vec::new();
    for (key, attr) in vals {
        body.clear();
        let t = AttributeType::ALL
            .iter()
            .position(|t| *t == attr.attr_type)
            .unwrap_or(0);
        body.push(t as u8);
        let mut flags = 0;
        if attr.is_multi {
            flags |= MULTI;
        }
        if attr.metaobject_definition.is_some() {
            flags |= DEFINITION;
        }
        body.push(flags);
        if let Some(d) = &attr.metaobject_definition {
            put_str(&mut body, d);
        }
        for e in &attr.entries {
            let mut flags = 0;
            if e.locale.is_some() {
                flags |= LOCALE;
            }
            if e.channel.is_some() {
                flags |= CHANNEL;
            }
            body.push(flags);
            for s in [&e.locale, &e.channel].into_iter().flatten() {
                put_str(&mut body, s);
            }
            put_str(&mut body, &e.value);
        }
        put_str(out, key);
        put_len(out, body.len());
        out.extend_from_slice(&body);
    }
}

#[cfg(test)]
impl PackedValues {
    pub fn pack(vals: &StoredValues) -> Self {
        let mut out = Vec::new();
        pack_into(&mut out, vals);
        Self(out.into_boxed_slice())
    }

    /// The values, read in place.
    pub fn view(&self) -> Values<'_> {
        Values(&self.0)
    }

    /// The attributes, in key order.
    pub fn iter(&self) -> impl Iterator<Item = Attr<'_>> {
        self.view().iter()
    }

    pub fn get(&self, key: &str) -> Option<Attr<'_>> {
        self.view().get(key)
    }

    /// The bytes the buffer holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Packed values, borrowed: what a list reads of an entity's attributes.
#[derive(Debug, Clone, Copy)]
pub struct Values<'a>(&'a [u8]);

impl<'a> Values<'a> {
    /// The attributes, in key order.
    pub fn iter(self) -> impl Iterator<Item = Attr<'a>> {
        let mut r = Reader(self.0);
        std::iter::from_fn(move || {
            if r.is_empty() {
                return None;
            }
            let key = r.str();
            let n = r.len();
            let mut body = Reader(r.bytes(n));
            let attr_type = AttributeType::ALL
                .get(body.byte() as usize)
                .copied()
                .unwrap_or(AttributeType::Text);
            let flags = body.byte();
            let definition = (flags & DEFINITION != 0).then(|| body.str());
            Some(Attr {
                key,
                attr_type,
                is_multi: flags & MULTI != 0,
                definition,
                values: body.0,
            })
        })
    }

    pub fn get(self, key: &str) -> Option<Attr<'a>> {
        self.iter().find(|a| a.key == key)
    }

    /// The packed bytes, as a checkpoint stores them.
    pub(crate) fn as_bytes(self) -> &'a [u8] {
        self.0
    }
}

/// An entity's name and packed values in one allocation (what a list snapshot keeps per
/// entity): the name's length and bytes, then the values' layout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Packed(Box<[u8]>);

impl Packed {
    /// `name` and the values packed in `values` (a checkpoint's bytes, checked by its hash).
    pub(crate) fn from_parts(name: &str, values: &[u8]) -> Self {
        let mut out = Vec::with_capacity(name.len() + values.len() + 2);
        put_str(&mut out, name);
        out.extend_from_slice(values);
        Self(out.into_boxed_slice())
    }

    /// An entity's `name` and `vals`, packed straight into one buffer.
    pub fn pack(name: &str, vals: &StoredValues) -> Self {
        let mut out = Vec::new();
        put_str(&mut out, name);
        pack_into(&mut out, vals);
        Self(out.into_boxed_slice())
    }

    /// `name` beside values packed before (tests' entities).
    #[cfg(test)]
    pub(crate) fn new(name: &str, values: &PackedValues) -> Self {
        Self::from_parts(name, &values.0)
    }

    pub fn name(&self) -> &str {
        Reader(&self.0).str()
    }

    /// The values, after the name (skipped, not read as text: filters call this per entity).
    pub fn values(&self) -> Values<'_> {
        let mut r = Reader(&self.0);
        let n = r.len();
        r.bytes(n);
        Values(r.0)
    }

    /// The bytes the buffer holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::values::{StoredAttribute, StoredEntry};

    fn unpack(p: &PackedValues) -> StoredValues {
        p.iter()
            .map(|a| {
                let entries = a
                    .values()
                    .map(|v| StoredEntry {
                        locale: v.locale.map(str::to_string),
                        channel: v.channel.map(str::to_string),
                        value: v.value.to_string(),
                    })
                    .collect();
                let attr = StoredAttribute {
                    attr_type: a.attr_type,
                    is_multi: a.is_multi,
                    metaobject_definition: a.definition.map(str::to_string),
                    entries,
                };
                (a.key.to_string(), attr)
            })
            .collect()
    }

    fn entry(l: Option<&str>, c: Option<&str>, v: &str) -> StoredEntry {
        StoredEntry {
            locale: l.map(str::to_string),
            channel: c.map(str::to_string),
            value: v.to_string(),
        }
    }

    #[test]
    fn packing_keeps_every_attribute_scope_and_value() {
        let long = "x".repeat(300);
        let mut vals = StoredValues::new();
        vals.insert(
            "color".into(),
            StoredAttribute {
                attr_type: AttributeType::Metaobject,
                is_multi: true,
                metaobject_definition: Some("colors".into()),
                entries: vec![
                    entry(Some("de-DE"), Some("web"), r#"["rot","blau"]"#),
                    entry(None, Some("print"), "[]"),
                ],
            },
        );
        vals.insert(
            "description".into(),
            StoredAttribute {
                attr_type: AttributeType::Html,
                is_multi: false,
                metaobject_definition: None,
                entries: vec![entry(Some("en-US"), None, &long), entry(None, None, "")],
            },
        );
        vals.insert(
            "price".into(),
            StoredAttribute {
                attr_type: AttributeType::Price,
                is_multi: false,
                metaobject_definition: None,
                entries: vec![entry(None, None, "12.50 EUR")],
            },
        );
        let packed = PackedValues::pack(&vals);
        assert_eq!(unpack(&packed), vals);
        assert_eq!(packed.get("price").unwrap().attr_type, AttributeType::Price);
        assert_eq!(
            packed.get("description").unwrap().values().next().unwrap(),
            Value {
                locale: Some("en-US"),
                channel: None,
                value: &long
            }
        );
        assert!(packed.get("pric").is_none());
        assert!(packed.len() < 400, "{} bytes", packed.len());
        let empty = PackedValues::pack(&StoredValues::new());
        assert!(empty.is_empty() && empty.iter().next().is_none());
        // with the entity's name in front, in the same allocation
        let both = Packed::new("A product", &packed);
        assert_eq!(both, Packed::pack("A product", &vals));
        assert_eq!(both.name(), "A product");
        assert_eq!(both.values().as_bytes(), packed.view().as_bytes());
        assert_eq!(both.len(), packed.len() + 1 + "A product".len());
        let nameless = Packed::new("", &empty);
        assert_eq!((nameless.name(), nameless.values().iter().count()), ("", 0));
        assert_eq!(Packed::default().name(), "");
    }
}
