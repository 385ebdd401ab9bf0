//! Tests of the detection kernels against plain scalar references, on every ISA this CPU runs.

use crate::isa::each_isa;
use crate::nms::{
    batched_nms, box_iou, nms, nms_mask, score_order, sweep, with_plain_host, Columns, Coord, Host, Stopped,
};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Boxes around a few centres on an integer grid (many overlaps, equal IoUs, identical and
/// zero-area boxes), scores from a few levels (many ties).
fn clustered(rng: &mut Rng, n: usize) -> (Vec<f64>, Vec<f64>) {
    let centres: Vec<(f64, f64)> = (0..8).map(|_| (rng.below(200) as f64, rng.below(200) as f64)).collect();
    let mut boxes = Vec::with_capacity(4 * n);
    let mut scores = Vec::with_capacity(n);
    for _ in 0..n {
        let (cx, cy) = centres[rng.below(8) as usize];
        let x = cx + rng.below(20) as f64;
        let y = cy + rng.below(20) as f64;
        let w = rng.below(30) as f64;
        let h = rng.below(30) as f64;
        boxes.extend([x, y, x + w, y + h]);
        scores.push(rng.below(10) as f64 / 10.0);
    }
    (boxes, scores)
}

fn iou_ref<T: Coord>(a: &[T], b: &[T]) -> T {
    let mx = |p: T, q: T| if p < q { q } else { p };
    let mn = |p: T, q: T| if q < p { q } else { p };
    let area = |v: &[T]| (v[2] - v[0]) * (v[3] - v[1]);
    let w = mx(T::ZERO, mn(a[2], b[2]) - mx(a[0], b[0]));
    let h = mx(T::ZERO, mn(a[3], b[3]) - mx(a[1], b[1]));
    let inter = w * h;
    inter / (area(a) + area(b) - inter)
}

/// Plain greedy NMS: visit boxes in stable descending score order, keep one unless a kept box
/// overlaps it by more than the threshold (compared in float64, as torchvision does).
fn nms_ref<T: Coord + Into<f64>>(boxes: &[T], scores: &[f64], thr: f64, cats: Option<&[i64]>) -> Vec<i64> {
    let order = score_order(scores);
    let mut kept: Vec<usize> = Vec::new();
    for &i in &order {
        let hit = kept.iter().any(|&k| {
            cats.is_none_or(|c| c[k] == c[i])
                && iou_ref(&boxes[4 * k..4 * k + 4], &boxes[4 * i..4 * i + 4]).into() > thr
        });
        if !hit {
            kept.push(i);
        }
    }
    kept.into_iter().map(|i| i as i64).collect()
}

#[test]
fn floor_of_matches_a_float64_comparison() {
    for t in [0.3, 0.5, 0.7, 1.0 / 3.0, 0.0, -0.25, 1e300, -1e300, 1e-50] {
        let f = f32::floor_of(t);
        assert!(f64::from(f) <= t, "{t}");
        // The next float32 up is already above t.
        assert!(f64::from(f.next_up()) > t, "{t}");
    }
    assert!(f32::floor_of(f64::NAN).is_nan());
}

#[test]
fn box_iou_matches_the_scalar_formula_and_zero_union_gives_zero() {
    let mut rng = Rng(7);
    let (a, _) = clustered(&mut rng, 37);
    let (b, _) = clustered(&mut rng, 300);
    let mut b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
    // Two zero-area boxes at the same place: union 0.
    b32[..4].copy_from_slice(&[5.0, 5.0, 5.0, 9.0]);
    let mut a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
    a32[..4].copy_from_slice(&[5.0, 5.0, 5.0, 9.0]);
    each_isa(|isa| {
        let mut out = vec![f32::NAN; 37 * 300];
        box_iou(&a32, &b32, &mut out);
        for i in 0..37 {
            for j in 0..300 {
                let r = iou_ref(&a32[4 * i..4 * i + 4], &b32[4 * j..4 * j + 4]);
                let want = if r.is_nan() { 0.0 } else { r };
                assert_eq!(out[i * 300 + j].to_bits(), want.to_bits(), "{isa:?} {i} {j}");
            }
        }
        let mut out64 = vec![f64::NAN; 37 * 300];
        box_iou(&a, &b, &mut out64);
        for i in 0..37 {
            for j in 0..300 {
                let r = iou_ref(&a[4 * i..4 * i + 4], &b[4 * j..4 * j + 4]);
                assert_eq!(out64[i * 300 + j], if r.is_nan() { 0.0 } else { r }, "{isa:?}");
            }
        }
    });
}

#[test]
fn nms_matches_plain_greedy_on_clustered_boxes_with_ties() {
    let mut rng = Rng(11);
    for &n in &[0usize, 1, 2, 63, 64, 65, 129, 700, 2500] {
        let (b, s) = clustered(&mut rng, n);
        let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
        for &thr in &[0.0, 0.3, 0.5, 0.7, 1.0, -0.1] {
            let want64 = nms_ref(&b, &s, thr, None);
            let want32 = nms_ref(&b32, &s, thr, None);
            each_isa(|isa| {
                let got = with_plain_host(|h| nms(&b, &s, thr, None, h)).unwrap();
                assert_eq!(got, want64, "{isa:?} n={n} thr={thr}");
                let got = with_plain_host(|h| nms(&b32, &s, thr, None, h)).unwrap();
                assert_eq!(got, want32, "{isa:?} n={n} thr={thr} f32");
            });
        }
    }
}

#[test]
fn nms_matches_plain_greedy_on_degenerate_boxes_and_special_values() {
    // Coordinates from a pool with NaN, infinities, signed zeros, inverted and zero-area boxes
    // and overflowing areas: every comparison order of `max`/`min` and every NaN IoU counts.
    let pool = [0.0, -0.0, 1.0, 2.5, 3.0, -1.0, 7.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 3e38, -3e38];
    let mut rng = Rng(29);
    for &n in &[1usize, 17, 64, 65, 200, 1500] {
        let b: Vec<f64> = (0..4 * n)
            .map(|_| if rng.below(3) == 0 { pool[rng.below(pool.len() as u64) as usize] } else { rng.below(12) as f64 })
            .collect();
        let s: Vec<f64> = (0..n).map(|_| rng.below(6) as f64 / 5.0).collect();
        let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
        for &thr in &[0.0, 0.2, 0.5, 0.9] {
            let (want64, want32) = (nms_ref(&b, &s, thr, None), nms_ref(&b32, &s, thr, None));
            each_isa(|isa| {
                assert_eq!(with_plain_host(|h| nms(&b, &s, thr, None, h)).unwrap(), want64, "{isa:?} n={n} thr={thr}");
                let got = with_plain_host(|h| nms(&b32, &s, thr, None, h)).unwrap();
                assert_eq!(got, want32, "{isa:?} n={n} thr={thr} f32");
            });
        }
    }
}

#[test]
fn nms_on_many_rows_runs_the_parallel_path() {
    let mut rng = Rng(3);
    let (b, s) = clustered(&mut rng, 3000);
    let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
    let want = nms_ref(&b32, &s, 0.45, None);
    let got = with_plain_host(|h| nms(&b32, &s, 0.45, None, h)).unwrap();
    assert_eq!(got, want);
}

#[test]
fn identical_boxes_keep_the_first_of_equal_scores() {
    let b = [1.0f32, 1.0, 4.0, 4.0].repeat(5);
    let s = [0.5, 0.9, 0.9, 0.1, 0.9];
    assert_eq!(with_plain_host(|h| nms(&b, &s, 0.5, None, h)).unwrap(), vec![1]);
    // Threshold 1: an IoU of exactly 1 is not above it, so nothing is suppressed.
    assert_eq!(with_plain_host(|h| nms(&b, &s, 1.0, None, h)).unwrap(), vec![1, 2, 4, 0, 3]);
}

#[test]
fn batched_nms_matches_per_category_greedy() {
    let mut rng = Rng(5);
    let (b, s) = clustered(&mut rng, 500);
    let cats: Vec<i64> = (0..500).map(|_| rng.below(4) as i64 - 1).collect();
    for &thr in &[0.0, 0.5, 0.9] {
        let want = nms_ref(&b, &s, thr, Some(&cats));
        assert_eq!(with_plain_host(|h| batched_nms(&b, &s, &cats, thr, None, h)).unwrap(), want, "thr={thr}");
    }
}

#[test]
fn a_score_threshold_drops_the_boxes_at_or_below_it_first() {
    let mut rng = Rng(17);
    let (b, s) = clustered(&mut rng, 400);
    let cats: Vec<i64> = (0..400).map(|_| rng.below(3) as i64).collect();
    // A threshold equal to one of the scores: that box (not strictly above) is dropped too.
    for t in [s[7], 0.5, -1.0, 2.0] {
        let above: Vec<usize> = (0..s.len()).filter(|&i| s[i] > t).collect();
        let sb: Vec<f64> = above.iter().flat_map(|&i| b[4 * i..4 * i + 4].to_vec()).collect();
        let ss: Vec<f64> = above.iter().map(|&i| s[i]).collect();
        let sc: Vec<i64> = above.iter().map(|&i| cats[i]).collect();
        let back = |v: Vec<i64>| v.into_iter().map(|k| above[k as usize] as i64).collect::<Vec<_>>();
        for thr in [0.3, 0.6] {
            let want = back(nms_ref(&sb, &ss, thr, None));
            assert_eq!(with_plain_host(|h| nms(&b, &s, thr, Some(t), h)).unwrap(), want, "t={t} thr={thr}");
            let want = back(nms_ref(&sb, &ss, thr, Some(&sc)));
            let got = with_plain_host(|h| batched_nms(&b, &s, &cats, thr, Some(t), h)).unwrap();
            assert_eq!(got, want, "batched t={t} thr={thr}");
        }
    }
}

#[test]
fn nms_mask_over_a_sorted_iou_matrix_keeps_what_nms_keeps() {
    let mut rng = Rng(9);
    let (b, s) = clustered(&mut rng, 200);
    let order = score_order(&s);
    let sorted: Vec<f64> = order.iter().flat_map(|&i| b[4 * i..4 * i + 4].to_vec()).collect();
    let mut iou = vec![0.0; 200 * 200];
    box_iou(&sorted, &sorted, &mut iou);
    each_isa(|isa| {
        let keep = nms_mask(&iou, 200, 0.5);
        let via_mask: Vec<i64> = (0..200).filter(|&p| keep[p]).map(|p| order[p] as i64).collect();
        assert_eq!(via_mask, with_plain_host(|h| nms(&b, &s, 0.5, None, h)).unwrap(), "{isa:?}");
    });
}

#[test]
fn a_poll_that_asks_to_stop_stops_the_sweep() {
    let mut rng = Rng(2);
    let (b, _) = clustered(&mut rng, 20_000);
    // Far-apart boxes: nothing is suppressed, so every chunk computes its rows.
    let spread: Vec<f64> =
        b.chunks(4).enumerate().flat_map(|(i, v)| [v[0] + 1e4 * i as f64, v[1], v[2] + 1e4 * i as f64, v[3]]).collect();
    let c = Columns::gather(&spread, 0..20_000);
    // Each parallel section (one per chunk of rows) takes at least a millisecond, so the sweep
    // outlives the poll interval whatever the machine's speed.
    let par = |n: usize, g: &(dyn Fn(usize) + Sync)| {
        std::thread::sleep(std::time::Duration::from_millis(1));
        (0..n).for_each(g)
    };
    let mut polls = 0;
    let mut poll = || {
        polls += 1;
        true
    };
    let mut host = Host { par: &par, poll: &mut poll };
    assert_eq!(sweep(&c, 0.5, &mut host), Err(Stopped));
    assert_eq!(polls, 1);
    // A poll that never asks to stop lets the sweep finish: every box is kept.
    assert_eq!(with_plain_host(|h| sweep(&c, 0.5, h)).unwrap().len(), 20_000);
}

#[test]
fn pack8_gathers_the_low_bit_of_each_byte() {
    for v in 0u16..256 {
        let bytes: [u8; 8] = std::array::from_fn(|i| ((v >> i) & 1) as u8);
        assert_eq!(crate::nms::pack8(u64::from_le_bytes(bytes)), v as u8);
    }
}

#[test]
fn score_order_is_a_stable_descending_sort() {
    let s = [0.5, -0.0, f64::NAN, 0.0, 1.0, -1.0, 0.5, f64::INFINITY, f64::NEG_INFINITY, 1e-300, -1e-300];
    let mut want: Vec<usize> = (0..s.len()).collect();
    want.sort_by(|&i, &j| {
        let (a, b) = (s[i], s[j]);
        b.partial_cmp(&a).unwrap_or_else(|| b.is_nan().cmp(&a.is_nan()))
    });
    assert_eq!(score_order(&s), want);
    assert_eq!(score_order(&s), vec![2, 7, 4, 0, 6, 9, 1, 3, 10, 5, 8]);
}
