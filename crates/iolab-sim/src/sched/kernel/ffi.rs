//! The C side of the kernel elevators: the functions of
//! `csrc/kshim/include/kshim_api.h`, declared as C declares them, and
//! gathered into a table ([`Lib`]) so that the copy linked in at build time
//! and a copy compiled at run time (`dynlib.rs`: a module new or changed
//! since the build) are called alike. Nothing here is called but through
//! [`super::Instance`], which keeps the one rule the C side asks: an
//! instance is used from one thread at a time.

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

/// Declares the API once: the `extern` block of the copy linked in, the
/// table's fields, the table of the linked-in copy, and the names a copy
/// compiled at run time is looked up by (`dlsym`).
macro_rules! kshim_api {
    ($( $field:ident = $sym:ident ( $($arg:ident : $ty:ty),* ) $(-> $ret:ty)? ;)*) => {
        extern "C" {
            $( pub fn $sym($($arg: $ty),*) $(-> $ret)?; )*
        }

        /// One copy of the stand-ins with the modules compiled against it.
        pub struct Lib {
            $( pub $field: unsafe extern "C" fn($($ty),*) $(-> $ret)?, )*
        }

        /// The copy linked in at build time.
        pub static BUILTIN: Lib = Lib { $( $field: $sym, )* };

        /// Each field's C name, in the order of [`Lib`]'s fields.
        pub const SYMBOLS: &[&str] = &[ $( stringify!($sym), )* ];

        impl Lib {
            /// A table from `find(C name)`, which gives each function's
            /// address (None: the copy lacks it).
            ///
            /// # Safety
            /// Every address `find` gives must be that C function, of the
            /// signature kshim_api.h declares.
            pub unsafe fn from_symbols(
                mut find: impl FnMut(&str) -> Option<*mut std::ffi::c_void>,
            ) -> Result<Lib, String> {
                Ok(Lib {
                    $( $field: {
                        let p = find(stringify!($sym)).ok_or_else(|| format!("no symbol {}", stringify!($sym)))?;
                        // SAFETY: the caller vouches that p is this
                        // function, of this signature.
                        unsafe { std::mem::transmute::<*mut std::ffi::c_void, unsafe extern "C" fn($($ty),*) $(-> $ret)?>(p) }
                    }, )*
                })
            }
        }
    };
}

kshim_api! {
    init_modules = kshim_init_modules() -> c_int;
    elevator_name = kshim_elevator_name(i: c_uint) -> *const c_char;
    elevator_alias = kshim_elevator_alias(i: c_uint) -> *const c_char;
    elevator_module = kshim_elevator_module(i: c_uint) -> *const c_char;
    create = kshim_create(name: *const c_char, queue_depth: u32, now: u64) -> *mut Instance;
    destroy = kshim_destroy(k: *mut Instance);
    attr_name = kshim_attr_name(k: *mut Instance, i: c_uint) -> *const c_char;
    attr_writable = kshim_attr_writable(k: *mut Instance, i: c_uint) -> c_int;
    store = kshim_store(k: *mut Instance, attr: *const c_char, val: *const c_char) -> c_long;
    show = kshim_show(k: *mut Instance, attr: *const c_char, buf: *mut c_char, len: usize) -> c_long;
    insert = kshim_insert(k: *mut Instance, rq: *const KRq, now: u64);
    dispatch = kshim_dispatch(k: *mut Instance, now: u64, out: *mut KRq) -> c_int;
    next_timer = kshim_next_timer(k: *mut Instance) -> u64;
    fire = kshim_fire(k: *mut Instance, now: u64);
    completed = kshim_completed(k: *mut Instance, id: u32, now: u64);
    requeue = kshim_requeue(k: *mut Instance, id: u32, dontprep: c_int, now: u64);
    exit_process = kshim_exit_process(k: *mut Instance, pid: u32, now: u64);
    queued = kshim_queued(k: *mut Instance) -> u64;
    merges = kshim_merges(k: *mut Instance) -> c_int;
    has_work = kshim_has_work(k: *mut Instance) -> c_int;
    front_merge = kshim_front_merge(k: *mut Instance, bio: *const KRq, out: *mut KRq) -> c_int;
    allow_merge = kshim_allow_merge(k: *mut Instance, id: u32, bio: *const KRq) -> c_int;
    former = kshim_former(k: *mut Instance, id: u32, out: *mut KRq) -> c_int;
    latter = kshim_latter(k: *mut Instance, id: u32, out: *mut KRq) -> c_int;
    merged = kshim_merged(k: *mut Instance, grown: *const KRq, front: c_int);
    merged_requests = kshim_merged_requests(k: *mut Instance, merged: *const KRq, next_id: u32, now: u64);
    set_nr_requests = kshim_set_nr_requests(k: *mut Instance, nr: u32);
    tags_for = kshim_tags_for(k: *mut Instance, write: c_int, sync: c_int) -> u32;
    set_insert_merges = kshim_set_insert_merges(k: *mut Instance, on: c_int);
    insert_merged = kshim_insert_merged(k: *mut Instance) -> u64;
    warnings = kshim_warnings(k: *mut Instance, first: *mut c_char, len: usize) -> u64;
    set_log = kshim_set_log(k: *mut Instance, max_lines: u32);
    log_count = kshim_log_count(k: *mut Instance) -> u32;
    log_dropped = kshim_log_dropped(k: *mut Instance) -> u64;
    log_line = kshim_log_line(k: *mut Instance, i: u32, buf: *mut c_char, len: usize) -> u64;
    log_clear = kshim_log_clear(k: *mut Instance);
}
