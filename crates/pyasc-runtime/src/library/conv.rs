//! Convolution as an implicit GEMM over the micro-kernels of `pyasc-kernels`.
//!
//! For image `n` and group `g` the result is `W_g (O/g x K) @ cols (K x P)`, with
//! `K = C/g * prod(kernel)` and `P = prod(output spatial)`. A float32 convolution reads the
//! column matrix's rows as shifted rows of its padded input split by stride phase (see
//! [`shifted`]) where the weight-panel kernel runs and the output rows are wider than a narrow
//! block. Otherwise the column matrix is never built
//! whole: the output positions are cut into blocks of bounded size (`K x block` columns of
//! about [`BLOCK_BYTES`], or [`ROWS_BLOCK_BYTES`] for the weight-panel kernel), each block's
//! columns are gathered from the input (strided reads, zeros for padding) into a per-thread
//! scratch buffer and multiplied straight into the output. Float32 blocks wider than
//! [`NARROW`] positions go through `matmul_rows_f32` on AVX2/AVX-512 (the weights and the
//! columns read in place), the rest through the packed `gemm` kernels ([`multiply`]).
//! Blocks of every image and group are spread over the worker pool, one GEMM per block on
//! one worker; when there are too few blocks for the workers (a late layer of one small
//! image) the output channels are cut into slices too, one unit per slice and block, the
//! slices sharing one gather of the columns when they fit [`SHARED_BYTES`]; only a layer too
//! small to cut runs each GEMM on all the workers. A 1x1 convolution without stride or padding
//! over a contiguous image reads the input itself as the column matrix. 1-D and 2-D
//! convolutions are 3-D ones with unit leading dimensions. Operands are float32 or float64,
//! computing into their own type, or bfloat16 or float16 (gathered in 16 bits), computing into
//! float32 through the 16-bit GEMM kernels (the AVX-512 BF16 `vdpbf16ps` kernels for
//! bfloat16); the typed path is chosen by the single `match` in [`run_conv`].

use crate::pool::num_threads;
use crate::view::{InputView, SendPtr};
use half::{bf16, f16};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::library::{ConvSpec, LibCall, LibId};
use pyasc_ir::tile::TileKernel;
use pyasc_ir::{Attr, DType};
use pyasc_kernels::gemm::{
    matmul_bf16, matmul_f16, matmul_f32, matmul_f64, matmul_rows_f32, matmul_rows_f32_runs, MatMut, MatRef,
};
use std::cell::RefCell;

/// Bytes of gathered columns per block. `gemm` re-packs the block into its own cache-sized
/// panels, so the block need not fit a cache: larger blocks mean fewer GEMM calls, each of which
/// packs the weights again (1x64x256x256 3x3 float32: 27.0-27.1 ms with 384 KiB blocks,
/// 26.4-26.5 ms with 1 MiB, 26.1-26.6 ms with 2 MiB, 26.3-26.6 ms with 4 MiB).
const BLOCK_BYTES: usize = 2 << 20;

/// Bytes of gathered columns per block for the weight-panel kernel, which reads them in place.
const ROWS_BLOCK_BYTES: usize = 512 << 10;

/// Bytes of columns up to which the blocks of a convolution cut into channel slices are
/// gathered once into a buffer they share.
const SHARED_BYTES: usize = 4 << 20;

