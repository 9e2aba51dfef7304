//! Why recipients were deferred, kept per message for the queue listing
//! (`iolab mail queue list` shows each deferred recipient's last reason,
//! as `mailq` does). Postfix keeps the same thing in its `defer/` queue
//! directory, a log per queue id that its queue listing reads; here one
//! file per queue id in `QUEUE_DIR/defer`, holding the last attempt's
//! deferred recipients as JSON lines, replaced at each attempt (a new file
//! renamed over the old) and removed with the message. Not synced: it only
//! explains, and a crash that loses it loses no mail (the listing then says
//! "deferred" without a reason).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Longest reason kept (a next hop's reply can be long).
const MAX_REASON: usize = 1000;

/// One deferred recipient of the last attempt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deferral {
    /// The recipient.
    pub rcpt: String,
    /// Its enhanced status code (`4.4.1`).
    pub dsn: String,
    /// Why (the next hop's reply, or ours).
    pub reason: String,
    /// When, ms since the epoch.
    pub at_ms: u64,
}

/// The log's path for `qid`; `None` for an id that is not plain letters
/// and digits (ours are hex; a record from elsewhere may hold anything,
/// and must not name a path).
fn path(queue_dir: &Path, qid: &str) -> Option<PathBuf> {
    (!qid.is_empty() && qid.len() <= 64 && qid.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| queue_dir.join("defer").join(qid))
}

/// Replaces `qid`'s log with `entries`. Errors are returned for the caller
/// to log; mail does not depend on the log.
pub(crate) fn write(queue_dir: &Path, qid: &str, entries: &[Deferral]) -> std::io::Result<()> {
    let Some(file) = path(queue_dir, qid) else { return Ok(()) };
    std::fs::create_dir_all(file.parent().expect("defer/ has a parent"))?;
    let mut text = String::new();
    for e in entries {
        let mut e = e.clone();
        if e.reason.len() > MAX_REASON {
            let mut cut = MAX_REASON;
            while !e.reason.is_char_boundary(cut) {
                cut -= 1;
            }
            e.reason.truncate(cut);
        }
        text.push_str(&serde_json::to_string(&e).expect("plain strings serialise"));
        text.push('\n');
    }
    let tmp = file.with_extension("new");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, &file)
}

/// `qid`'s last deferred recipients (none if it has no log, or an
/// unreadable one).
pub(crate) fn read(queue_dir: &Path, qid: &str) -> Vec<Deferral> {
    let Some(file) = path(queue_dir, qid) else { return Vec::new() };
    let Ok(text) = std::fs::read_to_string(file) else { return Vec::new() };
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// Removes `qid`'s log, if any.
pub(crate) fn remove(queue_dir: &Path, qid: &str) {
    if let Some(file) = path(queue_dir, qid) {
        let _ = std::fs::remove_file(file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_read_replaced_removed_and_no_path_from_a_strange_id() {
        let tmp = tempfile::tempdir().unwrap();
        let d = |r: &str| Deferral { rcpt: r.into(), dsn: "4.4.1".into(), reason: "x".repeat(3000), at_ms: 5 };
        write(tmp.path(), "ABC123", &[d("a@x"), d("b@y")]).unwrap();
        let back = read(tmp.path(), "ABC123");
        assert_eq!(back.iter().map(|e| e.rcpt.as_str()).collect::<Vec<_>>(), ["a@x", "b@y"]);
        assert_eq!(back[0].reason.len(), MAX_REASON);
        write(tmp.path(), "ABC123", &[d("b@y")]).unwrap();
        assert_eq!(read(tmp.path(), "ABC123").len(), 1);
        remove(tmp.path(), "ABC123");
        assert!(read(tmp.path(), "ABC123").is_empty());
        write(tmp.path(), "../evil", &[d("a@x")]).unwrap();
        assert!(!tmp.path().join("evil").exists() && !tmp.path().join("defer").join("..").join("evil").exists());
        assert_eq!(std::fs::read_dir(tmp.path().join("defer")).unwrap().count(), 0);
    }
}
