//! Geared traces without Python: a max over a padded axis is masked with the valid extent
//! (a run-time weak integer) and ignores the padding; a reshape across a padded axis is
//! reported as unsupported.

use pyasc_compiler::CompileOptions;
use pyasc_engine::gears::Gears;
use pyasc_engine::{Launched, Operator, OperatorConfig, Order, Signature, Trace};
use pyasc_ir::dtype::WeakKind;
use pyasc_ir::op::{Axes, Op, ReduceOp};
use pyasc_ir::view::ViewSpec;
use pyasc_ir::DType;
use pyasc_runtime::{DeviceKind, InputView, OutputPtr};
use std::collections::HashMap;

const GEAR: usize = 8;

fn sig() -> Signature {
    let mut s = Signature::new();
    s.push_array(DType::F64, &[GEAR, 2]);
    s.push_weak(WeakKind::Int);
    s
}

#[test]
fn a_max_over_the_padded_axis_ignores_the_padding_at_every_valid_extent() {
    let op = Operator::new(OperatorConfig {
        name: "geared".into(),
        device: DeviceKind::Cpu,
        options: CompileOptions { verify_each_pass: true, ..Default::default() },
        dynamic: false,
        debug: false,
    });
    let s = sig();
    let (entry, _) = op
        .entry_for(
            &s,
            |s| {
                let (tr, inputs) = Trace::begin(s);
                let (x, valid) = (inputs[0].id, inputs[1].id);
                Trace::lock(&tr).gears = Some(Gears::new(vec![valid], HashMap::from([(x, vec![Some(0), None])])));
                let m =
                    Trace::apply(&tr, Op::Reduce { op: ReduceOp::Max, axes: Axes(1), keepdims: false }, &[x], None)?;
                assert!(Trace::lock(&tr).gears.as_ref().unwrap().unsupported.is_none());
                Ok::<_, pyasc_ir::IrError>(Trace::finish(&tr, vec![m.id], false))
            },
            |e| e,
        )
        .unwrap();
    for n in 1..=GEAR {
        // Valid rows are negative; the padding rows are zeros, which an unmasked max would return.
        let mut x = [0.0f64; GEAR * 2];
        for (i, v) in x.iter_mut().take(n * 2).enumerate() {
            *v = -1.0 - i as f64;
        }
        let valid = n as i64;
        let views = vec![
            InputView::contiguous(x.as_ptr() as *const u8, DType::F64, vec![GEAR, 2]),
            InputView::contiguous(&valid as *const i64 as *const u8, DType::I64, vec![]),
        ];
        let mut out = [0.0f64; 2];
        let outs = vec![OutputPtr(out.as_mut_ptr() as *mut u8)];
        // SAFETY: the views and the output outlive this synchronous launch.
        let done = unsafe { op.launch(&entry, &views, outs.into(), Order::Now, false) }.unwrap();
        assert!(matches!(done, Launched::Done(_)));
        assert_eq!(out, [-1.0, -2.0], "valid extent {n}");
    }
    assert_eq!(op.cache_info().compiles, 1);
}

#[test]
fn a_reshape_across_the_padded_axis_is_unsupported() {
    let s = sig();
    let (tr, inputs) = Trace::begin(&s);
    let (x, valid) = (inputs[0].id, inputs[1].id);
    Trace::lock(&tr).gears = Some(Gears::new(vec![valid], HashMap::from([(x, vec![Some(0), None])])));
    let flat = Trace::lock(&tr).graph.view(ViewSpec::Reshape(vec![GEAR * 2]), x, None).unwrap();
    Trace::apply(&tr, Op::Reduce { op: ReduceOp::Sum, axes: Axes(1), keepdims: false }, &[flat], None).unwrap();
    let why = Trace::lock(&tr).gears.as_ref().unwrap().unsupported.clone();
    assert_eq!(why.as_deref(), Some("a reshape across a geared dimension"));
}