/// An operand element type the routine reads, with its GEMM and the type it computes into.
trait Elem: Copy + Send + Sync + 'static {
    /// The result's element type (float32 for the 16-bit floats).
    type Out: Copy + Send + Sync + 'static;
    const ZERO: Self;
    /// Hand the GEMM the transposed product (see [`product`]).
    const TRANSPOSED: bool;
    /// `dst = a @ b` on `threads` threads of the current pool (1: this thread only).
    ///
    /// # Safety
    /// As for [`matmul_f32`].
    unsafe fn gemm(dst: MatMut<Self::Out>, a: MatRef<Self>, b: MatRef<Self>, threads: usize);
    /// Whether [`Elem::rows`] runs here.
    fn rows_run() -> bool {
        false
    }
    /// `dst = a @ b` on this thread through the weight-panel kernel (unit column strides in
    /// `b` and `dst`); only called when [`Elem::rows_run`].
    ///
    /// # Safety
    /// As for [`matmul_rows_f32`].
    unsafe fn rows(_dst: MatMut<Self::Out>, _a: MatRef<Self>, _b: MatRef<Self>) {
        unreachable!("no weight-panel kernel for this type")
    }
    /// The whole convolution through [`shifted`] (weights `w`, rows `wrs` apart) where that
    /// path takes it; `None` where it does not.
    ///
    /// # Safety
    /// As for [`conv_typed`], with `w` the `O x K` weights.
    unsafe fn shifted(
        _x: &InputView,
        _w: *const Self,
        _wrs: isize,
        _out: *mut u8,
        _geo: &Geometry,
    ) -> Option<Result<()>> {
        None
    }
}

impl Elem for f32 {
    type Out = f32;
    const ZERO: Self = 0.0;
    const TRANSPOSED: bool = true;
    unsafe fn gemm(dst: MatMut<f32>, a: MatRef<Self>, b: MatRef<Self>, threads: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { matmul_f32(dst, a, b, threads) }
    }
    fn rows_run() -> bool {
        matmul_rows_f32_runs()
    }
    unsafe fn rows(dst: MatMut<f32>, a: MatRef<Self>, b: MatRef<Self>) {
        // SAFETY: forwarded from the caller.
        let ran = unsafe { matmul_rows_f32(dst, a, b) };
        debug_assert!(ran);
    }
    unsafe fn shifted(x: &InputView, w: *const Self, wrs: isize, out: *mut u8, geo: &Geometry) -> Option<Result<()>> {
        // SAFETY: forwarded from the caller.
        shifted::grid(geo)
            .map(|grid| unsafe { shifted::conv(&grid, x.ptr as *const f32, w, wrs, out as *mut f32, geo) })
    }
}

impl Elem for f64 {
    type Out = f64;
    const ZERO: Self = 0.0;
    const TRANSPOSED: bool = true;
    unsafe fn gemm(dst: MatMut<f64>, a: MatRef<Self>, b: MatRef<Self>, threads: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { matmul_f64(dst, a, b, threads) }
    }
}

impl Elem for bf16 {
    type Out = f32;
    const ZERO: Self = bf16::ZERO;
    const TRANSPOSED: bool = false;
    unsafe fn gemm(dst: MatMut<f32>, a: MatRef<Self>, b: MatRef<Self>, threads: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { matmul_bf16(dst, a, b, threads) }
    }
}

impl Elem for f16 {
    type Out = f32;
    const ZERO: Self = f16::ZERO;
    const TRANSPOSED: bool = false;
    unsafe fn gemm(dst: MatMut<f32>, a: MatRef<Self>, b: MatRef<Self>, threads: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { matmul_f16(dst, a, b, threads) }
    }
}

/// A convolution's extents and strides, every spatial part in three dimensions (leading
/// unit dimensions for 1-D and 2-D ones).
#[derive(Clone, Debug)]
struct Geometry {
    n: usize,
    groups: usize,
    /// Input channels per group.
    cg: usize,
    /// Output channels per group.
    og: usize,
    input: [usize; 3],
    kernel: [usize; 3],
    out: [usize; 3],
    stride: [usize; 3],
    pad: [usize; 3],
    dilation: [usize; 3],
    /// Input strides (elements) of the batch, channel and three spatial dimensions.
    xs: [isize; 5],
}

