//! A sample manifest in the shape of `aws-eks-basic`, for the tests here and in the crates above (feature
//! `fakes`).

use super::Template;

pub const EKS_MANIFEST: &str = include_str!("sample.toml");

pub fn eks() -> Template {
    Template::from_toml(EKS_MANIFEST).unwrap()
}
