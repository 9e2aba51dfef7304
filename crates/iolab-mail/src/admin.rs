//! The queue commands (`iolab mail queue ...`): what Postfix's `mailq`
//! (`postqueue -p`), `postcat -q`, `postqueue -f`, `postsuper -d` and
//! `postsuper -r` do, over the server's two queues (the main queue and the
//! dead-letter queue, `QUEUE_DIR/main` and `QUEUE_DIR/dead`) through the
//! queues' own calls ([`MailQueue::browse`], `peek`, `delete`, `flush`).
//! The same code runs inside the server (asked through its control
//! socket, `control.rs`) and in the command itself when no server holds
//! the queue.
//!
//! Messages are named by the queue id of the logs, the `250` reply and the
//! `Received:` header (the `I` line of each record); one queue id can name
//! several records: the record for the recipients still deferred, and a
//! dead-letter record per bounce.
//!
//! Each operation writes a log line as Postfix's programs write theirs
//! (`postqueue`, `postsuper`, one line per message for delete and requeue
//! and one for the whole operation).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use tracing::info;

use crate::deferlog;
use crate::envelope::{now_ms, Envelope};
use crate::error::{MailError, Result};
use crate::operator::Operator;
use crate::store::{MailQueue, StoredState};

/// Most queue ids one request may name.
pub const MAX_IDS: usize = 10_000;
/// Most header bytes `show` returns (a message's header section can be as
/// large as the message).
const MAX_HEADER_BYTES: usize = 256 << 10;

/// One queue command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum Request {
    /// Every message (`mailq`).
    List,
    /// One message's envelope and headers, and with `body` its text.
    Show {
        /// Its queue id.
        id: String,
        /// Also the text after the headers.
        #[serde(default)]
        body: bool,
    },
    /// Deferred messages due now (`postqueue -f`; `postqueue -i ID`);
    /// no ids: all of them.
    Flush {
        /// Queue ids.
        #[serde(default)]
        ids: Vec<String>,
    },
    /// Messages removed (`postsuper -d`).
    Delete {
        /// Queue ids.
        ids: Vec<String>,
    },
    /// Dead letters back to the main queue for another try (`postsuper
    /// -r`).
    Requeue {
        /// Queue ids.
        #[serde(default)]
        ids: Vec<String>,
        /// Every dead letter.
        #[serde(default)]
        all: bool,
    },
}

impl Request {
    /// The name of the operation.
    pub fn op(&self) -> &'static str {
        match self {
            Request::List => "list",
            Request::Show { .. } => "show",
            Request::Flush { .. } => "flush",
            Request::Delete { .. } => "delete",
            Request::Requeue { .. } => "requeue",
        }
    }

    /// Whether it changes the queue.
    pub fn changes(&self) -> bool {
        matches!(self, Request::Flush { .. } | Request::Delete { .. } | Request::Requeue { .. })
    }

    /// Refuses what cannot be a request: ids that are not queue ids (plain
    /// letters and digits, as ours are), too many, or a requeue of nothing.
    pub fn check(&self) -> std::result::Result<(), String> {
        let ids: &[String] = match self {
            Request::List => &[],
            Request::Show { id, .. } => std::slice::from_ref(id),
            Request::Flush { ids } => ids,
            Request::Delete { ids } => {
                if ids.is_empty() {
                    return Err("delete: no queue id given".into());
                }
                ids
            }
            Request::Requeue { ids, all } => {
                if ids.is_empty() != *all {
                    return Err("requeue: give queue ids or all, not both or neither".into());
                }
                ids
            }
        };
        if ids.len() > MAX_IDS {
            return Err(format!("{}: {} queue ids, at most {MAX_IDS}", self.op(), ids.len()));
        }
        for id in ids {
            if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                let shown: String = id.chars().take(70).collect();
                return Err(format!("{}: {shown:?} is not a queue id (letters and digits)", self.op()));
            }
        }
        Ok(())
    }
}

/// A recipient as listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rcpt {
    /// The address.
    pub address: String,
    /// `pending` (not tried yet), `deferred` (tried, to be tried again),
    /// `bounced` (refused for good: a dead letter, the sender told),
    /// `dead` (given up after the last attempt: a dead letter too).
    pub state: String,
    /// Why, for deferred (the last attempt's reason, if known), bounced
    /// and dead recipients.
    pub reason: Option<String>,
}

