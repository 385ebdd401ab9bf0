//! Detection kernels: pairwise box IoU and greedy non-maximum suppression ([`nms`], with its
//! tests in `nms_tests`), and the selection of rows whose value in one column passes a
//! threshold ([`filter_rows`]).
//!
//! Both modules are also reachable at the crate's root (`pyasc_kernels::nms`).

pub mod filter_rows;
pub mod nms;
#[cfg(test)]
mod nms_tests;
