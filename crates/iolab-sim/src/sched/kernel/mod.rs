//! The elevators of `kernel/`, the module's own C, run in the simulator
//! (`kernel:anticipatory`, `kernel:wpcas`).
//!
//! `build.rs` compiles the module's files unmodified against
//! `csrc/kshim/`, userspace stand-ins for the kernel functions an elevator
//! calls (the technique of Linux's `tools/testing/radix-tree/`), and the
//! module's `module_init` registers its elevators as it does in a kernel
//! (`elv_register`). This file is the whole of the Rust side: an
//! [`Instance`] is one elevator on one queue, driven through the calls of
//! `kshim_api.h` as blk-mq drives it (docs/kernel.md, "The module's C in
//! the simulator"), and [`KernelElevator`] puts it behind
//! [`Elevator`]. The simulator's block layer decides merges, as it does for
//! the Rust elevators, and asks the module's merge hooks.
//!
//! Tunables are the module's sysfs files, parsed by the module's own store
//! functions: a value the module refuses (`kstrtou64` failing: a fraction,
//! a negative number) is refused here too, with the errno the write would
//! get, and one it clamps is clamped; the values reported are what the
//! module shows after the writes.

mod dynlib;
mod ffi;
/// kernel/Makefile's modules and their sources' fingerprint (shared with
/// build.rs, which `include!`s the file).
pub mod makefile;

use super::{AnticipationStats, WAIT_BINS, Dispatch, Elevator, MergeKind, SchedContext, SchedulerInfo, Tunable, TunableValues};
use crate::error::{Error, Result};
use crate::request::{Dir, ProcessId, Request};
use crate::time::SimTime;
use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::ptr::NonNull;
use std::sync::OnceLock;

/// The elevators the modules registered, as (name, alias).
pub fn registered() -> Vec<(String, Option<String>)> {
    dynlib::registry().elevators.iter().map(|e| (e.name.clone(), e.alias.clone())).collect()
}

/// Why `kernel:NAME` may be missing: the modules of the kernel directory
/// that did not compile, as "MODULE: message" lines.
pub fn unavailable() -> Vec<String> {
    let reg = dynlib::registry();
    reg.errors.iter().map(|(m, why)| format!("{m} (in {}): {why}", reg.kernel_dir.display())).collect()
}

fn cstr(p: *const c_char) -> String {
    // SAFETY: callers pass non-null pointers to NUL-terminated strings the
    // C side owns for at least the duration of the call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn errno_name(e: i64) -> &'static str {
    match -e {
        1 => "EPERM",
        2 => "ENOENT",
        12 => "ENOMEM",
        13 => "EACCES",
        22 => "EINVAL",
        34 => "ERANGE",
        _ => "error",
    }
}

/// One elevator of a kernel module on one request queue.
///
/// The C side keeps all of the elevator's state; Rust holds only the
/// pointer. Every call passes it to the C side, which runs the hook on the
/// calling thread. Calls through `&self` are sound: no Rust reference ever
/// points into the C side's memory, so the C side mutating it (its clock,
/// the hook's own state) aliases nothing Rust holds.
pub struct Instance {
    k: NonNull<ffi::Instance>,
    /// The copy of the C it lives in (linked in, or compiled at run time).
    lib: &'static ffi::Lib,
}

// SAFETY: an instance is used by whoever owns it, one thread at a time (it
// is not Sync); the C side keeps per-instance state only, and sets its
// thread-local "current instance" on entry to every call.
unsafe impl Send for Instance {}

impl Instance {
    /// The elevator `name` on a queue whose device takes `queue_depth`
    /// requests at once, or None if no module registered that name (or its
    /// init_sched failed).
    pub fn new(name: &str, queue_depth: u32) -> Option<Instance> {
        let lib = dynlib::registry().find(name)?.lib;
        let c = CString::new(name).ok()?;
        // SAFETY: c is a valid NUL-terminated string for the call.
        let k = unsafe { (lib.create)(c.as_ptr(), queue_depth, 0) };
        NonNull::new(k).map(|k| Instance { k, lib })
    }

    fn p(&self) -> *mut ffi::Instance {
        self.k.as_ptr()
    }

