//! The contract as JSON Schema (issue 9): `docs/schema/*.schema.json` are
//! generated from the types in this crate (schemars) and committed, so that a
//! tool outside Rust (Python, a user's validator) reads the same contract.
//! This test fails when a committed file no longer matches the types; write
//! them anew with `BLOATLAB_WRITE_SCHEMA=1 cargo test -p bloatlab-schema --test json_schema`.

use std::path::PathBuf;

fn docs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema")
}

fn check(name: &str, schema: schemars::schema::RootSchema) {
    let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
    let path = docs().join(name);
    if std::env::var_os("BLOATLAB_WRITE_SCHEMA").is_some() {
        std::fs::create_dir_all(docs()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{} is stale: the types changed. Write it anew: BLOATLAB_WRITE_SCHEMA=1 cargo test -p bloatlab-schema --test json_schema",
        path.display()
    );
}

#[test]
fn the_committed_json_schemas_match_the_types() {
    check("scenario.schema.json", schemars::schema_for!(bloatlab_schema::scenario::Scenario));
    check("dist.schema.json", schemars::schema_for!(bloatlab_schema::result::DistOut));
}
