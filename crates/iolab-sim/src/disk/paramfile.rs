//! Reader of DiskSim 4.0 parameter files (`.parv`, `.diskspecs`, `.model`):
//! the syntax only, into blocks, instantiations and topologies.
//! `diskspecs.rs` gives them meaning.
//!
//! The syntax, as DiskSim's manual describes it: `#` starts a comment;
//! a file is a list of statements — `source FILE` (include), `TYPE NAME {
//! params }`, `instantiate [ names ] as NAME`, `topology TYPE NAME [ ... ]`;
//! a block holds `Key words = value` separated by commas, where a value is
//! a number, a word, `source FILE` (a block kept in another file), a block
//! `TYPE { ... }`, or a list `[ v, v, ... ]`. A topology nests
//! `TYPE NAME [ children ]` to say what is attached to what.

use crate::error::{Error, Result};
use crate::input::read_text_file;
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

/// `instantiate [ names ] as NAME`: instances of the block named NAME.
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    pub names: Vec<String>,
    pub of: String,
    pub file: String,
    pub line: usize,
}

/// One node of a `topology` statement: an instance and what hangs off it.
#[derive(Clone, Debug, PartialEq)]
pub struct TopoNode {
    pub kind: String,
    pub name: String,
    pub children: Vec<TopoNode>,
    pub line: usize,
}

impl TopoNode {
    /// The chain of nodes from this one down to the instance `name`.
    pub fn path_to(&self, name: &str) -> Option<Vec<&TopoNode>> {
        if self.name == name {
            return Some(vec![self]);
        }
        for c in &self.children {
            if let Some(mut p) = c.path_to(name) {
                p.insert(0, self);
                return Some(p);
            }
        }
        None
    }
}

/// Everything a parameter file and the files it sources hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamFile {
    pub blocks: Vec<Block>,
    pub instances: Vec<Instance>,
    pub topologies: Vec<TopoNode>,
}

impl ParamFile {
    fn extend(&mut self, other: ParamFile) {
        self.blocks.extend(other.blocks);
        self.instances.extend(other.instances);
        self.topologies.extend(other.topologies);
    }
}

/// Largest parameter or seek file read (64 MiB): guards against being
/// pointed at a device or a huge file by mistake.
pub const MAX_PARAM_FILE: u64 = 64 << 20;

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
    /// Lists, blocks and topology nodes open around the current token.
    nesting: u32,
}

/// Deepest chain of `source` includes accepted (guards against loops).
const MAX_DEPTH: u32 = 16;

/// Deepest nesting of lists, blocks and topology nodes accepted. DiskSim's
/// own files nest four levels (a topology of driver, bus, controller, bus,
/// disk); the parser recurses once per level, so without a bound a file
/// nested 100,000 deep overflowed the stack (issue 27).
pub const MAX_NESTING: u32 = 64;

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
/// top-level blocks, instantiations and topologies of all of them, in
/// order.
pub fn read_file(path: &Path) -> Result<ParamFile> {
    read_at_depth(path, 0)
}

fn read_at_depth(path: &Path, depth: u32) -> Result<ParamFile> {
    let text = read_text_file(path, MAX_PARAM_FILE)?;
    parse_str(&text, path, depth)
}

/// Parses `text` as if it were the file `path` (for includes and errors).
pub fn parse_str(text: &str, path: &Path, depth: u32) -> Result<ParamFile> {
    let mut p = Parser {
        toks: tokenize(text),
        i: 0,
        file: path.display().to_string(),
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        depth,
        nesting: 0,
    };
    p.statements()
}

