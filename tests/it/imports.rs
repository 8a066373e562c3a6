//! The source files of every crate import each other without a circle: every arrow runs one
//! way (in the library, the gate's verbs `gate/*.rs` → the gate, `gate/mod.rs` → store →
//! audit and the data types below; in the CLI's crate, cli → web → term), so each file can be
//! read knowing only what lies under it.
//!
//! An arrow is a path a file names into another file, `crate::a::b` or `super::c`; a
//! module's own submodules are its parts, which it declares and may re-export, not an arrow.
//! Unit tests (`#[cfg(test)] mod tests` at a file's end) and comments are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// Every `.rs` file under `dir`, by module path (`store/pg/mod.rs` is `store::pg`).
fn modules(root: &Path, dir: &Path, into: &mut BTreeMap<Module, PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the source directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            modules(root, &path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path
                .strip_prefix(root)
                .expect("under the root")
                .with_extension("");
            let mut module: Module = relative
                .iter()
                .map(|part| part.to_string_lossy().into_owned())
                .collect();
            if module
                .last()
                .is_some_and(|last| last == "mod" || last == "lib")
            {
                module.pop();
            }
            into.insert(module, path);
        }
    }
}

/// The file's code without its unit tests and its `//` comments.
fn code(text: &str) -> String {
    let text = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default();
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifiers of a `::`-separated path at the start of `rest`.
fn segments(rest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = rest;
    loop {
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end == 0 {
            return out;
        }
        out.push(rest[..end].to_owned());
        match rest[end..].strip_prefix("::") {
            Some(more) => rest = more,
            None => return out,
        }
    }
}

/// The paths `code` names after `crate::` and `super::`, made absolute for the file of
/// `module`.
fn paths(code: &str, module: &Module) -> Vec<Module> {
    let mut found = Vec::new();
    for (at, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        {
            continue;
        }
        let mut base: Module = Vec::new();
        let mut rest = &code[at..];
        if let Some(after) = rest.strip_prefix("crate::") {
            rest = after;
        } else {
            base.clone_from(module);
            while let Some(after) = rest.strip_prefix("super::") {
                base.pop();
                rest = after;
            }
        }
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                found.push([base.clone(), segments(item.trim())].concat());
            }
        } else {
            found.push([base, segments(rest)].concat());
        }
    }
    found
}

/// The file a path names: the longest prefix of it that is a file's module.
fn file_of(path: &[String], files: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| files.contains_key(prefix))
}

/// The first circle in `arrows`, if any, as the files around it.
fn circle(arrows: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        at: &Module,
        arrows: &BTreeMap<Module, BTreeSet<Module>>,
        done: &mut BTreeSet<Module>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(start) = stack.iter().position(|m| m == at) {
            return Some(stack[start..].to_vec());
        }
        if !done.insert(at.clone()) {
            return None;
        }
        stack.push(at.clone());
        for next in arrows.get(at).into_iter().flatten() {
            if let Some(found) = visit(next, arrows, done, stack) {
                return Some(found);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    arrows
        .keys()
        .find_map(|start| visit(start, arrows, &mut done, &mut Vec::new()))
}

fn arrows_of(root: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = BTreeMap::new();
    modules(root, root, &mut files);
    let mut arrows = BTreeMap::new();
    for (module, path) in &files {
        let text = std::fs::read_to_string(path).expect("a source file");
        let targets: BTreeSet<Module> = paths(&code(&text), module)
            .iter()
            .filter_map(|path| file_of(path, &files))
            .filter(|target| target != module && !target.starts_with(module))
            .collect();
        arrows.insert(module.clone(), targets);
    }
    arrows
}

/// The first circle in the files under `src` (relative to this crate), as a message.
fn circle_in(src: &str) -> Result<BTreeMap<Module, BTreeSet<Module>>, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(src);
    let arrows = arrows_of(&root);
    match circle(&arrows) {
        None => Ok(arrows),
        Some(circle) => {
            let names: Vec<String> = circle.iter().map(|m| m.join("/")).collect();
            Err(format!(
                "the files of {src} {} import each other in a circle",
                names.join(" → ")
            ))
        }
    }
}

fn module(path: &str) -> Module {
    path.split("::").map(str::to_owned).collect()
}

#[test]
fn the_library_files_import_each_other_without_a_circle() {
    let arrows = circle_in("../approval-gate/src").unwrap_or_else(|e| panic!("{e}"));
    assert!(arrows.len() > 40, "{} files read", arrows.len());
    // The reader sees arrows: the gate's builder opens its store through `store::open`, and
    // a verb reaches the gate it is a file of.
    assert!(arrows[&module("gate::builder")].contains(&module("store::open")));
    assert!(arrows[&module("gate::ask")].contains(&module("gate")));
}

#[test]
fn every_crate_imports_without_a_circle() {
    for src in [
        "../approval-gate-macros/src",
        "../approval-gate-cli/src",
        "../approval-gate-mcp/src",
        "src",
        "../bindings/node/src",
        "../bindings/python/src",
        "../examples",
    ] {
        let arrows = circle_in(src).unwrap_or_else(|e| panic!("{e}"));
        assert!(arrows.len() > 2, "{src}: {} files read", arrows.len());
    }
}

/// The human's crate: `cli/` may use `web/`, `web/` never uses `cli/`, and `term/`, which
/// both use, uses neither.
#[test]
fn in_the_cli_crate_web_never_uses_cli_and_term_uses_neither() {
    let arrows = circle_in("../approval-gate-cli/src").unwrap_or_else(|e| panic!("{e}"));
    let under = |m: &Module, top: &str| m.first().is_some_and(|first| first == top);
    let mut checked = 0;
    for (from, targets) in &arrows {
        for to in targets {
            let forbidden = (under(from, "web") && under(to, "cli"))
                || (under(from, "term") && (under(to, "cli") || under(to, "web")));
            assert!(!forbidden, "{} uses {}", from.join("/"), to.join("/"));
            checked += 1;
        }
    }
    // The rule has something to hold: cli uses web and term, web uses term.
    assert!(arrows[&module("cli")].iter().any(|to| under(to, "web")));
    assert!(
        arrows[&module("web::html")]
            .iter()
            .any(|to| under(to, "term"))
    );
    assert!(checked > 50, "{checked} arrows");
}

#[test]
fn a_circle_is_found() {
    let a = vec!["a".to_owned()];
    let b = vec!["b".to_owned()];
    let arrows = BTreeMap::from([
        (a.clone(), BTreeSet::from([b.clone()])),
        (b.clone(), BTreeSet::from([a.clone()])),
    ]);
    assert_eq!(circle(&arrows), Some(vec![a.clone(), b.clone()]));
    let one_way = BTreeMap::from([(a, BTreeSet::from([b.clone()])), (b, BTreeSet::new())]);
    assert_eq!(circle(&one_way), None);
    let module = vec!["store".to_owned(), "pg".to_owned(), "lock".to_owned()];
    assert_eq!(
        paths(
            "use super::{pool::Conn, errors};\nx = crate::audit::X;",
            &module
        ),
        [
            vec!["audit", "X"],
            vec!["store", "pg", "pool", "Conn"],
            vec!["store", "pg", "errors"],
        ]
        .map(|p| p.iter().map(|s| (*s).to_owned()).collect::<Module>())
    );
}
