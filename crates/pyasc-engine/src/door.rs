//! The one door to execution. Every run of work, whatever front end made it (operators,
//! pipeline stages, vectorized operators, stencil sweeps, detection routines, kernel-language
//! blocks), is a kernel plan handed to a [`Device`] here, now ([`run_now`]) or queued on a
//! stream ([`queue`]), and records one [`EventKind::Launch`] event while someone collects
//! events: the profiler and any device see every path.
//!
//! A launch event carries the labels `operator` (the name the profiler groups by), `device`
//! and `front_end` (which front end launched it), and the counter `id`, which the kernel
//! events of the launch repeat as their counter `launch`.

use pyasc_events::event::{self, Event, EventKind};
use pyasc_ir::error::Result;
use pyasc_ir::tile::KernelPlan;
use pyasc_runtime::stream::Stream;
use pyasc_runtime::{Device, InputView, OutputPtr, RunOptions, RunStats, StreamLaunch};
use std::time::Instant;

/// Who launches: the name the profiler shows and the front end it came from.
#[derive(Copy, Clone, Debug)]
pub struct Launcher<'a> {
    /// The operator's (or routine's) name.
    pub name: &'a str,
    /// The front end: `"operator"`, `"pipeline"`, `"vectorized"`, `"stencil"`, `"detection"`
    /// or `"kernel"` (the kernel language).
    pub front_end: &'static str,
}

/// Run `launch` with a fresh launch id (0 while no one collects events) and record its launch
/// event on `device`, with `label` adding what the caller knows (graph IR, stream).
pub fn through<T>(
    who: Launcher<'_>,
    device: &dyn Device,
    launch: impl FnOnce(u64) -> Result<T>,
    label: impl FnOnce(Event) -> Event,
) -> Result<T> {
    let collect = event::enabled();
    let id = if collect { event::next_id() } else { 0 };
    let began = collect.then(Instant::now);
    let done = launch(id);
    if let Some(t) = began {
        let ev = Event::new(EventKind::Launch, who.name.to_string(), t, Instant::now())
            .with("id", id)
            .label("operator", who.name.to_string())
            .label("device", device.info().kind.name())
            .label("front_end", who.front_end);
        event::record(label(ev));
    }
    done
}

/// Run `plan` on `device` now, through the door.
pub fn run_now(
    who: Launcher<'_>,
    device: &dyn Device,
    plan: &KernelPlan,
    inputs: &[InputView],
    outputs: &[OutputPtr],
    opts: RunOptions,
) -> Result<RunStats> {
    through(who, device, |id| device.execute(plan, inputs, outputs, RunOptions { launch: id, ..opts }), |ev| ev)
}

/// Queue `launch` on `stream` of `device` through the door; returns the task's number.
pub fn queue(who: Launcher<'_>, device: &dyn Device, stream: &Stream, mut launch: StreamLaunch) -> Result<u64> {
    let to_stream = stream.id();
    through(
        who,
        device,
        |id| {
            launch.opts.launch = id;
            device.launch(stream, launch)
        },
        |ev| ev.with("to_stream", to_stream),
    )
}
