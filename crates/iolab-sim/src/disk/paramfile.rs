//! Reader of DiskSim 4.0 parameter files (`.parv`, `.diskspecs`, `.model`):
//! the syntax only, into a tree of blocks. `diskspecs.rs` gives it meaning.
//!
//! The syntax, as DiskSim's manual describes it: `#` starts a comment;
//! a file is a list of statements — `source FILE` (include), `TYPE NAME {
//! params }`, `instantiate [ names ] as NAME`, `topology TYPE NAME [ ... ]`;
//! a block holds `Key words = value` separated by commas, where a value is
//! a number, a word, `source FILE` (a block kept in another file), a block
//! `TYPE { ... }`, or a list `[ v, v, ... ]`.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Num(f64),
    Word(String),
    Block(Block),
    List(Vec<Value>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub key: String,
    pub value: Value,
    pub line: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub kind: String,
    pub name: String,
    pub params: Vec<Param>,
    pub file: String,
    pub line: usize,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    Punct(char),
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    i: usize,
    file: String,
    dir: PathBuf,
    depth: u32,
}

/// Deepest chain of `source` includes accepted (guards against loops).
const MAX_DEPTH: u32 = 16;

fn tokenize(text: &str) -> Vec<(Tok, usize)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let mut word = String::new();
        for ch in line.chars() {
            if ch.is_whitespace() || "{}[]=,".contains(ch) {
                if !word.is_empty() {
                    out.push((Tok::Word(std::mem::take(&mut word)), n + 1));
                }
                if !ch.is_whitespace() {
                    out.push((Tok::Punct(ch), n + 1));
                }
            } else {
                word.push(ch);
            }
        }
        if !word.is_empty() {
            out.push((Tok::Word(word), n + 1));
        }
    }
    out
}

/// Reads a parameter file and every file it includes; returns the
/// top-level blocks of all of them, in order.
pub fn read_file(path: &Path) -> Result<Vec<Block>> {
    read_at_depth(path, 0)
}

fn read_at_depth(path: &Path, depth: u32) -> Result<Vec<Block>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io { path: path.into(), source: e })?;
    parse_str(&text, path, depth)
}

/// Parses `text` as if it were the file `path` (for includes and errors).
pub fn parse_str(text: &str, path: &Path, depth: u32) -> Result<Vec<Block>> {
    let mut p = Parser {
        toks: tokenize(text),
        i: 0,
        file: path.display().to_string(),
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        depth,
    };
    p.statements()
}

