//! The elements of a BSON document read straight from its bytes, for `raw_json`: each element's
//! type byte, key and value bytes, with every length checked against the bytes there are, so
//! malformed input is an error and never a panic or a read past the end.
//!
//! Why not the `bson` crate's raw iterator: it checks each key and string as UTF-8 and builds a
//! typed value per element, and a GET by id spent about a quarter of the service's user-space
//! instructions there (callgrind, docs/service-cost.md). Here a key is compared as bytes with the
//! names `raw_json` expects, and strings are checked as UTF-8 where `raw_json` writes them.

use mongodb::bson::spec::ElementType;

/// Why bytes are not a BSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// One element: its type byte, its key (the bytes before the key's NUL) and its value's bytes.
#[derive(Debug, Clone, Copy)]
pub struct Element<'a> {
    pub element_type: u8,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// The elements of one document, in stored order.
#[derive(Debug, Clone)]
pub struct Elements<'a> {
    /// The element list still to read, with the document's closing NUL at its end.
    rest: &'a [u8],
}

impl<'a> Elements<'a> {
    /// The elements of `document`: its whole bytes, length prefix and closing NUL included.
    pub fn new(document: &'a [u8]) -> Result<Self, Malformed> {
        let length = read_length(document).ok_or(Malformed("a document shorter than its length prefix"))?;
        if length < 5 || length != document.len() {
            return Err(Malformed("a document whose length prefix is not its length"));
        }
        if document[length - 1] != 0 {
            return Err(Malformed("a document that does not end with NUL"));
        }
        Ok(Self { rest: &document[4..] })
    }

    fn next_element(&mut self) -> Result<Option<Element<'a>>, Malformed> {
        let [element_type, after_type @ ..] = self.rest else {
            return Err(Malformed("a document without its closing NUL"));
        };
        if *element_type == 0 {
            return if after_type.is_empty() { Ok(None) } else { Err(Malformed("bytes after a document's end")) };
        }
        let key_end = after_type.iter().position(|&byte| byte == 0).ok_or(Malformed("a key without its NUL"))?;
        let key = &after_type[..key_end];
        let after_key = &after_type[key_end + 1..];
        let size = value_size(*element_type, after_key)?;
        // The closing NUL of the document must still follow the value.
        if size >= after_key.len() {
            return Err(Malformed("a value longer than its document"));
        }
        let (value, rest) = after_key.split_at(size);
        self.rest = rest;
        Ok(Some(Element { element_type: *element_type, key, value }))
    }
}

impl<'a> Iterator for Elements<'a> {
    type Item = Result<Element<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.next_element().transpose();
        if matches!(next, Some(Err(_))) {
            // Stop after an error: what follows a malformed element cannot be located.
            self.rest = &[0];
        }
        next
    }
}

/// The size of a value of `element_type` at the start of `bytes` (which may go on beyond it).
fn value_size(element_type: u8, bytes: &[u8]) -> Result<usize, Malformed> {
    let fixed = |size: usize| Ok(size);
    match ElementType::from(element_type) {
        Some(ElementType::Undefined | ElementType::Null | ElementType::MinKey | ElementType::MaxKey) => fixed(0),
        Some(ElementType::Boolean) => fixed(1),
        Some(ElementType::Int32) => fixed(4),
        Some(ElementType::Double | ElementType::DateTime | ElementType::Timestamp | ElementType::Int64) => fixed(8),
        Some(ElementType::ObjectId) => fixed(12),
        Some(ElementType::Decimal128) => fixed(16),
        Some(ElementType::String | ElementType::JavaScriptCode | ElementType::Symbol) => string_size(bytes),
        Some(ElementType::EmbeddedDocument | ElementType::Array | ElementType::JavaScriptCodeWithScope) => {
            read_length(bytes).filter(|&length| length >= 5).ok_or(Malformed("a document with a bad length"))
        }
        Some(ElementType::Binary) => {
            let length = read_length(bytes).ok_or(Malformed("binary data with a bad length"))?;
            Ok(4 + 1 + length)
        }
        Some(ElementType::RegularExpression) => {
            let pattern = cstring_size(bytes)?;
            Ok(pattern + cstring_size(&bytes[pattern..])?)
        }
        Some(ElementType::DbPointer) => Ok(string_size(bytes)? + 12),
        None => Err(Malformed("an element of an unknown type")),
    }
}

/// A string value: an i32 length that counts the closing NUL, the bytes, the NUL.
fn string_size(bytes: &[u8]) -> Result<usize, Malformed> {
    match read_length(bytes) {
        Some(length) if length >= 1 => Ok(4 + length),
        _ => Err(Malformed("a string with a bad length")),
    }
}

fn cstring_size(bytes: &[u8]) -> Result<usize, Malformed> {
    let end = bytes.iter().position(|&byte| byte == 0).ok_or(Malformed("a C string without its NUL"))?;
    Ok(end + 1)
}

/// The little-endian i32 at the start of `bytes`, if there are four bytes and it is not negative.
fn read_length(bytes: &[u8]) -> Option<usize> {
    let prefix: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    usize::try_from(i32::from_le_bytes(prefix)).ok()
}

