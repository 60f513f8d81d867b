//! The recipes of docs/architecture.md ("Adding things") held to the code: a fault, a
//! target, a workload and a checker are each one module plus one line in one table, and
//! the table is what the program runs.
//!
//! For each kind the test reads the table's source (the macro invocation that declares the
//! modules), counts the lines naming each module in that file (exactly one: the table's own
//! line), checks that every module file in the directory is either in the table or one of
//! the directory's declared helpers, compares the table's length with the registry the
//! program uses at run time, and holds the table in docs/architecture.md (between the
//! `recipe-counts` markers) to those counts and tables. Other lines may name an item for
//! convenience (`FaultKind::KILL`); a new item needs none.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One kind of thing a contributor adds.
struct Recipe {
    /// The kind's name in the docs' table.
    kind: &'static str,
    /// The file holding the table (the macro invocation).
    table_file: &'static str,
    /// The macro whose invocation is the table.
    table_macro: &'static str,
    /// The directory of the modules (`<module>.rs` or `<module>/mod.rs`).
    dir: &'static str,
    /// Modules of that directory that are not items: the table's own file and helpers.
    helpers: &'static [&'static str],
    /// How many items the program's registry holds at run time.
    runtime_len: fn() -> usize,
}

const RECIPES: &[Recipe] = &[
    Recipe {
        kind: "fault",
        table_file: "nemesis/src/faults/mod.rs",
        table_macro: "registry!",
        dir: "nemesis/src/faults",
        helpers: &["mod", "process"],
        runtime_len: || nemesis::faults::REGISTRY.len(),
    },
    Recipe {
        kind: "target",
        table_file: "src/db/mod.rs",
        table_macro: "targets!",
        dir: "src/db",
        helpers: &[
            "mod",
            "capability",
            "data_control",
            "dynamodb",
            "leader_reads",
            "s3",
            "sqs",
            "tests",
        ],
        runtime_len: || faultline::db::DbKind::ALL.len(),
    },
    Recipe {
        kind: "workload",
        table_file: "workloads/src/generators/mod.rs",
        table_macro: "workloads!",
        dir: "workloads/src/generators",
        helpers: &["mod", "combinators", "keys", "txns"],
        runtime_len: || workloads::WorkloadKind::ALL.len(),
    },
    Recipe {
        kind: "checker",
        table_file: "analysis/src/checkers/mod.rs",
        table_macro: "checkers!",
        dir: "analysis/src/checkers",
        helpers: &["mod", "calls", "fault_turns", "registry", "stale_read"],
        runtime_len: || analysis::checkers::registry::REGISTRY.len(),
    },
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The table's lines: the body of the last `<macro> {` … `}` invocation (the first
/// occurrence is the `macro_rules!` definition).
fn table_lines(source: &str, table_macro: &str) -> Vec<String> {
    let open = format!("{table_macro} {{");
    let start = source
        .lines()
        .position(|l| l.trim_start().starts_with(&open))
        .unwrap_or_else(|| panic!("no `{open}` invocation"));
    source
        .lines()
        .skip(start + 1)
        .take_while(|l| l.trim() != "}")
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .map(str::to_string)
        .collect()
}

/// The module a table line declares: the word after ` in ` (targets, workloads), else
/// the path's first segment (faults: `kill::Kill`), else the line itself (checkers).
fn module_of(line: &str) -> String {
    let line = line.trim().trim_end_matches(',');
    if let Some((_, rest)) = line.split_once(" in ") {
        return rest
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
    }
    line.split("::")
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Module names of `dir`: `x.rs` files and `x/` directories.
fn modules_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            match e.file_type().ok()?.is_dir() {
                true => Some(name),
                false => name.strip_suffix(".rs").map(str::to_string),
            }
        })
        .collect()
}

/// Lines of `source` (comments and doc comments left out) naming `module` as a path
/// segment or a module declaration.
fn lines_naming(source: &str, module: &str) -> usize {
    let as_path = format!("{module}::");
    let as_table_entry = format!(" in {module}");
    source
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .filter(|l| {
            l.contains(&as_path)
                || l.contains(&as_table_entry)
                || l.trim_end_matches(',') == module
                || l.ends_with(&format!("mod {module};"))
        })
        .count()
}