    /// The elevator's sysfs files: (name, writable).
    pub fn attrs(&self) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for i in 0.. {
            // SAFETY: a live instance; NULL past the end.
            let name = unsafe { (self.lib.attr_name)(self.p(), i) };
            if name.is_null() {
                break;
            }
            // SAFETY: a live instance and an index that exists.
            let w = unsafe { (self.lib.attr_writable)(self.p(), i) } != 0;
            out.push((cstr(name), w));
        }
        out
    }

    /// Write `value` to the sysfs file `attr` (its store function parses
    /// it). Err: the errno the write would get.
    pub fn store(&mut self, attr: &str, value: &str) -> std::result::Result<(), i64> {
        let (Ok(a), Ok(v)) = (CString::new(attr), CString::new(value)) else { return Err(-22) };
        // SAFETY: a live instance and two NUL-terminated strings.
        let n = unsafe { (self.lib.store)(self.p(), a.as_ptr(), v.as_ptr()) };
        if n < 0 {
            Err(n)
        } else {
            Ok(())
        }
    }

    /// What reading the sysfs file `attr` gives, or the errno.
    pub fn show(&self, attr: &str) -> std::result::Result<String, i64> {
        let a = CString::new(attr).map_err(|_| -22i64)?;
        let mut buf = vec![0 as c_char; 4096];
        // SAFETY: a live instance, a NUL-terminated name, and a buffer of
        // buf.len() bytes that the C side NUL-terminates.
        let n = unsafe { (self.lib.show)(self.p(), a.as_ptr(), buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            return Err(n);
        }
        Ok(cstr(buf.as_ptr()))
    }

    pub fn insert(&mut self, rq: &Request, now: SimTime) {
        let k = to_krq(rq);
        // SAFETY: a live instance and a request record for the call.
        unsafe { (self.lib.insert)(self.p(), &k, now.ns()) }
    }

    /// blk-mq's dispatch: has_work, then dispatch_request.
    pub fn dispatch(&mut self, now: SimTime) -> Option<Request> {
        let mut out = ffi::KRq::default();
        // SAFETY: a live instance and an output record.
        (unsafe { (self.lib.dispatch)(self.p(), now.ns(), &mut out) } != 0).then(|| from_krq(&out))
    }

    /// The module has a bio_merge hook (else blk-mq merges nothing into its
    /// requests: blk_mq_sched_bio_merge).
    pub fn takes_merges(&self) -> bool {
        // SAFETY: a live instance.
        unsafe { (self.lib.merges)(self.p()) != 0 }
    }

    pub fn has_work(&self) -> bool {
        // SAFETY: a live instance.
        unsafe { (self.lib.has_work)(self.p()) != 0 }
    }

    pub fn completed(&mut self, id: u32, now: SimTime) {
        // SAFETY: a live instance.
        unsafe { (self.lib.completed)(self.p(), id, now.ns()) }
    }

    /// The driver gives a dispatched request back (`blk_mq_requeue_request`);
    /// with `dontprep` (RQF_DONTPREP, as SCSI and NVMe retries have it) it
    /// goes to the hardware queue's dispatch list, else back through the
    /// elevator at the head.
    pub fn requeue(&mut self, id: u32, dontprep: bool, now: SimTime) {
        // SAFETY: a live instance.
        unsafe { (self.lib.requeue)(self.p(), id, dontprep as i32, now.ns()) }
    }

    pub fn exit_process(&mut self, pid: ProcessId, now: SimTime) {
        // SAFETY: a live instance.
        unsafe { (self.lib.exit_process)(self.p(), pid, now.ns()) }
    }

    /// The earliest armed timer: an hrtimer of the elevator, or blk-mq's
    /// delayed queue run.
    pub fn next_timer(&self) -> Option<SimTime> {
        // SAFETY: a live instance.
        let t = unsafe { (self.lib.next_timer)(self.p()) };
        (t != u64::MAX).then_some(SimTime(t))
    }

    pub fn fire(&mut self, now: SimTime) {
        // SAFETY: a live instance.
        unsafe { (self.lib.fire)(self.p(), now.ns()) }
    }

    pub fn queued(&self) -> usize {
        // SAFETY: a live instance.
        unsafe { (self.lib.queued)(self.p()) as usize }
    }

    /// `nr_requests` (blk_mq_update_nr_requests: the module's
    /// depth_updated runs), for the tests of its limit_depth.
    pub fn set_nr_requests(&mut self, nr: u32) {
        // SAFETY: a live instance.
        unsafe { (self.lib.set_nr_requests)(self.p(), nr) }
    }

    /// How many scheduler tags requests of this kind could hold at once
    /// after the module's limit_depth (all of them without one).
    pub fn tags_for(&self, write: bool, sync: bool) -> u32 {
        // SAFETY: a live instance.
        unsafe { (self.lib.tags_for)(self.p(), write as i32, sync as i32) }
    }

    /// blk-mq's insert merge (elv_attempt_insert_merge), for the tests of
    /// a module's insert path; the simulator's block layer merges bios
    /// before a request is made, as 2.6.20 did.
    pub fn set_insert_merges(&mut self, on: bool) {
        // SAFETY: a live instance.
        unsafe { (self.lib.set_insert_merges)(self.p(), on as i32) }
    }

    /// Requests merged away on insert so far.
    pub fn insert_merged(&self) -> u64 {
        // SAFETY: a live instance.
        unsafe { (self.lib.insert_merged)(self.p()) }
    }

    /// The module's WARN_ON_ONCE hits so far, and where the first was.
    pub fn warnings(&self) -> (u64, String) {
        let mut buf = vec![0 as c_char; 160];
        // SAFETY: a live instance and a buffer of buf.len() bytes.
        let n = unsafe { (self.lib.warnings)(self.p(), buf.as_mut_ptr(), buf.len()) };
        (n, cstr(buf.as_ptr()))
    }

    /// Keep the module's blktrace messages (`blk_add_trace_msg`) from now
    /// on, up to `max_lines` lines (0: none, as with no trace running).
    pub fn keep_messages(&mut self, max_lines: u32) {
        // SAFETY: a live instance.
        unsafe { (self.lib.set_log)(self.p(), max_lines) }
    }

    /// The messages kept so far, oldest first, with the simulated time of
    /// the hook that wrote each (then forgotten), and the count of those
    /// dropped past the limit.
    pub fn take_messages(&mut self) -> (Vec<(SimTime, String)>, u64) {
        // SAFETY: a live instance.
        let n = unsafe { (self.lib.log_count)(self.p()) };
        let mut buf = vec![0 as c_char; 160];
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
            // SAFETY: a live instance, an index below the count, and a
            // buffer of buf.len() bytes that the C side NUL-terminates.
            let t = unsafe { (self.lib.log_line)(self.p(), i, buf.as_mut_ptr(), buf.len()) };
            out.push((SimTime(t), cstr(buf.as_ptr())));
        }
        // SAFETY: a live instance.
        let dropped = unsafe {
            (self.lib.log_clear)(self.p());
            (self.lib.log_dropped)(self.p())
        };
        (out, dropped)
    }

    fn front_merge(&self, bio: &Request) -> Option<Request> {
        let (b, mut out) = (to_krq(bio), ffi::KRq::default());
        // SAFETY: a live instance, an input and an output record.
        (unsafe { (self.lib.front_merge)(self.p(), &b, &mut out) } != 0).then(|| from_krq(&out))
    }

    fn allow_merge(&self, id: u32, bio: &Request) -> bool {
        let b = to_krq(bio);
        // SAFETY: a live instance and an input record.
        unsafe { (self.lib.allow_merge)(self.p(), id, &b) != 0 }
    }

    fn neighbour(&self, id: u32, latter: bool) -> Option<Request> {
        let mut out = ffi::KRq::default();
        // SAFETY: a live instance and an output record.
        let got = unsafe {
            if latter {
                (self.lib.latter)(self.p(), id, &mut out)
            } else {
                (self.lib.former)(self.p(), id, &mut out)
            }
        };
        (got != 0).then(|| from_krq(&out))
    }

    fn merged(&mut self, grown: &Request, front: bool) {
        let g = to_krq(grown);
        // SAFETY: a live instance and an input record.
        unsafe { (self.lib.merged)(self.p(), &g, front as i32) }
    }

    fn merged_requests(&mut self, merged: &Request, next: u32, now: SimTime) {
        let m = to_krq(merged);
        // SAFETY: a live instance and an input record.
        unsafe { (self.lib.merged_requests)(self.p(), &m, next, now.ns()) }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: the instance is live and not used after this.
        unsafe { (self.lib.destroy)(self.p()) }
    }
}

