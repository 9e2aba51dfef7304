//! The C side of the kernel elevators: the functions of
//! `csrc/kshim/include/kshim_api.h`, declared as C declares them. Nothing
//! here is called but through [`super::Instance`], which keeps the one
//! rule the C side asks: an instance is used from one thread at a time.

use std::os::raw::{c_char, c_int, c_long, c_uint};

/// `struct kshim_instance`: opaque.
#[repr(C)]
pub struct Instance {
    _private: [u8; 0],
}

/// `struct kshim_rq`: a request as the simulator knows it.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct KRq {
    pub sector: u64,
    pub arrival: u64,
    pub id: u32,
    pub pid: u32,
    pub nr_sectors: u32,
    pub write: u8,
    pub sync: u8,
    pub pad: [u8; 2],
}

extern "C" {
    pub fn kshim_init_modules() -> c_int;
    pub fn kshim_elevator_name(i: c_uint) -> *const c_char;
    pub fn kshim_elevator_alias(i: c_uint) -> *const c_char;
    pub fn kshim_create(name: *const c_char, queue_depth: u32, now: u64) -> *mut Instance;
    pub fn kshim_destroy(k: *mut Instance);
    pub fn kshim_attr_name(k: *mut Instance, i: c_uint) -> *const c_char;
    pub fn kshim_attr_writable(k: *mut Instance, i: c_uint) -> c_int;
    pub fn kshim_store(k: *mut Instance, attr: *const c_char, val: *const c_char) -> c_long;
    pub fn kshim_show(k: *mut Instance, attr: *const c_char, buf: *mut c_char, len: usize) -> c_long;
    pub fn kshim_insert(k: *mut Instance, rq: *const KRq, now: u64);
    pub fn kshim_dispatch(k: *mut Instance, now: u64, out: *mut KRq) -> c_int;
    pub fn kshim_next_timer(k: *mut Instance) -> u64;
    pub fn kshim_fire(k: *mut Instance, now: u64);
    pub fn kshim_completed(k: *mut Instance, id: u32, now: u64);
    pub fn kshim_requeue(k: *mut Instance, id: u32, dontprep: c_int, now: u64);
    pub fn kshim_exit_process(k: *mut Instance, pid: u32, now: u64);
    pub fn kshim_queued(k: *mut Instance) -> u64;
    pub fn kshim_has_work(k: *mut Instance) -> c_int;
    pub fn kshim_front_merge(k: *mut Instance, bio: *const KRq, out: *mut KRq) -> c_int;
    pub fn kshim_allow_merge(k: *mut Instance, id: u32, bio: *const KRq) -> c_int;
    pub fn kshim_former(k: *mut Instance, id: u32, out: *mut KRq) -> c_int;
    pub fn kshim_latter(k: *mut Instance, id: u32, out: *mut KRq) -> c_int;
    pub fn kshim_merged(k: *mut Instance, grown: *const KRq, front: c_int);
    pub fn kshim_merged_requests(k: *mut Instance, merged: *const KRq, next_id: u32, now: u64);
    pub fn kshim_set_nr_requests(k: *mut Instance, nr: u32);
    pub fn kshim_tags_for(k: *mut Instance, write: c_int, sync: c_int) -> u32;
    pub fn kshim_set_insert_merges(k: *mut Instance, on: c_int);
    pub fn kshim_insert_merged(k: *mut Instance) -> u64;
    pub fn kshim_warnings(k: *mut Instance, first: *mut c_char, len: usize) -> u64;
}
