// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * dwconv.c - P_DWCONV, the depthwise convolution: out[n][c] is input
 * channel c convolved with its own KH x KW kernel. There is nothing for
 * the MXU to contract, so the VPU does it: for each tap (kh, kw) one
 * fused multiply-add (BINARY MADD) of a shifted window of the input by
 * that tap's weights (a column broadcast: one weight per channel) into
 * the sum, in one pass over it; the first tap's is a plain multiply.
 *
 * A band of input rows for a chunk of channels is loaded into VMEM, one
 * channel a row, with its padding (zeros), the padded rows end to end.
 * Output (oh, ow) of the band then sits at column j = oh * Wq + ow of a
 * "wide" output whose columns ow >= OW are computed but never stored,
 * and every tap reads columns [j0, j0 + J) of the band for some j0: one
 * tile for all the band's output rows.
 *
 * That needs stride 1. With strides (sh, sw) the band is split into
 * phases: plane (rp, cp) holds the padded elements at rows sh * r + rp
 * and columns sw * c + cp, Wq = ceil(Wp / sw) of them a row; tap (kh, kw)
 * reads plane ((kh * dh) % sh, (kw * dw) % sw) from column
 * (kh * dh / sh) * Wq + kw * dw / sw on, and the wide output is again
 * oh * Wq + ow. A plane's rows are picked when they are loaded, and the
 * columns of each row by the DMA's element step (ISA version 6).
 *
 * Each tap's product and sum are rounded to f32 once (fmaf()), taps in
 * (kh, kw) order.
 */
#include <errno.h>

#include "plan.h"

static const struct vtpu_tile none;

struct dw {
	struct cg *c;
	int64_t C, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, taps;
	int64_t Wp;		/* padded width, rounded up to a multiple of sw */
	int64_t Wq;		/* columns of a plane's row: Wp / sw */
	int64_t cc, ohb;	/* channels and output rows per band */
	int64_t ohb_max;	/* at most: a band per lane when bands are few */
	int64_t lanes, images;
	int64_t nb;		/* bands of rows, when split among lanes */
	uint32_t rmask, cmask;	/* phases the taps read */
	int nplanes;
	struct loc x, w, out;
	/* VMEM, in floats */
	uint32_t planes, acc, wraw;
	int64_t plane_len;	/* floats of one channel's plane */
};

static bool unit_stride(const struct dw *d)
{
	return d->sh == 1 && d->sw == 1;
}

/* Rows of each plane a band of @ohb output rows reads. */
static int64_t plane_rows(const struct dw *d, int64_t ohb)
{
	return ohb + (d->KH - 1) * d->dh / d->sh;
}

/* Columns of the wide output of a band of @ohb rows. */
static int64_t wide(const struct dw *d, int64_t ohb)
{
	return (ohb - 1) * d->Wq + d->OW;
}

/*
 * One channel's plane: its rows, and room for the last tap's reach past
 * them (the wide output's unused columns of the last row).
 */
static int64_t plane_len(const struct dw *d, int64_t ohb)
{
	int64_t reach = ((d->KH - 1) * d->dh / d->sh) * d->Wq +
			(d->KW - 1) * d->dw / d->sw + wide(d, ohb);
	int64_t len = plane_rows(d, ohb) * d->Wq;

	return reach > len ? reach : len;
}

/* VMEM floats a band of @cc channels and @ohb output rows needs. */
static int64_t band_floats(const struct dw *d, int64_t cc, int64_t ohb)
{
	return cc * (wide(d, ohb) + d->taps + d->nplanes * plane_len(d, ohb));
}

/* Every tile within one instruction's bounds (CG_TILE_ELEMS, _DIM). */
static bool fits(const struct dw *d, int64_t cc, int64_t ohb)
{
	int64_t len = plane_len(d, ohb);

	return band_floats(d, cc, ohb) <= d->c->vmem / 4 &&
	       cc * len <= CG_TILE_ELEMS && len <= CG_TILE_DIM;
}

