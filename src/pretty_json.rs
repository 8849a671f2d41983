//! JSON for people and programs at once: objects indented as `serde_json`'s pretty printer
//! does, but each element of an array on one line of its own. A plan or a report of 100,000
//! units is then one line a unit (`grep` finds a unit with all its fields), and about half
//! the bytes of the fully indented form, which is what writing it costs.

use std::io;

use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

/// Writes `value` to `out` (see the module's documentation).
pub fn to_writer<W: io::Write, T: serde::Serialize + ?Sized>(out: W, value: &T) -> serde_json::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(out, ItemsOnLines::default());
    value.serialize(&mut serializer)
}

/// The formatter: pretty outside arrays' elements, compact inside them.
#[derive(Default)]
struct ItemsOnLines {
    pretty: PrettyFormatter<'static>,
    /// How many arrays' elements are being written (0: none, pretty).
    inside: usize,
}

/// Each structural call goes to the compact formatter inside an element, else to the pretty
/// one.
macro_rules! either {
    ($name:ident $(, $arg:ident: $ty:ty)*) => {
        fn $name<W: ?Sized + io::Write>(&mut self, w: &mut W $(, $arg: $ty)*) -> io::Result<()> {
            if self.inside > 0 {
                CompactFormatter.$name(w $(, $arg)*)
            } else {
                self.pretty.$name(w $(, $arg)*)
            }
        }
    };
}

impl Formatter for ItemsOnLines {
    either!(begin_array);
    either!(end_array);
    either!(begin_object);
    either!(end_object);
    either!(begin_object_key, first: bool);
    either!(begin_object_value);
    either!(end_object_value);

    fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if self.inside > 0 {
            CompactFormatter.begin_array_value(w, first)?;
        } else {
            self.pretty.begin_array_value(w, first)?;
        }
        self.inside += 1;
        Ok(())
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inside = self.inside.saturating_sub(1);
        if self.inside > 0 {
            CompactFormatter.end_array_value(w)
        } else {
            self.pretty.end_array_value(w)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(value: &serde_json::Value) -> String {
        let mut out = Vec::new();
        to_writer(&mut out, value).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn objects_are_indented_and_each_element_of_an_array_is_one_line() {
        let value = serde_json::json!({
            "status": "SUCCESS",
            "model": {"id": "m", "window": 200_000},
            "units": [
                {"id": "u-1", "inputs": [{"path": "a.ts"}], "cached": true},
                {"id": "u-2", "inputs": [], "cached": false}
            ],
            "empty": [],
            "warnings": ["one", "two"]
        });
        let text = written(&value);
        assert_eq!(
            text,
            r#"{
  "empty": [],
  "model": {
    "id": "m",
    "window": 200000
  },
  "status": "SUCCESS",
  "units": [
    {"cached":true,"id":"u-1","inputs":[{"path":"a.ts"}]},
    {"cached":false,"id":"u-2","inputs":[]}
  ],
  "warnings": [
    "one",
    "two"
  ]
}"#
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }
}