fn to_krq(rq: &Request) -> ffi::KRq {
    ffi::KRq {
        sector: rq.sector,
        arrival: rq.arrival.ns(),
        id: rq.id,
        pid: rq.pid,
        nr_sectors: rq.nr_sectors,
        write: (rq.dir == Dir::Write) as u8,
        sync: rq.sync as u8,
        pad: [0; 2],
    }
}

fn from_krq(k: &ffi::KRq) -> Request {
    Request {
        id: k.id,
        pid: k.pid,
        sector: k.sector,
        nr_sectors: k.nr_sectors,
        dir: if k.write != 0 { Dir::Write } else { Dir::Read },
        sync: k.sync != 0,
        arrival: SimTime(k.arrival),
    }
}

/// A tunable's value as text for its sysfs file: whole numbers without a
/// point, others as Rust prints them (which the module may refuse).
fn sysfs_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e18 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// `seek_cyl_sectors` (kernel:wpcas): the module's own default is the HP
/// 97560's curve (wpcas.h) and 0 is clamped to 1 by its store; the
/// simulator takes 0, its default, for "the experiment's drive's curve"
/// (`cost::PositionCost::module_seek`), which it then writes into all six
/// seek_* files, as `iolab kernel compare` does in the guest.
const SEEK_FROM_DISK: &str = "seek_cyl_sectors";

