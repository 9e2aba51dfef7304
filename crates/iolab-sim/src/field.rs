//! Paths to the fields of a spec and errors about one field.
//!
//! Every layer that checks part of a spec (a workload, a trace option, the
//! experiment) says which field is wrong with a [`FieldError`]; the
//! experiment turns it into `file:line: field `a.b[0].c`: message`
//! (`experiment::source`). The vocabulary lives here, beneath all of them.

use std::fmt;

/// One step of a path into the spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A path to a field: `workload.group[0].count`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath(pub Vec<Seg>);

impl FieldPath {
    /// Read the dotted form the library's errors use (`workload.group[0].count`).
    pub fn parse(s: &str) -> FieldPath {
        let mut segs = Vec::new();
        for part in s.split('.').filter(|p| !p.is_empty()) {
            let (key, mut rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
            if !key.is_empty() {
                segs.push(Seg::Key(key.to_string()));
            }
            while let Some((idx, after)) = rest.split_once(']') {
                if let Ok(i) = idx.parse() {
                    segs.push(Seg::Index(i));
                }
                rest = after.strip_prefix('[').unwrap_or(after);
            }
        }
        FieldPath(segs)
    }

    /// The path of a serde error (`serde_path_to_error`), after `prefix`.
    pub fn from_serde(prefix: &FieldPath, path: &serde_path_to_error::Path) -> FieldPath {
        use serde_path_to_error::Segment;
        let mut segs = prefix.0.clone();
        for s in path.iter() {
            match s {
                Segment::Seq { index } => segs.push(Seg::Index(*index)),
                Segment::Map { key } => segs.push(Seg::Key(key.clone())),
                Segment::Enum { variant } => segs.push(Seg::Key(variant.clone())),
                Segment::Unknown => {}
            }
        }
        FieldPath(segs)
    }

    pub fn key(mut self, k: &str) -> FieldPath {
        self.0.push(Seg::Key(k.to_string()));
        self
    }

    pub fn index(mut self, i: usize) -> FieldPath {
        self.0.push(Seg::Index(i));
        self
    }

    /// True if `self` starts with `other`.
    pub fn starts_with(&self, other: &FieldPath) -> bool {
        self.0.len() >= other.0.len() && self.0[..other.0.len()] == other.0[..]
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Seg::Key(k) if i == 0 => write!(f, "{k}")?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// A problem with one field of a spec.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub path: FieldPath,
    pub message: String,
}

impl FieldError {
    pub fn new(path: FieldPath, message: impl Into<String>) -> FieldError {
        FieldError { path, message: message.into() }
    }

    /// From a `serde_path_to_error` error, the path taken after `prefix`.
    pub fn from_serde(prefix: &FieldPath, e: serde_path_to_error::Error<serde_json::Error>) -> FieldError {
        let path = FieldPath::from_serde(prefix, e.path());
        FieldError { path, message: plain_serde_message(&e.inner().to_string()) }
    }
}

/// serde's type names in words a spec writer knows ("expected u32" →
/// "expected a whole number from 0 to 4294967295").
pub fn plain_serde_message(msg: &str) -> String {
    const WORDS: &[(&str, &str)] = &[
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected u16", "expected a whole number from 0 to 65535"),
        ("expected u32", "expected a whole number from 0 to 4294967295"),
        ("expected u64", "expected a whole number from 0 to 18446744073709551615"),
        ("expected i32", "expected a whole number from -2147483648 to 2147483647"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected usize", "expected a whole number from 0"),
    ];
    let mut out = msg.to_string();
    for (from, to) in WORDS {
        if let Some(stripped) = out.strip_suffix(from) {
            out = format!("{stripped}{to}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_and_print() {
        let p = FieldPath::parse("workload.group[1].think.ms[0]");
        assert_eq!(p.to_string(), "workload.group[1].think.ms[0]");
        assert_eq!(p.0.len(), 6);
        assert!(p.starts_with(&FieldPath::parse("workload.group")));
        assert_eq!(FieldPath::parse("run").to_string(), "run");
    }

    #[test]
    fn serde_words_become_plain() {
        assert_eq!(
            plain_serde_message("invalid type: floating point `2.5`, expected u32"),
            "invalid type: floating point `2.5`, expected a whole number from 0 to 4294967295"
        );
    }
}