/// The text of a string value (as `Elements` gave it): its bytes between the length and the NUL,
/// not yet checked as UTF-8 (`raw_json` checks what it writes, in the same pass).
pub fn string(value: &[u8]) -> Result<&[u8], Malformed> {
    match value.get(4..) {
        Some([text @ .., 0]) => Ok(text),
        _ => Err(Malformed("a string that does not end with NUL")),
    }
}

/// An Int32 value's number.
pub fn int32(value: &[u8]) -> i32 {
    i32::from_le_bytes(value.try_into().unwrap_or_default())
}

/// An Int64 or DateTime value's number.
pub fn int64(value: &[u8]) -> i64 {
    i64::from_le_bytes(value.try_into().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::{Binary, DateTime, Decimal128, RawDocumentBuf, Regex, doc, oid::ObjectId, spec::BinarySubtype};

    fn every_type() -> RawDocumentBuf {
        let document = doc! {
            "double": 1.5, "string": "ünï", "document": {"a": 1_i64}, "array": [1_i32, "two"],
            "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
            "undefined": mongodb::bson::Bson::Undefined, "oid": ObjectId::from_bytes([7; 12]), "bool": true,
            "date": DateTime::from_millis(-5), "null": null,
            "regex": Regex { pattern: "a+".into(), options: "i".into() },
            "code": mongodb::bson::Bson::JavaScriptCode("f()".into()), "int32": -7_i32,
            "timestamp": mongodb::bson::Timestamp { time: 1, increment: 2 }, "int64": 1_i64 << 40,
            "decimal": Decimal128::from_bytes([3; 16]), "min": mongodb::bson::Bson::MinKey,
            "max": mongodb::bson::Bson::MaxKey,
        };
        RawDocumentBuf::from_document(&document).expect("raw")
    }

    #[test]
    fn every_element_is_read_with_the_same_key_type_and_value_length_as_the_bson_crate() {
        let document = every_type();
        let ours: Vec<Element<'_>> =
            Elements::new(document.as_bytes()).expect("document").collect::<Result<_, _>>().expect("elements");
        let theirs: Vec<_> = document.iter_elements().collect::<Result<_, _>>().expect("bson crate");
        assert_eq!(ours.len(), theirs.len());
        for (ours, theirs) in ours.iter().zip(&theirs) {
            assert_eq!(ours.key, theirs.key().as_bytes());
            assert_eq!(ours.element_type, theirs.element_type() as u8, "{}", theirs.key());
            assert_eq!(ours.value.len(), theirs.len(), "{}", theirs.key());
        }
    }

    #[test]
    fn numbers_and_strings_read_back() {
        let document =
            RawDocumentBuf::from_document(&doc! {"s": "ünï", "i": -7_i32, "l": -(1_i64 << 40)}).expect("raw");
        let elements: Vec<_> = Elements::new(document.as_bytes()).expect("doc").map(Result::unwrap).collect();
        assert_eq!(string(elements[0].value), Ok("ünï".as_bytes()));
        assert_eq!(int32(elements[1].value), -7);
        assert_eq!(int64(elements[2].value), -(1_i64 << 40));
    }

    #[test]
    fn a_string_that_lacks_its_nul_is_malformed() {
        assert!(string(&[3, 0, 0, 0, b'a', b'b', b'c']).is_err());
        assert!(string(&[1, 0, 0]).is_err());
        assert_eq!(string(&[1, 0, 0, 0, 0]), Ok(&b""[..]));
        assert_eq!(string(&[3, 0, 0, 0, 0xff, 0xfe, 0]), Ok(&[0xff, 0xfe][..]), "UTF-8 is checked where it is written");
    }

    #[test]
    fn truncated_or_corrupted_documents_are_errors_and_never_panics() {
        let document = every_type();
        let bytes = document.as_bytes();
        let read_all = |bytes: &[u8]| -> Result<usize, Malformed> {
            let mut count = 0;
            for element in Elements::new(bytes)? {
                element?;
                count += 1;
            }
            Ok(count)
        };
        assert_eq!(read_all(bytes), Ok(18));
        for end in 0..bytes.len() {
            assert!(read_all(&bytes[..end]).is_err(), "a document cut at {end} bytes was read");
        }
        // Every single byte changed to a few telling values: an error or a read, never a panic.
        let mut seen_errors = 0;
        for at in 0..bytes.len() {
            for byte in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut corrupted = bytes.to_vec();
                corrupted[at] = byte;
                if read_all(&corrupted).is_err() {
                    seen_errors += 1;
                }
            }
        }
        assert!(seen_errors > bytes.len(), "corruption was noticed ({seen_errors} times)");
    }

    #[test]
    fn bytes_after_the_closing_nul_and_a_wrong_length_prefix_are_malformed() {
        assert!(Elements::new(&[5, 0, 0, 0, 0]).is_ok());
        assert!(Elements::new(&[6, 0, 0, 0, 0, 0]).expect("length matches").next().expect("an error").is_err());
        assert!(Elements::new(&[9, 0, 0, 0, 0]).is_err());
        assert!(Elements::new(&[5, 0, 0, 0, 1]).is_err());
        assert!(Elements::new(&[0xff, 0xff, 0xff, 0xff, 0]).is_err());
    }
}