/// One record as listed (a line of `mailq`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The queue id (logs, `250` reply, `Received:` header).
    pub qid: String,
    /// `main` or `dead`.
    pub queue: String,
    /// The queue's own number for the record.
    pub record: u64,
    /// `active` (being delivered), `ready` (due, waiting for a delivery
    /// agent), `deferred` (waiting for its retry time), `dead`.
    pub state: String,
    /// Message bytes (without the envelope).
    pub size: u64,
    /// When it was accepted, ms since the epoch (0: unknown).
    pub arrival_ms: u64,
    /// The envelope sender (empty: `<>`).
    pub sender: String,
    /// Delivery attempts made.
    pub attempts: u32,
    /// When it is tried next, ms since the epoch (deferred only).
    pub next_retry_ms: Option<u64>,
    /// The recipients still in this record.
    pub recipients: Vec<Rcpt>,
    /// Set when the record is not a mail record.
    pub problem: Option<String>,
}

/// One record as `show` gives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    /// What `list` says of it.
    pub entry: Entry,
    /// The envelope as stored (one line per field).
    pub envelope: String,
    /// The header section (up to 256 KiB; bytes that are not UTF-8 shown
    /// as U+FFFD).
    pub headers: String,
    /// The text after the header section, base64 (asked for with `body`).
    pub body_base64: Option<String>,
}

/// What an operation did, its last line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    /// `server` (the running server did it) or `direct` (the command
    /// opened the queue itself).
    pub via: String,
    /// The operation.
    pub op: String,
    /// Records listed or shown, messages flushed, deleted or requeued.
    pub count: usize,
    /// The queue ids acted on.
    pub ids: Vec<String>,
    /// Queue ids asked for and not found (for `requeue`: not dead letters).
    pub missing: Vec<String>,
}

/// One line of an answer: entries or shown records, then `done` (or an
/// `error` at any point, which ends it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Line {
    /// A listed record.
    Entry(Entry),
    /// A shown record.
    Shown(Shown),
    /// The end.
    Done(Done),
    /// The operation failed.
    Error(String),
}

/// Who asked, for the log line.
#[derive(Clone, Debug)]
pub struct Client {
    /// How it reached the queue: `server` or `direct`.
    pub via: &'static str,
    /// Its user id and process id.
    pub uid: u32,
    /// Its process id (0: unknown).
    pub pid: i32,
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "uid={} pid={}", self.uid, self.pid)?;
        if self.via == "direct" {
            write!(f, ", the server not running")?;
        }
        Ok(())
    }
}

/// The two queues the commands work on.
pub(crate) struct Queues<'a> {
    pub(crate) main: &'a dyn MailQueue,
    /// Absent when the directory has no dead-letter queue yet.
    pub(crate) dead: Option<&'a dyn MailQueue>,
    pub(crate) queue_dir: &'a Path,
    pub(crate) operator: &'a Operator,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Which {
    Main,
    Dead,
}

/// Records by queue and number.
type Places = HashSet<(Which, u64)>;

/// A record read for a command.
struct Found {
    which: Which,
    id: u64,
    stored: crate::store::Stored,
    record: Vec<u8>,
}

impl Found {
    fn envelope(&self) -> std::result::Result<(Envelope, &[u8]), String> {
        Envelope::decode(&self.record)
    }

    fn qid(&self) -> String {
        match self.envelope() {
            Ok((env, _)) => qid_of(&env, self.id),
            Err(_) => format!("Q{:X}", self.id),
        }
    }
}

/// The queue id a record's log lines carry (as `deliver.rs` names it: the
/// queue's number for a record written before queue ids existed).
fn qid_of(env: &Envelope, id: u64) -> String {
    if env.queue_id.is_empty() {
        format!("Q{id:X}")
    } else {
        env.queue_id.clone()
    }
}

