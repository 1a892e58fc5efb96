//! The resolved scenario is the shared contract of `bloatlab-schema`; this file
//! adds only what the simulator itself requires of it.

pub use bloatlab_schema::scenario::*;

/// Read a resolved scenario for the simulator: the contract's checks, then the
/// simulator's own (at least one flow, a congestion control it implements).
pub fn from_json(s: &str) -> Result<Scenario, String> {
    let sc = Scenario::from_json(s)?;
    if sc.flows.is_empty() {
        return Err("flows: at least one flow is needed".into());
    }
    for (i, f) in sc.flows.iter().enumerate() {
        if bloatlab_core::cc::by_name(&f.cc).is_none() {
            return Err(format!("flows[{i}].cc: unknown congestion control \"{}\"", f.cc));
        }
    }
    Ok(sc)
}
