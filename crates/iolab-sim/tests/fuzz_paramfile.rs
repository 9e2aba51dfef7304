//! Fuzzing the DiskSim parameter-file reader (issue 27). The seed corpus is
//! DiskSim's own validation files (data/disksim/: the .parv, .diskspecs and
//! .model files of seven drives), replayed as they are and then mutated by
//! proptest (bytes replaced, ranges cut, repeated and spliced with the
//! syntax's own tokens), a fixed number of cases per run (`PROPTEST_CASES`
//! raises it). Whatever the text, reading it and building the disk gives a
//! disk or one error line naming the file: no panic, no stack overflow, no
//! allocation the machine cannot make.

use iolab_sim::disk::paramfile::parse_str;
use iolab_sim::disk::{self, DiskSpec};
use proptest::prelude::*;
use std::path::PathBuf;

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/disksim")
}

fn corpus() -> Vec<(String, String)> {
    let mut files: Vec<_> = std::fs::read_dir(data())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("parv" | "diskspecs" | "model")))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(p).unwrap()))
        .collect()
}

/// Pieces of the syntax, spliced in by the mutations.
const TOKENS: &[&str] =
    &["{", "}", "[", "]", "=", ",", "source ", "instantiate ", " as ", "topology ", "1e999", "-1", "nan", "\n", "#"];

fn mutated() -> impl Strategy<Value = (String, String)> {
    let seeds = corpus();
    let n = seeds.len();
    (0..n, prop::collection::vec((0u8..4, any::<u32>(), 0usize..40, 0usize..TOKENS.len()), 1..6)).prop_map(
        move |(i, edits)| {
            let (name, text) = &seeds[i];
            let mut b = text.clone().into_bytes();
            for (kind, at, len, tok) in edits {
                let at = at as usize % (b.len() + 1);
                let end = (at + len).min(b.len());
                match kind {
                    0 => {
                        b.drain(at..end);
                    }
                    1 => {
                        let piece = b[at..end].to_vec();
                        b.splice(at..at, piece.repeat(8));
                    }
                    2 => {
                        b.splice(at..at, TOKENS[tok].bytes().cycle().take(TOKENS[tok].len() * (len + 1)));
                    }
                    _ => {
                        b.splice(at..end, TOKENS[tok].bytes());
                    }
                }
            }
            (name.clone(), String::from_utf8_lossy(&b).into_owned())
        },
    )
}

/// Reads `text` as the file `name` beside DiskSim's own files (so that its
/// `source` lines find what they name), and builds the disk when it is a
/// `.parv`; any error is one line naming a file.
fn read(name: &str, text: &str) {
    let dir = tempfile_dir();
    for entry in std::fs::read_dir(data()).unwrap() {
        let p = entry.unwrap().path();
        if matches!(p.extension().and_then(|e| e.to_str()), Some("parv" | "diskspecs" | "model" | "seek")) {
            std::os::unix::fs::symlink(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path); // the link to the original
    std::fs::write(&path, text).unwrap();
    if let Err(e) = parse_str(text, &path, 0) {
        let m = e.to_string();
        assert!(!m.contains('\n') && m.contains(name), "{m}");
    }
    if name.ends_with(".parv") {
        let spec = DiskSpec { preset: None, diskspecs: Some(name.to_string()), ..DiskSpec::default() };
        if let Err(e) = disk::build(&spec, &dir) {
            let m = e.to_string();
            assert!(!m.contains('\n'), "{m}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempfile_dir() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let d = std::env::temp_dir().join(format!("iolab-fuzz-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_seed_corpus_reads_and_builds() {
    for (name, text) in corpus() {
        parse_str(&text, &data().join(&name), 0).unwrap();
    }
    for (name, _) in corpus().iter().filter(|(n, _)| n.ends_with(".parv")) {
        let spec = DiskSpec { preset: None, diskspecs: Some(name.clone()), ..DiskSpec::default() };
        disk::build(&spec, &data()).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn mutated_parameter_files((name, text) in mutated()) {
        read(&name, &text);
    }

    #[test]
    fn token_soup(toks in prop::collection::vec(0usize..TOKENS.len(), 0..400), words in prop::collection::vec("[A-Za-z_0-9.]{1,8}", 1..8)) {
        let text: String = toks.iter().enumerate().map(|(i, &t)| format!("{} {} ", TOKENS[t], words[i % words.len()])).collect();
        read("soup.parv", &text);
    }
}
