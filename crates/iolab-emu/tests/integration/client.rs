//! A bare NBD client for the tests: it speaks the protocol byte by byte,
//! so tests can send what well-behaved clients never would.

use iolab_emu::nbd::proto::*;
use iolab_emu::{Config, Emulator, Listen};
use iolab_sim::disk::DiskSpec;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const NBD_OPT_STRUCTURED_REPLY: u32 = 8;

/// An emulator on a Unix socket in a temporary directory.
pub struct Server {
    pub emu: Emulator,
    pub dir: tempfile::TempDir,
}

impl Server {
    pub fn start(disk: DiskSpec, tweak: impl FnOnce(&mut Config)) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = Config::new(
            disk,
            dir.path().join("disk.img"),
            Listen::Unix(dir.path().join("nbd.sock")),
        );
        cfg.log = Some(dir.path().join("log.csv"));
        tweak(&mut cfg);
        Server {
            emu: Emulator::start(cfg).unwrap(),
            dir,
        }
    }
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("nbd.sock")
    }
    pub fn image(&self) -> PathBuf {
        self.dir.path().join("disk.img")
    }
    pub fn log(&self) -> PathBuf {
        self.dir.path().join("log.csv")
    }
    /// A client through the handshake with NBD_OPT_GO.
    pub fn client(&self) -> Client {
        let mut c = Client::connect(&self.socket());
        c.go();
        c
    }
}

pub fn preset(name: &str) -> DiskSpec {
    DiskSpec {
        preset: Some(name.into()),
        ..DiskSpec::default()
    }
}

pub fn fixed(ms: f64) -> DiskSpec {
    DiskSpec {
        preset: Some("fixed".into()),
        fixed_ms: Some(ms),
        ..DiskSpec::default()
    }
}

pub struct Client {
    pub s: UnixStream,
    pub size: u64,
    pub flags: u16,
    next_cookie: u64,
}

/// An option reply: (option, type, data).
pub type OptReply = (u32, u32, Vec<u8>);