impl Parser {
    fn err<T>(&self, line: usize, message: impl Into<String>) -> Result<T> {
        Err(Error::Line { file: self.file.clone(), line, message: message.into() })
    }
    fn line(&self) -> usize {
        self.toks.get(self.i).or(self.toks.last()).map_or(1, |t| t.1)
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.0)
    }
    fn expect(&mut self, c: char) -> Result<()> {
        match self.peek() {
            Some(Tok::Punct(x)) if *x == c => {
                self.i += 1;
                Ok(())
            }
            Some(Tok::Word(w)) => self.err(self.line(), format!("expected '{c}', found '{w}'")),
            Some(Tok::Punct(x)) => self.err(self.line(), format!("expected '{c}', found '{x}'")),
            None => self.err(self.line(), format!("expected '{c}', found the end of the file")),
        }
    }
    /// Consecutive words on one line (a key, a type and name, a
    /// multi-word value): no statement or key spans lines.
    fn words(&mut self) -> Vec<String> {
        let mut v = Vec::new();
        let line = self.line();
        while let Some((Tok::Word(w), l)) = self.toks.get(self.i) {
            if *l != line {
                break;
            }
            v.push(w.clone());
            self.i += 1;
        }
        v
    }
    fn include(&mut self, line: usize, rel: &str) -> Result<Vec<Block>> {
        if self.depth >= MAX_DEPTH {
            return self.err(line, format!("'source {rel}': includes nested too deeply (a loop?)"));
        }
        let path = self.dir.join(rel);
        read_at_depth(&path, self.depth + 1).map_err(|e| match e {
            Error::Io { path, source } => Error::Line {
                file: self.file.clone(),
                line,
                message: format!("source {}: {source}", path.display()),
            },
            other => other,
        })
    }
    /// Skips a bracketed group starting at the current `[` or `{`.
    fn skip_group(&mut self) -> Result<()> {
        let start = self.line();
        let mut depth = 0i32;
        while let Some(t) = self.peek().cloned() {
            self.i += 1;
            match t {
                Tok::Punct('[') | Tok::Punct('{') => depth += 1,
                Tok::Punct(']') | Tok::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
        self.err(start, "unclosed bracket")
    }

    fn statements(&mut self) -> Result<Vec<Block>> {
        let mut out = Vec::new();
        while self.peek().is_some() {
            let line = self.line();
            let w = self.words();
            match (w.first().map(String::as_str), self.peek()) {
                (Some("source"), _) if w.len() == 2 => out.extend(self.include(line, &w[1])?),
                (Some("instantiate"), Some(Tok::Punct('['))) => {
                    self.skip_group()?;
                    let rest = self.words();
                    if rest.len() != 2 || rest[0] != "as" {
                        return self.err(line, "expected 'instantiate [ names ] as NAME'");
                    }
                }
                (Some(_), Some(Tok::Punct('['))) => self.skip_group()?, // topology
                (Some(kind), Some(Tok::Punct('{'))) => {
                    let b = self.block(kind.to_string(), w[1..].join(" "), line)?;
                    out.push(b);
                }
                (None, Some(t)) => {
                    let t = match t {
                        Tok::Punct(c) => c.to_string(),
                        Tok::Word(w) => w.clone(),
                    };
                    return self.err(line, format!("unexpected '{t}' at the top level"));
                }
                _ => {
                    return self.err(line, format!("expected 'TYPE NAME {{' or 'source FILE' after '{}'", w.join(" ")))
                }
            }
        }
        Ok(out)
    }

    fn block(&mut self, kind: String, name: String, line: usize) -> Result<Block> {
        self.expect('{')?;
        let mut params = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::Punct('}')) => {
                    self.i += 1;
                    break;
                }
                Some(Tok::Punct(',')) => self.i += 1,
                None => return self.err(line, format!("block '{kind} {name}' is not closed")),
                _ => {
                    let pline = self.line();
                    let key = self.words();
                    if key.is_empty() {
                        return self.err(pline, "expected a parameter name");
                    }
                    if self.peek() != Some(&Tok::Punct('=')) {
                        return self.err(pline, format!("expected '=' after '{}'", key.join(" ")));
                    }
                    self.i += 1;
                    let value = self.value()?;
                    params.push(Param { key: key.join(" "), value, line: pline });
                    match self.peek() {
                        Some(Tok::Punct(',')) | Some(Tok::Punct('}')) => {}
                        _ => return self.err(self.line(), "expected ',' or '}' after a value"),
                    }
                }
            }
        }
        Ok(Block { kind, name, params, file: self.file.clone(), line })
    }

    fn value(&mut self) -> Result<Value> {
        let line = self.line();
        if self.peek() == Some(&Tok::Punct('[')) {
            self.i += 1;
            let mut items = Vec::new();
            loop {
                match self.peek() {
                    Some(Tok::Punct(']')) => {
                        self.i += 1;
                        return Ok(Value::List(items));
                    }
                    Some(Tok::Punct(',')) => self.i += 1,
                    None => return self.err(line, "list is not closed"),
                    _ => items.push(self.value()?),
                }
            }
        }
        let w = self.words();
        if w.is_empty() {
            return self.err(line, "expected a value");
        }
        if self.peek() == Some(&Tok::Punct('{')) {
            return Ok(Value::Block(self.block(w[0].clone(), w[1..].join(" "), line)?));
        }
        if w[0] == "source" && w.len() == 2 {
            let mut blocks = self.include(line, &w[1])?;
            if blocks.len() != 1 {
                return self.err(line, format!("source {}: expected one block, found {}", w[1], blocks.len()));
            }
            return Ok(Value::Block(blocks.remove(0)));
        }
        let text = w.join(" ");
        Ok(match text.parse::<f64>() {
            Ok(x) if w.len() == 1 => Value::Num(x),
            _ => Value::Word(text),
        })
    }
}