/*
 * Bands go to the lanes in runs, in the order chunk of channels, image,
 * band of rows, and a kernel takes as long as its busiest lane: 28 rows
 * in bands of 13 gave one lane 26 rows and the other 2; 576 channels in
 * chunks of 256 gave one 512 and the other 64. So, split among lanes,
 * the work is cut in equal parts, a multiple of the lanes:
 * - chunks of channels, when they and the images are at least as many
 *   as the lanes; each lane then reads whole channels, as the matmul of
 *   a 1x1 convolution before it wrote them, splitting its rows;
 * - else bands of rows, whose heights differ by one row at most.
 * Smaller chunks and bands still fit.
 */
static void even_bands(struct dw *d)
{
	int64_t chunks = cdiv(d->C, d->cc), nb;

	if (d->lanes < 2)
		return;
	if (chunks * d->images >= d->lanes) {
		while (chunks < d->C && chunks * d->images % d->lanes)
			chunks++;
		d->cc = cdiv(d->C, chunks);
		nb = 1;
	} else {
		nb = cdiv(d->OH, d->ohb);
		while (nb < d->OH && chunks * d->images * nb % d->lanes)
			nb++;
	}
	d->nb = nb > cdiv(d->OH, d->ohb) ? nb : cdiv(d->OH, d->ohb);
	d->ohb = cdiv(d->OH, d->nb);
}

/* Band @i's first output row: bands of rows differing by one at most. */
static int64_t band_row(const struct dw *d, int64_t i)
{
	return d->nb ? i * d->OH / d->nb : i * d->ohb;
}

/*
 * The largest band that fits: as many channels as a band of one output
 * row allows (at most 256), then as many output rows, evened out among
 * lanes.
 */
static int pick(struct dw *d)
{
	d->cc = d->C < 256 ? d->C : 256;
	while (d->cc > 1 && !fits(d, d->cc, 1))
		d->cc = (d->cc + 1) / 2;
	if (!fits(d, d->cc, 1) || d->taps > CG_TILE_DIM)
		return cg_fail(d->c, ENOSPC, "depthwise convolution: a band of %lld padded elements does not fit VMEM",
			       (long long)plane_len(d, 1));
	d->ohb = 1;
	while (d->ohb < d->ohb_max && fits(d, d->cc, d->ohb + 1))
		d->ohb++;
	even_bands(d);
	d->acc = 0;
	d->wraw = d->acc + d->cc * wide(d, d->ohb);
	d->planes = d->wraw + d->cc * d->taps;
	d->plane_len = plane_len(d, d->ohb);
	return 0;
}

static struct vtpu_tile ftile(uint32_t at, int64_t rows, int64_t cols,
			      int64_t stride)
{
	return vtile(at * 4, rows, cols, stride, VTPU_DT_F32);
}

/* The index among the planes of phase (@rp, @cp). */
static int plane_of(const struct dw *d, int rp, int cp)
{
	uint32_t below = (d->rmask & ((1u << rp) - 1));
	int nc = __builtin_popcount(d->cmask);

	return __builtin_popcount(below) * nc +
	       __builtin_popcount(d->cmask & ((1u << cp) - 1));
}

/*
 * Plane (@rp, @cp) of the band of image @n, channels [c0, c0 + cc), that
 * starts at padded row @r0: padded rows r0 + sh * r + rp, r < @nrows, and
 * columns sw * q + cp, q < Wq, end to end at @at, plane_len floats per
 * channel, the padding zero. A row's columns are every sw-th element of
 * an input row: one DMA with that element step.
 */
