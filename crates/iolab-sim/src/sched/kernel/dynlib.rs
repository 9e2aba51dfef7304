//! Which kernel elevators the simulator has, and from which copy of the
//! C: the modules compiled in at build time (`build.rs`), and any module of
//! `kernel/` that is new or whose sources changed since, compiled at first
//! use into a shared object and loaded (so that `iolab elevator new NAME`,
//! or an edit of its C, needs no rebuild of the simulator).
//!
//! The kernel directory is `IOLAB_KERNEL_DIR` if set, else the one the
//! simulator was built from. A module is compiled again when the
//! fingerprint of its sources (its C files, the directory's headers, the
//! stand-ins; `makefile::fingerprint`) is not the one compiled in. The
//! compiler is `CC` (default `cc`), with the flags the build uses; the
//! shared objects are kept under `IOLAB_CACHE/kshim` (default
//! `~/.cache/iolab/kshim`), named by fingerprint. A module that does not
//! compile is left out, and its compiler's message is kept for the error
//! that names a missing `kernel:NAME`.

use super::ffi::{self, Lib};
use super::makefile;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/kshim_built.rs"));

/// An elevator a module registered (`elv_register`).
pub struct Registered {
    pub name: String,
    pub alias: Option<String>,
    pub module: String,
    pub lib: &'static Lib,
    /// Compiled at run time (new or changed since the build).
    pub at_run_time: bool,
}

/// Every kernel elevator, and the modules that could not be had.
pub struct Registry {
    pub elevators: Vec<Registered>,
    /// (module, why): a module of the kernel directory that did not compile.
    pub errors: Vec<(String, String)>,
    pub kernel_dir: PathBuf,
}

impl Registry {
    pub fn find(&self, name: &str) -> Option<&Registered> {
        self.elevators.iter().find(|e| e.name == name)
    }
}

pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(load)
}

fn cstr(p: *const c_char) -> Option<String> {
    // SAFETY: the C side returns NULL or a pointer to a NUL-terminated
    // string it keeps for the life of the process (an elevator_type's).
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Run a copy's module inits; the elevators they registered.
fn elevators_of(lib: &'static Lib, at_run_time: bool) -> Result<Vec<Registered>, String> {
    // SAFETY: kshim_init_modules only calls the modules' init functions,
    // which register static elevator types; each copy's is run once, from
    // the OnceLock that builds the registry.
    let ret = unsafe { (lib.init_modules)() };
    if ret != 0 {
        return Err(format!("a module's init failed ({ret})"));
    }
    let mut out = Vec::new();
    for i in 0.. {
        // SAFETY: the three return NULL past the end, else pointers to
        // strings of a registered elevator_type (the alias may be NULL).
        let (name, alias, module) = unsafe { ((lib.elevator_name)(i), (lib.elevator_alias)(i), (lib.elevator_module)(i)) };
        let Some(name) = cstr(name) else { break };
        out.push(Registered { name, alias: cstr(alias), module: cstr(module).unwrap_or_default(), lib, at_run_time });
    }
    Ok(out)
}

fn kernel_dir() -> PathBuf {
    std::env::var_os("IOLAB_KERNEL_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(KERNEL_DIR))
}

fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("IOLAB_CACHE") {
        return PathBuf::from(d).join("kshim");
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("iolab/kshim");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".cache/iolab/kshim"),
        None => std::env::temp_dir().join("iolab-kshim"),
    }
}

fn load() -> Registry {
    let mut elevators = match elevators_of(&ffi::BUILTIN, false) {
        Ok(e) => e,
        Err(e) => panic!("kernel/'s modules compiled in: {e}"),
    };
    let mut errors = Vec::new();
    let dir = kernel_dir();
    let Ok(text) = std::fs::read_to_string(dir.join("Makefile")) else {
        return Registry { elevators, errors, kernel_dir: dir };
    };
    let shim = Path::new(SHIM_DIR);
    for (module, objs) in makefile::modules(&text) {
        let fp = makefile::fingerprint(&dir, shim, &objs);
        if BUILT.contains(&(module.as_str(), fp)) {
            continue;
        }
        let got = compile(&dir, shim, &module, &objs, fp).and_then(|lib| elevators_of(lib, true));
        match got {
            Ok(new) => {
                // A module changed since the build replaces its old self.
                elevators.retain(|e| e.module != module && !new.iter().any(|n| n.name == e.name));
                elevators.extend(new);
            }
            Err(why) => {
                elevators.retain(|e| e.module != module);
                errors.push((module, why));
            }
        }
    }
    Registry { elevators, errors, kernel_dir: dir }
}

