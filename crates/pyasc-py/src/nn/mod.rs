//! Network layers whose entry points are routines of their own: detection post-processing.

pub mod detection;