static void load_plane(struct dw *d, int64_t n, int64_t c0, int64_t cc,
		       int64_t r0, int rp, int cp, int64_t nrows, uint32_t at)
{
	struct emit *e = &d->c->e;
	int64_t es = dt_size(d->x.dt), chan = (n * d->C + c0) * d->H * d->W;
	int64_t len = d->plane_len, r, ih, first = -1, last = -1, q0, q1;

	for (r = 0; r < nrows; r++) {
		ih = r0 + d->sh * r + rp - d->pt;
		if (ih < 0 || ih >= d->H)
			continue;
		if (first < 0)
			first = r;
		last = r;
	}
	/* the columns that hold input: 0 <= sw * q + cp - pl < W */
	q0 = d->pl > cp ? cdiv(d->pl - cp, d->sw) : 0;
	q1 = d->W - 1 + d->pl - cp < 0 ? -1 : (d->W - 1 + d->pl - cp) / d->sw;
	if (q1 > d->Wq - 1)
		q1 = d->Wq - 1;
	if (first != 0 || last != nrows - 1 || q0 != 0 || q1 != d->Wq - 1 ||
	    len != nrows * d->Wq)
		emit_op(e, VTPU_OP_FILL, 0, 0, 0, ftile(at, cc, len, len), none,
			none);
	if (first < 0 || q1 < q0)
		return;	/* all padding */
	if (unit_stride(d) && d->Wp == d->W) {	/* contiguous rows */
		emit_dma(e, 0, ftile(at + first * d->Wq, cc,
				     (last - first + 1) * d->W, len),
			 d->x.binding,
			 d->x.off + (chan + (r0 + first - d->pt) * d->W) * es,
			 d->H * d->W * es, d->x.dt);
		return;
	}
	for (r = first; r <= last; r++)
		emit_dma_step(e, 0, ftile(at + r * d->Wq + q0, cc, q1 - q0 + 1,
					  len),
			      d->x.binding,
			      d->x.off + (chan + (r0 + d->sh * r + rp - d->pt) *
					  d->W + d->sw * q0 + cp - d->pl) * es,
			      d->H * d->W * es, d->x.dt, (uint32_t)d->sw);
}

/* The planes of the band at padded row @r0. */
static void load_band(struct dw *d, int64_t n, int64_t c0, int64_t cc,
		      int64_t r0, int64_t ohb)
{
	int rp, cp;

	for (rp = 0; rp < d->sh; rp++)
		for (cp = 0; cp < d->sw; cp++)
			if ((d->rmask & (1u << rp)) && (d->cmask & (1u << cp)))
				load_plane(d, n, c0, cc, r0, rp, cp,
					   plane_rows(d, ohb),
					   d->planes + plane_of(d, rp, cp) *
						       cc * d->plane_len);
}

/* The taps over the band's planes, and the stores of its output rows. */
static void band_out(struct dw *d, int64_t n, int64_t c0, int64_t cc,
		     int64_t oh0, int64_t ohb)
{
	struct emit *e = &d->c->e;
	int64_t J = wide(d, ohb), es = dt_size(d->out.dt), kh, kw, t, r;
	struct vtpu_tile acc = ftile(d->acc, cc, J, J);
	uint32_t at;

	for (t = 0, kh = 0; kh < d->KH; kh++)
		for (kw = 0; kw < d->KW; kw++, t++) {
			at = d->planes +
			     plane_of(d, kh * d->dh % d->sh, kw * d->dw % d->sw) *
			     cc * d->plane_len +
			     (kh * d->dh / d->sh) * d->Wq + kw * d->dw / d->sw;
			emit_op(e, VTPU_OP_BINARY,
				t ? VTPU_BINARY_MADD : VTPU_BINARY_MUL,
				VTPU_F_BCAST_COL, 0, acc,
				ftile(at, cc, J, d->plane_len),
				ftile(d->wraw + t, cc, 1, d->taps));
		}
	for (r = 0; r < ohb; r++)
		emit_dma(e, 1, ftile(d->acc + r * d->Wq, cc, d->OW, J),
			 d->out.binding,
			 d->out.off + ((n * d->C + c0) * d->OH + oh0 + r) *
				      d->OW * es,
			 d->OH * d->OW * es, d->out.dt);
}