/// One row of the recipe-counts table of docs/architecture.md.
struct Documented {
    kind: String,
    modules: usize,
    table_lines: usize,
    table: String,
}

/// The rows of the recipe-counts table of docs/architecture.md:
/// `| a <kind> | <modules> … | <lines> … | <table file and macro> |`.
fn documented_counts() -> Vec<Documented> {
    let doc = read("docs/architecture.md");
    let begin = doc
        .find("<!-- recipe-counts:begin -->")
        .expect("docs/architecture.md has the recipe-counts table");
    let end = doc[begin..]
        .find("<!-- recipe-counts:end -->")
        .expect("the recipe-counts table ends")
        + begin;
    doc[begin..end]
        .lines()
        .filter(|l| l.starts_with("| a "))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 4, "{l}: four cells");
            let number = |c: &str| {
                c.split_whitespace()
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("{l}: {c:?} does not start with a count"))
            };
            Documented {
                kind: cells[0].trim_start_matches("a ").to_string(),
                modules: number(cells[1]),
                table_lines: number(cells[2]),
                table: cells[3].to_string(),
            }
        })
        .collect()
}

#[test]
fn each_recipe_is_one_module_and_one_table_line_and_the_table_is_what_runs() {
    for recipe in RECIPES {
        let source = read(recipe.table_file);
        let table = table_lines(&source, recipe.table_macro);
        let declared: BTreeSet<String> = table.iter().map(|l| module_of(l)).collect();
        assert_eq!(
            declared.len(),
            table.len(),
            "{}: a module twice",
            recipe.kind
        );
        assert_eq!(
            (recipe.runtime_len)(),
            table.len(),
            "{}: the program's registry is not the {} table",
            recipe.kind,
            recipe.table_macro
        );
        let on_disk: BTreeSet<String> = modules_in(&root().join(recipe.dir))
            .into_iter()
            .filter(|m| !recipe.helpers.contains(&m.as_str()))
            .collect();
        assert_eq!(
            on_disk, declared,
            "{}: every module in {} is an item of the {} table (or a listed helper)",
            recipe.kind, recipe.dir, recipe.table_macro
        );
        for module in &declared {
            assert_eq!(
                lines_naming(&table.join("\n"), module),
                1,
                "{}: {module} is one line of the table",
                recipe.kind
            );
        }
    }
}

#[test]
fn the_documented_recipe_counts_are_the_measured_ones() {
    let documented = documented_counts();
    let kinds: Vec<&str> = documented.iter().map(|d| d.kind.as_str()).collect();
    let recipes: Vec<&str> = RECIPES.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds, recipes,
        "the docs' table lists every recipe, in order"
    );
    for (doc, recipe) in documented.iter().zip(RECIPES) {
        // What the first test measures for every item of every table.
        assert_eq!(doc.modules, 1, "a {} is one module", doc.kind);
        assert_eq!(doc.table_lines, 1, "a {} is one table line", doc.kind);
        assert!(
            doc.table.contains(recipe.table_file) && doc.table.contains(recipe.table_macro),
            "a {}: the docs name {} in {}, not {:?}",
            doc.kind,
            recipe.table_macro,
            recipe.table_file,
            doc.table
        );
    }
}

#[test]
fn table_lines_are_parsed_for_each_table_shape() {
    assert_eq!(module_of("    kill::Kill,"), "kill");
    assert_eq!(
        module_of("    Refkv \"refkv\" in refkv => |groups| x,"),
        "refkv"
    );
    assert_eq!(
        module_of("    ReadHeavy \"read-heavy\" in read_heavy,"),
        "read_heavy"
    );
    assert_eq!(module_of("    set_full,"), "set_full");
    let src = "macro_rules! t { () => {} }\nt! {\n    // a comment\n    a::A,\n    b::B,\n}\n";
    assert_eq!(table_lines(src, "t!"), ["    a::A,", "    b::B,"]);
}
