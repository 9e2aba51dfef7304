//! Data integrity: what a client writes reads back through NBD, and is in
//! the image file, at the same offsets.

use super::client::*;
use iolab_emu::nbd::proto::*;
use rand::{Rng as _, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::os::unix::fs::FileExt;

/// A seeded generator with a fixed algorithm: the same cases every run.
struct Rng(ChaCha8Rng);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(ChaCha8Rng::seed_from_u64(seed))
    }
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0.gen_range(0..n)
    }
}

#[test]
fn writes_read_back_through_nbd_and_from_the_image() {
    // Zero latency keeps it fast; the data path is the same.
    let srv = Server::start(preset("hp97560"), |cfg| cfg.zero_latency = true);
    let mut c = srv.client();
    // Shadow of the first 4 MiB and of the last 64 KiB of the disk.
    const SPAN: u64 = 4 << 20;
    let tail = c.size - (64 << 10);
    let mut shadow = vec![0u8; SPAN as usize];
    let mut shadow_tail = vec![0u8; 64 << 10];
    let mut rng = Rng::new(0x1234_5678_9abc_def1);
    for i in 0..300 {
        // Aligned and unaligned, 1 byte to 256 KiB.
        let len = match i % 3 {
            0 => 4096 * (1 + rng.below(64)),
            1 => 1 + rng.below(9000),
            _ => 512 * (1 + rng.below(16)),
        };
        let off = rng.below(SPAN - len);
        match rng.below(10) {
            0 => {
                let flags = if rng.below(2) == 0 {
                    CMD_FLAG_NO_HOLE
                } else {
                    CMD_FLAG_FUA
                };
                assert_eq!(
                    c.request(CMD_WRITE_ZEROES, flags, off, len as u32, &[]).0,
                    0
                );
                shadow[off as usize..(off + len) as usize].fill(0);
            }
            1..=3 => {
                let got = c.read(off, len as u32);
                assert!(
                    got == shadow[off as usize..(off + len) as usize],
                    "read {off}+{len} differs"
                );
            }
            _ => {
                let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                let flags = if rng.below(4) == 0 { CMD_FLAG_FUA } else { 0 };
                assert_eq!(c.request(CMD_WRITE, flags, off, len as u32, &data).0, 0);
                shadow[off as usize..(off + len) as usize].copy_from_slice(&data);
            }
        }
        if i % 50 == 0 {
            assert_eq!(c.request(CMD_FLUSH, 0, 0, 0, &[]).0, 0);
            let data: Vec<u8> = (0..4096).map(|_| rng.next() as u8).collect();
            let at = rng.below(60 << 10);
            c.write(tail + at, &data);
            shadow_tail[at as usize..at as usize + 4096].copy_from_slice(&data);
        }
    }
    // The whole span through NBD, in 1 MiB reads.
    for mb in 0..4u64 {
        let got = c.read(mb << 20, 1 << 20);
        assert!(
            got == shadow[(mb << 20) as usize..((mb + 1) << 20) as usize],
            "MiB {mb} differs"
        );
    }
    assert!(c.read(tail, 64 << 10) == shadow_tail);
    // A trim is a hint: the data stays (the document allows either).
    assert_eq!(c.request(CMD_TRIM, 0, 0, 4096, &[]).0, 0);
    c.disconnect();
    srv.emu.shutdown().unwrap();
    // And the image file holds the same bytes.
    let f = std::fs::File::open(srv.image()).unwrap();
    assert_eq!(f.metadata().unwrap().len(), 1962 * 19 * 72 * 512);
    let mut img = vec![0u8; SPAN as usize];
    f.read_exact_at(&mut img, 0).unwrap();
    assert!(img == shadow, "image differs from what was written");
    let mut img_tail = vec![0u8; 64 << 10];
    f.read_exact_at(&mut img_tail, tail).unwrap();
    assert!(img_tail == shadow_tail);
}

#[test]
fn an_existing_image_is_served_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    // A smaller image is extended, its data kept where it was.
    let data: Vec<u8> = (0..1 << 20).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&img, &data).unwrap();
    let srv = Server::start(preset("hp97560"), |cfg| {
        cfg.image = img.clone();
        cfg.zero_latency = true;
    });
    assert_eq!(
        srv.emu.image_opened(),
        iolab_emu::Opened::Extended {
            from_bytes: 1 << 20
        }
    );
    let mut c = srv.client();
    assert!(c.read(0, 1 << 20) == data);
    assert_eq!(c.read(1 << 20, 4096), vec![0; 4096]);
    c.disconnect();
}