/// The Table 1 counters, read from the AS family's sysfs files.
const ANTIC_FILES: [&str; 5] =
    ["antic_started", "antic_succeeded", "antic_failed", "antic_success_wait_ns", "antic_failure_wait_ns"];

/// A kernel module's elevator behind the simulator's [`Elevator`] trait.
pub struct KernelElevator {
    inst: Instance,
    name: &'static str,
    /// The elevator has the AS family's counter files.
    antic: bool,
}

impl KernelElevator {
    /// The elevator `module_name` with every tunable of `values` written to
    /// its sysfs file. Panics if the module refuses one: values are checked
    /// first by [`accept`].
    pub fn new(name: &'static str, module_name: &str, values: &TunableValues, ctx: &SchedContext) -> KernelElevator {
        let mut inst = Instance::new(module_name, ctx.queue_depth)
            .unwrap_or_else(|| panic!("no kernel/ module registers the elevator '{module_name}'"));
        for (k, &v) in &values.0 {
            if k == SEEK_FROM_DISK && v == 0.0 {
                continue;
            }
            if let Err(e) = inst.store(k, &sysfs_text(v)) {
                panic!("{name}: the module refused {k} = {v} ({}) after accepting it", errno_name(e));
            }
        }
        // seek_cyl_sectors 0: the drive's curve, as `iolab kernel compare`
        // writes it into the guest's sysfs files (a drive without a
        // two-piece curve leaves the module's defaults).
        if values.0.get(SEEK_FROM_DISK) == Some(&0.0) {
            for (k, v) in ctx.position_cost.module_seek().map(|c| c.tunables()).into_iter().flatten() {
                if let Err(e) = inst.store(k, &sysfs_text(v)) {
                    panic!("{name}: the module refused the disk's {k} = {v} ({})", errno_name(e));
                }
            }
        }
        let attrs = inst.attrs();
        let antic = ANTIC_FILES.iter().all(|f| attrs.iter().any(|(a, _)| a == f));
        KernelElevator { inst, name, antic }
    }

    pub fn instance(&self) -> &Instance {
        &self.inst
    }

    /// The module's `antic_success_wait_bins` (zeros for a module built
    /// before the file, or a line that is not [`WAIT_BINS`] counts).
    fn success_wait_bins(&self) -> [u64; WAIT_BINS] {
        let mut bins = [0; WAIT_BINS];
        let text = self.inst.show("antic_success_wait_bins").unwrap_or_default();
        let counts: Vec<u64> = text.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if counts.len() == WAIT_BINS {
            bins.copy_from_slice(&counts);
        }
        bins
    }

    pub fn instance_mut(&mut self) -> &mut Instance {
        &mut self.inst
    }
}