/// Compile a module with the stand-ins into a shared object (or find it
/// compiled already) and load it.
fn compile(dir: &Path, shim: &Path, module: &str, objs: &[String], fp: u64) -> Result<&'static Lib, String> {
    if !shim.join("kshim.c").is_file() {
        return Err(format!(
            "{} changed since this simulator was built, and the stand-ins' sources ({}) are not here to \
             compile it with: rebuild the simulator (make build)",
            module,
            shim.display()
        ));
    }
    let cache = cache_dir();
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let so = cache.join(format!("{module}-{fp:016x}.so"));
    if !so.is_file() {
        let tmp = cache.join(format!("{module}-{fp:016x}.{}", std::process::id()));
        let init = tmp.with_extension(format!("{}.c", std::process::id()));
        std::fs::write(&init, makefile::init_c(&[module.to_string()])).map_err(|e| format!("{}: {e}", init.display()))?;
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
        let mut cmd = Command::new(&cc);
        cmd.args(["-shared", "-fPIC", "-fvisibility=hidden", "-Wl,-Bsymbolic"])
            .args(makefile::CFLAGS)
            .arg("-I")
            .arg(shim.join("include"))
            .arg(format!("-DKSHIM_MODULE_INIT={}", makefile::symbol(module)))
            .arg("-o")
            .arg(&tmp)
            .arg(shim.join("kshim.c"))
            .arg(&init)
            .args(makefile::sources(dir, objs));
        let out = cmd.output();
        let _ = std::fs::remove_file(&init);
        let out = out.map_err(|e| format!("{module}: running the C compiler '{cc}': {e} (set CC, or rebuild: make build)"))?;
        if !out.status.success() {
            let _ = std::fs::remove_file(&tmp);
            let msg = String::from_utf8_lossy(&out.stderr);
            let first: Vec<&str> = msg.lines().filter(|l| l.contains("error")).take(3).collect();
            let first = if first.is_empty() { msg.lines().take(3).collect() } else { first };
            return Err(format!("{module} does not compile: {}", first.join(" | ")));
        }
        std::fs::rename(&tmp, &so).map_err(|e| format!("{}: {e}", so.display()))?;
    }
    open(&so).map_err(|e| format!("{module}: {}: {e}", so.display()))
}

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

const RTLD_NOW: c_int = 2;

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated message.
    cstr(unsafe { dlerror() }).unwrap_or_else(|| "unknown dlopen error".into())
}

/// Load a shared object compiled from kshim.c and modules; never unloaded.
fn open(path: &Path) -> Result<&'static Lib, String> {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: c is a NUL-terminated path; the object's constructors are
    // the C compiler's own (the stand-ins and modules run nothing at load:
    // module_init is called through kshim_init_modules).
    let handle = unsafe { dlopen(c.as_ptr(), RTLD_NOW) };
    if handle.is_null() {
        return Err(dl_error());
    }
    // SAFETY: every symbol looked up is a function of kshim_api.h that
    // kshim.c defines with the declared signature, in this object.
    let lib = unsafe {
        Lib::from_symbols(|name| {
            let n = CString::new(name).ok()?;
            let p = dlsym(handle, n.as_ptr());
            (!p.is_null()).then_some(p)
        })
    }?;
    debug_assert_eq!(ffi::SYMBOLS.len(), ffi::SYMBOLS.iter().collect::<std::collections::BTreeSet<_>>().len());
    Ok(Box::leak(Box::new(lib)))
}