impl Block {
    fn err<T>(&self, line: usize, message: impl Into<String>) -> Result<T> {
        Err(Error::Line { file: self.file.clone(), line, message: message.into() })
    }
    pub fn get(&self, key: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.key.eq_ignore_ascii_case(key))
    }
    fn need(&self, key: &str) -> Result<&Param> {
        match self.get(key) {
            Some(p) => Ok(p),
            None => self.err(self.line, format!("{} '{}': missing '{key}'", self.kind, self.name)),
        }
    }
    pub fn num(&self, key: &str) -> Result<f64> {
        let p = self.need(key)?;
        match &p.value {
            Value::Num(x) => Ok(*x),
            _ => self.err(p.line, format!("'{key}' must be a number")),
        }
    }
    pub fn num_or(&self, key: &str, default: f64) -> Result<f64> {
        if self.get(key).is_some() {
            self.num(key)
        } else {
            Ok(default)
        }
    }
    /// A whole number within `lo..=hi`.
    pub fn int(&self, key: &str, lo: i64, hi: i64) -> Result<i64> {
        let x = self.num(key)?;
        let line = self.need(key)?.line;
        if x.fract() != 0.0 || x < lo as f64 || x > hi as f64 {
            return self.err(line, format!("'{key}' must be a whole number in {lo}..={hi}, not {x}"));
        }
        Ok(x as i64)
    }
    pub fn word(&self, key: &str) -> Result<(&str, usize)> {
        let p = self.need(key)?;
        match &p.value {
            Value::Word(w) => Ok((w, p.line)),
            _ => self.err(p.line, format!("'{key}' must be a word")),
        }
    }
    pub fn block(&self, key: &str) -> Result<&Block> {
        let p = self.need(key)?;
        match &p.value {
            Value::Block(b) => Ok(b),
            _ => self.err(p.line, format!("'{key}' must be a block")),
        }
    }
    pub fn list(&self, key: &str) -> Result<(&[Value], usize)> {
        let p = self.need(key)?;
        match &p.value {
            Value::List(v) => Ok((v, p.line)),
            _ => self.err(p.line, format!("'{key}' must be a list [ ... ]")),
        }
    }
    /// A list of numbers.
    pub fn nums(&self, key: &str) -> Result<Vec<f64>> {
        let (items, line) = self.list(key)?;
        items
            .iter()
            .map(|v| match v {
                Value::Num(x) => Ok(*x),
                _ => self.err(line, format!("'{key}' must list numbers")),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_blocks_lists_and_words() {
        let text = "# c\nd X {\n  A b = 1.5, # c\n  Kind = hplplus10,\n  L = [ 1, 2 ],\n  Z = [ z { Q = 3 } ],\n  M = t { P = -1 }\n}\ninstantiate [ a ] as X\ntopology t n [ u v [ ] ]\n";
        let b = parse_str(text, Path::new("x.parv"), 0).unwrap();
        assert_eq!(b.len(), 1);
        let d = &b[0];
        assert_eq!((d.kind.as_str(), d.name.as_str(), d.line), ("d", "X", 2));
        assert_eq!(d.num("a B").unwrap(), 1.5);
        assert_eq!(d.word("Kind").unwrap().0, "hplplus10");
        assert_eq!(d.nums("L").unwrap(), vec![1.0, 2.0]);
        assert_eq!(d.block("M").unwrap().num("P").unwrap(), -1.0);
        assert!(matches!(&d.list("Z").unwrap().0[0], Value::Block(z) if z.kind == "z"));
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse_str("d X {\n  A = 1,\n  B 2\n}\n", Path::new("bad.diskspecs"), 0).unwrap_err();
        assert_eq!(e.to_string(), "bad.diskspecs:3: expected '=' after 'B 2'");
        let e = parse_str("d X {\n  A = 1,\n", Path::new("f"), 0).unwrap_err();
        assert!(e.to_string().starts_with("f:1: block 'd X' is not closed"), "{e}");
        let e = parse_str("d X { A = source nowhere.model }", Path::new("/tmp/f"), 0).unwrap_err();
        assert!(e.to_string().starts_with("/tmp/f:1: source /tmp/nowhere.model:"), "{e}");
        let b = parse_str("d X {\n A = 1,\n B = w }", Path::new("g"), 0).unwrap();
        assert_eq!(b[0].num("B").unwrap_err().to_string(), "g:3: 'B' must be a number");
        assert_eq!(b[0].num("C").unwrap_err().to_string(), "g:1: d 'X': missing 'C'");
    }
}