impl Parser {
    /// Runs `f` one level deeper, refusing to go past [`MAX_NESTING`].
    fn nested<T>(&mut self, line: usize, f: impl FnOnce(&mut Parser) -> Result<T>) -> Result<T> {
        if self.nesting >= MAX_NESTING {
            return self.err(line, format!("lists, blocks or topology nodes nested more than {MAX_NESTING} deep"));
        }
        self.nesting += 1;
        let out = f(self);
        self.nesting -= 1;
        out
    }

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
    fn include(&mut self, line: usize, rel: &str) -> Result<ParamFile> {
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
            Error::Spec { file, message } if file == path.display().to_string() => Error::Line {
                file: self.file.clone(),
                line,
                message: format!("source {file}: {message}"),
            },
            other => other,
        })
    }

    /// Names inside `[ ... ]`, commas between them optional.
    fn name_list(&mut self) -> Result<Vec<String>> {
        let line = self.line();
        self.expect('[')?;
        let mut names = Vec::new();
        loop {
            match self.peek().cloned() {
                Some(Tok::Punct(']')) => {
                    self.i += 1;
                    return Ok(names);
                }
                Some(Tok::Punct(',')) => self.i += 1,
                Some(Tok::Word(w)) => {
                    names.push(w);
                    self.i += 1;
                }
                Some(Tok::Punct(c)) => return self.err(self.line(), format!("unexpected '{c}' in a list of names")),
                None => return self.err(line, "unclosed '['"),
            }
        }
    }

    /// `TYPE NAME [ children ]`, the type and name already read.
    fn topo_node(&mut self, kind: String, name: String, line: usize) -> Result<TopoNode> {
        self.expect('[')?;
        let mut children = Vec::new();
        loop {
            match self.peek().cloned() {
                Some(Tok::Punct(']')) => {
                    self.i += 1;
                    return Ok(TopoNode { kind, name, children, line });
                }
                Some(Tok::Punct(',')) => self.i += 1,
                Some(Tok::Word(_)) => {
                    let cl = self.line();
                    let (k, n) = self.two_words(cl)?;
                    children.push(self.nested(cl, |p| p.topo_node(k, n, cl))?);
                }
                Some(Tok::Punct(c)) => return self.err(self.line(), format!("unexpected '{c}' in a topology")),
                None => return self.err(line, format!("topology node '{kind} {name}' is not closed")),
            }
        }
    }

    /// Two words (a type and a name), possibly on separate lines.
    fn two_words(&mut self, line: usize) -> Result<(String, String)> {
        let mut w = Vec::new();
        while w.len() < 2 {
            match self.peek().cloned() {
                Some(Tok::Word(x)) => {
                    w.push(x);
                    self.i += 1;
                }
                _ => return self.err(line, "expected 'TYPE NAME [' in a topology"),
            }
        }
        Ok((w.remove(0), w.remove(0)))
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

    fn statements(&mut self) -> Result<ParamFile> {
        let mut out = ParamFile::default();
        while self.peek().is_some() {
            let line = self.line();
            let w = self.words();
            match (w.first().map(String::as_str), self.peek()) {
                (Some("source"), _) if w.len() == 2 => out.extend(self.include(line, &w[1])?),
                (Some("instantiate"), Some(Tok::Punct('['))) if w.len() == 1 => {
                    let names = self.name_list()?;
                    let rest = self.words();
                    if rest.len() != 2 || rest[0] != "as" {
                        return self.err(line, "expected 'instantiate [ names ] as NAME'");
                    }
                    out.instances.push(Instance { names, of: rest[1].clone(), file: self.file.clone(), line });
                }
                (Some("topology"), Some(Tok::Punct('['))) if w.len() == 3 => {
                    let node = self.topo_node(w[1].clone(), w[2].clone(), line)?;
                    out.topologies.push(node);
                }
                (Some(_), Some(Tok::Punct('['))) => self.skip_group()?,
                (Some(kind), Some(Tok::Punct('{'))) => {
                    let b = self.block(kind.to_string(), w[1..].join(" "), line)?;
                    out.blocks.push(b);
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
                    _ => {
                        let l = self.line();
                        items.push(self.nested(l, |p| p.value())?)
                    }
                }
            }
        }
        let w = self.words();
        if w.is_empty() {
            return self.err(line, "expected a value");
        }
        if self.peek() == Some(&Tok::Punct('{')) {
            return Ok(Value::Block(self.nested(line, |p| p.block(w[0].clone(), w[1..].join(" "), line))?));
        }
        if w[0] == "source" && w.len() == 2 {
            let mut f = self.include(line, &w[1])?;
            if f.blocks.len() != 1 {
                return self.err(line, format!("source {}: expected one block, found {}", w[1], f.blocks.len()));
            }
            return Ok(Value::Block(f.blocks.remove(0)));
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
    /// A finite number.
    pub fn num(&self, key: &str) -> Result<f64> {
        let p = self.need(key)?;
        match &p.value {
            Value::Num(x) if x.is_finite() => Ok(*x),
            Value::Num(x) => self.err(p.line, format!("'{key}' must be a finite number, not {x}")),
            _ => self.err(p.line, format!("'{key}' must be a number")),
        }
    }
    /// The line a parameter is on (the block's own line if absent).
    pub fn line_of(&self, key: &str) -> usize {
        self.get(key).map_or(self.line, |p| p.line)
    }
    /// A number >= 0, or `default` when absent.
    pub fn nonneg_or(&self, key: &str, default: f64) -> Result<f64> {
        let x = self.num_or(key, default)?;
        if x < 0.0 {
            return self.err(self.line_of(key), format!("'{key}' must be >= 0, not {x}"));
        }
        Ok(x)
    }
    /// A number >= 0.
    pub fn nonneg(&self, key: &str) -> Result<f64> {
        self.need(key)?;
        self.nonneg_or(key, 0.0)
    }
    /// A switch (DiskSim treats any non-zero integer as on).
    pub fn flag_or(&self, key: &str, default: bool) -> Result<bool> {
        if self.get(key).is_none() {
            return Ok(default);
        }
        Ok(self.int(key, i32::MIN as i64, i32::MAX as i64)? != 0)
    }
    pub fn num_or(&self, key: &str, default: f64) -> Result<f64> {
        if self.get(key).is_some() {
            self.num(key)
        } else {
            Ok(default)
        }
    }
    /// A whole number within `lo..=hi`, or `default` when absent.
    pub fn int_or(&self, key: &str, lo: i64, hi: i64, default: i64) -> Result<i64> {
        if self.get(key).is_none() {
            return Ok(default);
        }
        self.int(key, lo, hi)
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
    /// A list of finite numbers.
    pub fn nums(&self, key: &str) -> Result<Vec<f64>> {
        let (items, line) = self.list(key)?;
        items
            .iter()
            .map(|v| match v {
                Value::Num(x) if x.is_finite() => Ok(*x),
                _ => self.err(line, format!("'{key}' must list finite numbers")),
            })
            .collect()
    }
    /// The first parameter whose key is not in `known`.
    pub fn unknown_key(&self, known: &[&str]) -> Option<&Param> {
        self.params.iter().find(|p| !known.iter().any(|k| k.eq_ignore_ascii_case(&p.key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_blocks_lists_and_words() {
        let text = "# c\nd X {\n  A b = 1.5, # c\n  Kind = hplplus10,\n  L = [ 1, 2 ],\n  Z = [ z { Q = 3 } ],\n  M = t { P = -1 }\n}\ninstantiate [ a, b ] as X\ntopology t n [ u v [ ] w x [\n y z [] ] ]\n";
        let f = parse_str(text, Path::new("x.parv"), 0).unwrap();
        let b = &f.blocks;
        assert_eq!(b.len(), 1);
        assert_eq!(f.instances[0].names, vec!["a", "b"]);
        assert_eq!(f.instances[0].of, "X");
        let t = &f.topologies[0];
        assert_eq!((t.kind.as_str(), t.name.as_str(), t.children.len()), ("t", "n", 2));
        let path: Vec<&str> = t.path_to("z").unwrap().iter().map(|n| n.name.as_str()).collect();
        assert_eq!(path, vec!["n", "x", "z"]);
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
        let e = parse_str("d X { A = source . }", Path::new("/tmp/f"), 0).unwrap_err();
        assert!(e.to_string().contains("is a directory, not a file"), "{e}");
        let e = read_text_file(Path::new("/dev/zero"), MAX_PARAM_FILE).unwrap_err();
        assert_eq!(e.to_string(), "/dev/zero: is not a regular file (a device, FIFO or socket)");
        // Nesting 100,000 deep (lists, blocks, topologies) overflowed the stack.
        let deep = |open: &str, close: &str, n: usize| format!("{}{}", open.repeat(n), close.repeat(n));
        for text in [
            format!("d X {{ A = {} }}", deep("[", "]", 100_000)),
            format!("d X {{ A = {} }}", deep("b Y { C = ", "}", 100_000)),
            format!("topology t n [ {} ]", deep("u v [ ", "]", 100_000)),
        ] {
            let e = parse_str(&text, Path::new("deep"), 0).unwrap_err().to_string();
            assert!(e.starts_with("deep:1: lists, blocks or topology nodes nested more than 64 deep"), "{e}");
        }
        assert!(parse_str(&format!("d X {{ A = {} }}", deep("[", "]", 64)), Path::new("ok"), 0).is_ok());
        let b = parse_str("d X {\n A = 1,\n B = w }", Path::new("g"), 0).unwrap().blocks;
        assert_eq!(b[0].num("B").unwrap_err().to_string(), "g:3: 'B' must be a number");
        assert_eq!(b[0].num("C").unwrap_err().to_string(), "g:1: d 'X': missing 'C'");
    }
}