impl Client {
    /// Connects and reads the server's greeting; sends the client flags.
    pub fn connect_with_flags(path: &Path, client_flags: u32) -> Client {
        let s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut c = Client {
            s,
            size: 0,
            flags: 0,
            next_cookie: 1,
        };
        assert_eq!(c.u64(), NBDMAGIC);
        assert_eq!(c.u64(), IHAVEOPT);
        assert_eq!(c.u16(), FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
        c.s.write_all(&client_flags.to_be_bytes()).unwrap();
        c
    }

    pub fn connect(path: &Path) -> Client {
        Client::connect_with_flags(path, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES)
    }

    pub fn u16(&mut self) -> u16 {
        let mut b = [0; 2];
        self.s.read_exact(&mut b).unwrap();
        u16::from_be_bytes(b)
    }
    pub fn u32(&mut self) -> u32 {
        let mut b = [0; 4];
        self.s.read_exact(&mut b).unwrap();
        u32::from_be_bytes(b)
    }
    pub fn u64(&mut self) -> u64 {
        let mut b = [0; 8];
        self.s.read_exact(&mut b).unwrap();
        u64::from_be_bytes(b)
    }

    pub fn send_option(&mut self, option: u32, data: &[u8]) {
        let mut m = IHAVEOPT.to_be_bytes().to_vec();
        m.extend_from_slice(&option.to_be_bytes());
        m.extend_from_slice(&(data.len() as u32).to_be_bytes());
        m.extend_from_slice(data);
        self.s.write_all(&m).unwrap();
    }

    pub fn option_reply(&mut self) -> OptReply {
        assert_eq!(self.u64(), REPLY_MAGIC);
        let (opt, kind, len) = (self.u32(), self.u32(), self.u32());
        let mut data = vec![0; len as usize];
        self.s.read_exact(&mut data).unwrap();
        (opt, kind, data)
    }

    /// Replies up to and including the final one (ACK or an error).
    pub fn option_replies(&mut self) -> Vec<OptReply> {
        let mut out = Vec::new();
        loop {
            let r = self.option_reply();
            let last = r.1 == REP_ACK || r.1 & (1 << 31) != 0;
            out.push(r);
            if last {
                return out;
            }
        }
    }

    pub fn info_data(name: &str, requests: &[u16]) -> Vec<u8> {
        let mut d = (name.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(&(requests.len() as u16).to_be_bytes());
        for r in requests {
            d.extend_from_slice(&r.to_be_bytes());
        }
        d
    }

    /// NBD_OPT_GO for the default export, asking for the block sizes.
    pub fn go(&mut self) {
        self.send_option(OPT_GO, &Client::info_data("", &[INFO_BLOCK_SIZE]));
        let replies = self.option_replies();
        assert_eq!(replies.last().unwrap().1, REP_ACK, "{replies:?}");
        let export = replies
            .iter()
            .find(|r| r.1 == REP_INFO && r.2[..2] == INFO_EXPORT.to_be_bytes())
            .unwrap();
        self.size = u64::from_be_bytes(export.2[2..10].try_into().unwrap());
        self.flags = u16::from_be_bytes(export.2[10..12].try_into().unwrap());
    }

    /// Sends a request (and a write's data) without waiting; its cookie.
    pub fn send(&mut self, kind: u16, flags: u16, offset: u64, length: u32, data: &[u8]) -> u64 {
        let cookie = self.next_cookie;
        self.next_cookie += 1;
        let mut m = REQUEST_MAGIC.to_be_bytes().to_vec();
        m.extend_from_slice(&flags.to_be_bytes());
        m.extend_from_slice(&kind.to_be_bytes());
        m.extend_from_slice(&cookie.to_be_bytes());
        m.extend_from_slice(&offset.to_be_bytes());
        m.extend_from_slice(&length.to_be_bytes());
        m.extend_from_slice(data);
        self.s.write_all(&m).unwrap();
        cookie
    }

    /// A simple reply: (error, cookie).
    pub fn reply(&mut self) -> (u32, u64) {
        assert_eq!(self.u32(), SIMPLE_REPLY_MAGIC);
        (self.u32(), self.u64())
    }

    /// One request and its reply: the error, and a read's data.
    pub fn request(
        &mut self,
        kind: u16,
        flags: u16,
        offset: u64,
        length: u32,
        data: &[u8],
    ) -> (u32, Vec<u8>) {
        let cookie = self.send(kind, flags, offset, length, data);
        let (err, got) = self.reply();
        assert_eq!(got, cookie);
        let mut out = Vec::new();
        if kind == CMD_READ && err == 0 {
            out.resize(length as usize, 0);
            self.s.read_exact(&mut out).unwrap();
        }
        (err, out)
    }

    pub fn read(&mut self, offset: u64, length: u32) -> Vec<u8> {
        let (err, data) = self.request(CMD_READ, 0, offset, length, &[]);
        assert_eq!(err, 0, "read {offset}+{length}");
        data
    }

    pub fn write(&mut self, offset: u64, data: &[u8]) {
        let (err, _) = self.request(CMD_WRITE, 0, offset, data.len() as u32, data);
        assert_eq!(err, 0, "write {offset}+{}", data.len());
    }

    pub fn disconnect(mut self) {
        self.send(CMD_DISC, 0, 0, 0, &[]);
        let mut rest = Vec::new();
        // The server closes after serving what came before.
        self.s.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    }

    /// True if the server has closed the connection.
    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.s.read(&mut b), Ok(0) | Err(_))
    }
}

/// The log's rows as column name → value strings.
pub fn log_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("# iolab-emu-log 1 {"));
    let cols: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            cols.iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

pub fn num(row: &std::collections::HashMap<String, String>, col: &str) -> u64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col}={}", row[col]))
}
