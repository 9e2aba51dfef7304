//! The text of an experiment spec: TOML or JSON read into one value tree,
//! and where each field sits in the text, so that an error names the line
//! and the field itself, not the table that holds it.
//!
//! Brief overview: [`SpecSource::read`] parses the text (a syntax error
//! becomes `file:line:column: message`, on one line) into a JSON value,
//! refusing what JSON cannot hold without changing meaning (`nan`, `inf`,
//! dates). [`SpecSource::field_error`] turns a field error (a
//! [`FieldPath`] and a message) into `file:line: field `a.b[0].c`: message`,
//! the line taken from the TOML document's spans.

use crate::error::{one_line, Error};
use crate::field::{FieldError, FieldPath, Seg};
use serde_json::Value;
use toml_edit::{ImDocument, Item, Table};

/// Input format of a spec.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

/// A spec's text, read.
pub struct SpecSource {
    pub file: String,
    pub value: Value,
    /// The TOML document with its spans (None for JSON).
    doc: Option<ImDocument<String>>,
}

impl SpecSource {
    /// Parse `text`; `file` names it in errors.
    pub fn read(text: &str, file: &str, format: Format) -> Result<SpecSource, Error> {
        let spec_err = |message: String| Error::Spec { file: file.to_string(), message };
        match format {
            Format::Json => {
                let value: Value = serde_json::from_str(text).map_err(|e| spec_err(e.to_string()))?;
                Ok(SpecSource { file: file.to_string(), value, doc: None })
            }
            Format::Toml => {
                let doc = ImDocument::parse(text.to_string()).map_err(|e| {
                    let at = e.span().map(|s| line_col(text, s.start));
                    let message = e.message().trim().replace('\n', "; ");
                    match at {
                        Some((line, col)) => spec_err(format!("line {line}, column {col}: {message}")),
                        None => spec_err(message),
                    }
                })?;
                let value = table_to_json(doc.as_table(), &FieldPath::default())
                    .map_err(|fe| Error::Spec { file: file.to_string(), message: Self::describe(&doc, &fe) })?;
                Ok(SpecSource { file: file.to_string(), value, doc: Some(doc) })
            }
        }
    }

    /// The line (1-based) where `path` is written, or the nearest table
    /// that holds it; None when the text does not hold it (JSON, `--set`).
    pub fn line_of(&self, path: &FieldPath) -> Option<usize> {
        self.doc.as_ref().and_then(|d| line_in_doc(d, path))
    }

    fn describe(doc: &ImDocument<String>, fe: &FieldError) -> String {
        match line_in_doc(doc, &fe.path) {
            Some(line) => one_line(&format!("line {line}: field `{}`: {}", fe.path, fe.message)),
            None => one_line(&format!("field `{}`: {}", fe.path, fe.message)),
        }
    }

    /// One line naming the file, the line when known, and the field.
    /// `from_override` is the `--set KEY=VALUE` that wrote the field, if one did.
    pub fn field_error(&self, fe: &FieldError, from_override: Option<&str>) -> Error {
        let message = one_line(&format!("field `{}`: {}", fe.path, fe.message));
        if let Some(o) = from_override {
            return Error::Spec { file: self.file.clone(), message: format!("--set {o}: {message}") };
        }
        match self.line_of(&fe.path) {
            Some(line) => Error::Line { file: self.file.clone(), line, message },
            None => Error::Spec { file: self.file.clone(), message },
        }
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, col)
}