impl Elevator for KernelElevator {
    fn name(&self) -> &'static str {
        self.name
    }

    fn insert(&mut self, rq: Request, now: SimTime) {
        self.inst.insert(&rq, now);
    }

    fn dispatch(&mut self, now: SimTime) -> Dispatch {
        match self.inst.dispatch(now) {
            Some(rq) => Dispatch::Request(rq),
            None => Dispatch::Nothing,
        }
    }

    fn completed(&mut self, rq: &Request, now: SimTime) {
        self.inst.completed(rq.id, now);
    }

    fn timer(&mut self, now: SimTime) {
        self.inst.fire(now);
    }

    /// The module's armed hrtimers and blk-mq's delayed queue run.
    fn armed_timer(&self) -> Option<SimTime> {
        self.inst.next_timer()
    }

    fn exit_process(&mut self, pid: ProcessId, now: SimTime) {
        self.inst.exit_process(pid, now);
    }

    fn queued(&self) -> usize {
        self.inst.queued()
    }

    fn anticipation(&self) -> Option<AnticipationStats> {
        if !self.antic {
            return None;
        }
        let get = |f: &str| self.inst.show(f).ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(0);
        Some(AnticipationStats {
            started: get(ANTIC_FILES[0]),
            succeeded: get(ANTIC_FILES[1]),
            failed: get(ANTIC_FILES[2]),
            success_wait_ns: get(ANTIC_FILES[3]),
            failure_wait_ns: get(ANTIC_FILES[4]),
            success_wait_bins: self.success_wait_bins(),
        })
    }

    /// Only an elevator with a bio_merge hook is merged into, as in blk-mq.
    fn merges(&self) -> bool {
        self.inst.takes_merges()
    }

    fn keep_messages(&mut self, max_lines: u32) {
        self.inst.keep_messages(max_lines);
    }

    fn take_messages(&mut self) -> (Vec<(SimTime, String)>, u64) {
        self.inst.take_messages()
    }

    /// The module's `request_merge`.
    fn front_merge_candidate(&self, bio: &Request) -> Option<Request> {
        self.inst.front_merge(bio)
    }

    /// The module's `allow_merge`.
    fn allow_merge(&self, rq: &Request, bio: &Request) -> bool {
        self.inst.allow_merge(rq.id, bio)
    }

    /// The module's `former_request`.
    fn former_request(&self, rq: &Request) -> Option<Request> {
        self.inst.neighbour(rq.id, false)
    }

    /// The module's `next_request`.
    fn latter_request(&self, rq: &Request) -> Option<Request> {
        self.inst.neighbour(rq.id, true)
    }

    /// `elv_merged_request` -> the module's `request_merged`.
    fn merged(&mut self, _old: &Request, new: &Request, kind: MergeKind) {
        self.inst.merged(new, kind == MergeKind::Front);
    }

    /// `elv_merge_requests` -> the module's `requests_merged`; then
    /// `next` is freed (`finish_request`).
    fn merged_requests(&mut self, _rq: &Request, merged: &Request, next: &Request, now: SimTime) {
        self.inst.merged_requests(merged, next.id, now);
    }
}

/// Check given tunables with the module's own store functions, on an
/// instance made for the purpose, and report what the module then shows
/// for every declared tunable (clamped values as clamped).
pub fn accept(info: &SchedulerInfo, module_name: &str, given: &BTreeMap<String, f64>, field: &str) -> Result<TunableValues> {
    let mut inst = Instance::new(module_name, 1)
        .ok_or_else(|| Error::invalid(field, format!("no kernel/ module registers the elevator '{module_name}'")))?;
    for (name, &v) in given {
        if !info.tunables.iter().any(|t| t.name == name) {
            let names: Vec<&str> = info.tunables.iter().map(|t| t.name).collect();
            return Err(Error::invalid(
                format!("{field}.{name}"),
                format!("'{}' has no tunable '{name}'; its tunables are: {}", info.name, names.join(", ")),
            ));
        }
        if name == SEEK_FROM_DISK && v == 0.0 && info.tunables.iter().any(|t| t.name == SEEK_FROM_DISK) {
            continue;
        }
        let text = sysfs_text(v);
        if let Err(e) = inst.store(name, &text) {
            return Err(Error::invalid(
                format!("{field}.{name}"),
                format!("the module refuses '{text}' ({}: writing it to the sysfs file fails)", errno_name(e)),
            ));
        }
    }
    let mut values = BTreeMap::new();
    for t in info.tunables {
        let shown = inst.show(t.name).map_err(|e| {
            Error::invalid(format!("{field}.{}", t.name), format!("the module has no such file ({})", errno_name(e)))
        })?;
        let v = shown.trim().parse::<f64>().map_err(|_| {
            Error::invalid(format!("{field}.{}", t.name), format!("the module shows '{}', not a number", shown.trim()))
        })?;
        values.insert(t.name.to_string(), v);
    }
    // The simulator's default for the module's seek model: the disk's.
    if values.contains_key(SEEK_FROM_DISK) && given.get(SEEK_FROM_DISK).is_none_or(|&v| v == 0.0) {
        values.insert(SEEK_FROM_DISK.to_string(), 0.0);
    }
    Ok(TunableValues(values))
}

