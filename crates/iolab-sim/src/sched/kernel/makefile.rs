// What `kernel/Makefile` says a module is made of, and a fingerprint of
// its sources. Shared by `build.rs` (which `include!`s this file and
// compiles every module into the simulator) and the run time (which
// compiles a module that is new or changed since: `dynlib.rs`), so the two
// read the Makefile and fingerprint the sources alike. Plain `std` only.

/// `obj-m` modules and their object files, from a kbuild Makefile: every
/// `obj-m := ...` / `obj-m += ...` word, with its `NAME-y` (or `NAME-objs`)
/// list when it has one and `NAME.o` otherwise.
pub fn modules(makefile: &str) -> Vec<(String, Vec<String>)> {
    let joined = makefile.replace("\\\n", " ");
    let mut assigns: Vec<(String, Vec<String>)> = Vec::new();
    for line in joined.lines() {
        let line = line.split('#').next().unwrap_or("");
        let Some((lhs, rhs)) = line.split_once(":=").or_else(|| line.split_once("+=")) else { continue };
        let words: Vec<String> = rhs.split_whitespace().map(str::to_string).collect();
        assigns.push((lhs.trim().to_string(), words));
    }
    let mut out = Vec::new();
    for (lhs, words) in &assigns {
        if lhs != "obj-m" {
            continue;
        }
        for m in words {
            let name = m.trim_end_matches(".o").to_string();
            let objs: Vec<String> = assigns
                .iter()
                .filter(|(l, _)| *l == format!("{name}-y") || *l == format!("{name}-objs"))
                .flat_map(|(_, w)| w.clone())
                .collect();
            let objs = if objs.is_empty() { vec![format!("{name}.o")] } else { objs };
            out.push((name, objs));
        }
    }
    out
}

/// The C files of a module's objects, in `kernel_dir`.
pub fn sources(kernel_dir: &std::path::Path, objs: &[String]) -> Vec<std::path::PathBuf> {
    objs.iter().map(|o| kernel_dir.join(o.trim_end_matches(".o")).with_extension("c")).collect()
}

/// Every file of a directory with the extension `ext` (or, with `ext`
/// empty, every file, recursively), sorted.
pub fn files(dir: &std::path::Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if ext.is_empty() {
                out.extend(files(&p, ext));
            }
        } else if ext.is_empty() || p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// FNV-1a over the module's C files, every header of `kernel_dir` and
/// every file of the stand-ins (`shim_dir`), with their names relative to
/// their directory: a module compiled from the same text gets the same
/// fingerprint at build time and at run time. A file that cannot be read
/// counts as its name alone (the compiler then says what is wrong).
pub fn fingerprint(kernel_dir: &std::path::Path, shim_dir: &std::path::Path, objs: &[String]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    let mut feed = |base: &std::path::Path, paths: Vec<std::path::PathBuf>| {
        for p in paths {
            let rel = p.strip_prefix(base).unwrap_or(&p).to_string_lossy().into_owned();
            eat(rel.as_bytes());
            eat(&[0]);
            eat(&std::fs::read(&p).unwrap_or_default());
            eat(&[0]);
        }
    };
    feed(kernel_dir, sources(kernel_dir, objs));
    feed(kernel_dir, files(kernel_dir, "h"));
    feed(shim_dir, files(shim_dir, ""));
    for f in CFLAGS {
        eat(f.as_bytes());
    }
    h
}

/// A C identifier made from a module name (`sstf-iosched` ->
/// `sstf_iosched`), for the name its `module_init` function gets.
pub fn symbol(module: &str) -> String {
    format!("kshim_module_init_{}", module.replace(|c: char| !c.is_ascii_alphanumeric(), "_"))
}

/// The compiler's flags, the same at build time and at run time: C11 with
/// GNU extensions (the kernel's statement expressions and `__typeof__`),
/// optimised, with signed overflow wrapping and no strict aliasing as
/// Linux's Makefile has them.
pub const CFLAGS: &[&str] = &[
    "-std=gnu11",
    "-O2",
    "-fno-strict-aliasing",
    "-fno-strict-overflow",
    "-Wall",
    "-Wno-unused-parameter",
    "-Wno-sign-compare",
];

/// The C of the function that runs every module's init in turn, each with
/// `kshim_current_module` naming it (the stand-ins' `elv_register` records
/// which module registered which elevator).
pub fn init_c(modules: &[String]) -> String {
    let mut decls = String::new();
    let mut calls = String::new();
    for m in modules {
        let sym = symbol(m);
        decls.push_str(&format!("int {sym}(void);\n"));
        calls.push_str(&format!("\tkshim_current_module = \"{m}\";\n\tret = {sym}();\n\tif (ret)\n\t\treturn ret;\n"));
    }
    format!(
        "/* generated by iolab-sim (sched/kernel/makefile.rs) */\n\
         #include \"kshim_api.h\"\n\n{decls}\n\
         int kshim_init_modules(void)\n{{\n\tint ret = 0;\n\n{calls}\tkshim_current_module = 0;\n\treturn ret;\n}}\n"
    )
}