enum Node<'a> {
    Table(&'a Table),
    Item(&'a Item),
    Value(&'a toml_edit::Value),
}

fn line_in_doc(doc: &ImDocument<String>, path: &FieldPath) -> Option<usize> {
    // The offset of the deepest part of the path found in the text.
    let mut best: Option<usize> = None;
    let mut note = |span: Option<std::ops::Range<usize>>| {
        if let Some(s) = span {
            best = Some(s.start);
        }
    };
    let mut node = Node::Table(doc.as_table());
    for seg in &path.0 {
        // A table or a value held by an item is walked as itself.
        node = match node {
            Node::Item(Item::Table(t)) => Node::Table(t),
            Node::Item(Item::Value(v)) => Node::Value(v),
            other => other,
        };
        let next = match (&node, seg) {
            (Node::Table(t), Seg::Key(k)) => {
                note(t.span());
                t.get_key_value(k).map(|(key, item)| {
                    note(key.span());
                    Node::Item(item)
                })
            }
            (Node::Item(Item::ArrayOfTables(a)), Seg::Index(i)) => a.get(*i).map(|t| {
                note(t.span());
                Node::Table(t)
            }),
            (Node::Value(toml_edit::Value::InlineTable(t)), Seg::Key(k)) => t.get_key_value(k).map(|(key, item)| {
                note(key.span());
                Node::Item(item)
            }),
            (Node::Value(toml_edit::Value::Array(a)), Seg::Index(i)) => a.get(*i).map(|v| {
                note(v.span());
                Node::Value(v)
            }),
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => break,
        }
    }
    match node {
        Node::Table(t) | Node::Item(Item::Table(t)) => note(t.span()),
        _ => {}
    }
    best.map(|b| line_col(doc.raw(), b).0)
}

fn table_to_json(t: &Table, path: &FieldPath) -> Result<Value, FieldError> {
    let mut map = serde_json::Map::new();
    for (k, item) in t.iter() {
        map.insert(k.to_string(), item_to_json(item, &path.clone().key(k))?);
    }
    Ok(Value::Object(map))
}

fn item_to_json(item: &Item, path: &FieldPath) -> Result<Value, FieldError> {
    match item {
        Item::None => Ok(Value::Null),
        Item::Value(v) => value_to_json(v, path),
        Item::Table(t) => table_to_json(t, path),
        Item::ArrayOfTables(a) => {
            a.iter().enumerate().map(|(i, t)| table_to_json(t, &path.clone().index(i))).collect::<Result<_, _>>().map(Value::Array)
        }
    }
}

fn value_to_json(v: &toml_edit::Value, path: &FieldPath) -> Result<Value, FieldError> {
    use toml_edit::Value as V;
    Ok(match v {
        V::String(s) => Value::String(s.value().clone()),
        V::Integer(i) => Value::from(*i.value()),
        V::Float(f) => {
            let x = *f.value();
            // JSON (and every field of a spec) has no NaN or infinity: refuse
            // them here, where the field is known, instead of letting them
            // turn into "no value".
            serde_json::Number::from_f64(x)
                .map(Value::Number)
                .ok_or_else(|| FieldError::new(path.clone(), format!("{x} is not a finite number")))?
        }
        V::Boolean(b) => Value::Bool(*b.value()),
        V::Datetime(d) => {
            return Err(FieldError::new(path.clone(), format!("a date ({}) is not a value any field takes", d.value())))
        }
        V::Array(a) => {
            a.iter().enumerate().map(|(i, x)| value_to_json(x, &path.clone().index(i))).collect::<Result<_, _>>().map(Value::Array)?
        }
        V::InlineTable(t) => {
            let mut map = serde_json::Map::new();
            for (k, x) in t.iter() {
                map.insert(k.to_string(), value_to_json(x, &path.clone().key(k))?);
            }
            Value::Object(map)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "name = \"x\"\n\n[workload]\nkind = \"processes\"\n\n[[workload.group]]\ncount = 1\n\n[[workload.group]]\ncount = 2.5\nthink = { dist = \"samples\", ms = [1, 2] }\n[run]\nseeds = [1, 2]\n";

    #[test]
    fn lines_of_fields_inside_tables_and_arrays() {
        let s = SpecSource::read(TEXT, "s.toml", Format::Toml).unwrap();
        let at = |p: &str| s.line_of(&FieldPath::parse(p));
        assert_eq!(at("name"), Some(1));
        assert_eq!(at("workload.kind"), Some(4));
        assert_eq!(at("workload.group[0].count"), Some(7));
        assert_eq!(at("workload.group[1].count"), Some(10));
        assert_eq!(at("workload.group[1].think.ms[1]"), Some(11));
        assert_eq!(at("run.seeds[1]"), Some(13));
        // A field that is not written: the table that would hold it.
        assert_eq!(at("workload.group[1].passes"), Some(9));
        assert_eq!(at("run.repetitions"), Some(12));
    }

    #[test]
    fn syntax_errors_and_non_finite_floats_are_one_line() {
        let e = SpecSource::read("a = 1\n[run\n", "s.toml", Format::Toml).err().unwrap().to_string();
        assert!(e.starts_with("s.toml: line 2, column") && !e.contains('\n'), "{e}");
        let e = SpecSource::read("[run]\nduration_s = nan\n", "s.toml", Format::Toml).err().unwrap().to_string();
        assert_eq!(e, "s.toml: line 2: field `run.duration_s`: NaN is not a finite number");
    }

}