impl Geometry {
    fn new(x: &InputView, w: &InputView, spec: &ConvSpec) -> Result<Self> {
        let sd = spec.spatial();
        let out = spec.out_shape(&pyasc_ir::Shape(x.shape.clone()), &pyasc_ir::Shape(w.shape.clone()))?;
        if !(1..=3).contains(&sd) {
            return Err(IrError::internal(format!("conv over {sd} spatial dimensions")));
        }
        let lead = 3 - sd;
        let spatial = |v: &[usize], one: usize| -> [usize; 3] {
            let mut a = [one; 3];
            a[lead..].copy_from_slice(v);
            a
        };
        let mut xs = [0isize; 5];
        xs[0] = x.strides[0];
        xs[1] = x.strides[1];
        xs[2 + lead..].copy_from_slice(&x.strides[2..]);
        let pad_before: Vec<usize> = spec.pad.iter().map(|p| p.0).collect();
        Ok(Geometry {
            n: x.shape[0],
            groups: spec.groups,
            cg: x.shape[1] / spec.groups,
            og: w.shape[0] / spec.groups,
            input: spatial(&x.shape[2..], 1),
            kernel: spatial(&w.shape[2..], 1),
            out: spatial(&out.0[2..], 1),
            stride: spatial(&spec.stride, 1),
            pad: spatial(&pad_before, 0),
            dilation: spatial(&spec.dilation, 1),
            xs,
        })
    }

    /// Rows of the column matrix (and columns of a group's weights).
    fn k(&self) -> usize {
        self.cg * self.kernel.iter().product::<usize>()
    }

    /// Output positions per image and channel.
    fn positions(&self) -> usize {
        self.out.iter().product()
    }

    /// True when the input of one image and group is its own column matrix: a 1x1 kernel
    /// without stride or padding over spatial dimensions laid out contiguously.
    fn direct(&self) -> bool {
        let [_, h, w] = self.input;
        self.kernel == [1, 1, 1]
            && self.stride == [1, 1, 1]
            && self.pad == [0, 0, 0]
            && self.xs[4] == 1
            && (self.input[1] == 1 || self.xs[3] == w as isize)
            && (self.input[0] == 1 || self.xs[2] == (h * w) as isize)
    }
}

/// Output positions per block: the gathered columns fill about [`BLOCK_BYTES`] (more when the
/// weights are large), but there are enough blocks for every worker when the convolution is large.
fn block_len(geo: &Geometry, size: usize, threads: usize, rows: bool) -> usize {
    let p = geo.positions();
    if rows {
        // The weight-panel kernel reads a block once per eight output channels: blocks of
        // about ROWS_BLOCK_BYTES (at least 96 positions) stay in the core's cache. A layer
        // with too few blocks for the workers is one block per image and group when its
        // columns fit SHARED_BYTES (its output channels are then cut, and the slices share
        // the gathered columns; see `conv_typed`), else a few blocks for each worker.
        let ng = geo.n * geo.groups;
        let mut nb = p.div_ceil((ROWS_BLOCK_BYTES / (geo.k() * size).max(1)).max(96));
        if ng * nb < 2 * threads && ng * geo.k() * p * size <= SHARED_BYTES {
            nb = 1;
        } else if ng < 4 * threads {
            nb = nb.max((4 * threads).div_ceil(ng).min(p / 96).max(1));
        }
        return (p.div_ceil(nb).div_ceil(16) * 16).min(p);
    }
    // The GEMM packs a group's weights (O/g x K) again for every block: when they outweigh a
    // block, blocks of at least 256 positions keep that packing a small share of the work.
    let least = if geo.og * geo.k() * size > BLOCK_BYTES { 256 } else { 64 };
    let by_cache = (BLOCK_BYTES / (geo.k() * size).max(1)).max(least);
    let units_per_block_row = geo.n * geo.groups;
    // At least a few blocks per worker when there are few images and groups.
    let by_threads = if units_per_block_row >= 4 * threads { p } else { p.div_ceil(4 * threads).max(256) };
    let len = by_cache.min(by_threads).min(p).max(1);
    if len < p {
        len.div_ceil(16) * 16
    } else {
        len
    }
}