impl Queues<'_> {
    fn queue(&self, which: Which) -> Option<&dyn MailQueue> {
        match which {
            Which::Main => Some(self.main),
            Which::Dead => self.dead,
        }
    }

    /// Reads the records of `which` (those with `skip` false), one at a
    /// time, handing each to `f` until it returns false. A record gone
    /// between the listing and its read is left out.
    fn scan(&self, which: Which, skip: &dyn Fn(u64) -> bool, f: &mut dyn FnMut(Found) -> bool) -> Result<bool> {
        let Some(q) = self.queue(which) else { return Ok(true) };
        for stored in q.browse()? {
            if skip(stored.id) {
                continue;
            }
            let Some(record) = q.peek(stored.id)? else { continue };
            if !f(Found { which, id: stored.id, stored, record }) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The records of `which` whose queue id is in `qids` (upper case),
    /// leaving out those `skip` names; and every record looked at.
    fn find(&self, qids: &HashSet<String>, which: &[Which], skip: &Places) -> Result<(Vec<Found>, Places)> {
        let mut out = Vec::new();
        let mut looked = HashSet::new();
        for &w in which {
            self.scan(w, &|id| skip.contains(&(w, id)), &mut |f| {
                looked.insert((w, f.id));
                if qids.contains(&f.qid().to_ascii_uppercase()) {
                    out.push(f);
                }
                true
            })?;
        }
        Ok((out, looked))
    }

    /// Runs `req`, handing each line of the answer to `sink` (which returns
    /// false when nobody reads any more: the operation then stops, and a
    /// change already made stays made).
    pub(crate) fn run(&self, req: &Request, who: &Client, sink: &mut dyn FnMut(Line) -> bool) {
        if let Err(why) = req.check() {
            sink(Line::Error(why));
            return;
        }
        let done = match req {
            Request::List => self.list(who, sink),
            Request::Show { id, body } => self.show(id, *body, who, sink),
            Request::Flush { ids } => self.flush(ids, who),
            Request::Delete { ids } => self.delete(ids, who),
            Request::Requeue { ids, all } => self.requeue(ids, *all, who),
        };
        match done {
            Ok(Some(d)) => {
                sink(Line::Done(d));
            }
            Ok(None) => {}
            Err(e) => {
                sink(Line::Error(e.to_string()));
            }
        }
    }

    fn done(who: &Client, op: &str, count: usize, ids: Vec<String>, missing: Vec<String>) -> Done {
        Done { via: who.via.into(), op: op.into(), count, ids, missing }
    }

    fn list(&self, who: &Client, sink: &mut dyn FnMut(Line) -> bool) -> Result<Option<Done>> {
        let mut count = 0;
        for which in [Which::Main, Which::Dead] {
            let more = self.scan(which, &|_| false, &mut |f| {
                count += 1;
                sink(Line::Entry(self.entry(&f)))
            })?;
            if !more {
                return Ok(None);
            }
        }
        info!(target: "postqueue", "list: {count} record(s) ({who})");
        Ok(Some(Self::done(who, "list", count, Vec::new(), Vec::new())))
    }

    fn show(&self, id: &str, body: bool, who: &Client, sink: &mut dyn FnMut(Line) -> bool) -> Result<Option<Done>> {
        let qid = id.to_ascii_uppercase();
        let want: HashSet<String> = [qid.clone()].into();
        let (found, _) = self.find(&want, &[Which::Main, Which::Dead], &HashSet::new())?;
        info!(target: "postqueue", "show {qid}: {} record(s) ({who})", found.len());
        let count = found.len();
        for f in &found {
            let entry = self.entry(f);
            let (envelope, headers, body_base64) = match f.envelope() {
                Ok((_, message)) => {
                    let head_len = f.record.len() - message.len();
                    let envelope = String::from_utf8_lossy(&f.record[..head_len]).into_owned();
                    let split = find_blank_line(message).unwrap_or(message.len());
                    let headers = String::from_utf8_lossy(&message[..split.min(MAX_HEADER_BYTES)]).into_owned();
                    (envelope, headers, body.then(|| base64(&message[split..])))
                }
                Err(_) => (String::new(), String::new(), body.then(|| base64(&f.record))),
            };
            if !sink(Line::Shown(Shown { entry, envelope, headers, body_base64 })) {
                return Ok(None);
            }
        }
        let missing = if count == 0 { vec![qid.clone()] } else { Vec::new() };
        let ids = if count == 0 { Vec::new() } else { vec![qid] };
        Ok(Some(Self::done(who, "show", count, ids, missing)))
    }

    /// The line of `mailq` for a record.
    fn entry(&self, f: &Found) -> Entry {
        let now = now_ms();
        let (env, message) = match f.envelope() {
            Ok(x) => x,
            Err(why) => {
                return Entry {
                    qid: f.qid(),
                    queue: which_name(f.which).into(),
                    record: f.id,
                    state: state_name(f),
                    size: f.record.len() as u64,
                    arrival_ms: 0,
                    sender: String::new(),
                    attempts: f.stored.attempts,
                    next_retry_ms: None,
                    recipients: Vec::new(),
                    problem: Some(format!("not a mail record: {why}")),
                }
            }
        };
        let qid = qid_of(&env, f.id);
        if f.which == Which::Dead {
            let reasons = split_reasons(env.bounce.as_deref().unwrap_or(""), &env.rcpts);
            let recipients = env
                .rcpts
                .iter()
                .zip(reasons)
                .map(|(r, why)| {
                    // Out of attempts (deliver.rs appends this) or refused.
                    let state = if why.contains("(gave up after ") { "dead" } else { "bounced" };
                    Rcpt { address: r.clone(), state: state.into(), reason: Some(why) }
                })
                .collect();
            return Entry {
                qid,
                queue: "dead".into(),
                record: f.id,
                state: "dead".into(),
                size: message.len() as u64,
                arrival_ms: env.arrival_ms,
                sender: env.from.clone(),
                attempts: env.attempts,
                next_retry_ms: None,
                recipients,
                problem: None,
            };
        }
        // Attempts as deliver.rs counts them (attempts_before).
        let early = u32::from(env.not_before_ms != 0).min(f.stored.attempts);
        let attempts = env.attempts.saturating_add(f.stored.attempts - early);
        let waits_for_its_time = !f.stored.retried && env.not_before_ms > now;
        let (state, next) = match f.stored.state {
            StoredState::InFlight => ("active", None),
            StoredState::Delayed => ("deferred", f.stored.due_ms),
            StoredState::Ready if waits_for_its_time => ("deferred", Some(env.not_before_ms)),
            StoredState::Ready => ("ready", None),
        };
        let why: BTreeMap<String, String> = deferlog::read(self.queue_dir, &qid)
            .into_iter()
            .map(|d| (d.rcpt, d.reason))
            .collect();
        let recipients = env
            .rcpts
            .iter()
            .map(|r| match (why.get(r), attempts) {
                (Some(reason), _) => Rcpt { address: r.clone(), state: "deferred".into(), reason: Some(reason.clone()) },
                (None, 0) => Rcpt { address: r.clone(), state: "pending".into(), reason: None },
                (None, _) => Rcpt { address: r.clone(), state: "deferred".into(), reason: None },
            })
            .collect();
        Entry {
            qid,
            queue: "main".into(),
            record: f.id,
            state: state.into(),
            size: message.len() as u64,
            arrival_ms: env.arrival_ms,
            sender: env.from.clone(),
            attempts,
            next_retry_ms: next,
            recipients,
            problem: None,
        }
    }

    fn wanted(ids: &[String]) -> HashSet<String> {
        ids.iter().map(|i| i.to_ascii_uppercase()).collect()
    }

    fn missing(ids: &[String], found: &HashSet<String>) -> Vec<String> {
        let mut m: Vec<String> = Self::wanted(ids).into_iter().filter(|i| !found.contains(i)).collect();
        m.sort();
        m
    }

    fn flush(&self, ids: &[String], who: &Client) -> Result<Option<Done>> {
        let now = now_ms();
        let want = Self::wanted(ids);
        // Deferred records: delayed in the queue, or written for deferred
        // recipients and not yet due by their own not-before line.
        let mut waiting: Vec<Found> = Vec::new();
        let mut seen = HashSet::new();
        self.scan(Which::Main, &|_| false, &mut |f| {
            let qid = f.qid().to_ascii_uppercase();
            if !want.is_empty() && !want.contains(&qid) {
                return true;
            }
            seen.insert(qid);
            let own_time = !f.stored.retried && f.envelope().is_ok_and(|(e, _)| e.not_before_ms > now);
            if f.stored.state == StoredState::Delayed || (f.stored.state == StoredState::Ready && own_time) {
                waiting.push(f);
            }
            true
        })?;
        let ids_now: Vec<u64> = waiting.iter().map(|f| f.id).collect();
        let moved: HashSet<u64> = self.main.flush(&ids_now)?.into_iter().collect();
        let mut flushed = Vec::new();
        for f in &waiting {
            let mut done = moved.contains(&f.id);
            if !done && f.stored.state == StoredState::Ready {
                // A queue that cannot move it ahead (filedir: no retry
                // queue on disk) gets the record without its not-before
                // line instead.
                if let Ok((mut env, message)) = f.envelope() {
                    env.not_before_ms = 0;
                    done = self.main.rewrite(f.id, &env.encode(message))?;
                }
            }
            if done {
                flushed.push(f.qid());
            }
        }
        flushed.sort();
        flushed.dedup();
        info!(target: "postqueue", "flush: {} message(s) due now ({who})", flushed.len());
        let missing = Self::missing(ids, &seen);
        Ok(Some(Self::done(who, "flush", flushed.len(), flushed, missing)))
    }

    fn delete(&self, ids: &[String], who: &Client) -> Result<Option<Done>> {
        let want = Self::wanted(ids);
        let both = [Which::Main, Which::Dead];
        let (mut found, looked) = self.find(&want, &both, &HashSet::new())?;
        // Settling a message stores new records (for its deferred
        // recipients, a dead letter) and then acknowledges it; under the
        // lock settling takes, no such step is half done. The records
        // written since the scan above are read again under it (few: the
        // scan reads every record, this only the new ones).
        let _held = self.operator.hold();
        found.extend(self.find(&want, &both, &looked)?.0);
        let mut gone = HashSet::new();
        for w in both {
            let Some(q) = self.queue(w) else { continue };
            let of_w: Vec<&Found> = found.iter().filter(|f| f.which == w).collect();
            let ids: Vec<u64> = of_w.iter().map(|f| f.id).collect();
            if ids.is_empty() {
                continue;
            }
            let deleted: HashSet<u64> = q.delete(&ids)?.into_iter().collect();
            if w == Which::Main {
                // A delivery holding one of them drops its results.
                self.operator.mark_deleted(&ids);
            }
            for f in of_w.iter().filter(|f| deleted.contains(&f.id)) {
                gone.insert(f.qid().to_ascii_uppercase());
            }
        }
        let mut done: Vec<String> = gone.iter().cloned().collect();
        done.sort();
        for qid in &done {
            deferlog::remove(self.queue_dir, qid);
            info!(target: "postsuper", "{qid}: removed ({who})");
        }
        info!(target: "postsuper", "Deleted: {} message(s) ({who})", done.len());
        let missing = Self::missing(ids, &gone);
        Ok(Some(Self::done(who, "delete", done.len(), done, missing)))
    }

    fn requeue(&self, ids: &[String], all: bool, who: &Client) -> Result<Option<Done>> {
        let want = Self::wanted(ids);
        let Some(dead) = self.dead else {
            return Ok(Some(Self::done(who, "requeue", 0, Vec::new(), Self::missing(ids, &HashSet::new()))));
        };
        let mut letters = Vec::new();
        self.scan(Which::Dead, &|_| false, &mut |f| {
            if all || want.contains(&f.qid().to_ascii_uppercase()) {
                letters.push(f);
            }
            true
        })?;
        let mut moved = HashSet::new();
        for f in &letters {
            let qid = f.qid();
            let Ok((env, message)) = f.envelope() else {
                // Not mail: nothing could deliver it; it stays for the
                // operator to read (show --body) and delete.
                info!(target: "postsuper", "{qid}: not requeued: not a mail record ({who})");
                continue;
            };
            // The recipients that bounced, as a new message with the same
            // queue id, no attempts made yet (as postsuper -r re-queues a
            // message for a fresh start) and nothing to wait for. Stored
            // before the dead letter is deleted: a crash in between leaves
            // both (requeueing that dead letter again would send it twice),
            // never neither.
            let again = Envelope { bounce: None, attempts: 0, not_before_ms: 0, ..env };
            self.main.enqueue(&again.encode(message))?;
            dead.delete(&[f.id])?;
            info!(target: "postsuper", "{qid}: requeued ({who})");
            moved.insert(qid.to_ascii_uppercase());
        }
        let mut done: Vec<String> = moved.iter().cloned().collect();
        done.sort();
        info!(target: "postsuper", "Requeued: {} message(s) ({who})", done.len());
        let missing = Self::missing(ids, &moved);
        Ok(Some(Self::done(who, "requeue", done.len(), done, missing)))
    }
}

fn which_name(w: Which) -> &'static str {
    match w {
        Which::Main => "main",
        Which::Dead => "dead",
    }
}