// ---- the registered kernel elevators ----

/// The core's files (as-sysfs.c): times in ms, clamped to these ranges.
const AS_TUNABLES: [Tunable; 6] = [
    Tunable::ms("read_expire", 125.0, "a sync request is served once it is this old"),
    Tunable::ms("write_expire", 250.0, "an async request is served once it is this old"),
    Tunable::ms("read_batch_expire", 500.0, "sync batch length when writes wait"),
    Tunable::ms("write_batch_expire", 125.0, "target length of an async batch"),
    Tunable::ms("antic_expire", 6.0, "longest wait for the last reader; 0: off").with_max(600.0),
    t("merge_by_class", "bool", 0.0, 1.0, 0.0,
      "1: a bio meets only requests of its own sync class (front-merge lookup, allow_merge); 0: as 2.6.20's AS"),
];

const fn t(name: &'static str, unit: &'static str, min: f64, max: f64, default: f64, help: &'static str) -> Tunable {
    Tunable { name, unit, min, max, default, help }
}

/// WPCAS's own files (wpcas.h, as-sysfs.c).
const WPCAS_OWN: [Tunable; 12] = [
    t("hist_len", "samples", 1.0, 256.0, 32.0, "think times kept per process"),
    t("window_ms", "ms", 1.0, 20.0, 2.0, "width of the densest-window search (whole ms)"),
    t("gamma", "", 0.0, 1.0, 0.5, "p_ab at or above which P = b, else P = T_as (three decimals)"),
    t("min_samples", "anticipations", 0.0, 1e6, 4.0, "below this, a process is judged by AS's rule"),
    t("max_wait_ms", "ms", 0.0, 1000.0, 20.0, "cap on the wait"),
    t("prior_ps", "", 0.0, 1.0, 0.0, "p_s of a process with no finished anticipation (three decimals)"),
    t("seek_cyl_sectors", "sectors", 0.0, 4294967296.0, 0.0,
      "sectors per cylinder of STE's seek model; 0: every seek_* from the disk model (the module's own default is 1368)"),
    t("seek_linear_cyl", "cylinders", 0.0, 2147483648.0, 384.0, "from this many cylinders on, the seek curve is linear"),
    t("seek_sqrt_a_ns", "ns", 0.0, 1e10, 3240000.0, "seek(d) = a + b*sqrt(d) below seek_linear_cyl: a"),
    t("seek_sqrt_b_ns", "ns", 0.0, 1e9, 400000.0, "seek(d) = a + b*sqrt(d) below seek_linear_cyl: b"),
    t("seek_lin_a_ns", "ns", 0.0, 1e10, 8000000.0, "seek(d) = a + b*d from seek_linear_cyl on: a"),
    t("seek_lin_b_ps", "ps", 0.0, 1e9, 8000000.0, "seek(d) = a + b*d from seek_linear_cyl on: b, ps per cylinder"),
];

const fn concat<const N: usize, const M: usize, const K: usize>(a: [Tunable; N], b: [Tunable; M]) -> [Tunable; K] {
    let mut out = [a[0]; K];
    let mut i = 0;
    while i < N {
        out[i] = a[i];
        i += 1;
    }
    while i < K {
        out[i] = b[i - N];
        i += 1;
    }
    out
}

static WPCAS_TUNABLES: [Tunable; 18] = concat(AS_TUNABLES, WPCAS_OWN);

pub const AS_INFO: SchedulerInfo = SchedulerInfo {
    name: "kernel:anticipatory",
    aliases: &["kernel:as"],
    summary: "kernel/'s anticipatory elevator, the module's own C run in the simulator",
    tunables: &AS_TUNABLES,
    build: build_as,
    accept: Some(accept_as),
};

fn build_as(v: &TunableValues, ctx: &SchedContext) -> Box<dyn Elevator> {
    Box::new(KernelElevator::new(AS_INFO.name, "anticipatory", v, ctx))
}

