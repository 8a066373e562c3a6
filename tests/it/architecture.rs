//! docs/architecture.md's tree is the repository's: one line per folder that holds a tracked
//! file, none missing, none gone, in tree order.

use std::collections::BTreeSet;
use std::process::Command;

/// The folders `git` tracks a file in (seed corpora of the fuzz targets are data, not rooms).
fn rooms() -> BTreeSet<String> {
    let output = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("git runs (the tree is read from the repository's index)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .split('\0')
        .filter_map(|file| file.rsplit_once('/').map(|(dir, _)| format!("{dir}/")))
        .filter(|dir| !dir.starts_with("fuzz/seeds/"))
        .collect()
}

/// The tree's lines: the fenced block after `## The tree`, as (folder, what it is).
fn tree(doc: &str) -> Vec<(String, String)> {
    let section = &doc[doc.find("\n## The tree\n").expect("a tree section")..];
    let block = &section[section.find("```text\n").expect("a text block") + 8..];
    let block = &block[..block.find("```").expect("the block's end")];
    block
        .lines()
        .map(|line| {
            let (folder, about) = line.split_once(' ').unwrap_or((line, ""));
            (folder.to_owned(), about.trim().to_owned())
        })
        .collect()
}

#[test]
fn the_architecture_page_names_every_room_once_and_no_other() {
    let doc = include_str!("../../docs/architecture.md");
    let lines = tree(doc);
    let named: Vec<&str> = lines.iter().map(|(folder, _)| folder.as_str()).collect();
    // Tree order: a folder's rooms right below it, before its next sibling.
    let mut sorted = named.clone();
    sorted.sort_by_key(|folder| folder.split('/').collect::<Vec<_>>());
    sorted.dedup();
    assert_eq!(
        named, sorted,
        "the tree's lines are in tree order, each once"
    );
    for (folder, about) in &lines {
        assert!(!about.is_empty(), "{folder} says nothing of itself");
    }
    let named: BTreeSet<String> = named.into_iter().map(str::to_owned).collect();
    let rooms = rooms();
    assert!(rooms.len() > 50, "{} folders read", rooms.len());
    let missing: Vec<_> = rooms.difference(&named).collect();
    let gone: Vec<_> = named.difference(&rooms).collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "docs/architecture.md's tree: add {missing:?}, remove {gone:?}"
    );
}

#[test]
fn a_tree_line_is_its_folder_and_what_it_holds() {
    let doc = "x\n## The tree\n\n```text\na/    one\na/b/  two words\n```\n";
    assert_eq!(
        tree(doc),
        [
            ("a/".to_owned(), "one".to_owned()),
            ("a/b/".to_owned(), "two words".to_owned()),
        ]
    );
}
