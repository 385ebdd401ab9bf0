//! Mask loops of vectorized operators: a `while` body of lane-wise instructions run over many
//! lanes at once.
//!
//! * [`lane_loop`]: the strip loop, each instruction of the body run over a strip of lanes
//!   (every platform), and its tests (`lane_loop_tests`).
//! * [`lane_jit`]: the same loops assembled to AVX-512 machine code (x86-64 Unix), with its
//!   register plan (`lane_jit_plan`), executable pages (`lane_jit_exec`) and tests
//!   (`lane_jit_tests`, against the strip loop); elsewhere a stub that compiles nothing
//!   (`lane_jit_none.rs`).
//!
//! Both are also reachable at the crate's root (`pyasc_kernels::lane_loop`).

#[cfg(all(target_arch = "x86_64", unix))]
pub mod lane_jit;
#[cfg(not(all(target_arch = "x86_64", unix)))]
#[path = "lane_jit_none.rs"]
pub mod lane_jit;
#[cfg(all(target_arch = "x86_64", unix))]
mod lane_jit_exec;
#[cfg(all(target_arch = "x86_64", unix))]
mod lane_jit_plan;
#[cfg(all(test, target_arch = "x86_64", unix))]
mod lane_jit_tests;
pub mod lane_loop;
#[cfg(test)]
mod lane_loop_tests;