fn accept_as(given: &BTreeMap<String, f64>, field: &str) -> Result<TunableValues> {
    accept(&AS_INFO, "anticipatory", given, field)
}

pub const WPCAS_INFO: SchedulerInfo = SchedulerInfo {
    name: "kernel:wpcas",
    aliases: &[],
    summary: "kernel/'s wpcas elevator, the module's own C run in the simulator",
    tunables: &WPCAS_TUNABLES,
    build: build_wpcas,
    accept: Some(accept_wpcas),
};

fn build_wpcas(v: &TunableValues, ctx: &SchedContext) -> Box<dyn Elevator> {
    Box::new(KernelElevator::new(WPCAS_INFO.name, "wpcas", v, ctx))
}

fn accept_wpcas(given: &BTreeMap<String, f64>, field: &str) -> Result<TunableValues> {
    accept(&WPCAS_INFO, "wpcas", given, field)
}

// ---- every other elevator of kernel/'s modules: a researcher's own ----

/// The most elevators beyond anticipatory and wpcas the simulator offers
/// from kernel/ (each needs a build function of its own: see below).
const MAX_OTHERS: usize = 64;

struct Other {
    info: SchedulerInfo,
    module_name: String,
}

/// Each registered elevator other than the two above, as `kernel:NAME`,
/// with its writable sysfs files (and what a new instance shows in them)
/// as its tunables, parsed by the module's own store functions.
fn others() -> &'static [Other] {
    static OTHERS: OnceLock<Vec<Other>> = OnceLock::new();
    OTHERS.get_or_init(|| {
        let reg = dynlib::registry();
        let mut out = Vec::new();
        for e in reg.elevators.iter().filter(|e| e.name != "anticipatory" && e.name != "wpcas").take(MAX_OTHERS) {
            let Some(inst) = Instance::new(&e.name, 1) else { continue };
            let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
            let tunables: Vec<Tunable> = inst
                .attrs()
                .into_iter()
                .filter(|(_, writable)| *writable)
                .filter_map(|(name, _)| {
                    let default = inst.show(&name).ok()?.trim().parse::<f64>().ok()?;
                    Some(Tunable {
                        name: leak(name),
                        unit: "",
                        min: 0.0,
                        max: u64::MAX as f64,
                        default,
                        help: "the module's sysfs file: its store function parses and clamps the value",
                    })
                })
                .collect();
            let i = out.len();
            let when = if e.at_run_time { ", compiled at first use (new or changed since the build)" } else { "" };
            out.push(Other {
                info: SchedulerInfo {
                    name: leak(format!("kernel:{}", e.name)),
                    aliases: Box::leak(e.alias.iter().map(|a| leak(format!("kernel:{a}"))).collect::<Vec<_>>().into_boxed_slice()),
                    summary: leak(format!("kernel/'s {} elevator ({}), the module's own C run in the simulator{when}", e.name, e.module)),
                    tunables: Box::leak(tunables.into_boxed_slice()),
                    build: BUILDS[i],
                    accept: Some(ACCEPTS[i]),
                },
                module_name: e.name.clone(),
            });
        }
        out
    })
}

/// The schedulers of [`others`], for the scheduler table's lookups.
pub fn other_infos() -> impl Iterator<Item = &'static SchedulerInfo> {
    others().iter().map(|o| &o.info)
}

fn build_other<const I: usize>(v: &TunableValues, ctx: &SchedContext) -> Box<dyn Elevator> {
    let o = &others()[I];
    Box::new(KernelElevator::new(o.info.name, &o.module_name, v, ctx))
}

fn accept_other<const I: usize>(given: &BTreeMap<String, f64>, field: &str) -> Result<TunableValues> {
    let o = &others()[I];
    accept(&o.info, &o.module_name, given, field)
}

/// `SchedulerInfo` takes plain function pointers: one per slot, each
/// finding its elevator by its index.
macro_rules! slots {
    ($($i:literal)*) => {
        const BUILDS: [fn(&TunableValues, &SchedContext) -> Box<dyn Elevator>; MAX_OTHERS] = [$(build_other::<$i>),*];
        const ACCEPTS: [super::AcceptFn; MAX_OTHERS] = [$(accept_other::<$i>),*];
    };
}
slots!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
       32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);

#[cfg(test)]
mod tests;
