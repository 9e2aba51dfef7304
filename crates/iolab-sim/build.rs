//! Compiles the elevator modules of `kernel/` into the simulator, unmodified,
//! against the userspace stand-ins of `csrc/kshim/` (docs/kernel.md, "The
//! module's C in the simulator").
//!
//! Which files make a module is read from `kernel/Makefile`, the file the
//! kernel's own build reads (`src/sched/kernel/makefile.rs`, shared with the
//! run time). Each module's `module_init` function gets a name of its own
//! (`KSHIM_MODULE_INIT`), and a generated `kshim_init_modules()` calls them
//! all; their `elv_register` calls are what the simulator offers as
//! `kernel:NAME`. Each module's fingerprint (its sources, the headers, the
//! stand-ins) is written into `kshim_built.rs`: a module whose sources
//! differ at run time, or that was added since, is compiled then
//! (`src/sched/kernel/dynlib.rs`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[allow(dead_code)]
mod makefile {
    include!("src/sched/kernel/makefile.rs");
}

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let kernel = crate_dir.join("../../kernel");
    let kernel = kernel.canonicalize().unwrap_or(kernel);
    let shim = crate_dir.join("csrc/kshim");
    println!("cargo:rerun-if-changed={}", shim.display());
    println!("cargo:rerun-if-changed={}", kernel.join("Makefile").display());
    println!("cargo:rerun-if-changed=src/sched/kernel/makefile.rs");
    let text = std::fs::read_to_string(kernel.join("Makefile"))
        .unwrap_or_else(|e| panic!("{}: {e}", kernel.join("Makefile").display()));
    let modules = makefile::modules(&text);
    for h in makefile::files(&kernel, "h") {
        println!("cargo:rerun-if-changed={}", h.display());
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // One library: the stand-ins call the modules' init functions and the
    // modules call the stand-ins (two libraries would be a circle the
    // linker does not resolve). Each module's objects are compiled apart,
    // with its own init name, and added to it.
    let mut objects = Vec::new();
    let mut built = String::new();
    for (name, objs) in &modules {
        let mut build = base(&shim);
        build.define("KSHIM_MODULE_INIT", makefile::symbol(name).as_str());
        for c in makefile::sources(&kernel, objs) {
            println!("cargo:rerun-if-changed={}", c.display());
            build.file(&c);
        }
        objects.extend(build.compile_intermediates());
        writeln!(built, "    ({name:?}, {:#018x}),", makefile::fingerprint(&kernel, &shim, objs)).unwrap();
    }
    let names: Vec<String> = modules.iter().map(|m| m.0.clone()).collect();
    let init_c = out.join("kshim_modules.c");
    std::fs::write(&init_c, makefile::init_c(&names)).expect("write kshim_modules.c");
    let mut build = base(&shim);
    build.file(shim.join("kshim.c")).file(&init_c).objects(&objects);
    build.compile("kshim");
    let rs = format!(
        "/// Where the modules were compiled from (the run time looks there for\n\
         /// modules new or changed since).\n\
         pub const KERNEL_DIR: &str = {:?};\n\
         /// The stand-ins' sources.\n\
         pub const SHIM_DIR: &str = {:?};\n\
         /// Every module compiled in, with the fingerprint of its sources.\n\
         pub const BUILT: &[(&str, u64)] = &[\n{built}];\n",
        kernel.display().to_string(),
        shim.canonicalize().unwrap_or(shim.clone()).display().to_string()
    );
    std::fs::write(out.join("kshim_built.rs"), rs).expect("write kshim_built.rs");
}

/// The compiler settings every file shares (`makefile::CFLAGS`), the
/// stand-in headers first, optimised even in debug builds (the tests run
/// whole simulations).
fn base(shim: &Path) -> cc::Build {
    let mut b = cc::Build::new();
    b.include(shim.join("include")).opt_level(2).warnings(false);
    for f in makefile::CFLAGS {
        b.flag_if_supported(f);
    }
    b
}
