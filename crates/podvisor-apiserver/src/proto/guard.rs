//! Nothing in a protobuf body is dropped unseen: the message podvisor decoded is encoded
//! again and compared, field by field and at every depth, with the bytes that came. A
//! field the body carries with content that the decoded message lacks is one podvisor's
//! subset does not model: the body is refused naming its path, rather than stored without
//! it. Zero values (gogo-protobuf writes every non-pointer field, set or not) pass.

use std::collections::HashMap;

/// One field's value on the wire.
#[derive(Debug, PartialEq)]
enum Wire<'a> {
    Varint(u64),
    Fixed(u64),
    Bytes(&'a [u8]),
}

fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = buf.split_first()?;
        *buf = rest;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if buf.len() < n {
        return None;
    }
    let (head, rest) = buf.split_at(n);
    *buf = rest;
    Some(head)
}

/// The fields of a message, in order; `None` if the bytes are not one.
fn fields(mut buf: &[u8]) -> Option<Vec<(u64, Wire<'_>)>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let value = match key & 7 {
            0 => Wire::Varint(varint(&mut buf)?),
            1 => Wire::Fixed(u64::from_le_bytes(take(&mut buf, 8)?.try_into().ok()?)),
            2 => {
                let n = usize::try_from(varint(&mut buf)?).ok()?;
                Wire::Bytes(take(&mut buf, n)?)
            }
            5 => Wire::Fixed(u64::from(u32::from_le_bytes(
                take(&mut buf, 4)?.try_into().ok()?,
            ))),
            _ => return None,
        };
        out.push((key >> 3, value));
    }
    Some(out)
}

/// A zero value, or a message of nothing but zero values.
fn is_zero(w: &Wire<'_>, depth: usize) -> bool {
    match w {
        Wire::Varint(v) | Wire::Fixed(v) => *v == 0,
        Wire::Bytes([]) => true,
        Wire::Bytes(b) => {
            depth < 32 && fields(b).is_some_and(|f| f.iter().all(|(_, v)| is_zero(v, depth + 1)))
        }
    }
}

/// Which fields may come with a zero value that the decoded message leaves out: those
/// gogo-protobuf writes whether set or not (Go's non-pointer fields), by the tags leading
/// to their message and their own tag. Any other field the subset lacks is refused, zero
/// or not: `automountServiceAccountToken: false` is a choice, not an absence.
pub(super) type ZeroOk = dyn Fn(&[u64], u64) -> bool;

/// The path of the first field `came` carries that `kept` lacks (beyond `zero_ok`'s).
pub(super) fn dropped(came: &[u8], kept: &[u8], zero_ok: &ZeroOk) -> Option<String> {
    walk(came, kept, &mut Vec::new(), zero_ok)
}

fn walk(came: &[u8], kept: &[u8], path: &mut Vec<u64>, zero_ok: &ZeroOk) -> Option<String> {
    if path.len() > 32 {
        return Some("(nested too deeply)".into());
    }
    let (Some(a), Some(b)) = (fields(came), fields(kept)) else {
        return (came != kept).then(String::new);
    };
    let mut kept_by_tag: HashMap<u64, Vec<&Wire<'_>>> = HashMap::new();
    for (tag, v) in &b {
        kept_by_tag.entry(*tag).or_default().push(v);
    }
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for (tag, value) in &a {
        let nth = seen.entry(*tag).or_insert(0);
        let twin = kept_by_tag.get(tag).and_then(|v| v.get(*nth));
        *nth += 1;
        let problem = match (value, twin) {
            (v, None) => (!(zero_ok(path, *tag) && is_zero(v, path.len()))).then(String::new),
            (Wire::Bytes(x), Some(Wire::Bytes(y))) if x != y => {
                path.push(*tag);
                let inner = walk(x, y, path, zero_ok);
                path.pop();
                inner
            }
            (v, Some(w)) => (v != *w).then(String::new),
        };
        if let Some(rest) = problem {
            return Some(if rest.is_empty() {
                format!("field {tag}")
            } else {
                format!("field {tag}.{rest}")
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_with_content_that_was_not_kept_is_named_and_zeros_pass() {
        // field 1 = "a"; field 2 = message { field 3 = 7 }
        let any = |_: &[u64], _: u64| true;
        let came = [0x0a, 0x01, b'a', 0x12, 0x02, 0x18, 0x07];
        assert_eq!(dropped(&came, &came, &any), None);
        let kept = [0x0a, 0x01, b'a', 0x12, 0x00];
        assert_eq!(dropped(&came, &kept, &any), Some("field 2.field 3".into()));
        let zeros = [0x0a, 0x01, b'a', 0x12, 0x02, 0x18, 0x00, 0x20, 0x00];
        assert_eq!(dropped(&zeros, &[0x0a, 0x01, b'a'], &any), None);
        // A zero is refused where it may be a choice.
        let only_2 = |path: &[u64], tag: u64| path.is_empty() && tag == 2;
        let kept = [0x0a, 0x01, b'a', 0x12, 0x00];
        assert_eq!(
            dropped(&zeros, &kept, &only_2),
            Some("field 2.field 3".into())
        );
        let broken = dropped(&[0x0a, 0x05, 1], &[], &any);
        assert!(broken.is_some(), "a broken body is not silently accepted");
        // Many repeats of one field cost one pass, not a pass per field.
        let many: Vec<u8> = std::iter::repeat_n([0x08, 0x01], 200_000)
            .flatten()
            .collect();
        assert_eq!(dropped(&many, &many, &any), None);
    }
}