fn state_name(f: &Found) -> String {
    match (f.which, f.stored.state) {
        (Which::Dead, _) => "dead",
        (_, StoredState::InFlight) => "active",
        (_, StoredState::Delayed) => "deferred",
        (_, StoredState::Ready) => "ready",
    }
    .into()
}

/// The end of the header section: the first empty line (RFC 5322 §2.1).
fn find_blank_line(message: &[u8]) -> Option<usize> {
    if message.starts_with(b"\r\n") {
        return Some(0);
    }
    message.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 2)
}

/// Splits a dead letter's `B` line (`deliver.rs`: `<rcpt>: dsn reason`
/// per recipient, joined by `; `) into one reason per recipient, by the
/// recipients it names, in order: a reason may itself hold `; <`.
fn split_reasons(bounce: &str, rcpts: &[String]) -> Vec<String> {
    let starts: Vec<Option<usize>> = {
        let mut from = 0;
        rcpts
            .iter()
            .map(|r| {
                let tag = format!("<{r}>: ");
                let at = bounce[from..].find(&tag).map(|p| from + p);
                if let Some(a) = at {
                    from = a + tag.len();
                }
                at
            })
            .collect()
    };
    let mut out = Vec::with_capacity(rcpts.len());
    for (i, r) in rcpts.iter().enumerate() {
        let Some(start) = starts[i] else {
            out.push(bounce.to_string());
            continue;
        };
        let text_start = start + r.len() + 4;
        let end = starts[i + 1..].iter().flatten().next().map_or(bounce.len(), |&n| n.saturating_sub(2).max(text_start));
        out.push(bounce[text_start..end].to_string());
    }
    out
}

