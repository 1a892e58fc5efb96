//! Estimators shared by algorithms and endpoints.
pub mod minmax;
pub use minmax::{MaxFilter, MinFilter};