/// Gather the columns of output positions `p0..p0+len` of image `n`, group `g`, for the
/// group's input channels `chans`, into `cols` (row-major, `len` values per row, the rows of
/// channel `chans.start` first), zeros where a tap falls into the padding.
///
/// # Safety
/// `x` must address the input of `geo`; `cols` must hold `chans.len() * taps * len` elements.
#[allow(clippy::too_many_arguments)]
unsafe fn gather<T: Elem>(
    geo: &Geometry,
    x: *const T,
    n: usize,
    g: usize,
    chans: std::ops::Range<usize>,
    p0: usize,
    len: usize,
    cols: &mut [T],
) {
    let [od, oh, ow] = geo.out;
    let [kd, kh, kw] = geo.kernel;
    let xs = geo.xs;
    let mut row = 0;
    for ci in chans {
        let base = n as isize * xs[0] + (g * geo.cg + ci) as isize * xs[1];
        for a in 0..kd {
            for b in 0..kh {
                for e in 0..kw {
                    let dst = &mut cols[row * len..(row + 1) * len];
                    row += 1;
                    // Walk the block one output row (fixed depth and height) at a time.
                    let mut j = 0;
                    while j < len {
                        let p = p0 + j;
                        let (pz, rem) = (p / (oh * ow), p % (oh * ow));
                        let (py, px) = (rem / ow, rem % ow);
                        let run = (ow - px).min(len - j);
                        let seg = &mut dst[j..j + run];
                        j += run;
                        let iz = (pz * geo.stride[0] + a * geo.dilation[0]) as isize - geo.pad[0] as isize;
                        let iy = (py * geo.stride[1] + b * geo.dilation[1]) as isize - geo.pad[1] as isize;
                        if pz >= od || iz < 0 || iz >= geo.input[0] as isize || iy < 0 || iy >= geo.input[1] as isize {
                            seg.fill(T::ZERO);
                            continue;
                        }
                        let line = base + iz * xs[2] + iy * xs[3];
                        // Output columns px..px+run read input columns px*s + e*d - pad.
                        let (s, off) = (geo.stride[2], (e * geo.dilation[2]) as isize - geo.pad[2] as isize);
                        let iw = geo.input[2] as isize;
                        // First and one-past-last output column whose tap is inside the row.
                        let lo = if off >= 0 { 0 } else { ((-off) as usize).div_ceil(s) };
                        let hi = if iw - off <= 0 { 0 } else { ((iw - off) as usize).div_ceil(s) };
                        let (lo, hi) = (lo.clamp(px, px + run) - px, hi.clamp(px, px + run) - px);
                        if lo >= hi {
                            seg.fill(T::ZERO);
                            continue;
                        }
                        seg[..lo].fill(T::ZERO);
                        seg[hi..].fill(T::ZERO);
                        let first = line + ((px + lo) * s) as isize * xs[4] + off * xs[4];
                        let step = s as isize * xs[4];
                        if step == 1 {
                            // SAFETY: columns px+lo..px+hi read input columns inside the row.
                            let src = unsafe { std::slice::from_raw_parts(x.offset(first), hi - lo) };
                            seg[lo..hi].copy_from_slice(src);
                        } else {
                            for (i, v) in seg[lo..hi].iter_mut().enumerate() {
                                // SAFETY: as above, one element at a time.
                                *v = unsafe { *x.offset(first + i as isize * step) };
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `dst = a @ b`, handed to the float32/float64 GEMM as `dst^T = b^T @ a^T`: the output
/// positions become the rows of `gemm`'s column-major product (a 1x64x256x256 3x3 convolution
/// measured 27.1-27.4 ms this way against 27.4-30.8 ms the other way). The 16-bit kernels take
/// it as it is: they pack pairs of consecutive `k`, which are adjacent in the weights' rows and
/// in two rows of the columns.
///
/// # Safety
/// As for [`Elem::gemm`].
unsafe fn product<T: Elem>(dst: MatMut<T::Out>, a: MatRef<T>, b: MatRef<T>, workers: usize) {
    if !T::TRANSPOSED {
        // SAFETY: as the caller's product.
        return unsafe { T::gemm(dst, a, b, workers) };
    }
    let t = |m: MatRef<T>| MatRef { ptr: m.ptr, rows: m.cols, cols: m.rows, rs: m.cs, cs: m.rs };
    let d = MatMut { ptr: dst.ptr, rows: dst.cols, cols: dst.rows, rs: dst.cs, cs: dst.rs };
    // SAFETY: the same elements as the caller's product.
    unsafe { T::gemm(d, t(b), t(a), workers) }
}

/// `dst = a @ b` on `workers` threads: through the weight-panel kernel when `rows_path` (it
/// runs here), on this thread, and the block has more positions than a narrow one; else
/// through [`product`] (whose packed kernels do better on a few columns: 49 positions of a
/// 4608-tap product measured 127-134 GFLOP/s on one thread against 99-104 for the panel
/// kernel, which then computes 64 columns for 49).
///
/// # Safety
/// As for [`Elem::gemm`].
unsafe fn multiply<T: Elem>(dst: MatMut<T::Out>, a: MatRef<T>, b: MatRef<T>, workers: usize, rows_path: bool) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if rows_path && workers == 1 && b.cols > NARROW {
            T::rows(dst, a, b)
        } else {
            product(dst, a, b, workers)
        }
    }
}

/// Positions of a block up to which the packed GEMM runs it (see [`multiply`]).
const NARROW: usize = 64;

thread_local! {
    /// Per-thread column scratch (f64 words, enough alignment for every element type).
    static SCRATCH: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` on this thread's scratch, grown to at least `elems` values of `T` (contents
/// unspecified).
fn with_scratch<T: Copy, R>(elems: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        let words = (elems * std::mem::size_of::<T>()).div_ceil(8);
        if s.len() < words {
            s.resize(words, 0.0);
        }
        // SAFETY: the scratch holds at least `elems` values of T (f64 words are aligned for
        // every element type), and any bit pattern is a value of the float types used here.
        f(unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut T, elems) })
    })
}

/// How a convolution's work is cut into units: every image and group, `blocks` blocks of
/// output positions, `slices` slices of `oslice` of a group's `og` output channels.
#[derive(Clone, Copy)]
struct Cut {
    groups: usize,
    og: usize,
    blocks: usize,
    slices: usize,
    oslice: usize,
}

/// One unit of work: image `n`, group `g` (`ng = n * groups + g`), block `block` of
/// positions, output channels `o0..o0 + rows` of the group.
struct Unit {
    ng: usize,
    n: usize,
    g: usize,
    block: usize,
    o0: usize,
    rows: usize,
}

impl Cut {
    /// Unit `t`, slices innermost, then blocks, then images and groups.
    fn unit(&self, t: usize) -> Unit {
        let (t, si) = (t / self.slices, t % self.slices);
        let (ng, block) = (t / self.blocks, t % self.blocks);
        let o0 = si * self.oslice;
        Unit { ng, n: ng / self.groups, g: ng % self.groups, block, o0, rows: self.oslice.min(self.og - o0) }
    }
}

/// The convolution in element type `T`.
///
/// # Safety
/// `x` and `w` must be live views of `T` elements; `out` must hold the C-contiguous result.
unsafe fn conv_typed<T: Elem>(x: &InputView, w: &InputView, out: *mut u8, geo: &Geometry) -> Result<()> {
    let (k, p) = (geo.k(), geo.positions());
    let o = geo.og * geo.groups;
    if geo.n == 0 || o == 0 || p == 0 {
        return Ok(());
    }
    // The weights as an O x K matrix: read in place when each filter's elements are laid out
    // contiguously (the usual case), else packed once.
    let mut inner = 1isize;
    let mut in_place = true;
    for d in (1..w.shape.len()).rev() {
        in_place &= w.shape[d] == 1 || w.strides[d] == inner;
        inner *= w.shape[d] as isize;
    }
    let mut wpack: Vec<T> = Vec::new();
    let (wptr, wrs) = if in_place {
        (w.ptr as *const T, w.strides[0])
    } else {
        wpack.reserve(o * k);
        let wr = w.shape.len();
        let mut idx = vec![0usize; wr];
        for _ in 0..o * k {
            let off: isize = idx.iter().zip(&w.strides).map(|(i, s)| *i as isize * s).sum();
            // SAFETY: idx stays inside the weight's shape.
            wpack.push(unsafe { *(w.ptr as *const T).offset(off) });
            for d in (0..wr).rev() {
                idx[d] += 1;
                if idx[d] < w.shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        (wpack.as_ptr(), k as isize)
    };
    // SAFETY: forwarded from the caller; the weights are the O x K matrix.
    if let Some(done) = unsafe { T::shifted(x, wptr, wrs, out, geo) } {
        return done;
    }
    let threads = num_threads();
    let rows_path = T::rows_run();
    let len = block_len(geo, std::mem::size_of::<T>(), threads, rows_path);
    let blocks = p.div_ceil(len);
    // Too few blocks of positions for the workers (a late layer of a small image): the output
    // channels are cut as well, each unit one slice of the filters over its block.
    let least = if rows_path { 8 } else { 32 };
    let base = geo.n * geo.groups * blocks;
    let slices = if rows_path && base < 2 * threads && threads > 1 {
        // A few units each for the workers, as many for each, of at least eight channels.
        let most = (geo.og / 8).max(1);
        let mut s = (2 * threads).div_ceil(base).min(most);
        while !(base * s).is_multiple_of(threads) && s < most {
            s += 1;
        }
        s
    } else if base < threads && geo.og >= least * threads {
        threads.div_ceil(base)
    } else {
        1
    };
    let oslice = geo.og.div_ceil(slices).div_ceil(least.min(16)) * least.min(16);
    let slices = geo.og.div_ceil(oslice);
    let units = geo.n * geo.groups * blocks * slices;
    let direct = geo.direct();
    let (px, pout) = (SendPtr(x.ptr as *mut u8), SendPtr(out));
    // Output channels cut into slices: the columns of each block are gathered once, by every
    // worker a share of the channels, into one buffer the slices then read (when it fits a
    // core's cache; larger blocks are gathered by each slice, in its own scratch).
    let shared: Vec<T> = if slices > 1 && !direct && k > 0 && base * k * len * std::mem::size_of::<T>() <= SHARED_BYTES
    {
        let per_unit = k * len;
        let mut buf: Vec<T> = Vec::with_capacity(geo.n * geo.groups * blocks * per_unit);
        let chunk = geo.cg.div_ceil(threads);
        let parts = geo.cg.div_ceil(chunk);
        let taps = k / geo.cg;
        let pb = SendPtr(buf.as_mut_ptr() as *mut u8);
        crate::pool::for_blocks(geo.n * geo.groups * blocks * parts, threads.saturating_sub(1), |t| -> Result<()> {
            let (ngb, part) = (t / parts, t % parts);
            let (ng, bi) = (ngb / blocks, ngb % blocks);
            let (p0, c0) = (bi * len, part * chunk);
            let (cols_n, c1) = (len.min(p - p0), (c0 + chunk).min(geo.cg));
            let (pb, px) = (&pb, &px);
            // Block `ngb` keeps its columns at `ngb * per_unit`, `cols_n` values per row.
            let start = (pb.0 as *mut T).wrapping_add(ngb * per_unit + c0 * taps * cols_n);
            // SAFETY: each task fills its own rows of its block, inside the reserved capacity.
            let cols = unsafe { std::slice::from_raw_parts_mut(start, (c1 - c0) * taps * cols_n) };
            // SAFETY: the input view covers every element the geometry addresses.
            unsafe { gather(geo, px.0 as *const T, ng / geo.groups, ng % geo.groups, c0..c1, p0, cols_n, cols) };
            Ok(())
        })?;
        // SAFETY: every block's K x cols_n values were written above (the tail past a short
        // last block's values is never read).
        unsafe { buf.set_len(buf.capacity()) };
        buf
    } else {
        Vec::new()
    };
    let pw = SendPtr(wptr as *mut u8);
    let token = crate::interrupt::current();
    let cut = Cut { groups: geo.groups, og: geo.og, blocks, slices, oslice };
    // Unit `t` (an image, a group and a block) on `workers` threads (more than one only when
    // there are fewer units than workers).
    let unit = |t: usize, workers: usize| -> Result<()> {
        if let Some(tok) = &token {
            tok.check()?;
        }
        let (px, pout, pw) = (&px, &pout, &pw);
        let Unit { ng, n, g, block: bi, o0, rows } = cut.unit(t);
        let p0 = bi * len;
        let cols_n = len.min(p - p0);
        let xptr = px.0 as *const T;
        let offc = ((n * o + g * geo.og + o0) * p + p0) as isize;
        let dst =
            MatMut { ptr: (pout.0 as *mut T::Out).wrapping_offset(offc), rows, cols: cols_n, rs: p as isize, cs: 1 };
        let wg = (pw.0 as *const T).wrapping_offset((g * geo.og + o0) as isize * wrs);
        let a = MatRef { ptr: wg, rows, cols: k, rs: wrs, cs: 1 };
        if direct {
            let off = n as isize * geo.xs[0] + (g * geo.cg) as isize * geo.xs[1] + p0 as isize;
            let b = MatRef { ptr: xptr.wrapping_offset(off), rows: k, cols: cols_n, rs: geo.xs[1], cs: 1 };
            // SAFETY: the input's channels of this group, positions p0.., are inside the view;
            // each unit writes its own block of the output.
            unsafe { multiply(dst, a, b, workers, rows_path) };
            return Ok(());
        }
        if !shared.is_empty() {
            let at = (ng * blocks + bi) * k * len;
            let b = MatRef { ptr: shared[at..].as_ptr(), rows: k, cols: cols_n, rs: cols_n as isize, cs: 1 };
            // SAFETY: operands live for the call; each unit writes its own output block.
            unsafe { multiply(dst, a, b, workers, rows_path) };
            return Ok(());
        }
        with_scratch(k * cols_n, |cols: &mut [T]| {
            // SAFETY: the input view covers every element the geometry addresses.
            unsafe { gather(geo, xptr, n, g, 0..geo.cg, p0, cols_n, cols) };
            let b = MatRef { ptr: cols.as_ptr(), rows: k, cols: cols_n, rs: cols_n as isize, cs: 1 };
            // SAFETY: operands live for the call; each unit writes its own output block.
            unsafe { multiply(dst, a, b, workers, rows_path) };
        });
        Ok(())
    };
    if units >= threads || threads == 1 {
        crate::pool::for_blocks(units, threads.saturating_sub(1), |t| unit(t, 1))
    } else {
        // Too few blocks for every worker (a small image): each GEMM uses them all.
        crate::pool::install(|| (0..units).try_for_each(|t| unit(t, threads)))
    }
}

/// `out = conv(x, w)` with `spec`; `out` is C-contiguous with the result's shape.
///
/// # Safety
/// `x` and `w` must be live views of their dtype and `out` must hold the result.
pub unsafe fn run_conv(x: &InputView, w: &InputView, out: *mut u8, spec: &ConvSpec) -> Result<()> {
    let geo = Geometry::new(x, w, spec)?;
    if w.dtype != x.dtype {
        return Err(IrError::internal("conv operands of different dtypes"));
    }
    // The one choice of the GEMM by operand dtype.
    // SAFETY: forwarded from this function's contract.
    unsafe {
        match x.dtype {
            DType::F32 => conv_typed::<f32>(x, w, out, &geo),
            DType::F64 => conv_typed::<f64>(x, w, out, &geo),
            DType::BF16 => conv_typed::<bf16>(x, w, out, &geo),
            DType::F16 => conv_typed::<f16>(x, w, out, &geo),
            other => Err(IrError::internal(format!("conv reads float operands, not {other}"))),
        }
    }
}

/// Convolution as a library routine.
pub struct ConvKernel;

impl crate::library::LibraryKernel for ConvKernel {
    fn id(&self) -> LibId {
        LibId::CONV
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match (&call.attr, operands) {
            // SAFETY: per the trait's contract.
            (Attr::Conv(spec), [x, w]) => unsafe { run_conv(x, w, out, spec) },
            _ => Err(IrError::internal("conv takes an input, a weight and a conv attribute")),
        }
    }
}

#[path = "conv_shifted.rs"]
mod shifted;

#[cfg(test)]
#[path = "conv_tests.rs"]
mod tests;