/// Base64 (RFC 4648, with padding).
fn base64(data: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Error for a directory that holds no queue.
pub(crate) fn no_queue(dir: &Path) -> MailError {
    MailError::Config(format!("{}: no mail queue here (no {}/main)", dir.display(), dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked() {
        let r: Request = serde_json::from_str(r#"{"op":"delete","ids":["ABC1"]}"#).unwrap();
        assert_eq!(r, Request::Delete { ids: vec!["ABC1".into()] });
        assert!(r.check().is_ok());
        assert!(serde_json::from_str::<Request>(r#"{"op":"delete","ids":["A"],"x":1}"#).is_err());
        assert!(serde_json::from_str::<Request>(r#"{"op":"format"}"#).is_err());
        assert!(Request::Delete { ids: vec![] }.check().is_err());
        assert!(Request::Show { id: "../etc".into(), body: false }.check().is_err());
        assert!(Request::Requeue { ids: vec![], all: false }.check().is_err());
        assert!(Request::Requeue { ids: vec!["A".into()], all: true }.check().is_err());
        assert!(Request::Flush { ids: vec!["A".into(); MAX_IDS + 1] }.check().is_err());
        assert_eq!(serde_json::from_str::<Request>(r#"{"op":"list"}"#).unwrap(), Request::List);
    }

    #[test]
    fn reasons_split_by_recipient() {
        let rcpts = vec!["a@x".to_string(), "b@y".to_string()];
        let b = "<a@x>: 5.1.1 no; <b@y> said; <b@y>: 4.4.1 refused (gave up after 3 attempts)";
        assert_eq!(split_reasons(b, &rcpts), vec!["5.1.1 no; <b@y> said", "4.4.1 refused (gave up after 3 attempts)"]);
        assert_eq!(split_reasons("odd", &rcpts[..1]), vec!["odd"]);
    }

    #[test]
    fn base64_of_rfc4648_vectors() {
        for (i, o) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn header_section_ends_at_the_first_empty_line() {
        assert_eq!(find_blank_line(b"A: b\r\n\r\nbody"), Some(6));
        assert_eq!(find_blank_line(b"\r\nbody"), Some(0));
        assert_eq!(find_blank_line(b"A: b\r\n"), None);
    }
}
