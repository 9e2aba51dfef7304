//! Final delivery into Maildir folders (<https://cr.yp.to/proto/maildir.html>):
//! write the message under `tmp/` with a unique name, `fsync` it, rename it
//! into `new/`, `fsync` `new/` so that the rename is durable. Only then is
//! the queue's copy acknowledged.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::envelope::Envelope;
use crate::address::mailbox_name;

static SEQ: AtomicU64 = AtomicU64::new(0);

/// What a Maildir delivery did.
pub(crate) struct MaildirOutcome {
    /// `fsync` calls made.
    pub syncs: u64,
}

/// A failure: permanent (no such mailbox name) or temporary (I/O).
pub(crate) enum MaildirError {
    Permanent(String),
    Temporary(String),
}

fn unique_name() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    // time.M<usec>P<pid>Q<seq>.host, as the Maildir spec suggests.
    format!(
        "{}.M{}P{}Q{}.iolab",
        now.as_secs(),
        now.subsec_micros(),
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

fn folder(root: &Path, rcpt: &str) -> Result<PathBuf, MaildirError> {
    let name = mailbox_name(rcpt).ok_or_else(|| MaildirError::Permanent(format!("550 5.1.1 <{rcpt}>: not a local mailbox name")))?;
    let dir = root.join(name);
    for sub in ["tmp", "new", "cur"] {
        let p = dir.join(sub);
        if !p.is_dir() {
            fs::create_dir_all(&p).map_err(|e| MaildirError::Temporary(format!("{}: {e}", p.display())))?;
        }
    }
    Ok(dir)
}

/// Delivers `message` to every recipient's folder under `root`. Recipients
/// before a failure keep their copy (a retry delivers to them again: the
/// at-least-once rule of docs/mail.md).
pub(crate) fn deliver(root: &Path, env: &Envelope, message: &[u8]) -> Result<MaildirOutcome, MaildirError> {
    let mut syncs = 0;
    for rcpt in &env.rcpts {
        let dir = folder(root, rcpt)?;
        let name = unique_name();
        let tmp = dir.join("tmp").join(&name);
        let dest = dir.join("new").join(&name);
        let temp = |what: &str, p: &Path, e: std::io::Error| MaildirError::Temporary(format!("{what} {}: {e}", p.display()));
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp).map_err(|e| temp("create", &tmp, e))?;
        // Return-Path and Delivered-To are added at final delivery, as
        // Postfix's local(8) does.
        let head = format!("Return-Path: <{}>\r\nDelivered-To: {}\r\n", env.from, rcpt);
        f.write_all(head.as_bytes())
            .and_then(|_| f.write_all(message))
            .map_err(|e| temp("write", &tmp, e))?;
        f.sync_all().map_err(|e| temp("fsync", &tmp, e))?;
        drop(f);
        fs::rename(&tmp, &dest).map_err(|e| temp("rename", &dest, e))?;
        let new = dir.join("new");
        File::open(&new).and_then(|d| d.sync_all()).map_err(|e| temp("fsync", &new, e))?;
        syncs += 2;
    }
    Ok(MaildirOutcome { syncs })
}