void gen_dwconv(struct cg *c, int v)
{
	const struct ir_graph *g = c->g;
	const struct ir_node *nd = &g->nodes[v];
	const struct vtpu_shape *xs = &g->nodes[nd->in[0]].shape;
	const struct vtpu_shape *ks = &g->nodes[nd->in[1]].shape;
	const struct vtpu_conv_params *p = &nd->a.conv;
	struct dw d = {
		.c = c, .C = xs->dims[1], .H = xs->dims[2], .W = xs->dims[3],
		.OH = nd->shape.dims[2], .OW = nd->shape.dims[3],
		.KH = ks->dims[2], .KW = ks->dims[3],
		.sh = p->stride[0], .sw = p->stride[1],
		.dh = p->dilation[0], .dw = p->dilation[1],
		.pt = p->pad_lo[0], .pl = p->pad_lo[1],
		.x = loc_of(c, nd->in[0]), .w = loc_of(c, nd->in[1]),
		.out = loc_of(c, v),
	};
	int64_t n, c0, cc, oh0, ohb, band, es = dt_size(d.w.dt), i;
	int64_t items, item = 0, wc0 = -1;
	uint32_t lane, wlane = UINT32_MAX, lanes;

	if (c->ret)
		return;
	if (d.sh > 32 || d.sw > 32) {
		cg_fail(c, ENOTSUP, "depthwise convolution: stride %lldx%lld (32 at most)",
			(long long)d.sh, (long long)d.sw);
		return;
	}
	d.taps = d.KH * d.KW;
	d.Wp = d.W + p->pad_lo[1] + p->pad_hi[1];
	d.Wp = cdiv(d.Wp, d.sw) * d.sw;
	d.Wq = d.Wp / d.sw;
	for (i = 0; i < d.KH; i++)
		d.rmask |= 1u << (i * d.dh % d.sh);
	for (i = 0; i < d.KW; i++)
		d.cmask |= 1u << (i * d.dw % d.sw);
	d.nplanes = __builtin_popcount(d.rmask) * __builtin_popcount(d.cmask);
	/*
	 * Bands are independent: split them among lanes (in order, so a
	 * lane's bands of one chunk share its weights), unless the output
	 * lies where the input or the weights are. Where the chunks of
	 * channels and the images are fewer than the lanes, bands of fewer
	 * rows give each lane some.
	 */
	lanes = !cg_values_meet(c, v, nd->in[0]) &&
		!cg_values_meet(c, v, nd->in[1]) &&
		(double)shape_elems(&nd->shape) * d.taps >= CG_LANES_MIN_WORK ?
		c->e.lanes : 1;
	d.ohb_max = d.OH;
	if (lanes > 1 && cdiv(d.C, 256) * xs->dims[0] < lanes)
		d.ohb_max = cdiv(d.OH, lanes);
	d.lanes = lanes;
	d.images = xs->dims[0];
	if (pick(&d))
		return;
	items = lanes > 1 ? cdiv(d.C, d.cc) * xs->dims[0] * d.nb : 1;
	for (c0 = 0; c0 < d.C; c0 += d.cc) {
		cc = d.C - c0 < d.cc ? d.C - c0 : d.cc;
		for (n = 0; n < xs->dims[0]; n++)
			for (band = 0; (oh0 = band_row(&d, band)) < d.OH;
			     band++) {
				ohb = band_row(&d, band + 1) - oh0;
				ohb = d.OH - oh0 < ohb ? d.OH - oh0 : ohb;
				lane = emit_lane_of(&c->e, item++, items);
				emit_lane(&c->e, lane);
				/* the chunk's weights: channel a row, tap a column */
				if (c0 != wc0 || lane != wlane)
					emit_dma(&c->e, 0,
						 ftile(d.wraw, cc, d.taps, d.taps),
						 d.w.binding,
						 d.w.off + c0 * d.taps * es,
						 d.taps * es, d.w.dt);
				wc0 = c0;
				wlane = lane;
				load_band(&d, n, c0, cc, d.sh * oh0, ohb);
				band_out(&d, n, c0, cc, oh0, ohb);
			}
	}
}
