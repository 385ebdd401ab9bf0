//! Programs of many operators: the switch to graph mode's recorder and the micro-batch
//! pipeline's entry point (mirrors `pyasc/graph/`).

pub mod graph_hook;
pub mod pipeline_run;
