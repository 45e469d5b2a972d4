//! Lists the console's files (`assets/`, text only) for `main.rs` to build into the binary.

use std::path::Path;

fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("assets/ is readable")
        .map(|e| e.expect("an entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, base, out);
        } else {
            let name = path.strip_prefix(base).expect("under assets/");
            let name = name.to_str().expect("UTF-8 file names").replace('\\', "/");
            let ext = name.rsplit('.').next().unwrap_or_default();
            assert!(
                ["html", "js", "css", "svg", "json"].contains(&ext),
                "assets/{name}: the console serves text files only (html, js, css, svg, json)"
            );
            out.push(format!(
                "({name:?}, include_str!({:?})),\n",
                path.canonicalize().expect("a real path")
            ));
        }
    }
}

fn main() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    println!("cargo:rerun-if-changed={}", base.display());
    let mut files = Vec::new();
    walk(&base, &base, &mut files);
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("assets.rs");
    std::fs::write(out, format!("&[\n{}]", files.concat())).expect("assets.rs written");
}
