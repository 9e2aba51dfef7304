//! Final delivery into Maildir folders (<https://cr.yp.to/proto/maildir.html>):
//! write the message under `tmp/` with a unique name, `fsync` it, rename it
//! into `new/`, `fsync` `new/` so that the rename is durable. A folder
//! created for a new recipient is made durable too: each directory made
//! (`name/`, then its `tmp/`, `new/`, `cur/`) is followed by an `fsync` of
//! its parent, or a crash could lose the folder, and with it a message
//! already acknowledged (issue 26, defect 7). Only then is the queue's
//! copy acknowledged.
//!
//! Each recipient gets its own result (as Postfix's local(8) reports per
//! recipient): a failure for one does not fail the others.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::address::{mailbox_name, ForwardPath};
use crate::envelope::Envelope;
use crate::status::{Attempt, RcptResult};

static SEQ: AtomicU64 = AtomicU64::new(0);

/// What a Maildir delivery did, besides its per-recipient results.
pub(crate) struct MaildirOutcome {
    /// Per recipient.
    pub attempt: Attempt,
    /// `fsync` calls made.
    pub syncs: u64,
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

fn sync_dir(p: &Path) -> std::io::Result<()> {
    File::open(p)?.sync_all()
}

/// Makes `dir` if it is missing and makes that durable (`fsync` of its
/// parent); returns the `fsync`s made.
pub(crate) fn make_dir_durable(dir: &Path) -> std::io::Result<u64> {
    match fs::create_dir(dir) {
        Ok(()) => {
            let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            sync_dir(parent)?;
            Ok(1)
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists && dir.is_dir() => Ok(0),
        Err(e) => Err(e),
    }
}

/// The recipient's folder, made (durably) if new.
fn folder(root: &Path, name: &str, syncs: &mut u64) -> std::io::Result<PathBuf> {
    let dir = root.join(name);
    if !dir.join("cur").is_dir() {
        *syncs += make_dir_durable(&dir)?;
        for sub in ["tmp", "new", "cur"] {
            *syncs += make_dir_durable(&dir.join(sub))?;
        }
    }
    Ok(dir)
}

/// Writes one copy; the number of `fsync`s.
fn write_copy(dir: &Path, head: &str, message: &[u8]) -> std::io::Result<u64> {
    let name = unique_name();
    let tmp = dir.join("tmp").join(&name);
    let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
    f.write_all(head.as_bytes())?;
    f.write_all(message)?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, dir.join("new").join(&name))?;
    sync_dir(&dir.join("new"))?;
    Ok(2)
}

/// Delivers `message` to every recipient's folder under `root`, each with
/// its own result. Recipients that got their copy before a crash get it
/// again on the retry (the at-least-once rule of docs/mail.md).
/// `is_local` says which domains are delivered here: a bounce to a
/// sender elsewhere has no folder here (Maildir delivery sends nothing on).
pub(crate) fn deliver(root: &Path, env: &Envelope, message: &[u8], is_local: impl Fn(&str) -> bool) -> MaildirOutcome {
    let mut syncs = 0;
    let mut results = Vec::with_capacity(env.rcpts.len());
    for rcpt in &env.rcpts {
        let path = ForwardPath::parse(rcpt).ok();
        if let Some(ForwardPath::Mailbox(m)) = &path {
            if !is_local(&m.domain) {
                results.push(RcptResult::new(rcpt, "5.1.2", format!("<{rcpt}>: domain {} is not delivered here", m.domain)));
                continue;
            }
        }
        let name = path.as_ref().and_then(mailbox_name);
        let Some(name) = name else {
            results.push(RcptResult::new(rcpt, "5.1.1", format!("<{rcpt}>: not a local mailbox name")));
            continue;
        };
        // Return-Path and Delivered-To are added at final delivery, as
        // Postfix's local(8) does.
        let head = format!("Return-Path: <{}>\r\nDelivered-To: {}\r\n", env.from, rcpt);
        let done = folder(root, &name, &mut syncs).and_then(|dir| write_copy(&dir, &head, message));
        results.push(match done {
            Ok(n) => {
                syncs += n;
                RcptResult::new(rcpt, "2.0.0", format!("delivered to maildir {name}"))
            }
            // Out of space or quota: Postfix's local(8) defers (4.2.2 /
            // 4.3.0); any other I/O error is also worth a retry.
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) || e.raw_os_error() == Some(libc::EDQUOT) => {
                RcptResult::new(rcpt, "4.2.2", format!("maildir {name}: {e}"))
            }
            Err(e) => RcptResult::new(rcpt, "4.3.0", format!("maildir {name}: {e}")),
        });
    }
    MaildirOutcome { attempt: Attempt { relay: "local".into(), results }, syncs }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    /// One recipient whose folder cannot be made does not fail the others.
    #[test]
    fn each_recipient_has_its_own_result() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        // A regular file where bob's folder would go.
        fs::write(root.join("bob"), b"in the way").unwrap();
        let env = Envelope {
            from: "s@x.example".into(),
            rcpts: vec!["alice@x.example".into(), "bob@x.example".into(), "\"a b\"@x.example".into(), "postmaster".into()],
            ..Default::default()
        };
        let out = deliver(root, &env, b"Subject: t\r\n\r\nhi\r\n", |d| d == "x.example");
        let got: Vec<Status> = out.attempt.results.iter().map(|r| r.status).collect();
        assert_eq!(got, [Status::Sent, Status::Deferred, Status::Bounced, Status::Sent]);
        assert_eq!(fs::read_dir(root.join("alice/new")).unwrap().count(), 1);
        assert_eq!(fs::read_dir(root.join("postmaster/new")).unwrap().count(), 1);
        // alice and postmaster: 4 directories made (each a parent fsync),
        // then the file and new/.
        assert_eq!(out.syncs, 2 * 6, "{}", out.syncs);
        let elsewhere = Envelope { rcpts: vec!["alice@y.example".into()], ..env };
        let out = deliver(root, &elsewhere, b"x\r\n", |d| d == "x.example");
        assert_eq!(out.attempt.results[0].dsn, "5.1.2");
    }
}
